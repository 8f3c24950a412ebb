#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (part of scripts/build.sh asan: clang, ASan + UBSan +
# coverage, in build/asan) and runs them.
#   scripts/fuzz.sh [TARGET...]            fuzz each target for FLOWRT_FUZZ_SECONDS (default
#                                          60) seconds, starting from a copy of
#                                          fuzz/corpus/TARGET and fuzz/regressions/TARGET
#   scripts/fuzz.sh --ci [TARGET...]       CI's fixed share: each target from seed
#                                          FLOWRT_FUZZ_SEED (default 1) for a fixed number
#                                          of executions (about 15-25 s each on a
#                                          2-core machine, one per core), stopped at
#                                          FLOWRT_FUZZ_SECONDS (default 90) if slower; the
#                                          same mutations on every run
#   scripts/fuzz.sh --regress [TARGET...]  check that the corpus covers every compiler case
#                                          and example (fuzz/make_corpus.py --check), then
#                                          run each target once over every input in
#                                          fuzz/corpus/TARGET and fuzz/regressions/TARGET
# TARGET: definitions, events, templates, json, store, http (default: all six). The checked-in corpus is
# never written to: new inputs go to a temporary directory, removed at the end. Inputs that
# crash, leak, time out or run out of memory are kept in build/asan/artifacts/TARGET/;
# when fixed, move them to fuzz/regressions/TARGET/. Exits 1 if any target failed.
# Environment: FLOWRT_FUZZ_SECONDS, FLOWRT_FUZZ_SEED (also without --ci: a run to repeat),
# FLOWRT_FUZZ_JOBS (targets run side by side, default one per core), FLOWRT_FUZZ_KEEP=1
# keeps the grown corpora (their directory is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

usage() {
  sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

mode=fuzz
ci=0
targets=()
for arg in "$@"; do
  case "$arg" in
    --regress) mode=regress ;;
    --ci) ci=1 ;;
    definitions|events|templates|json|store|http) targets+=("$arg") ;;
    -h|--help) usage ;;
    *) echo "fuzz.sh: unknown argument '$arg'" >&2; usage ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(definitions events templates json store http)

if [ "$ci" = 1 ]; then
  seconds="${FLOWRT_FUZZ_SECONDS:-90}"
  seed="${FLOWRT_FUZZ_SEED:-1}"
else
  seconds="${FLOWRT_FUZZ_SECONDS:-60}"
  seed="${FLOWRT_FUZZ_SEED:-}"
fi
if [ -n "$seed" ] && ! [[ "$seed" =~ ^[1-9][0-9]{0,8}$ ]]; then
  echo "fuzz.sh: FLOWRT_FUZZ_SEED must be a whole number from 1 to 999999999" >&2
  exit 2
fi
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "fuzz.sh: FLOWRT_FUZZ_SECONDS must be a whole number of seconds, at least 1" >&2
  exit 2
fi
# Targets run at once: one per core unless FLOWRT_FUZZ_JOBS says otherwise.
jobs="${FLOWRT_FUZZ_JOBS:-$(nproc)}"
if ! [[ "$jobs" =~ ^[1-9][0-9]{0,2}$ ]]; then
  echo "fuzz.sh: FLOWRT_FUZZ_JOBS must be a whole number from 1 to 999" >&2
  exit 2
fi
build=build/asan
build_abs="$root/$build"

# Largest input libFuzzer makes, per target: about ten times the largest seed.
max_len() {
  case "$1" in
    definitions) echo 16384 ;;
    events) echo 16384 ;;
    templates) echo 2048 ;;
    json) echo 4096 ;;
    store) echo 4096 ;;
    http) echo 4096 ;;
  esac
}

# CI's share (--ci): executions per target, about 15-25 s each on a 2-core machine (half
# of what it was until 2026-12-05, for CI's time budget; the long budgets are run by hand,
# fuzz/README.md). Fixed with the seed, so every CI run tries the same inputs and a
# failure repeats by hand.
ci_runs() {
  case "$1" in
    definitions) echo 20000 ;;
    events) echo 1250 ;;
    templates) echo 150000 ;;
    json) echo 200000 ;;
    store) echo 5000 ;;
    http) echo 10000 ;;
  esac
}

# ---- build -------------------------------------------------------------------
FLOWRT_WITH_CLANG=1 scripts/setup-deps.sh
cxx=clang++
probe_dir="$(mktemp -d)"
trap 'rm -rf "$probe_dir"' EXIT
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
  'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$probe_dir/probe.cpp"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe_dir/probe.cpp" -o "$probe_dir/probe" 2>"$probe_dir/err"; then
  cat "$probe_dir/err" >&2
  echo "fuzz.sh: $cxx cannot link -fsanitize=fuzzer; install Debian's libclang-rt-dev (libclang-rt-14-dev)" >&2
  exit 1
fi

echo "== fuzz: build ($build)" >&2
# The fuzz targets are part of the asan flavour (clang, ASan + UBSan + coverage).
scripts/build.sh asan --target "${targets[@]/%/_fuzz}" >&2

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Input files of a directory (not hidden ones such as .gitkeep), one per line.
inputs_of() {
  [ -d "$1" ] || return 0
  find "$1" -maxdepth 1 -type f ! -name '.*' | sort
}

# Seconds (one decimal) since a `date +%s%N` time.
seconds_since() {
  local ms=$(( ($(date +%s%N) - $1) / 1000000 ))
  printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

# Prints the crash report of a failed run and where its input was kept.
# Only the inputs written by this run (newer than its stamp file) are listed.
report_failure() {
  local target="$1" log="$2" artifacts="$3" stamp="$4"
  echo "---- $target: libFuzzer output (last 60 lines of $log) ----" >&2
  tail -n 60 "$log" >&2
  local found
  found="$(find "$artifacts" -maxdepth 1 -type f -newer "$stamp" 2>/dev/null | sort || true)"
  if [ -n "$found" ]; then
    echo "---- $target: inputs kept ----" >&2
    echo "$found" >&2
  fi
}

work="$(mktemp -d "${TMPDIR:-/tmp}/flowrt-fuzz.XXXXXX")"
if [ "${FLOWRT_FUZZ_KEEP:-0}" = 1 ]; then
  trap 'rm -rf "$probe_dir"; echo "fuzz.sh: corpora and logs kept in $work" >&2' EXIT
else
  trap 'rm -rf "$probe_dir" "$work"' EXIT
fi

failed=0
summary=()
if [ "$mode" = regress ]; then
  # The seed corpus must cover every compiler case and example (fuzz/make_corpus.py).
  if python3 fuzz/make_corpus.py --check >&2; then
    summary+=("fuzz: corpus covers every compiler case and example")
  else
    failed=1
    summary+=("fuzz: corpus does not cover every compiler case and example (run fuzz/make_corpus.py)")
  fi
fi
# One target: its summary line goes to $work/$t.summary, and $work/$t.failed marks a failure.
run_target() {
  local t="$1" bin artifacts log stamp start rc elapsed ran corpus seeds extra budget what execs rate rss size
  local -a files
  bin="$build_abs/fuzz/${t}_fuzz"
  artifacts="$build_abs/artifacts/$t"
  mkdir -p "$artifacts"
  log="$work/$t.log"
  stamp="$work/$t.stamp"
  touch "$stamp"
  start=$(date +%s%N)
  if [ "$mode" = regress ]; then
    mapfile -t files < <(inputs_of "fuzz/corpus/$t"; inputs_of "fuzz/regressions/$t")
    echo "== fuzz: $t: ${#files[@]} inputs, once each" >&2
    if [ ${#files[@]} -eq 0 ]; then
      echo "fuzz: $t has no inputs" >"$work/$t.summary"
      return 0
    fi
    rc=0
    "$bin" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts/" "${files[@]}" >"$log" 2>&1 || rc=$?
    elapsed=$(seconds_since "$start")
    ran=$(grep -c '^Executed ' "$log" || true)
    if [ "$rc" -ne 0 ]; then
      touch "$work/$t.failed"
      report_failure "$t" "$log" "$artifacts" "$stamp"
      echo "fuzz: $t FAILED after $ran of ${#files[@]} inputs (exit $rc)" >"$work/$t.summary"
    else
      echo "fuzz: $t ran clean over $ran inputs once each in $elapsed s" >"$work/$t.summary"
    fi
    return 0
  fi

  corpus="$work/corpus-$t"
  mkdir -p "$corpus"
  cp -r "fuzz/corpus/$t/." "$corpus/"
  seeds=$(inputs_of "$corpus" | wc -l)
  extra=()
  if [ -n "$(inputs_of "fuzz/regressions/$t")" ]; then extra+=("fuzz/regressions/$t"); fi
  budget=(-max_total_time="$seconds")
  what="${seconds}s"
  if [ "$ci" = 1 ]; then
    budget+=(-runs="$(ci_runs "$t")")
    what="$(ci_runs "$t") executions (at most ${seconds}s)"
  fi
  if [ -n "$seed" ]; then
    budget+=(-seed="$seed")
    what+=", seed $seed"
  fi
  echo "== fuzz: $t: $what from $seeds seeds" >&2
  rc=0
  # The first directory receives new inputs; the others are only read.
  "$bin" "${budget[@]}" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
    -dict=fuzz/flowrt.dict -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "${extra[@]}" >"$log" 2>&1 || rc=$?
  elapsed=$(seconds_since "$start")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
  size=$(inputs_of "$corpus" | wc -l)
  if [ "$rc" -ne 0 ]; then
    touch "$work/$t.failed"
    report_failure "$t" "$log" "$artifacts" "$stamp"
    echo "fuzz: $t FAILED after $elapsed s, ${execs:-?} executions${seed:+, seed $seed} (exit $rc); see above" >"$work/$t.summary"
  else
    echo "fuzz: $t ran clean for $elapsed s, ${execs:-?} executions${seed:+, seed $seed} (${rate:-?}/s; corpus $seeds -> $size inputs; peak RSS ${rss:-?} MB)" >"$work/$t.summary"
  fi
}

# The targets run side by side, one per core (each libFuzzer run is one process on one
# core): FLOWRT_FUZZ_JOBS at a time (checked above). What each found is printed as it
# ends; the summary keeps the targets' order.
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
wait || true
for t in "${targets[@]}"; do
  if [ -f "$work/$t.summary" ]; then summary+=("$(cat "$work/$t.summary")"); else summary+=("fuzz: $t did not report"); failed=1; fi
  if [ -f "$work/$t.failed" ]; then failed=1; fi
done

echo "== fuzz: summary ($mode)" >&2
for line in "${summary[@]}"; do echo "$line"; done
if [ "$failed" -ne 0 ]; then
  echo "fuzz.sh: a target failed; inputs are in $build/artifacts/" >&2
  exit 1
fi

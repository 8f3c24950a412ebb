#!/usr/bin/env bash
# Compares two flowrt binaries on one workload, runs interleaved (A B A B ...) so that a
# noisy shared machine slows both alike, and prints each run and the medians.
#   scripts/bench-ab.sh OLD_FLOWRT NEW_FLOWRT [ROUNDS] [-- bench args]
#   e.g. scripts/bench-ab.sh /tmp/flowrt-old build/release/cli/flowrt 7 -- --workload triage --events 500000
# An old binary: git worktree add /tmp/old REV && (cd /tmp/old && scripts/build.sh release --target flowrt).
# METRIC=NAME compares another figure of the bench's output instead of contexts/s, e.g.
#   METRIC=contended_handoffs_per_s scripts/bench-ab.sh OLD NEW 7 -- --workload locks
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: scripts/bench-ab.sh OLD_FLOWRT NEW_FLOWRT [ROUNDS] [-- bench args]" >&2
  exit 2
fi
old="$1" new="$2"
shift 2
rounds=5
if [ $# -gt 0 ] && [ "$1" != "--" ]; then rounds="$1"; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--workload triage --events 500000)

metric="${METRIC:-contexts/s}"

# One run: "METRIC cpu_us_per_context".
one() {
  "$1" bench "${args[@]}" 2>&1 | awk -v m="$metric" '$1 == m {r=$2} /^CPU per context/ {c=$4} END {print r, c}'
}
median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

old_rate=() old_cpu=() new_rate=() new_cpu=()
for ((i = 1; i <= rounds; i++)); do
  read -r r c < <(one "$old"); old_rate+=("$r"); old_cpu+=("$c")
  read -r r2 c2 < <(one "$new"); new_rate+=("$r2"); new_cpu+=("$c2")
  printf 'round %d: old %s/s %s us, new %s/s %s us\n' "$i" "$r" "$c" "$r2" "$c2"
done
om=$(printf '%s\n' "${old_rate[@]}" | median) nm=$(printf '%s\n' "${new_rate[@]}" | median)
oc=$(printf '%s\n' "${old_cpu[@]}" | median) nc=$(printf '%s\n' "${new_cpu[@]}" | median)
echo "median $metric: old $om, new $nm ($(awk -v o="$om" -v n="$nm" 'BEGIN {printf "%+.1f%%", (n - o) * 100 / o}'))"
echo "median CPU per context: old $oc us, new $nc us ($(awk -v o="$oc" -v n="$nc" 'BEGIN {printf "%+.1f%%", (n - o) * 100 / o}'))"

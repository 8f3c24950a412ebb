#!/usr/bin/env bash
# Sets up, builds and runs every test:
#   release      the whole suite, optimised (benchmarks built, not run), the kill -9 crash
#                tests among it (also under ASan; not under TSan and clang); then
#                examples/embedding built against flowrt installed into a temporary
#                prefix and through add_subdirectory, and its tests run
#                (scripts/test-embedding.sh)
#   asan         clang with -Wthread-safety (the locking annotations) and warnings as
#                errors; the whole suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   fuzz         the libFuzzer targets (built by the asan build): every corpus and
#                regression input replayed, then CI's fixed, seeded share: each target
#                from its corpus for a fixed number of executions from seed
#                FLOWRT_FUZZ_SEED (default 1), about 15-25 s each, one per core at a
#                time (scripts/fuzz.sh --ci; long budgets are run by hand,
#                fuzz/README.md)
#   tsan         g++ with ThreadSanitizer: the whole suite but the crash tests, two
#                tests no sanitizer changes (label sanitizer_free) and the long tests
#                that run on one thread, where it has no race to find (label one_thread:
#                tests/scheduling/one_thread.cmake)
# The sanitizer suites run a share of the longest process tests (the kill -9 crash test
# and the cluster's seeded fault runs: tests/CMakeLists.txt) and leave out the two tests
# no sanitizer changes; the release suite runs all of them in full.
# Stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
for flavour in release asan tsan; do
  echo "== $flavour: build" >&2
  scripts/build.sh "$flavour"
  echo "== $flavour: test" >&2
  # The kill -9 crash tests (label crash: 500 kills in release, 160 under ASan) run in the
  # release and ASan suites; TSan runs everything else (its subject, the engine's threads,
  # is covered there; a killed child process adds nothing to it and takes minutes under
  # TSan). The tests whose subject no sanitizer changes (label sanitizer_free: the
  # installed headers compiled alone with the release build's compiler, the JSON Schemas
  # against what flowrt prints) run in the release suite only.
  # The long tests on one thread (label one_thread) run in the release and ASan suites.
  exclude=()
  if [ "$flavour" = asan ]; then exclude=(-LE 'sanitizer_free'); fi
  if [ "$flavour" = tsan ]; then exclude=(-LE 'crash|sanitizer_free|one_thread'); fi
  # A slot of the resource `cpus` per core, and twice as many tests at a time: the tests on
  # the PostgreSQL test server, which mostly wait on the database, take no slot and run
  # beside the busy ones (tests/scheduling/scheduling.cmake).
  cores="$(nproc)"
  if [ "$cores" -lt 2 ]; then cores=2; fi  # a browser test takes two
  printf '{"version": {"major": 1, "minor": 0}, "local": [{"cpus": [{"id": "0", "slots": %d}]}]}\n' "$cores" \
    >"build/$flavour/cpus.json"
  (cd "build/$flavour" && ctest --output-on-failure -j "$((2 * cores))" --resource-spec-file cpus.json --timeout 900 \
     "${exclude[@]}")
  if [ "$flavour" = release ]; then scripts/test-embedding.sh; fi
  if [ "$flavour" = asan ]; then
    echo "== fuzz" >&2
    scripts/fuzz.sh --regress
    scripts/fuzz.sh --ci
  fi
done
echo "== all tests passed (release, embedding, clang asan+ubsan with thread-safety, fuzz, tsan)" >&2

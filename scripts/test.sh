#!/usr/bin/env bash
# Sets up, builds and runs every test:
#   release      the whole suite, optimised (benchmarks built, not run), the kill -9 crash
#                tests among it (also under ASan; not under TSan and clang); then
#                examples/embedding built against flowrt installed into a temporary
#                prefix and through add_subdirectory, and its tests run
#                (scripts/test-embedding.sh)
#   asan         the whole suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   tsan         the whole suite under ThreadSanitizer
#   clang        a clang build with -Wthread-safety (the locking annotations), warnings
#                as errors, and its suite
#   fuzz         each libFuzzer target for FLOWRT_FUZZ_SECONDS (default here 30: CI's share;
#                long budgets are run by hand, fuzz/README.md) from its corpus,
#                after replaying every regression input (scripts/fuzz.sh)
# Stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
for flavour in release asan tsan clang; do
  echo "== $flavour: build" >&2
  scripts/build.sh "$flavour"
  echo "== $flavour: test" >&2
  # The kill -9 crash tests (label crash: 500 kills a build) run in the release and ASan
  # suites; TSan and clang's debug build run everything else (their subject, the engine's
  # threads and locking, is covered there; a killed child process adds nothing to it and
  # takes minutes under TSan).
  exclude=()
  if [ "$flavour" = tsan ] || [ "$flavour" = clang ]; then exclude=(-LE crash); fi
  (cd "build/$flavour" && ctest --output-on-failure -j "$(nproc)" --timeout 900 "${exclude[@]}")
  if [ "$flavour" = release ]; then scripts/test-embedding.sh; fi
done
echo "== fuzz" >&2
scripts/fuzz.sh --regress
FLOWRT_FUZZ_SECONDS="${FLOWRT_FUZZ_SECONDS:-30}" scripts/fuzz.sh
echo "== all tests passed (release, embedding, asan+ubsan, tsan, clang thread-safety, fuzz)" >&2

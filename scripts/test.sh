#!/usr/bin/env bash
# Sets up, builds and runs every test, three times: a normal optimised build, under
# AddressSanitizer with UBSan, and under ThreadSanitizer. Stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
for flavour in release asan tsan; do
  echo "== $flavour: build" >&2
  scripts/build.sh "$flavour"
  echo "== $flavour: test" >&2
  (cd "build/$flavour" && ctest --output-on-failure -j "$(nproc)" --timeout 900)
done
echo "== all tests passed (release, asan+ubsan, tsan)" >&2

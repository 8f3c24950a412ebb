#!/usr/bin/env bash
# Configures and builds one flavour of flowrt into build/FLAVOUR.
#   scripts/build.sh release   optimised with debug info; warnings are errors
#   scripts/build.sh asan      AddressSanitizer + UndefinedBehaviorSanitizer
#   scripts/build.sh tsan      ThreadSanitizer
#   scripts/build.sh clang     clang: -Wthread-safety checks the locking annotations;
#                              warnings are errors (libraries, command and tests)
# Extra arguments go to cmake --build (e.g. --target flowrt).
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
shift || true
case "$flavour" in
  release) flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLOWRT_WERROR=ON) ;;
  asan)    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLOWRT_SANITIZE=address,undefined -DFLOWRT_BUILD_BENCH=OFF) ;;
  tsan)    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLOWRT_SANITIZE=thread -DFLOWRT_BUILD_BENCH=OFF) ;;
  clang)   flags=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DFLOWRT_WERROR=ON -DFLOWRT_BUILD_BENCH=OFF
                  -DFLOWRT_TCMALLOC=OFF) ;;
  *) echo "usage: scripts/build.sh release|asan|tsan|clang [cmake --build args]" >&2; exit 2 ;;
esac
# ccache, when installed, makes rebuilds of unchanged files free (not needed, not installed by CI).
if command -v ccache >/dev/null 2>&1; then flags+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "build/$flavour" -G Ninja "${flags[@]}" >/dev/null
cmake --build "build/$flavour" -j "$(nproc)" "$@"

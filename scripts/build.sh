#!/usr/bin/env bash
# Configures and builds one flavour of flowrt into build/FLAVOUR.
#   scripts/build.sh release   g++, optimised with debug info; warnings are errors
#   scripts/build.sh asan      clang++ with AddressSanitizer + UndefinedBehaviorSanitizer;
#                              -Wthread-safety checks the locking annotations; warnings
#                              are errors; the libFuzzer targets of fuzz/ are built too
#                              (scripts/fuzz.sh runs them), so everything is compiled with
#                              libFuzzer's coverage instrumentation
#   scripts/build.sh tsan      g++ with ThreadSanitizer
# Environment: FLOWRT_UNITY=OFF compiles file by file (see below).
# Extra arguments go to cmake --build (e.g. --target flowrt).
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
shift || true
# Debug information is line tables only (-g1): enough for symbolised stack traces and
# profiles, and a third less compile time than -g. The sanitizer builds are -O1, as the
# sanitizers recommend: half the compile time of -O2, and their suites barely slower.
case "$flavour" in
  release) flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DFLOWRT_WERROR=ON) ;;
  asan)    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                  -DCMAKE_CXX_COMPILER=clang++ -DFLOWRT_SANITIZE=address,undefined -DFLOWRT_BUILD_FUZZ=ON
                  -DFLOWRT_WERROR=ON -DFLOWRT_BUILD_BENCH=OFF -DFLOWRT_TCMALLOC=OFF -DFLOWRT_CHECK_RECORD_TEXT=ON) ;;
  tsan)    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                  -DFLOWRT_SANITIZE=thread -DFLOWRT_BUILD_BENCH=OFF) ;;
  *) echo "usage: scripts/build.sh release|asan|tsan [cmake --build args]" >&2; exit 2 ;;
esac
# The asan build needs clang and libFuzzer's runtime (scripts/setup-deps.sh installs them).
if [ "$flavour" = asan ]; then FLOWRT_WITH_CLANG=1 scripts/setup-deps.sh; fi
# Unity builds (CMake batches of source files compiled as one) parse the shared headers
# (gtest, nlohmann/json, Boost) once per batch instead of once per file: a third less
# build time. FLOWRT_UNITY=OFF builds file by file (quicker rebuilds of one edited file).
# File-local helpers therefore need names of their own within a target.
flags+=("-DCMAKE_UNITY_BUILD=${FLOWRT_UNITY:-ON}")
# LLVM's linker, when installed (scripts/setup-deps.sh installs it), links a test binary
# three to four times as fast as GNU ld (the ASan server_test: 0.9 s against 3.2 s).
if command -v ld.lld >/dev/null 2>&1; then
  flags+=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld)
fi
# ccache, when installed, makes rebuilds of unchanged files free (not needed, not installed by CI).
if command -v ccache >/dev/null 2>&1; then flags+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "build/$flavour" -G Ninja "${flags[@]}" >/dev/null
cmake --build "build/$flavour" -j "$(nproc)" "$@"

#!/usr/bin/env bash
# The embedding jobs: examples/embedding, a project of a user's own, built against flowrt
# the two ways a user can, and its tests run.
#   installed     the libraries and headers of the release build installed (cmake --install)
#                 into a temporary prefix; the example configured with
#                 find_package(flowrt CONFIG REQUIRED) against that prefix alone, built, and
#                 its tests run; run_expenses.cpp built from the prefix with pkg-config
#                 (flowrt.pc) and run; the schemas found where pkg-config (schemadir) and
#                 the package (flowrt_SCHEMAS_DIR) say; a consumer linking a target flowrt does not export
#                 fails at configure time. The prefix is removed at the end.
#   subdirectory  the example built with add_subdirectory of this tree
#                 (-DEMBEDDING_FLOWRT_SOURCE_DIR), unoptimised to build fast, in
#                 build/embedding-subdir (kept: a rerun rebuilds only what changed), and its
#                 tests run.
# usage: scripts/test-embedding.sh [installed] [subdirectory]   (default: both)
# Builds only the libraries it needs from build/release (scripts/build.sh release first
# when it does not exist). Run by scripts/test.sh after the release suite.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

jobs=("$@")
[ ${#jobs[@]} -gt 0 ] || jobs=(installed subdirectory)
for job in "${jobs[@]}"; do
  case "$job" in
    installed|subdirectory) ;;
    *) echo "usage: scripts/test-embedding.sh [installed] [subdirectory]" >&2; exit 2 ;;
  esac
done

launcher=()
# ccache, when installed, makes rebuilds of unchanged files free (not needed, not installed by CI).
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

seconds_since() { echo $(( $(date +%s) - $1 )); }

prefix=""  # the temporary prefix of the installed job
trap 'if [ -n "$prefix" ]; then rm -rf "$prefix"; fi' EXIT

installed() {
  local start out
  start=$(date +%s)
  if [ ! -f build/release/build.ninja ]; then scripts/build.sh release --target flowrt_runtime; fi
  cmake --build build/release --target flowrt_runtime >/dev/null
  prefix="$(mktemp -d "${TMPDIR:-/tmp}/flowrt-prefix.XXXXXX")"
  for component in headers libraries schemas; do
    cmake --install build/release --prefix "$prefix" --component "$component" >/dev/null
  done

  # The example, found through the installed package only.
  cmake -S examples/embedding -B "$prefix/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >/dev/null
  cmake --build "$prefix/build" -j "$(nproc)"
  (cd "$prefix/build" && ctest --output-on-failure)

  # A program built with pkg-config alone.
  local flags
  flags="$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --static --cflags --libs flowrt)"
  # shellcheck disable=SC2086  # the flags are words
  c++ -std=c++20 examples/embedding/run_expenses.cpp $flags -o "$prefix/run_expenses"
  out="$("$prefix/run_expenses" examples/embedding)"
  if ! grep -q "request_approval completed | EXP-3: no decision in 3 days" <<<"$out"; then
    echo "test-embedding: run_expenses (built with pkg-config) printed:" >&2
    echo "$out" >&2
    return 1
  fi

  # The schemas, where pkg-config and the CMake package say they are.
  local schemadir
  schemadir="$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --variable=schemadir flowrt)"
  for schema in definition events-line config; do
    if [ ! -f "$schemadir/$schema.schema.json" ]; then
      echo "test-embedding: pkg-config's schemadir $schemadir has no $schema.schema.json" >&2
      return 1
    fi
  done

  # Linking a target that does not exist is a configure error, not a link error.
  mkdir -p "$prefix/typo"
  cat >"$prefix/typo/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(typo LANGUAGES CXX)
find_package(flowrt CONFIG REQUIRED)
if(NOT TARGET flowrt::flowrt OR NOT TARGET flowrt::testing)
  message(FATAL_ERROR "flowrt::flowrt and flowrt::testing should both exist")
endif()
if(NOT EXISTS "${flowrt_SCHEMAS_DIR}/definition.schema.json")
  message(FATAL_ERROR "flowrt_SCHEMAS_DIR (${flowrt_SCHEMAS_DIR}) has no definition.schema.json")
endif()
file(WRITE "${CMAKE_BINARY_DIR}/main.cpp" "int main() { return 0; }\n")
add_executable(main "${CMAKE_BINARY_DIR}/main.cpp")
target_link_libraries(main PRIVATE flowrt::flowrt_typo)
CMAKE
  if out="$(cmake -S "$prefix/typo" -B "$prefix/typo/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" 2>&1)" ||
     ! grep -q "flowrt::flowrt_typo" <<<"$out"; then
    echo "test-embedding: linking flowrt::flowrt_typo did not fail at configure time:" >&2
    echo "$out" >&2
    return 1
  fi
  echo "test-embedding: installed: find_package, pkg-config and a misspelt target checked in $(seconds_since "$start") s" >&2
}

subdirectory() {
  local start
  start=$(date +%s)
  cmake -S examples/embedding -B build/embedding-subdir -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
    "${launcher[@]}" -DEMBEDDING_FLOWRT_SOURCE_DIR="$root" >/dev/null
  cmake --build build/embedding-subdir -j "$(nproc)"
  (cd build/embedding-subdir && ctest --output-on-failure)
  echo "test-embedding: add_subdirectory checked in $(seconds_since "$start") s" >&2
}

for job in "${jobs[@]}"; do
  echo "== embedding: $job" >&2
  "$job"
done

#!/usr/bin/env bash
# Installs the Debian packages that flowrt builds and tests with, when any is missing.
# Runs apt-get only if something is missing (as root, or through sudo).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config lld   # lld: scripts/build.sh links with it
  libboost-dev nlohmann-json3-dev libconcurrentqueue-dev libspdlog-dev libhowardhinnant-date-dev libutf8proc-dev libcli11-dev
  libsqlite3-dev sqlite3 libssl-dev
  libpq-dev postgresql   # the postgresql store, and the server its tests start (scripts/pg-test-server.sh)
  libgtest-dev libgmock-dev libbenchmark-dev libgoogle-perftools-dev
  python3 python3-jsonschema python3-yaml
  chromium python3-websockets   # the browser tests of the web viewer (tests/browser/)
)
# The clang toolchain: -Wthread-safety checks and libFuzzer targets.
if [ "${FLOWRT_WITH_CLANG:-1}" = 1 ]; then
  packages+=(clang libclang-rt-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup-deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

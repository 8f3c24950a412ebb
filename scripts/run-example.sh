#!/usr/bin/env bash
# Sets up, builds and runs the main example: examples/incident-triage.
# Arguments go to `flowrt run` (e.g. --format json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh release --target flowrt
build/release/cli/flowrt run examples/incident-triage "$@"

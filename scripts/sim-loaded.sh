#!/usr/bin/env bash
# The simulation's real-thread variants (threads, real-clock) on a machine kept busy: busy
# loops beside the run take the cores from the engine's threads at moments no perturbation
# point chooses, which is how real-clock lock hand-offs meet in orders an idle machine
# rarely shows (docs/RELIABILITY.md, section 4).
#   scripts/sim-loaded.sh [FIRST_SEED=1] [SEEDS=1000] [LOOPS=2] [BINARY=build/release/tests/simulation_test]
# Runs SEEDS seeds of each of the two variants from FIRST_SEED with LOOPS busy loops, and
# stops the loops however the run ends. Exits with the simulation's status; a failing seed
# is printed with its replay command (replay it under the same load: it depends on timing).
# Each variant's parts also check that their share reached every case the generator is for,
# which a share of fewer than about 100 seeds may not: run at least 400 SEEDS.
set -euo pipefail
first=${1:-1}
seeds=${2:-1000}
loops=${3:-2}
binary=${4:-build/release/tests/simulation_test}
[ -x "$binary" ] || { echo "sim-loaded.sh: $binary is not built (scripts/build.sh release)" >&2; exit 2; }
pids=()
stop_loops() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true; }
trap stop_loops EXIT
for _ in $(seq 1 "$loops"); do
  (while :; do :; done) &
  pids+=("$!")
done
FLOWRT_SIM_SEEDS=$seeds FLOWRT_SIM_FIRST=$first "$binary" --gtest_filter='*RealClock*:*ThreadSeeds*'

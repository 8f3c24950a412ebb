#!/usr/bin/env bash
# Lists right after a burst (docs/SCALING.md, "Limits, as built"): one `flowrt serve` node
# on a fresh schema of a PostgreSQL server, examples/incident-triage's flows, every context
# kept; wrk inserts incidents for --seconds, then reads each list route (GET /api/contexts,
# ?status=completed, ?flow=assign_incident) for 5 s with 16 connections. The tables'
# statistics are then as autovacuum left them (none yet, on a fresh schema); --analyze runs
# ANALYZE first.
#   scripts/bench-lists.sh FLOWRT PGURL [--seconds S] [--analyze]
set -euo pipefail
flowrt=$(realpath "$1"); url="$2"; shift 2
seconds=10; analyze=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --analyze) analyze=1; shift ;;
    *) echo "bench-lists.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || apt-get install -y -qq wrk >/dev/null
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/serve-port.sh"
. "$here/scripts/cluster-workspace.sh"
cluster_workspace lists
echo '{"properties": {"durability": "normal"}}' > "$work/config.json"
start_nodes 1
echo "== inserts, $seconds s"
wrk -t 1 -c 64 -d "${seconds}s" -s "$here/bench/http/insert.lua" "http://127.0.0.1:${ports[0]}" \
  | sed -n '/^requests /,$p' | head -3
if [ "$analyze" = 1 ]; then psql "$url" -qc "ANALYZE $schema.contexts; ANALYZE $schema.history"; fi
for q in "" "?status=completed" "?flow=assign_incident"; do
  echo "== GET /api/contexts$q"
  wrk -t 1 -c 16 -d 5s --latency "http://127.0.0.1:${ports[0]}/api/contexts$q" | grep -E 'Requests/sec|^ +(50|99)%'
done

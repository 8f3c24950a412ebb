#!/usr/bin/env bash
# The context list with many contexts (docs/PERFORMANCE.md, "flowrt serve over HTTP"):
# `flowrt serve` on a copy of examples/incident-triage, filled through the API by wrk
# (keep-alive connections inserting incidents, three in four starting a context) for
# SECONDS, then each list request timed three times with curl. Every context is kept (no
# retention), so the store holds them all.
#   scripts/bench-list.sh FLOWRT [--store memory|sqlite] [--seconds S] [--connections N]
# About a million contexts: memory 60 s with 16 connections, sqlite 150 s with 64.
set -euo pipefail
flowrt=$(realpath "$1"); shift
store=memory; seconds=60; connections=16
while [ $# -gt 0 ]; do
  case "$1" in
    --store) store="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    *) echo "bench-list.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || apt-get install -y -qq wrk >/dev/null
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
cp -r "$here/examples/incident-triage/flows" "$work/flows"
case "$store" in
  memory) echo '{"store": "memory"}' > "$work/config.json" ;;
  sqlite) echo '{"store": {"type": "sqlite", "path": "state.db"}, "properties": {"durability": "normal"}}' > "$work/config.json" ;;
  *) echo "bench-list.sh: --store memory or sqlite" >&2; exit 2 ;;
esac
"$flowrt" serve "$work" --listen 127.0.0.1:0 --log-level warn > "$work/serve.out" 2> "$work/serve.err" &
pid=$!
port=""
for _ in $(seq 1 200); do
  port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/serve.out")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { cat "$work/serve.err" >&2; exit 1; }
base="http://127.0.0.1:$port"
wrk -t 1 -c "$connections" -d "${seconds}s" -s "$here/bench/http/insert.lua" "$base" | grep requests_per_s
stats=$(curl -s "$base/api/stats")
echo "contexts $(echo "$stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["contexts_started"])')"
echo "server_rss_mib $(awk '/VmRSS/ {printf "%.0f", $2/1024}' /proc/$pid/status)"
[ -f "$work/state.db" ] && echo "data_file_bytes $(stat -c %s "$work/state.db")"
for q in "/api/contexts?limit=50" "/api/contexts?flow=assign_incident&status=completed&limit=50" \
         "/api/contexts?cursor=500000&limit=50" "/api/contexts?status=error" "/api/flows" "/api/stats"; do
  times=""
  for _ in 1 2 3; do times="$times $(curl -s -o /dev/null -w '%{time_total}' "$base$q")"; done
  echo "$q seconds:$times"
done

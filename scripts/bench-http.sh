#!/usr/bin/env bash
# The HTTP load benchmark (docs/PERFORMANCE.md, "flowrt serve over HTTP"): `flowrt serve` on a
# copy of examples/incident-triage, driven from loopback by wrk (Debian's wrk) with
# keep-alive connections inserting incidents, each starting a flow context. Bounded in
# connections and time. Prints wrk's figures, the contexts the server ran, and its peak RSS.
#   scripts/bench-http.sh FLOWRT [--store memory|sqlite] [--connections N] [--seconds S] [--threads T] [--list]
# --list: the memory store keeps every context (no context_retention), and after the load
# each context-list route is timed three times with curl (the list with many contexts:
# about a million after 60 s with 16 connections on memory, 150 s with 64 on sqlite).
# wrk is a closed loop (each connection sends its next request when the last is answered):
# fewer connections load the server less, which is how the latency at a lower rate is read.
set -euo pipefail
flowrt=$(realpath "$1"); shift
store=memory; connections=16; seconds=10; threads=1; list=0
while [ $# -gt 0 ]; do
  case "$1" in
    --store) store="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --list) list=1; shift ;;
    *) echo "bench-http.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || apt-get install -y -qq wrk >/dev/null
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/serve-port.sh"
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
cp -r "$here/examples/incident-triage/flows" "$work/flows"
case "$store" in
  memory)
    if [ "$list" = 1 ]; then echo '{"store": "memory"}' > "$work/config.json"
    else echo '{"store": "memory", "properties": {"context_retention": 100000}}' > "$work/config.json"; fi ;;
  sqlite) echo '{"store": {"type": "sqlite", "path": "state.db"}, "properties": {"durability": "normal"}}' > "$work/config.json" ;;
  *) echo "bench-http.sh: --store memory or sqlite" >&2; exit 2 ;;
esac
"$flowrt" serve "$work" --listen 127.0.0.1:0 --log-level warn > "$work/serve.out" 2> "$work/serve.err" &
pid=$!
port=$(serve_port "$work/serve.out" "$work/serve.err")
wrk -t "$threads" -c "$connections" -d "${seconds}s" --latency -s "$here/bench/http/insert.lua" "http://127.0.0.1:$port" \
  | sed -n '/^requests /,$p'
stats=$(curl -s "http://127.0.0.1:$port/api/stats")
echo "server_contexts_started $(echo "$stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["contexts_started"])')"
echo "server_peak_rss_mib $(awk '/VmHWM/ {printf "%.1f", $2/1024}' /proc/$pid/status)"
echo "store $store connections $connections seconds $seconds"
if [ "$list" = 1 ]; then
  [ -f "$work/state.db" ] && echo "data_file_bytes $(stat -c %s "$work/state.db")"
  echo "server_rss_mib $(awk '/VmRSS/ {printf "%.0f", $2/1024}' /proc/$pid/status)"
  for q in "/api/contexts?limit=50" "/api/contexts?flow=assign_incident&status=completed&limit=50" \
           "/api/contexts?cursor=500000&limit=50" "/api/contexts?status=error" "/api/flows" "/api/stats"; do
    times=""
    for _ in 1 2 3; do times="$times $(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port$q")"; done
    echo "$q seconds:$times"
  done
fi

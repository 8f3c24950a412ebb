#!/usr/bin/env bash
# The cluster benchmark (docs/SCALING.md): N `flowrt serve --node` processes on one
# PostgreSQL database (a fresh schema of the server URL given), examples/incident-triage's
# flows, and wrk (Debian's wrk) inserting incidents over keep-alive connections — first
# against the leader, then, with N > 1, against every follower at once (their requests are
# forwarded to the leader through the database). Bounded in connections and time. Prints
# wrk's figures for each, and the contexts the cluster ran.
#   scripts/bench-cluster.sh FLOWRT PGURL [--nodes N] [--connections C] [--seconds S] [--keyed] [--reads]
#                            [--lists [--analyze]]
# --keyed: every insert carries an Idempotency-Key of its own (so goes through the inbox,
# on the leader too).
# --reads: then reads of the ended contexts' records (GET /api/contexts/ctx-N, N at
# random), to the leader and through the followers alike; wrk counts an answer of 400 or
# more (a context not found) as an error.
# --lists: every context kept (no context_retention), and after the inserts, lists right
# after the burst (docs/SCALING.md, "Limits, as built"): each list route (GET
# /api/contexts, ?status=completed, ?flow=assign_incident) read from the leader for 5 s
# with 16 connections, the tables' statistics as autovacuum left them (none yet, on a
# fresh schema); with --analyze, ANALYZE runs first. With N > 1, then ?status=completed
# and the unfiltered list from a follower.
# PGURL: a server's URL (scripts/pg-test-server.sh start DIR writes one to DIR/url).
set -euo pipefail
flowrt=$(realpath "$1"); url="$2"; shift 2
nodes=3; connections=64; seconds=10; reads=0; lists=0; analyze=0
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --keyed) export FLOWRT_KEYED=1; shift ;;
    --reads) reads=1; shift ;;
    --lists) lists=1; shift ;;
    --analyze) analyze=1; shift ;;
    *) echo "bench-cluster.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || apt-get install -y -qq wrk >/dev/null
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/serve-port.sh"
. "$here/scripts/cluster-workspace.sh"
cluster_workspace bench
if [ "$lists" = 1 ]; then
  echo '{"properties": {"durability": "normal"}}' > "$work/config.json"
else
  echo '{"properties": {"durability": "normal", "context_retention": 1000}}' > "$work/config.json"
fi
start_nodes "$nodes"
echo "nodes $nodes connections $connections seconds $seconds"
echo "== to the leader (n1)"
wrk -t 1 -c "$connections" -d "${seconds}s" --latency -s "$here/bench/http/insert.lua" "http://127.0.0.1:${ports[0]}" \
  | sed -n '/^requests /,$p'
# wrk with script $1 against every follower at once, each with its share of the connections.
through_followers() {
  echo "== to the $((nodes - 1)) followers at once, $((connections / (nodes - 1))) connections each"
  wrks=()
  for i in $(seq 1 $((nodes - 1))); do
    wrk -t 1 -c "$((connections / (nodes - 1)))" -d "${seconds}s" --latency -s "$1" \
      "http://127.0.0.1:${ports[$i]}" > "$work/wrk$i.raw" &
    wrks+=($!)
  done
  for w in "${wrks[@]}"; do wait "$w"; done
  for i in $(seq 1 $((nodes - 1))); do sed -n '/^requests /,$p' "$work/wrk$i.raw" > "$work/wrk$i.txt"; done
  for i in $(seq 1 $((nodes - 1))); do echo "-- follower n$((i + 1))"; cat "$work/wrk$i.txt"; done
}
if [ "$nodes" -gt 1 ]; then through_followers "$here/bench/http/insert.lua"; fi
started() {
  curl -s "http://127.0.0.1:${ports[0]}/api/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["contexts_started"])'
}
contexts=$(started)
echo "cluster_contexts_started $contexts"
if [ "$reads" = 1 ]; then
  # Every context started has ended once none runs (a triage context does not wait).
  for _ in $(seq 1 100); do
    [ "$(curl -s "http://127.0.0.1:${ports[0]}/api/stats" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["running_contexts"] + s["queue_depth"])')" = 0 ] && break
    sleep 0.1
  done
  export FLOWRT_CONTEXTS="$contexts"
  echo "== reads of the $contexts contexts' records, to the leader (n1)"
  wrk -t 1 -c "$connections" -d "${seconds}s" --latency -s "$here/bench/http/read_context.lua" \
    "http://127.0.0.1:${ports[0]}" | sed -n '/^requests /,$p'
  if [ "$nodes" -gt 1 ]; then through_followers "$here/bench/http/read_context.lua"; fi
fi
if [ "$lists" = 1 ]; then
  if [ "$analyze" = 1 ]; then psql "$url" -qc "ANALYZE $schema.contexts; ANALYZE $schema.history"; fi
  for q in "" "?status=completed" "?flow=assign_incident"; do
    echo "== GET /api/contexts$q, to the leader (n1)"
    wrk -t 1 -c 16 -d 5s --latency "http://127.0.0.1:${ports[0]}/api/contexts$q" | grep -E 'Requests/sec|^ +(50|99)%'
  done
  if [ "$nodes" -gt 1 ]; then
    # A follower lists ended contexts by status from the database; any other list is the
    # leader's, through the inbox.
    for q in "?status=completed" ""; do
      echo "== GET /api/contexts$q, to a follower (n2)"
      wrk -t 1 -c 16 -d 5s --latency "http://127.0.0.1:${ports[1]}/api/contexts$q" | grep -E 'Requests/sec|^ +(50|99)%'
    done
  fi
fi

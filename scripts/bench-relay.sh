#!/usr/bin/env bash
# What a follower's relayed event streams cost (docs/SCALING.md): two `flowrt serve --node`
# processes on one PostgreSQL database (a fresh schema of the server URL given),
# examples/incident-triage's flows, and V viewers (curl) holding GET /api/stream open on
# the follower, all passed on from one stream of the leader's (server/shared_stream.h).
# Prints the follower's threads and resident memory before and with the viewers, the
# connections open to the leader's port, and how long E incidents inserted on the leader
# took to reach every viewer.
#   scripts/bench-relay.sh FLOWRT PGURL [--viewers V] [--events E]
# PGURL: a server's URL (scripts/pg-test-server.sh start DIR writes one to DIR/url).
set -euo pipefail
flowrt=$(realpath "$1"); url="$2"; shift 2
viewers=200; events=100
while [ $# -gt 0 ]; do
  case "$1" in
    --viewers) viewers="$2"; shift 2 ;;
    --events) events="$2"; shift 2 ;;
    *) echo "bench-relay.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/serve-port.sh"
. "$here/scripts/cluster-workspace.sh"
cluster_workspace relay
start_nodes 2
follower=${node_pids[1]}
status() { awk -v what="$1" '$1 == what":" {print $2}' "/proc/$follower/status"; }
insert() {
  curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    -d "{\"number\": \"$1\", \"priority\": 1, \"assignment_group\": \"network\"}" \
    "http://127.0.0.1:${ports[0]}/api/tables/incident/records"
}
# Waits (at most 60 s) until every viewer has seen at least $1 contexts end; prints the
# seconds taken.
until_seen() {
  local start=$SECONDS
  while [ $((SECONDS - start)) -lt 60 ]; do
    local missing=0
    for v in $(seq 1 "$viewers"); do
      [ "$(grep -o '"change":"ended"' "$work/v$v" | wc -l)" -ge "$1" ] || { missing=1; break; }
    done
    [ "$missing" = 0 ] && { echo $((SECONDS - start)); return 0; }
    sleep 0.2
  done
  echo "not every viewer saw $1 contexts end within 60 s" >&2
  return 1
}
echo "viewers $viewers events $events"
echo "follower before: threads $(status Threads), VmRSS $(status VmRSS) kB"
for v in $(seq 1 "$viewers"); do
  curl -sN "http://127.0.0.1:${ports[1]}/api/stream" > "$work/v$v" 2>/dev/null &
  pids+=($!)
done
# Every stream open (its first line, "retry:") before the first insert: a stream shows what
# happens after it opened.
for v in $(seq 1 "$viewers"); do
  for _ in $(seq 1 300); do grep -q '^retry:' "$work/v$v" && break; sleep 0.1; done
  grep -q '^retry:' "$work/v$v" || { echo "viewer $v's stream did not open within 30 s" >&2; exit 1; }
done
[ "$(insert INC-FIRST)" = 201 ] || { echo "the first insert failed" >&2; exit 1; }
until_seen 1 > /dev/null
echo "follower with the viewers: threads $(status Threads), VmRSS $(status VmRSS) kB"
echo "connections to the leader's port: $(ss -Htn state established "( dport = :${ports[0]} )" | wc -l)"
start=$(date +%s.%N)
for e in $(seq 1 "$events"); do [ "$(insert "INC-$e")" = 201 ] || { echo "insert $e failed" >&2; exit 1; }; done
until_seen $((events + 1)) > /dev/null
end=$(date +%s.%N)
echo "inserted $events and every viewer saw the last in $(echo "$end - $start" | bc) s"
echo "follower after: threads $(status Threads), VmRSS $(status VmRSS) kB"

# Sourced by the cluster benchmarks (bench-cluster.sh, bench-relay.sh): a workspace of
# their own on the PostgreSQL server $url — a temporary directory holding
# examples/incident-triage's flows, a fresh schema, and nodes started in it — all of it
# removed on exit.
#   cluster_workspace PREFIX   sets $work, $schema, $data (the nodes' --data), $pids
#   start_nodes N              starts nodes n1..nN of $flowrt on free loopback ports;
#                              sets $ports and $node_pids (n1 first: it leads)
# Needs $here (the repository) and $url set, and scripts/serve-port.sh sourced.
cluster_workspace() {
  work=$(mktemp -d)
  schema="$1_$$"
  pids=()
  trap cluster_workspace_cleanup EXIT
  psql "$url" -qc "CREATE SCHEMA $schema" >/dev/null
  data="$url$([[ "$url" == *\?* ]] && echo '&' || echo '?')options=-csearch_path%3D$schema"
  cp -r "$here/examples/incident-triage/flows" "$work/flows"
}

cluster_workspace_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  psql "$url" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
  rm -rf "$work"
}

start_nodes() {
  ports=() node_pids=()
  for i in $(seq 1 "$1"); do
    "$flowrt" serve "$work" --data "$data" --node "n$i" --listen 127.0.0.1:0 --log-level warn \
      > "$work/n$i.out" 2> "$work/n$i.err" &
    pids+=($!); node_pids+=($!)
    ports+=("$(serve_port "$work/n$i.out" "$work/n$i.err")")
  done
}

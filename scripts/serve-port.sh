# Sourced by the benchmark scripts: the port a `flowrt serve` started with
# `--listen 127.0.0.1:0` listens on, read from its standard output.
#   port=$(serve_port OUT_FILE ERR_FILE)
# Waits up to 10 s for the "listening on" line; without it, prints ERR_FILE to standard
# error and fails.
serve_port() {
  local out="$1" err="$2" port=""
  for _ in $(seq 1 200); do
    port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$out")
    [ -n "$port" ] && { echo "$port"; return 0; }
    sleep 0.05
  done
  cat "$err" >&2
  return 1
}

#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests of the postgresql store.
#   scripts/pg-test-server.sh start DIR   initdb a new cluster in a temporary directory,
#                                         start it on a free loopback port, and write its
#                                         connection URL to DIR/url
#   scripts/pg-test-server.sh stop DIR    stop the server DIR/url names and delete its files
#   scripts/pg-test-server.sh restart DIR fast|immediate
#                                         restart it on its port: `fast` ends the sessions
#                                         cleanly, `immediate` as a crash does (the server
#                                         recovers from its WAL); the cluster fault tests
# CTest runs `start` as the fixture `postgres` (FIXTURES_SETUP) and `stop` after the tests
# that need it, also when they fail (FIXTURES_CLEANUP): tests/CMakeLists.txt.
#
# The server runs as an unprivileged user: as root (CI, the tests), the `postgres` user
# that Debian's postgresql package creates, through runuser; otherwise as the caller. It
# listens on 127.0.0.1 only (and a Unix socket in its own directory), with trust
# authentication, fsync and the rest of the settings at their defaults. Without the
# PostgreSQL binaries (Debian's postgresql: scripts/setup-deps.sh installs it) it fails:
# the tests that need it then fail too, they never pass unrun.
set -euo pipefail

usage() { echo "usage: scripts/pg-test-server.sh start|stop DIR, or restart DIR fast|immediate" >&2; exit 2; }
[ $# -eq 2 ] || [ $# -eq 3 ] || usage
action="$1"
state="$2"
mode="${3:-}"

as_owner=()
if [ "$(id -u)" -eq 0 ]; then as_owner=(runuser -u postgres --); fi

bindir() {
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -z "$d" ] || [ ! -x "$d/initdb" ] || [ ! -x "$d/pg_ctl" ]; then
    echo "pg-test-server: no PostgreSQL server binaries in /usr/lib/postgresql/*/bin: install Debian's postgresql (scripts/setup-deps.sh)" >&2
    exit 1
  fi
  echo "$d"
}

stop_server() {
  [ -f "$state/datadir" ] || return 0
  local data
  data="$(cat "$state/datadir")"
  if [ -d "$data/pgdata" ]; then
    "${as_owner[@]}" "$(bindir)/pg_ctl" -D "$data/pgdata" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  rm -rf "$data"
  rm -f "$state/datadir" "$state/url"
}

case "$action" in
  start)
    bin="$(bindir)"
    mkdir -p "$state"
    stop_server  # one left over from a run that did not clean up
    if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
      echo "pg-test-server: no user 'postgres' to run the server as (Debian's postgresql package creates it)" >&2
      exit 1
    fi
    data="$(mktemp -d /tmp/flowrt-pg-test.XXXXXX)"
    echo "$data" >"$state/datadir"
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$data"; fi
    "${as_owner[@]}" "$bin/initdb" -D "$data/pgdata" -U postgres --auth=trust --encoding=UTF8 --locale=C \
      >"$data/initdb.log" 2>&1 || { cat "$data/initdb.log" >&2; exit 1; }
    # Loopback only, trust: no other address reaches it.
    printf 'local all all trust\nhost all all 127.0.0.1/32 trust\n' >"$data/pgdata/pg_hba.conf"
    started=""
    for attempt in 1 2 3 4 5; do
      port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
      if "${as_owner[@]}" "$bin/pg_ctl" -D "$data/pgdata" -l "$data/server.log" -w -t 60 \
           -o "-p $port -k $data -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null 2>&1; then
        started=1
        break
      fi
    done
    if [ -z "$started" ]; then
      echo "pg-test-server: the server did not start:" >&2
      cat "$data/server.log" >&2 || true
      exit 1
    fi
    url="postgresql://postgres@127.0.0.1:$port/postgres"
    echo "$url" >"$state/url"
    echo "pg-test-server: $url (files in $data)"
    ;;
  stop)
    stop_server
    echo "pg-test-server: stopped"
    ;;
  restart)
    case "$mode" in fast|immediate) ;; *) usage ;; esac
    [ -f "$state/datadir" ] || { echo "pg-test-server: no server in $state" >&2; exit 1; }
    data="$(cat "$state/datadir")"
    # pg_ctl restart starts it again with the options it last started with (postmaster.opts).
    "${as_owner[@]}" "$(bindir)/pg_ctl" -D "$data/pgdata" -l "$data/server.log" -m "$mode" -w -t 60 restart \
      >/dev/null 2>&1 || { echo "pg-test-server: the server did not restart:" >&2; tail -n 20 "$data/server.log" >&2; exit 1; }
    echo "pg-test-server: restarted ($mode)"
    ;;
  *) usage ;;
esac

#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster for the tests, on loopback only, and prints ONE line
# on stdout (all logs go to stderr):
#   export ROZ_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:54329/roz_test
# Use it as:   eval "$(bash .ci/postgres.sh)"        stop it:  bash .ci/postgres.sh stop
# A cluster it started that still answers is reused (its databases are left as they are).
# It installs nothing: the PostgreSQL server binaries must be there (Debian: apt-get install
# postgresql). As root, the server runs as the `postgres` user (else `nobody`).
# Settings: ROZ_PG_PORT (default 54329), ROZ_PG_DB (default roz_test), ROZ_PG_BIN (bin dir).
set -euo pipefail
exec 3>&1 1>&2 # stdout is reserved for the export line

port=${ROZ_PG_PORT:-54329}
db=${ROZ_PG_DB:-roz_test}
state="${TMPDIR:-/tmp}/roz-ci-postgres.$port" # remembers the cluster dir for `stop`

find_bin() {
  if [ -n "${ROZ_PG_BIN:-}" ]; then echo "$ROZ_PG_BIN"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return; fi
  echo "postgres.sh: no PostgreSQL server binaries (initdb) found; install the postgresql package" >&2
  exit 1
}

user=""
if [ "$(id -u)" = 0 ]; then
  if id postgres >/dev/null 2>&1; then user=postgres; else user=nobody; fi
fi
# fd 3 (our stdout) is closed for every child: a server holding it would keep `$(…)` waiting.
as_pg() { if [ -n "$user" ]; then runuser -u "$user" -- "$@" 3>&-; else "$@" 3>&-; fi; }

bin=$(find_bin)

stop_cluster() {
  [ -f "$state" ] || return 0
  local dir
  dir=$(cat "$state")
  if [ -d "$dir/data" ]; then as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true; fi
  rm -rf "$dir" "$state"
}

case "${1:-start}" in
  stop)
    stop_cluster
    echo "postgres.sh: stopped"
    exit 0
    ;;
  start) ;;
  *)
    echo "usage: $0 [start|stop]" >&2
    exit 2
    ;;
esac

# A cluster this script started and that still answers is shared, not restarted: several test
# runs (or developers' shells) on one machine then use one server, each in databases of its own.
if [ -f "$state" ] && as_pg "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d "$db" -qAtc "SELECT 1" >/dev/null 2>&1; then
  echo "postgres.sh: reusing the running cluster in $(cat "$state") on 127.0.0.1:$port, database $db"
  echo "export ROZ_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:$port/$db" >&3
  exit 0
fi
stop_cluster # a cluster left by an earlier run on this port that no longer answers
dir=$(mktemp -d "${TMPDIR:-/tmp}/roz-ci-pg.XXXXXX")
echo "$dir" >"$state"
[ -z "$user" ] || chown "$user" "$dir"
chmod 700 "$dir"

fail() {
  echo "postgres.sh: $1" >&2
  [ -f "$dir/server.log" ] && tail -n 30 "$dir/server.log" >&2
  stop_cluster
  exit 1
}

echo "postgres.sh: initdb in $dir ($bin)"
as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-locale --no-sync >/dev/null || fail "initdb failed"
# Throwaway data: no fsync. Loopback TCP plus a socket in the cluster dir (never /var/run).
as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200" \
  start >/dev/null || fail "server did not start on 127.0.0.1:$port"
as_pg "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -qc "CREATE DATABASE $db" \
  || fail "could not create database $db"

echo "postgres.sh: $("$bin/postgres" --version 3>&-) on 127.0.0.1:$port, database $db"
echo "export ROZ_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:$port/$db" >&3

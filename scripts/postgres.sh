#!/usr/bin/env bash
# A throw-away PostgreSQL server for the queue and concurrency tests (CI and developers).
#   scripts/postgres.sh start   -> prints the DATABASE_URL to use
#   scripts/postgres.sh stop
# Installs Debian's postgresql when missing (as root). The cluster lives under /tmp and is
# owned by the postgres system user, because the server refuses to run as root.
set -euo pipefail
PORT=${DIKKAT_PG_PORT:-54329}
DATA=${DIKKAT_PG_DATA:-/tmp/dikkat-pg-$PORT}
LOG=$DATA.log

pg_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$dir" ] && echo "$dir"
}

as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
  start)
    if [ -z "$(pg_bin)" ]; then
      if [ "$(id -u)" = 0 ]; then
        echo "==> Installing postgresql" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
      else
        echo "PostgreSQL is missing: sudo apt-get install postgresql" >&2
        exit 1
      fi
    fi
    BIN=$(pg_bin)
    if [ ! -f "$DATA/PG_VERSION" ]; then
      mkdir -p "$DATA"
      [ "$(id -u)" = 0 ] && chown postgres:postgres "$DATA"
      as_postgres "$BIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
    fi
    if ! as_postgres "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
      touch "$LOG" && { [ "$(id -u)" = 0 ] && chown postgres:postgres "$LOG" || true; }
      as_postgres "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -o "-p $PORT -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off" start >/dev/null
    fi
    as_postgres "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='dikkat'" | grep -q 1 \
      || as_postgres "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres dikkat
    echo "postgres://postgres@127.0.0.1:$PORT/dikkat"
    ;;
  stop)
    BIN=$(pg_bin) || exit 0
    [ -f "$DATA/PG_VERSION" ] && as_postgres "$BIN/pg_ctl" -D "$DATA" -m fast stop >/dev/null 2>&1 || true
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac

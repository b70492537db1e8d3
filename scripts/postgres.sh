#!/usr/bin/env bash
# A real PostgreSQL 16 with pgvector on loopback for the pgvector tests, from PyPI only:
# the `pgserver` wheel bundles PostgreSQL 16.2 and pgvector 0.6.2 (Debian has no pgvector for 15).
#
#   scripts/postgres.sh start   # install if needed, initdb once, start on 127.0.0.1:$PGPORT
#   scripts/postgres.sh stop
#   scripts/postgres.sh url     # print the DSN the tests read from RAGEVAL_TEST_DATABASE_URL
#
# PostgreSQL refuses to run as root, so the server runs as user `postgres` (created if missing)
# from a venv outside /root (mode 700 there would hide the binaries from that user).
set -euo pipefail

HOME_DIR=${RAGEVAL_PG_HOME:-/var/lib/rageval-pg}
PGPORT=${PGPORT:-54329}
PGUSER_OS=${PGUSER_OS:-postgres}
VENV=$HOME_DIR/venv
DATA=$HOME_DIR/data
SOCK=$HOME_DIR/socket
LOG=$HOME_DIR/server.log
DB=rageval_test

step() { echo "postgres: $*"; }

as_pg() {
  if [[ $(id -un) == "$PGUSER_OS" ]]; then "$@"; else runuser -u "$PGUSER_OS" -- "$@"; fi
}

pgbin() {
  # pgserver's wheel keeps the PostgreSQL binaries in pginstall/bin beside the package.
  local bin
  for bin in "$VENV"/lib/python3*/site-packages/pgserver/pginstall/bin; do echo "$bin"; return; done
  echo "postgres: pgserver's binaries are missing under $VENV" >&2
  return 1
}

install() {
  if ! id "$PGUSER_OS" >/dev/null 2>&1; then
    step "creating user $PGUSER_OS"
    useradd --system --no-create-home --shell /usr/sbin/nologin "$PGUSER_OS"
  fi
  mkdir -p "$HOME_DIR"
  chmod 755 "$HOME_DIR"
  if [[ ! -x $VENV/bin/python ]]; then
    step "creating venv $VENV"
    python3 -m venv "$VENV"
  fi
  if ! "$VENV/bin/python" -c "import pgserver" 2>/dev/null; then
    step "installing pgserver==0.1.4 (PostgreSQL 16.2 + pgvector 0.6.2) from PyPI"
    "$VENV/bin/pip" install --quiet pgserver==0.1.4
  fi
  chmod -R a+rX "$VENV"
  local bin; bin=$(pgbin)
  if [[ ! -s $DATA/PG_VERSION ]]; then
    step "initdb $DATA"
    mkdir -p "$DATA"
    chown "$PGUSER_OS" "$DATA"
    chmod 700 "$DATA"
    as_pg "$bin/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
    # One role that needs a password, so a test can present a wrong one (first match wins).
    as_pg sed -i '1i host all rageval_pw 127.0.0.1/32 scram-sha-256' "$DATA/pg_hba.conf"
  fi
  mkdir -p "$SOCK"
  chown "$PGUSER_OS" "$SOCK"
  touch "$LOG"
  chown "$PGUSER_OS" "$LOG"
}

url() {
  echo "postgresql://postgres@127.0.0.1:$PGPORT/$DB"
}

start() {
  install
  local bin; bin=$(pgbin)
  if as_pg "$bin/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    step "already running on 127.0.0.1:$PGPORT"
  else
    step "starting on 127.0.0.1:$PGPORT (log $LOG)"
    as_pg "$bin/pg_ctl" -D "$DATA" -l "$LOG" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $SOCK" start >/dev/null
  fi
  export PGOPTIONS="-c client_min_messages=warning"
  local psql=("$bin/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -v ON_ERROR_STOP=1 -qAt)
  if [[ $("${psql[@]}" -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB'") != 1 ]]; then
    step "creating database $DB"
    "${psql[@]}" -d postgres -c "CREATE DATABASE $DB"
  fi
  "${psql[@]}" -d "$DB" -c "CREATE EXTENSION IF NOT EXISTS vector"
  if [[ $("${psql[@]}" -d postgres -c "SELECT 1 FROM pg_roles WHERE rolname = 'rageval_pw'") != 1 ]]; then
    "${psql[@]}" -d postgres -c "CREATE ROLE rageval_pw LOGIN PASSWORD 'right-password'"
  fi
  step "pgvector $("${psql[@]}" -d "$DB" -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'") ready: $(url)"
}

stop() {
  [[ -x $VENV/bin/python ]] || return 0
  local bin; bin=$(pgbin)
  if [[ -s $DATA/PG_VERSION ]] && as_pg "$bin/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    as_pg "$bin/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    step "stopped"
  fi
}

case ${1:-} in
  install) install ;;
  start) start ;;
  stop) stop ;;
  url) url ;;
  *) echo "usage: $0 install|start|stop|url" >&2; exit 2 ;;
esac

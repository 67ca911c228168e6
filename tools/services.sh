#!/usr/bin/env bash
# Starts the services the scale-out tests use, where they are installed,
# and prints the shell lines that point the tests at them (the test task
# evaluates them): PostgreSQL from Debian's postgresql package (a cluster
# started with pg_ctlcluster, a role "stepthrough" that may create the
# tests' throw-away databases), and names Debian's nats-server binary (the
# tests start their own nats-server processes on free ports). Prints
# nothing for a service that is not installed; the tests that need it then
# say so when they skip. A cluster it had to start is named in
# STEPTHROUGH_STARTED_PG, and `services.sh stop` stops that one alone (the
# test task does, so a test run leaves no service running that was not
# running before).
set -uo pipefail

if [ "${1:-}" = stop ]; then
  if [ -n "${STEPTHROUGH_STARTED_PG:-}" ]; then
    read -r ver name <<<"$STEPTHROUGH_STARTED_PG"
    if [ "$(id -u)" = 0 ]; then pg_ctlcluster "$ver" "$name" stop; else sudo -n pg_ctlcluster "$ver" "$name" stop; fi >&2 || true
  fi
  exit 0
fi

if [ -n "${STEPTHROUGH_POSTGRES:-}" ]; then
  echo "export STEPTHROUGH_POSTGRES='$STEPTHROUGH_POSTGRES'"
elif command -v pg_lsclusters >/dev/null 2>&1; then
  as_postgres() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"
    elif sudo -n true 2>/dev/null; then sudo -n -u postgres "$@"
    else return 1; fi
  }
  start() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi
  }
  read -r ver name port status _ < <(pg_lsclusters --no-header | head -1)
  if [ -n "${ver:-}" ]; then
    if [ "$status" != online ] && start pg_ctlcluster "$ver" "$name" start >&2; then
      echo "export STEPTHROUGH_STARTED_PG='$ver $name'"
    fi
    if as_postgres psql -p "$port" -qtAc "SELECT 1" >/dev/null 2>&1; then
      as_postgres psql -p "$port" -qc "DO \$\$ BEGIN
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'stepthrough') THEN
          CREATE ROLE stepthrough LOGIN CREATEDB PASSWORD 'stepthrough';
        END IF; END \$\$;" >&2
      echo "export STEPTHROUGH_POSTGRES='postgres://stepthrough:stepthrough@127.0.0.1:$port/postgres?sslmode=disable'"
    else
      echo "services.sh: PostgreSQL $ver/$name is installed but could not be started or reached (it needs root or sudo)" >&2
    fi
  fi
fi
for bin in "${STEPTHROUGH_NATS_SERVER:-}" nats-server /usr/sbin/nats-server; do
  if [ -n "$bin" ] && command -v "$bin" >/dev/null 2>&1; then
    echo "export STEPTHROUGH_NATS_SERVER='$(command -v "$bin")'"
    break
  fi
done
exit 0

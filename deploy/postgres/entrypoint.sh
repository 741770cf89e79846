#!/bin/sh
# Initialises the cluster on first start, then runs postgres in the foreground (SIGTERM: smart
# shutdown; the container's stop grace period should allow it to finish).
set -eu
bin=/usr/lib/postgresql/15/bin
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then
    password=$(tr -d '\r\n' <"$POSTGRES_PASSWORD_FILE")
  else
    password=${POSTGRES_PASSWORD:-}
  fi
  [ -n "$password" ] || { echo "set POSTGRES_PASSWORD_FILE or POSTGRES_PASSWORD" >&2; exit 1; }
  pwfile=$(mktemp)
  printf '%s\n' "$password" >"$pwfile"
  # Local (socket, inside this container only) connections trust; network ones need the password.
  "$bin/initdb" -D "$PGDATA" -U scalecast --pwfile="$pwfile" --auth-local=trust \
    --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "host all all ::/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  "$bin/pg_ctl" -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/tmp" -w \
    start >/dev/null
  "$bin/psql" -v ON_ERROR_STOP=1 -h /tmp -U scalecast -d postgres \
    -c "CREATE DATABASE scalecast" >/dev/null
  "$bin/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp

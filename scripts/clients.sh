#!/usr/bin/env bash
# The PostgreSQL clients the `hudisql serve` tests connect with, from Debian's packages.
#   scripts/clients.sh install   install psql, the JDBC driver and psqlODBC if absent
# (postgresql-client, libpostgresql-jdbc-java, odbc-postgresql + unixodbc; pyodbc comes
# from the project's test extra). Idempotent; needs root or sudo when something is missing.
set -euo pipefail

missing() {
  command -v psql >/dev/null 2>&1 || echo postgresql-client
  [ -f /usr/share/java/postgresql.jar ] || echo libpostgresql-jdbc-java
  odbcinst -q -d -n "PostgreSQL Unicode" >/dev/null 2>&1 || echo "odbc-postgresql unixodbc"
  command -v javac >/dev/null 2>&1 || echo default-jdk-headless
}

case "${1:-}" in
  install)
    packages=$(missing | tr '\n' ' ')
    if [ -z "${packages// /}" ]; then exit 0; fi
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null 2>&1 || { echo "clients.sh: need root or sudo to apt-get install $packages" >&2; exit 1; }
      SUDO="sudo"
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq $packages >/dev/null
    ;;
  *)
    sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac

#!/usr/bin/env bash
# PostgreSQL for the catalog tests and benchmarks, from Debian's packages.
#   scripts/postgres.sh install   install the server binaries if absent (idempotent)
#   scripts/postgres.sh bindir    print the directory holding initdb and pg_ctl
# The tests start their own throw-away server (tests/catalog/pg_server.py); nothing here
# starts or configures the system's PostgreSQL service.
set -euo pipefail

bindir() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
  done
  return 1
}

case "${1:-}" in
  install)
    if bindir >/dev/null; then exit 0; fi
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null 2>&1 || { echo "postgres.sh: need root or sudo to apt-get install postgresql" >&2; exit 1; }
      SUDO="sudo"
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq postgresql >/dev/null
    bindir >/dev/null || { echo "postgres.sh: postgresql installed but initdb/pg_ctl not found" >&2; exit 1; }
    ;;
  bindir)
    bindir || { echo "postgres.sh: PostgreSQL is not installed; run scripts/postgres.sh install" >&2; exit 1; }
    ;;
  *)
    sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac

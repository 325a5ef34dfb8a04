#!/usr/bin/env bash
# Installs what tdebench needs on a fresh Debian 12 (run as root), idempotently: Debian
# packages only when missing, then a virtualenv in .venv with tdebench and its pinned deps.
#
# Usage: scripts/install.sh [--servers] [--test]
#   --servers  also the server engines: MariaDB, PostgreSQL, gocryptfs + FUSE
#   --test     the servers, plus pytest, headless Chromium (the report screenshot test) and the
#              openssl command (raw cipher figures checked against `openssl speed`)
#
# The servers' own system services are not started (tdebench starts private instances on
# free loopback ports): a policy-rc.d refuses service starts while the packages install.
set -euo pipefail
cd "$(dirname "$0")/.."

servers=0 test=0
for arg in "$@"; do
  case "$arg" in
    --servers) servers=1 ;;
    --test) servers=1 test=1 ;;
    *) echo "usage: scripts/install.sh [--servers] [--test]" >&2; exit 2 ;;
  esac
done

need=()
missing() { ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if [ "$servers" = 1 ]; then
  for pkg in mariadb-server mariadb-backup postgresql postgresql-contrib gocryptfs fuse3; do
    missing "$pkg" && need+=("$pkg")
  done
fi
if [ "$test" = 1 ] && [ ! -x /usr/bin/chromium ]; then need+=(chromium); fi
if [ "$test" = 1 ] && ! command -v openssl >/dev/null 2>&1; then need+=(openssl); fi
if [ ${#need[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  policy=/usr/sbin/policy-rc.d
  placed=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && placed=1
  fi
  trap '[ "$placed" = 1 ] && rm -f "$policy"' EXIT
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
extra=""
[ "$test" = 1 ] && extra="[test]"
stamp=".venv/.installed${extra}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/pip install --quiet --upgrade pip
  .venv/bin/pip install --quiet -e ".${extra}"
  touch "$stamp"
fi

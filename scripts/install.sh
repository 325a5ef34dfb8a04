#!/usr/bin/env bash
# Installs what tdebench needs on a fresh Debian 12 (run as root), idempotently: Debian
# packages only when missing, then a virtualenv in .venv with tdebench and its pinned deps.
#
# Usage: scripts/install.sh [--servers] [--test] [--unit]
#   --servers  also the server engines: MariaDB, PostgreSQL, gocryptfs + FUSE, bindfs (fs-passthrough)
#   --test     the servers, plus the Python test tools (the `test` extra), Dask distributed (the
#              `cluster` extra: the cluster tests start real workers), headless Chromium
#              (the report screenshot test) and the openssl command (raw cipher figures checked
#              against `openssl speed`)
#   --unit     only the Python test tools, what the unit tier (`scripts/test.sh --fast`) needs:
#              no Debian package once .venv exists, so no root
#
# The servers' own system services are not started (tdebench starts private instances on
# free loopback ports): a policy-rc.d refuses service starts while the packages install.
set -euo pipefail
cd "$(dirname "$0")/.."

servers=0 test=0 unit=0
for arg in "$@"; do
  case "$arg" in
    --servers) servers=1 ;;
    --test) servers=1 test=1 ;;
    --unit) unit=1 ;;
    *) echo "usage: scripts/install.sh [--servers] [--test] [--unit]" >&2; exit 2 ;;
  esac
done

need=()
missing() { ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ "$unit" = 0 ] || [ ! -x .venv/bin/python ]; then  # --unit: venv only to make a missing .venv
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
fi
if [ "$servers" = 1 ]; then
  for pkg in mariadb-server mariadb-backup postgresql postgresql-contrib gocryptfs fuse3 bindfs; do
    missing "$pkg" && need+=("$pkg")
  done
fi
if [ "$test" = 1 ] && [ ! -x /usr/bin/chromium ]; then need+=(chromium); fi
if [ "$test" = 1 ] && ! command -v openssl >/dev/null 2>&1; then need+=(openssl); fi
SECONDS=0
step() { echo "install: $*"; }
done_step() { echo "install:   done in ${SECONDS} s"; SECONDS=0; }

# apt-get's output goes to a log (its tail is shown if it fails); a line every tenth of the
# packages it sets up shows that it moves.
apt_progress() {
  local total=$1 log=$2 count=0 shown=0 line
  while IFS= read -r line; do
    printf '%s\n' "$line" >> "$log"
    case "$line" in
      "Setting up "*)
        count=$((count + 1))
        if [ $((count * 10 / total)) -gt "$shown" ] || [ "$count" = "$total" ]; then
          shown=$((count * 10 / total))
          echo "install:   set up $count of $total packages (${SECONDS} s)"
        fi ;;
    esac
  done
}

if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" != 0 ]; then
  echo "install: the Debian packages ${need[*]} are missing; installing them needs root" >&2
  exit 1
fi
if [ ${#need[@]} -gt 0 ]; then
  step "Debian packages ${need[*]} and what they depend on (a few minutes on a fresh machine)"
  export DEBIAN_FRONTEND=noninteractive
  policy=/usr/sbin/policy-rc.d
  placed=0 log=$(mktemp /tmp/tdebench-apt.XXXXXX.log)
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && placed=1
  fi
  trap '[ "$placed" = 1 ] && rm -f "$policy"' EXIT
  apt-get update -qq
  total=$(apt-get install -s -y --no-install-recommends "${need[@]}" | grep -c '^Inst ' || true)
  step "  apt-get install: $total package(s)"
  if ! apt-get install -y --no-install-recommends "${need[@]}" 2>&1 | apt_progress "$((total > 0 ? total : 1))" "$log"
  then
    echo "install: apt-get install failed; the end of its output ($log):" >&2
    tail -n 25 "$log" >&2
    exit 1
  fi
  rm -f "$log"
  done_step
fi

if [ ! -x .venv/bin/python ]; then
  step "a Python virtual environment in .venv"
  python3 -m venv .venv
fi
extra=""
if [ "$unit" = 1 ]; then extra="[test]"; fi
if [ "$test" = 1 ]; then extra="[test,cluster]"; fi  # the cluster tests start real Dask workers
stamp=".venv/.installed${extra}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  step "tdebench${extra} and its pinned Python packages into .venv (pip, about a minute)"
  .venv/bin/pip install --quiet --upgrade pip
  .venv/bin/pip install --quiet -e ".${extra}"
  touch "$stamp"
  done_step
fi

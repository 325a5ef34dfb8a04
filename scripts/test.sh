#!/usr/bin/env bash
# The whole test suite: installs what it needs, runs the gates (ruff and mypy, set in
# pyproject.toml; one failing fails the run), then unit, contract and integration tests against
# real engines, and lists the 25 slowest tests (the suite must stay under 20 minutes).
#
# Usage: scripts/test.sh [--fast] [pytest args]
#   --fast  only the unit tier (tests/unit, `-m unit`) on every core: no root, no servers, no
#           browser, under a minute; installs only the Python test tools (scripts/install.sh --unit)
#
# pytest's temporary directories (test databases, plaintext included) go to a fresh directory
# made here and removed when the script ends, however it ends; the exit code is pytest's
# (130 when interrupted).
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = --fast ]; then
  fast=1
  shift
fi
if [ "$fast" = 1 ]; then
  scripts/install.sh --unit
else
  scripts/install.sh --test
  .venv/bin/ruff check src tests bench
  .venv/bin/mypy
fi

basetemp=$(mktemp -d "${TMPDIR:-/tmp}/pytest-tdebench.XXXXXX")
# --one-file-system: a mount a failed test left behind is not followed into
trap 'rm -rf --one-file-system -- "$basetemp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
args=(-q -p no:cacheprovider --basetemp "$basetemp")
if [ "$fast" = 1 ]; then
  # testpaths: tests/unit unless the arguments name other paths; -m unit: never another tier
  args+=(-o testpaths=tests/unit -m unit --numprocesses auto --durations=10)
else
  args+=(--durations=25)
fi
status=0
.venv/bin/python -m pytest "${args[@]}" "$@" || status=$?
exit "$status"

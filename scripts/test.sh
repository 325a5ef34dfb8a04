#!/usr/bin/env bash
# The whole test suite: installs what it needs, runs the gates (ruff and mypy, set in
# pyproject.toml; one failing fails the run), then the unit tier on every core, the contract
# and integration tests against real engines two files at a time, and the `serial` tests alone,
# and lists the slowest tests and files (the suite must stay under 20 minutes on 2 cores).
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
status=0
if [ "$fast" = 1 ]; then
  # testpaths: tests/unit unless the arguments name other paths; -m unit: never another tier
  .venv/bin/python -m pytest "${args[@]}" -o testpaths=tests/unit -m unit --numprocesses auto --durations=10 "$@" \
    || status=$?
elif [ $# -gt 0 ]; then
  .venv/bin/python -m pytest "${args[@]}" --durations=25 "$@" || status=$?
else
  # the unit tier (pure Python, no servers) on every core; then contract and integration tests,
  # a test file per worker, two at a time (each test starts its own servers, mounts and clusters
  # on free ports in its own directories; both cores are 93-99% busy meanwhile: the suite is
  # CPU-bound, and running the unit tier beside them gained nothing), the
  # longest files first (tests/conftest.py's LONGEST_FIRST; --no-loadscope-reorder keeps that
  # order) so both workers finish close together; then the `serial` ones alone (they bound a
  # time: Ctrl-C's 5 s, a key derivation's share of an open). Every pass always runs.
  keep() { s=$?; if [ "$status" = 0 ]; then status=$s; fi; }
  .venv/bin/python -m pytest "${args[@]}" -m unit --numprocesses auto --durations=5 || keep
  .venv/bin/python -m pytest "${args[@]}" -m "not unit and not serial" --numprocesses 2 --dist loadfile \
    --no-loadscope-reorder --durations=25 || keep
  .venv/bin/python -m pytest "${args[@]}" -m serial --durations=10 || keep
fi
exit "$status"

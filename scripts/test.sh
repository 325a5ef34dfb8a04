#!/usr/bin/env bash
# The whole test suite: installs what it needs, runs the gates (ruff; their settings are in
# pyproject.toml), then unit, contract and integration tests against real engines, and lists the
# 25 slowest tests (the suite must stay under 20 minutes). A failing gate fails the run.
#
# Usage: scripts/test.sh [--fast] [pytest args]
#   --fast  only the unit tier (tests/unit, `-m unit`) on every core: no root, no servers, no
#           browser, under a minute; installs only the Python test tools (scripts/install.sh --unit)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --fast ]; then
  shift
  scripts/install.sh --unit
  # testpaths: tests/unit unless the arguments name other paths; -m unit: never another tier
  exec .venv/bin/python -m pytest -q -p no:cacheprovider -o testpaths=tests/unit -m unit \
    --numprocesses auto --durations=10 "$@"
fi
scripts/install.sh --test
.venv/bin/ruff check src tests
exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "$@"

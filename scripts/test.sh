#!/usr/bin/env bash
# The whole test suite: installs what it needs, runs the gates (ruff and mypy, set in
# pyproject.toml; one failing fails the run), then unit, contract and integration tests against
# real engines, and lists the 25 slowest tests (the suite must stay under 20 minutes).
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
.venv/bin/mypy
exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "$@"

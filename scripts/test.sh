#!/usr/bin/env bash
# The whole test suite: installs what it needs, then runs unit, contract and integration tests
# against real engines, and lists the 25 slowest tests (the suite must stay under 20 minutes).
# Usage: scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh --test
exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "$@"

#!/usr/bin/env bash
# The main job on the embedded engines: install, run the default plan, write the report.
# Usage: scripts/demo.sh [OUT_DIR]   (default results/quick; an earlier run there is replaced)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
exec .venv/bin/tdebench run --out "${1:-results/quick}" --force

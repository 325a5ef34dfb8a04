#!/usr/bin/env bash
# The main job on the embedded engines: install, run the default plan, write the report.
# Usage: scripts/demo.sh [OUT_DIR]   (default results/quick; an earlier run there is replaced)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
out="${1:-results/quick}"
status=0
.venv/bin/tdebench run --out "$out" --force || status=$?
echo "report: $out/report.html  (also report.md, summary.csv, queries.csv, verdicts.csv)"
exit "$status"

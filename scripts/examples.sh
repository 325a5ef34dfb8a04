#!/usr/bin/env bash
# Re-runs the published examples under docs/examples/: each is the built-in plan of its name, run
# into a fresh directory and then copied over the example's files (its README.md is kept: its
# figures carry markers that tests/unit/test_doc_figures.py checks against the new run, and says
# which no longer hold). Run it on a quiet machine: the examples' intervals are only as narrow as
# the machine is quiet.
#
# With --rebuild it runs nothing: each example's report is built again from its stored raw data
# (what tests/integration/test_examples.py checks after a change to the report).
#
# Usage: scripts/examples.sh [--rebuild] [NAME...]   (default: every example; e.g. scripts/examples.sh quick)
set -euo pipefail
cd "$(dirname "$0")/.."

rebuild=0
if [ "${1:-}" = --rebuild ]; then
  rebuild=1
  shift
fi
names=("$@")
if [ ${#names[@]} = 0 ]; then
  for dir in docs/examples/*/; do names+=("$(basename "$dir")"); done
fi
for name in "${names[@]}"; do
  if [ ! -f "docs/examples/$name/README.md" ]; then
    echo "examples: no example $name; the examples: $(ls docs/examples | tr '\n' ' ')" >&2
    exit 2
  fi
done
kept=(results.jsonl.xz plan.toml manifest.json environment.json report.md report.html plots
      queries.csv verdicts.csv resources.csv crud.csv oltp.csv backups.csv maintenance.csv strength.csv)
if [ "$rebuild" = 1 ]; then
  for name in "${names[@]}"; do
    out=$(mktemp -d "${TMPDIR:-/tmp}/tdebench-example-$name.XXXXXX")
    trap 'rm -rf "$out"' EXIT
    cp -r "docs/examples/$name/." "$out/"
    xz -dk "$out/results.jsonl.xz"
    .venv/bin/tdebench report "$out" > /dev/null
    for file in "${kept[@]}"; do  # as published (the raw files are copied back unchanged)
      if [ -e "$out/$file" ] && [ -e "docs/examples/$name/$file" ]; then
        rm -rf "docs/examples/$name/$file" && cp -r "$out/$file" "docs/examples/$name/"
      fi
    done
    rm -rf "$out"
    trap - EXIT
    echo "examples: $name: report rebuilt from its raw data"
  done
  exit 0
fi
servers=""
for name in "${names[@]}"; do
  grep -qE '^name = "(mariadb|postgres)"' "docs/examples/$name/plan.toml" && servers="--servers"
done
scripts/install.sh $servers

for name in "${names[@]}"; do
  out=$(mktemp -d "${TMPDIR:-/tmp}/tdebench-example-$name.XXXXXX")
  trap 'rm -rf "$out"' EXIT
  echo "examples: $name: tdebench run $name (into $out)"
  SECONDS=0
  set +e
  .venv/bin/tdebench run "$name" --out "$out" --force --quiet
  code=$?
  set -e
  if [ "$code" -ne 0 ] && [ "$code" -ne 1 ]; then  # 1: a trial failed or a verdict was not as expected, reported
    echo "examples: $name: tdebench run exited $code; docs/examples/$name is left as it was" >&2
    exit "$code"
  fi
  echo "examples: $name: $((SECONDS / 60)) min $((SECONDS % 60)) s, exit $code"
  target="docs/examples/$name"
  find "$target" -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +
  xz -9 -T0 "$out/results.jsonl"
  for file in "${kept[@]}"; do
    if [ -e "$out/$file" ]; then cp -r "$out/$file" "$target/"; fi
  done
  rm -rf "$out"
  trap - EXIT
done
echo "examples: now update each README's text to the new run, then: .venv/bin/python -m pytest tests/unit/test_doc_figures.py tests/integration/test_examples.py"

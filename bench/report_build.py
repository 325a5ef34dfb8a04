"""How long a user waits for `tdebench report`: one run's report built by the code of an earlier
commit and by the current code, side by side.

    .venv/bin/python bench/report_build.py [RUN] [--before REV] [--repeats 5] [--trials N]

RUN is a run directory, or a published example's (its results.jsonl.xz beside plan.toml and
environment.json); the default is docs/examples/cost-curve, 329 trials. `--trials N` keeps the
records of its first N trials only (the tiny setting CI runs). The code at REV (default: the
last commit before the report build was sped up) is exported with `git archive` into a temporary
directory. Each repetition runs `tdebench report` once with each code, in a fresh process
(imports included: the user waits for them too), the first to go alternating, each on its own
copy of the same raw files. Prints the median wall time of each and their ratio, the same of
their CPU time (on a machine shared with other work the wall time varies with it), then whether
the two builds wrote the same report: report.md, report.html and every CSV byte for byte, every
plot pixel for pixel.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image, ImageChops

from tdebench.store import ENVIRONMENT, PLAN, RESULTS

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "f14cb6c"
"""The last commit before the report build was sped up: what a user waited for until then."""


def raw_files(source: Path, target: Path, trials: int | None) -> int:
    """The run's raw files copied into `target` (results.jsonl decompressed; with `trials`, only
    the records of its first `trials` trials and those of no trial); returns the trials kept."""
    target.mkdir(parents=True)
    # no manifest.json: both codes read the records as the oldest format (the earlier code may not
    # know the run's own), and each build's warning that the manifest is missing is not printed
    for name in (PLAN, ENVIRONMENT):
        shutil.copy(source / name, target / name)
    packed = source / (RESULTS + ".xz")
    opened = lzma.open(packed, "rt") if packed.is_file() else (source / RESULTS).open()
    kept: set[str] = set()
    with opened as lines, (target / RESULTS).open("w") as out:
        for line in lines:
            trial = json.loads(line).get("trial")
            key = json.dumps(trial, sort_keys=True) if trial is not None else None
            if key is not None and key not in kept:
                if trials is not None and len(kept) >= trials:
                    continue
                kept.add(key)
            out.write(line)
    return len(kept)


def exported(rev: str, into: Path) -> Path:
    """The `src` tree of `rev`, as `git archive` gives it, under `into`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def timed_build(src: Path, run_dir: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one `tdebench report` with the code in `src`, its process's start
    included, and its children's (the CPU time says what a machine shared with other work hides in
    the wall time)."""
    environment = {**os.environ, "PYTHONPATH": str(src)}
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    built = subprocess.run([sys.executable, "-m", "tdebench.cli", "report", str(run_dir)], env=environment,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if built.returncode != 0:
        raise SystemExit(f"tdebench report {run_dir} (code in {src}) exited {built.returncode}:\n{built.stderr}")
    wall = time.perf_counter() - started
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime


def differences(before: Path, after: Path) -> list[str]:
    """The files the two builds wrote differently: text byte for byte, PNGs by their pixels."""
    names = sorted({p.relative_to(before).as_posix() for p in before.rglob("*") if p.is_file()}
                   | {p.relative_to(after).as_posix() for p in after.rglob("*") if p.is_file()})
    differ = []
    for name in names:
        if name in (RESULTS, PLAN, ENVIRONMENT, "manifest.json"):
            continue
        old, new = before / name, after / name
        if not (old.is_file() and new.is_file()):
            differ.append(f"{name} (only {'after' if new.is_file() else 'before'})")
        elif name.endswith(".png"):
            with Image.open(old) as a, Image.open(new) as b:
                if a.size != b.size or ImageChops.difference(a.convert("RGB"), b.convert("RGB")).getbbox():
                    differ.append(name)
        elif old.read_bytes() != new.read_bytes():
            differ.append(name)
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", type=Path, default=ROOT / "docs/examples/cost-curve")
    parser.add_argument("--before", default=BEFORE, help="the commit whose code builds the 'before' report")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--trials", type=int, help="keep the records of the first N trials only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="report-build-") as scratch:
        work = Path(scratch)
        codes = {"before": exported(args.before, work), "after": ROOT / "src"}
        trials = raw_files(args.run, work / "before-run", args.trials)
        raw_files(args.run, work / "after-run", args.trials)
        times: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
        for repeat in range(args.repeats):
            order = ("before", "after") if repeat % 2 == 0 else ("after", "before")
            for side in order:
                times[side].append(timed_build(codes[side], work / f"{side}-run"))
        print(f"{args.run.name}, {trials} trials, {args.repeats} alternating repetitions; before: {args.before}")
        for label, which in (("wall", 0), ("CPU", 1)):
            before, after = (statistics.median(t[which] for t in times[side]) for side in ("before", "after"))
            print(f"{label:<4}: before {before:.2f} s, after {after:.2f} s, ratio {before / after:.2f}  (each: "
                  + ", ".join(f"{t[which]:.2f}" for t in times["before"]) + " | "
                  + ", ".join(f"{t[which]:.2f}" for t in times["after"]) + ")")
        differ = differences(work / "before-run", work / "after-run")
        print("same report: every file alike" if not differ else f"differ: {', '.join(differ)}")


if __name__ == "__main__":
    main()

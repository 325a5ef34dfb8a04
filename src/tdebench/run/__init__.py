"""Running a plan: the trial loop that provisions, measures, verifies and records each trial
(runner.py), what a run needs around it — its keys, its interrupt handling, a resume's checks
(setup.py) — and its --out directory: what may be replaced, and the lock one run holds on it
(outdir.py). The command that drives them is cli/run.py."""

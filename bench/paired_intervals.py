"""Which interval should a paired overhead have? Simulated plans, side by side.

tdebench's paired analysis (stats.paired_overhead) uses Student's t on the within-round log
ratios. This script shows why, on simulated plans whose true overhead is known: it compares
that t-interval with a hierarchical bootstrap (rounds, then queries within each round, as
Kalibera & Jones recommend), with and without Hesterberg's small-sample expansion, for a few
numbers of rounds, with and without a trial-to-trial effect (each trial's database differing
a little from the next). For each it prints how often an A/A comparison is called different
(should be ≤ 5%), how often a true 3% overhead is found (power), and the median CI half-width.

    .venv/bin/python bench/paired_intervals.py [--plans 300] [--rounds 3 5 10]

The model: 22 queries of 2–200 ms; a drift shared by every configuration of a round (5%);
5% noise on every query time; optionally a per-trial effect (--trial-effect, default 0 and 3%).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from tdebench.stats import LOG_MEAN, paired_overhead

QUERIES = 22
RESAMPLES = 2000


def simulated(rng: np.random.Generator, rounds: int, effect: float,
              trial_effect: float) -> tuple[np.ndarray, np.ndarray]:
    typical = np.exp(rng.uniform(math.log(0.002), math.log(0.2), QUERIES))
    shared = rng.normal(0.0, 0.05, (rounds, 1))

    def arm(factor: float) -> np.ndarray:
        per_trial = rng.normal(0.0, trial_effect, (rounds, 1))
        return typical * factor * np.exp(shared + per_trial + rng.normal(0.0, 0.05, (rounds, QUERIES)))

    return arm(1.0), arm(1.0 + effect)


def hierarchical(base: np.ndarray, treat: np.ndarray, rng: np.random.Generator, expanded: bool) -> tuple[float, float]:
    """Percentile interval of the mean round log ratio, resampling rounds then queries."""
    rounds, units = base.shape
    logs = np.log(treat) - np.log(base)
    chosen_rounds = rng.integers(0, rounds, (RESAMPLES, rounds))
    chosen_units = rng.integers(0, units, (RESAMPLES, rounds, units))
    means = logs[chosen_rounds[:, :, None], chosen_units].mean(axis=(1, 2))
    tail = 2.5
    if expanded:  # Hesterberg: the normal quantile that matches sqrt(n/(n-1)) t(n-1)
        tail = norm.sf(math.sqrt(rounds / (rounds - 1)) * student_t.ppf(0.975, rounds - 1)) * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return math.expm1(low) * 100, math.expm1(high) * 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plans", type=int, default=300)
    parser.add_argument("--rounds", type=int, nargs="+", default=[3, 5, 10])
    parser.add_argument("--trial-effect", type=float, nargs="+", default=[0.0, 0.03])
    args = parser.parse_args()
    methods = ("t-interval (tdebench)", "hierarchical bootstrap", "hierarchical, expanded")
    print(f"{args.plans} simulated plans per row; A/A: share called different (target ≤ 5%); "
          "3%: share that found a true 3% overhead; ±: median CI half-width in points")
    print(f"{'trial effect':>12} {'rounds':>6}  " + "  ".join(f"{m:>30}" for m in methods))
    for trial_effect in args.trial_effect:
        for rounds in args.rounds:
            cells = []
            for method in range(3):
                found = {0.0: [], 0.03: []}
                widths = []
                for effect in found:
                    rng = np.random.default_rng(rounds * 1000 + int(trial_effect * 100))
                    for _ in range(args.plans):
                        base, treat = simulated(rng, rounds, effect, trial_effect)
                        if method == 0:
                            result = paired_overhead(base, treat, LOG_MEAN)
                            low, high = result.ci_low, result.ci_high
                        else:
                            low, high = hierarchical(base, treat, rng, expanded=method == 2)
                        found[effect].append(not low <= 0.0 <= high)
                        widths.append((high - low) / 2)
                cells.append(f"A/A {np.mean(found[0.0]):5.1%} 3% {np.mean(found[0.03]):5.1%} ±{np.median(widths):4.2f}")
            print(f"{trial_effect:>11.0%} {rounds:>6}  " + "  ".join(f"{c:>30}" for c in cells))


if __name__ == "__main__":
    main()

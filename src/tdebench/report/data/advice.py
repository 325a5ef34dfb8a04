"""The answer table's recommendation: one short phrase per engine and encryption, from written rules.

Every phrase a report recommends with comes from `recommend`, which reads only what the run
measured (`Facts`) and applies the rules in this order; the first that applies decides the
phrase, and a cost clause may follow it:

1. the baseline (no encryption) protects nothing at rest, and an arm that encrypts nothing by
   design (`fs-passthrough`: the file-system layer without its cipher) is a measuring arm;
2. a file kind whose files held the canary in plaintext: the encryption does not cover it;
3. ciphertext that repeats like plaintext (more repeated 16-byte blocks than random bytes of the
   same length show, `REPEAT_EXCESS` beyond chance: RC4's reused key stream, a mode without an IV
   per page): broken, whatever else it does;
4. nothing measured of tampering, or a tamper test whose change went unread: no recommendation
   can be given (the table's integrity cell names a plan that measures it);
5. a forgery accepted, or a flipped byte read back as changed data: confidentiality only;
6. a change refused only by unkeyed checks (a page checksum, the format's consistency): the
   same, since whoever knows the layout recomputes them;
7. the old key still opens the database after a rekey: a key rotation that does not rotate;
8. a keyed tag refused every change: recommended — and where a file kind the engine writes
   (temp/spill) was not exercised in the run, the phrase says so, since coverage there is unknown.

The cost clause: where the run measured the encryption at several caches and its cost is
resolved only where the data is larger than the cache, "costs X% only while data > cache: size
the cache" (the cost is the cache's, not the cipher's); else where the cost more than doubles the
time, "more than doubles the time here". docs/manual.md ("The answer table") states the same
rules; tests/unit/test_advice.py reaches every phrase.
"""

from __future__ import annotations

from dataclasses import dataclass

REPEAT_EXCESS = 0.01
"""A share of repeated 16-byte blocks above random bytes' by more than this (1 point) repeats like
plaintext (report/sections/strength.py flags the same)."""

BASELINE = "no encryption: nothing protected at rest"
UNENCRYPTED_ARM = "measuring arm, no encryption: what its layer costs without a cipher"
LEAKS = "leaks plaintext in {kinds}: not encrypted at rest"
BROKEN = "broken: equal data shows as equal ciphertext — do not use"
UNASSESSED = "no recommendation: tampering not measured"
INCONCLUSIVE = "no recommendation: the tamper test proved nothing here (the change went unread)"
FORGEABLE = "confidentiality only: no protection against tampering"
UNKEYED = "confidentiality only: tampering caught only by unkeyed checks that a forger can recompute"
OLD_KEY = "rekey does not rotate: the old key still opens the database"
RECOMMENDED = "recommended"
UNEXERCISED = "recommended for what was checked; {kinds} not exercised"
CACHE_BOUND = "costs {pct} only while data > cache: size the cache"
DOUBLES = "more than doubles the time here"

PHRASES = (BASELINE, UNENCRYPTED_ARM, LEAKS, BROKEN, UNASSESSED, INCONCLUSIVE, FORGEABLE, UNKEYED, OLD_KEY,
           RECOMMENDED, UNEXERCISED, CACHE_BOUND, DOUBLES)
"""Every phrase (with its placeholders) a recommendation is made of."""

# integrity classes, the strength workload's words (workloads/strength/tamper.py), weakest first
TAG, UNTAGGED, FORGED, ALTERED, UNCHANGED = (
    "tag detects", "refused without a tag", "forgeable", "silently altered", "unchanged")


@dataclass(frozen=True)
class Facts:
    """What the run measured of one engine and encryption, as the rules read it. None: not measured."""

    baseline: bool = False
    unencrypted_arm: bool = False  # an arm expected to leave plaintext (fs-passthrough), not the baseline
    plaintext_kinds: tuple[str, ...] = ()  # file kinds (their titles) whose files held the canary
    unexercised_kinds: tuple[str, ...] = ()  # file kinds the engine writes that no trial exercised
    repeated_share: float | None = None  # the file's repeated 16-byte blocks
    random_share: float | None = None  # the same of random bytes of the file's length
    integrity: str | None = None  # the weakest class of the tamper and forgery tests (TAG … UNCHANGED)
    old_key_opens: bool | None = None
    cost_pct: float | None = None  # the headline cost, when resolved as a cost
    cache_bound_pct: float | None = None  # the cost where data > cache, when the run resolves none where it fits


def repeats_like_plaintext(facts: Facts) -> bool:
    return (facts.repeated_share is not None
            and facts.repeated_share > (facts.random_share or 0.0) + REPEAT_EXCESS)


def _verdict(facts: Facts) -> str:
    if facts.baseline:
        return BASELINE
    if facts.unencrypted_arm:
        return UNENCRYPTED_ARM
    if facts.plaintext_kinds:
        return LEAKS.format(kinds=", ".join(facts.plaintext_kinds))
    if repeats_like_plaintext(facts):
        return BROKEN
    if facts.integrity is None:
        return UNASSESSED
    if facts.integrity == UNCHANGED:
        return INCONCLUSIVE
    if facts.integrity in (FORGED, ALTERED):
        return FORGEABLE
    if facts.integrity != TAG:
        return UNKEYED
    if facts.old_key_opens:
        return OLD_KEY
    if facts.unexercised_kinds:
        return UNEXERCISED.format(kinds=", ".join(facts.unexercised_kinds))
    return RECOMMENDED


def _cost(facts: Facts) -> str:
    if facts.baseline or facts.unencrypted_arm:
        return ""
    if facts.cache_bound_pct is not None:
        return CACHE_BOUND.format(pct=f"{facts.cache_bound_pct:+.0f}%")
    if facts.cost_pct is not None and facts.cost_pct >= 100.0:
        return DOUBLES
    return ""


def recommend(facts: Facts) -> str:
    """The recommendation of one row: the first rule that applies, then its cost clause, if any."""
    return "; ".join(part for part in (_verdict(facts), _cost(facts)) if part)

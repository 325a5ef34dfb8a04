"""The answer table's recommendation (report/data/advice.py): every phrase reachable from the rules, and
no weak encryption ever recommended."""

from __future__ import annotations

import itertools

from tdebench.report.data import advice
from tdebench.report.data.advice import Facts, recommend

TAG = Facts(integrity=advice.TAG, repeated_share=0.0, random_share=0.0, old_key_opens=False)


def test_every_phrase_is_reachable() -> None:
    """One set of facts per rule, and together they use every phrase of PHRASES."""
    cases = {
        advice.BASELINE: Facts(baseline=True),
        advice.UNENCRYPTED_ARM: Facts(unencrypted_arm=True, cost_pct=150.0),
        advice.LEAKS: Facts(plaintext_kinds=("temp/spill",), integrity=advice.TAG),
        advice.BROKEN: Facts(repeated_share=0.41, random_share=0.0, integrity=advice.FORGED),
        advice.UNASSESSED: Facts(),
        advice.INCONCLUSIVE: Facts(integrity=advice.UNCHANGED),
        advice.FORGEABLE: Facts(integrity=advice.FORGED),
        advice.UNKEYED: Facts(integrity=advice.UNTAGGED),
        advice.OLD_KEY: Facts(integrity=advice.TAG, old_key_opens=True),
        advice.RECOMMENDED: TAG,
        advice.UNEXERCISED: Facts(integrity=advice.TAG, unexercised_kinds=("temp/spill",)),
        advice.CACHE_BOUND: Facts(integrity=advice.TAG, cache_bound_pct=120.0, cost_pct=120.0),
        advice.DOUBLES: Facts(integrity=advice.TAG, cost_pct=150.0),
    }
    for phrase, facts in cases.items():
        said = recommend(facts)
        head = phrase.split("{")[0]
        assert head in said, (phrase, said)
    assert set(cases) == set(advice.PHRASES)


def test_the_first_rule_that_applies_decides() -> None:
    assert recommend(Facts(baseline=True, cost_pct=300.0)) == advice.BASELINE  # no cost clause for none
    assert recommend(Facts(integrity=advice.TAG, plaintext_kinds=("WAL/log",))).startswith("leaks plaintext in WAL/log")
    assert recommend(Facts(integrity=advice.TAG, repeated_share=0.3, random_share=0.0)) == advice.BROKEN
    assert recommend(TAG) == advice.RECOMMENDED
    assert recommend(Facts(integrity=advice.TAG, cache_bound_pct=40.0, cost_pct=40.0)) == (
        "recommended; costs +40% only while data > cache: size the cache")
    assert recommend(Facts(integrity=advice.TAG, cost_pct=250.0)).endswith(advice.DOUBLES)


def test_rc4_and_ctr_like_rows_are_never_recommended() -> None:
    """A row that repeats like plaintext (RC4) or that a forgery got through (CTR, CBC) is never
    "recommended", whatever else is true of it, and a forgeable one always says so."""
    for plaintext, unexercised, old_key, cost in itertools.product(((), ("temp/spill",)), ((), ("temp/spill",)),
                                                                   (None, False, True), (None, 5.0, 150.0)):
        broken = Facts(repeated_share=0.411, random_share=0.0, integrity=advice.FORGED,
                       plaintext_kinds=plaintext, unexercised_kinds=unexercised, old_key_opens=old_key,
                       cost_pct=cost)
        forgeable = Facts(repeated_share=0.0, random_share=0.0, integrity=advice.FORGED,
                          unexercised_kinds=unexercised, old_key_opens=old_key, cost_pct=cost)
        assert not recommend(broken).startswith(advice.RECOMMENDED)
        assert not recommend(forgeable).startswith(advice.RECOMMENDED)
        if not plaintext:
            assert recommend(broken).startswith(advice.BROKEN)
        assert recommend(forgeable).startswith(advice.FORGEABLE)


def test_repeats_within_chance_are_not_broken() -> None:
    """Random bytes repeat some blocks by chance: only a share beyond it by REPEAT_EXCESS counts."""
    assert recommend(Facts(integrity=advice.TAG, repeated_share=0.005, random_share=0.0)) == advice.RECOMMENDED
    assert recommend(Facts(integrity=advice.TAG, repeated_share=0.02, random_share=0.0)) == advice.BROKEN

"""What the report knows of each engine's encryptions: their raw cipher, page size, layer and key
handling, as the run recorded them (results.ENCRYPTIONS, in environment.json).

A run from before they were recorded has none; for it, and only for it, they are today's
definitions (`Engine.encryption_facts` of the engine registry), and `Known.recorded` is False so
that every table built on them says so. A fact the engine has changed since (a page size) would
otherwise be read into an old run's figures unnoticed.
"""

from __future__ import annotations

from dataclasses import dataclass

from tdebench.engines import ENGINES
from tdebench.results import EncryptionFacts, RunData, recorded_encryptions

TODAYS = ("This run did not record its encryptions (a run from before tdebench recorded them): their ciphers, "
          "page sizes and key handling are as today's tdebench defines them.")
"""What a table built on today's definitions says (`Known.recorded` False)."""


@dataclass(frozen=True)
class Known:
    """Every (engine, encryption)'s facts the report reads, and whether the run recorded them."""

    facts: dict[tuple[str, str], EncryptionFacts]
    recorded: bool

    def get(self, engine: str, encryption: str) -> EncryptionFacts | None:
        return self.facts.get((engine, encryption))

    def bare_layer(self, engine: str, encryption: str) -> str | None:
        """The engine's setting of `encryption`'s layer without a cipher (fs-aes-256-gcm →
        fs-passthrough), or None: the encryption encrypts nothing itself, or its layer has no such
        setting (an engine's own encryption, a column layer). The baseline is no such setting: its
        layer is "none", which no encryption's is."""
        found = self.get(engine, encryption)
        if found is None or not found.encrypts:
            return None
        return next((name for (other, name), facts in sorted(self.facts.items())
                     if other == engine and facts.layer == found.layer and not facts.encrypts), None)


def known(run: RunData) -> Known:
    """The run's recorded encryptions; for a run that recorded none, today's definitions of the
    engines its trials ran."""
    recorded = recorded_encryptions(run.environment)
    if recorded:
        return Known(recorded, True)
    engines = {outcome.trial.engine for outcome in run.trials} | {m.trial.engine for m in run.measurements}
    return Known({(engine, name): facts for engine in sorted(engines) if engine in ENGINES
                  for name, facts in ENGINES[engine].encryption_facts().items()}, False)

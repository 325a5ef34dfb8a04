"""What the report knows of each engine and its encryptions, as the run recorded them in
environment.json: the engine's facts (results.ENGINE_FACTS: what it documents as different in an
encrypted database, its default cache) and each encryption's raw cipher, page size, layer and key
handling (results.ENCRYPTIONS).

The report reads them from the run alone, never from the engine registry of the tdebench that
builds it: a fact the engine has changed since (a page size) would otherwise be read into an old
run's figures unnoticed, and an engine this tdebench does not have reports like any other. A run
from before they were recorded has none, and the tables built on them say so (`Known.caveat`);
`tdebench upgrade` fills them in as its tdebench defines them (results.FILLED_IN), and the tables
then name that version.
"""

from __future__ import annotations

from dataclasses import dataclass

from tdebench.results import (ENCRYPTIONS, FILLED_IN, EncryptionFacts, EngineFacts, RunData, recorded_encryptions,
                              recorded_engines)

MISSING = ("This run did not record its encryptions (a run from before tdebench recorded them): without their "
           "ciphers and page sizes no cipher time is given; `tdebench upgrade` fills them in as today's tdebench "
           "defines them.")
FILLED = ("This run did not record its encryptions (a run from before tdebench recorded them): their ciphers, page "
          "sizes and key handling are as tdebench {version} defined them when `tdebench upgrade` filled them in.")
"""What a table built on the encryptions says where the run did not record them (`Known.caveat`)."""


@dataclass(frozen=True)
class Known:
    """Every (engine, encryption)'s facts and every engine's the run holds, and what a table built
    on the encryptions says of where they come from ("" where the run recorded them)."""

    facts: dict[tuple[str, str], EncryptionFacts]
    engines: dict[str, EngineFacts]
    caveat: str

    def get(self, engine: str, encryption: str) -> EncryptionFacts | None:
        return self.facts.get((engine, encryption))

    def engine(self, name: str) -> EngineFacts | None:
        return self.engines.get(name)

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
    """The facts the run holds: recorded when it ran, filled in by `tdebench upgrade`, or none."""
    facts = recorded_encryptions(run.environment)
    filled = run.environment.get(FILLED_IN)
    version = filled.get(ENCRYPTIONS) if isinstance(filled, dict) else None
    caveat = MISSING if not facts else FILLED.format(version=version) if version is not None else ""
    return Known(facts, recorded_engines(run.environment), caveat)

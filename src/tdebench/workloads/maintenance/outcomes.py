"""How a maintenance step ended, stored as the measurement's `answer`.

A step that cannot run on an engine or encryption is recorded as such, without metrics, so
the report can say "not supported" or "not applicable" instead of showing a number."""

from __future__ import annotations

OK = "ok"  # done and checked
FAILED = "failed"  # done, but a check failed (the trial fails too)
UNSUPPORTED = "unsupported"  # the engine cannot do it (e.g. MariaDB file_key_management: no new key)
NOT_APPLICABLE = "not applicable"  # nothing to do: the `none` baseline has no encryption or key
NOT_APPLICABLE_STEP = "none"  # the step a not-applicable record is stored under

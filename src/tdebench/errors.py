"""The one base of the errors a user can fix, each carrying the exit code it ends in.

Code that finds bad input raises a subclass (PlanError, SetupError, OutDirError, OutputError,
KeyFileError) with a message that says what and how to fix it; the CLI turns any that reaches
it into that one line and `exit_code` once, for every command (cli._Commands), so none ends in
a traceback.
"""

from __future__ import annotations


class InputError(Exception):
    """Bad input, or an environment the user must fix: one line, exit code 2."""

    exit_code = 2

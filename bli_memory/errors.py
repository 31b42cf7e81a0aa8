"""The client's one command-line error: the line to print and the status to exit with.

The human commands and `install` raise `CliError` (or `UsageError`, for bad input) where they
cannot go on; `bli_memory.cli.main` is the one place that turns it into one line on stderr and the
exit status, as click's `ClickException` and pip's `base_command` do. The door's program has its own
(`bli_memory.door.cli.CliError`): the client never imports the door.

This module imports nothing, so the commands timed for cold start (`space`, `install`) can raise it
without paying for more than one small file.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class CliError(Exception):
    """A command that cannot go on. `message` is the whole stderr line, program name included."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class UsageError(CliError):
    """Bad input on the command line: exit status 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)

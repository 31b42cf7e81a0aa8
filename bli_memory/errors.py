"""The package's one command-line error, for both programs: the line to print and the status to exit with.

The client's human commands and `install` raise `CliError` (or `UsageError`, for bad input) where
they cannot go on; `bli_memory.cli.main` is the one place that turns it into one line on stderr and
the exit status, as click's `ClickException` and pip's `base_command` do. The door's subcommands
raise it too, and `bli_memory.door.cli.main` prints it after `bli-memory-door: ` with every database
password masked. Being shared, this module belongs to neither side: the door may import it, and the
client still never imports the door.

This module imports nothing, so the commands timed for cold start (`space`, `install`) can raise it
without paying for more than one small file.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class CliError(Exception):
    """A command that cannot go on. `message` is the stderr line: whole, program name included, for the
    client; the door's `main` puts its program name before it."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class UsageError(CliError):
    """Bad input on the command line: exit status 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)

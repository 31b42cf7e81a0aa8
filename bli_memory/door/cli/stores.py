"""Opening the store a command names: every failure one `CliError` line, every notice one stderr line."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from bli_memory.door.config import StoreConfig
from bli_memory.errors import EXIT_FAILED, EXIT_USAGE, CliError

if TYPE_CHECKING:
    from bli_memory.door.store.roles import Store
    from bli_memory.door.store.sqlite.files import EarlyCheck

#: said once a store opens from a `--db` URL holding a password (the URL itself is never printed).
PASSWORD_IN_ARGV = (
    "--db holds a password, which any local user can read in the process list; give the URL without "
    "it and the password in ~/.pgpass (0600), PGPASSWORD or a libpq service file (docs/door-operations.md)"
)


def notice(line: str) -> None:
    """One line on stderr under the program's name: what a store noticed on the way."""
    sys.stderr.write(f"bli-memory-door: {line}\n")


def open_store(
    config: StoreConfig,
    *,
    max_pages: int | None = None,
    serving: bool = False,
    early_check: EarlyCheck | None = None,
) -> Store:
    """The store `--db` names (default: SQLite under the XDG data folder); every failure is one
    CliError line, and what the store noticed on the way (a folder it made, a file others can read,
    a check cut short, damage the background check found while `serving`) one line each on stderr."""
    from bli_memory.door.store import StoreOpenError
    from bli_memory.door.store import open_store as open_url
    from bli_memory.door.store.urls import url_secrets

    location = config.location
    try:
        store = open_url(
            location.db if location.db else location.default_db,
            max_pages=max_pages,
            max_pending_jobs=config.max_pending_jobs,
            job_lease_s=config.job_lease_s,
            integrity_budget_s=config.integrity_budget_s,
            check_in_background=serving,
            early_check=early_check,
            notice=notice,
        )
    except StoreOpenError as exc:
        raise CliError(str(exc), EXIT_USAGE if exc.usage else EXIT_FAILED) from None
    if location.db and location.is_postgres and url_secrets(location.db):
        notice(PASSWORD_IN_ARGV)
    return store

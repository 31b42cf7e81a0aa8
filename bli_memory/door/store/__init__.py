"""The door's stores: the `Store` interface (`base.py`) and its implementations, chosen by `--db`."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bli_memory.door.errors import first_line
from bli_memory.door.store.base import MAX_PENDING_JOBS_PER_DEVICE
from bli_memory.door.store.roles import Store
from bli_memory.door.store.urls import is_postgres_url, mask_url, scrub

if TYPE_CHECKING:
    from bli_memory.door.store.sqlite.files import EarlyCheck

#: where a person reads how to recover a damaged database.
OPERATIONS_DOC = "docs/door-operations.md"


class StoreOpenError(Exception):
    """The store named by `--db` cannot be opened; `usage` marks a wrong argument (exit 2)."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


def sqlite_path(url: str | Path) -> Path:
    """The SQLite file `url` names: a path, `sqlite:PATH` or `sqlite:///ABSOLUTE/PATH`. Raises
    StoreOpenError (usage) for any other URL."""
    text = str(url)
    if text.startswith("sqlite:"):
        text = text.removeprefix("sqlite:")
        text = text[2:] if text.startswith("//") else text
    if "://" in text:
        scheme = text.split("://", 1)[0]
        if scheme in ("postgres", "postgresql"):
            raise StoreOpenError(f"{mask_url(text)} is a PostgreSQL database, not a SQLite file", usage=True)
        raise StoreOpenError(
            f"--db must be a file path or a postgresql:// URL (got a {scheme}:// URL)", usage=True
        )
    return Path(text).expanduser()


def open_store(
    url: str | Path,
    *,
    max_pages: int | None = None,
    max_pending_jobs: int = MAX_PENDING_JOBS_PER_DEVICE,
    job_lease_s: float | None = None,
    integrity_budget_s: float | None = None,
    check_in_background: bool = False,
    early_check: EarlyCheck | None = None,
    notice: Callable[[str], None] = lambda line: None,
) -> Store:
    """The store at `url`: a SQLite file path, `sqlite:PATH` or `sqlite:///ABSOLUTE/PATH`, or a
    PostgreSQL database, `postgresql://USER:PASSWORD@HOST:PORT/DATABASE` (or `postgres://`).

    A new SQLite file is created private (its folder 0700, said through `notice`); an existing one
    is checked for damage before anything writes to it (within `integrity_budget_s`, default
    `files.INTEGRITY_CHECK_BUDGET_S`; past it, with `check_in_background`, the rest is checked on a
    thread while the store is used, from `store.integrity.go()` (a door calls it once its indexes are
    loaded) or after `files.BACKGROUND_START_WAIT_S`, and damage found there goes to `notice`; `early_check` is that
    check begun before, on a thread, for this file), and one that other
    local users can read is named through `notice` with the chmod that fixes it. `max_pages` caps a SQLite file's size in
    pages, so that tests meet a real "disk full"; `job_lease_s` is how long a PostgreSQL door holds a
    claimed job (its default otherwise). Raises StoreOpenError with one sentence for a
    person when the store cannot be opened.
    """
    if is_postgres_url(str(url)):
        return open_postgres(str(url), max_pending_jobs=max_pending_jobs, job_lease_s=job_lease_s)
    path = sqlite_path(url)
    from bli_memory.door.store.sqlite import SqliteStore
    from bli_memory.door.store.sqlite.files import (
        BACKGROUND_START_WAIT_S,
        FOLDER_MODE,
        INTEGRITY_CHECK_BUDGET_S,
        DamagedDatabase,
        shared_files,
    )

    if not path.parent.exists():
        try:
            path.parent.mkdir(mode=FOLDER_MODE, parents=True)
        except OSError as exc:
            raise StoreOpenError(f"cannot create {path.parent}: {exc.strerror}") from None
        notice(f"created the folder {path.parent} (mode 0700) for the database")
    exposed = (
        early_check.exposed if early_check is not None and early_check.path == path else shared_files(path)
    )
    if exposed:
        notice(
            f"other local users may read {', '.join(exposed)}; run: chmod 600 {path} {path}-wal {path}-shm"
        )
    try:
        budget_s = INTEGRITY_CHECK_BUDGET_S if integrity_budget_s is None else integrity_budget_s
        store = SqliteStore(
            path, max_pending_jobs=max_pending_jobs, integrity_budget_s=budget_s, early_check=early_check
        )
    except DamagedDatabase as exc:
        raise StoreOpenError(
            f"{exc}; the door will not serve it nor write to it. See 'A damaged database' in "
            f"{OPERATIONS_DOC} to recover"
        ) from None
    except sqlite3.DatabaseError as exc:
        raise StoreOpenError(f"cannot open {path} as a memory database: {exc}") from None
    except RuntimeError as exc:  # a schema newer than this door
        raise StoreOpenError(str(exc)) from None
    except OSError as exc:
        raise StoreOpenError(f"cannot open {path}: {exc.strerror}") from None
    if max_pages is not None:
        store.limit_pages(max_pages)
    if store.checked_whole:
        return store
    if check_in_background:
        notice(
            f"{path} is too big to check for damage in {budget_s:g} s at start; its first part is sound, "
            "the rest is being checked in the background (GET /healthz: integrityCheck)"
        )
        store.check_rest_in_background(notice, BACKGROUND_START_WAIT_S)  # the door says go() when warm
    else:
        notice(
            f"{path} is too big to check for damage at start; checked its first part. "
            f"Check it whole with: sqlite3 {path} 'PRAGMA quick_check'"
        )
    return store


def open_postgres(
    url: str, *, max_pending_jobs: int = MAX_PENDING_JOBS_PER_DEVICE, job_lease_s: float | None = None
) -> Store:
    """The PostgreSQL store at `url`, its schema migrated. Raises StoreOpenError with one line that
    never holds the password: usage for a URL that does not parse, else the server's refusal."""
    shown = mask_url(url)
    try:
        import psycopg

        from bli_memory.door.errors import StoreUnavailable
        from bli_memory.door.store.postgres import PostgresStore, SchemaTooNew
    except ImportError:
        raise StoreOpenError(
            "the PostgreSQL store needs its extra: pip install 'bli-memory[door,postgres]'"
        ) from None
    try:
        psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        detail = scrub(first_line(exc, "it does not parse"), url)  # it quotes what it could not read
        raise StoreOpenError(f"--db {shown} is not a valid PostgreSQL URL ({detail})", usage=True) from None
    try:
        if job_lease_s is None:
            return PostgresStore(url, max_pending_jobs=max_pending_jobs)
        return PostgresStore(url, max_pending_jobs=max_pending_jobs, job_lease_s=job_lease_s)
    except StoreUnavailable as exc:
        raise StoreOpenError(f"cannot connect to {shown}: {scrub(str(exc), url)}") from None
    except SchemaTooNew as exc:
        raise StoreOpenError(str(exc)) from None
    except psycopg.Error as exc:  # e.g. no right to create the vector extension
        detail = scrub(first_line(exc), url)
        raise StoreOpenError(f"cannot open {shown} as a memory database: {detail}") from None

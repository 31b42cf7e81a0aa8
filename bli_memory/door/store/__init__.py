"""The door's stores: the `Store` interface (`base.py`) and its implementations, chosen by `--db`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bli_memory.door.store.base import Store


class StoreOpenError(Exception):
    """The store named by `--db` cannot be opened; `usage` marks a wrong argument (exit 2)."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


def open_store(url: str | Path, *, max_pages: int | None = None) -> Store:
    """The store at `url`: a SQLite file path, `sqlite:PATH` or `sqlite:///ABSOLUTE/PATH`.

    `max_pages` caps a SQLite file's size in pages, so that tests meet a real "disk full".

    Raises StoreOpenError with one sentence for a person when it cannot be opened.
    """
    text = str(url)
    if text.startswith("sqlite:"):
        text = text.removeprefix("sqlite:")
        text = text[2:] if text.startswith("//") else text
    if "://" in text:
        scheme = text.split("://", 1)[0]
        if scheme in ("postgres", "postgresql"):
            raise StoreOpenError(
                "the PostgreSQL store is not in this version yet; use a SQLite file path", usage=True
            )
        raise StoreOpenError(f"--db must be a file path (got a {scheme}:// URL)", usage=True)
    path = Path(text).expanduser()
    from bli_memory.door.store.sqlite import SqliteStore

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreOpenError(f"cannot create {path.parent}: {exc.strerror}") from None
    try:
        store = SqliteStore(path)
        if max_pages is not None:
            store.limit_pages(max_pages)
        return store
    except sqlite3.DatabaseError as exc:
        raise StoreOpenError(f"cannot open {path} as a memory database: {exc}") from None
    except RuntimeError as exc:  # a schema newer than this door
        raise StoreOpenError(str(exc)) from None
    except OSError as exc:
        raise StoreOpenError(f"cannot open {path}: {exc.strerror}") from None

"""Fixtures of the PostgreSQL store tests: a database of the test's own on the suite's server, and
stores opened on it (each one a door), all closed at teardown. A module may define its own `stores`
(the SQLite change-log tests do: stores over one file)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bli_memory.door.store.postgres import PostgresStore
from tests.helpers import PostgresServer


@pytest.fixture
def database(postgres: PostgresServer, tmp_path: Path) -> str:
    return postgres.database_for(tmp_path)


@pytest.fixture
def stores(database: str) -> Iterator[Callable[..., PostgresStore]]:
    """Open stores on the test's database (each one a door); all closed at teardown."""
    opened: list[PostgresStore] = []

    def open_one(**options: float) -> PostgresStore:
        store = PostgresStore(database, **options)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()

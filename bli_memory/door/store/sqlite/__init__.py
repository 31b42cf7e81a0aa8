"""The SQLite store: `store.py` (the rows) and `schema.py` (the schema and its migrations)."""

from bli_memory.door.store.sqlite.schema import SCHEMA_VERSION
from bli_memory.door.store.sqlite.store import SqliteStore

__all__ = ["SCHEMA_VERSION", "SqliteStore"]

"""The SQLite store: `store.py` (the rows, one module per role over `connection.py`), `schema.py` (the
schema and its migrations) and `files.py` (the file kept private and checked for damage)."""

from bli_memory.door.store.sqlite.schema import SCHEMA_VERSION
from bli_memory.door.store.sqlite.store import SqliteStore

__all__ = ["SCHEMA_VERSION", "SqliteStore"]

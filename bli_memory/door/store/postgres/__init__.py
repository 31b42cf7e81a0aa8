"""The PostgreSQL store: `store.py` (the rows, one module per role over `connection.py`, the pool)
and `schema.py` (the schema and its migration under an advisory lock). Needs the `postgres` extra
(psycopg, psycopg-pool, pgvector)."""

from bli_memory.door.store.postgres.schema import SCHEMA_VERSION, SchemaTooNew
from bli_memory.door.store.postgres.store import PostgresStore

__all__ = ["SCHEMA_VERSION", "PostgresStore", "SchemaTooNew"]

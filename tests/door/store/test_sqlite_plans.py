"""Search's lookups by id must probe the id index: twice SQLite chose an index on team/status
instead and scanned a whole space (20-60 ms at 10 000 memories instead of 0.5 ms)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

from tests.door.helpers import open_memories

if TYPE_CHECKING:
    from bli_memory.door.memories import MemoryService
    from bli_memory.door.model import Principal


def _opened(tmp_path: Path) -> tuple[MemoryService, Principal]:
    memories = open_memories(tmp_path / "m.db")
    principal = memories.authenticate(memories.store.create_device(person="p")[1])
    assert principal is not None
    return memories, principal


def _traced(memories: MemoryService, action: Callable[[], object]) -> list[str]:
    """The SQL statements the store runs during `action`."""
    statements: list[str] = []
    memories.store._db.set_trace_callback(statements.append)
    try:
        action()
    finally:
        memories.store._db.set_trace_callback(None)
    return statements


def _plan(tmp_path: Path, sql: str) -> str:
    """How SQLite runs `sql` on the test's file (EXPLAIN QUERY PLAN, one line)."""
    with closing(sqlite3.connect(tmp_path / "m.db")) as explain:
        return " ".join(row[3] for row in explain.execute("EXPLAIN QUERY PLAN " + sql))


def test_every_lookup_by_id_in_a_search_uses_the_id_index(tmp_path: Path) -> None:
    memories, principal = _opened(tmp_path)
    memories.save_many(principal, "t", [f"note {index} about the deploy pipeline" for index in range(300)])
    statements = _traced(memories, lambda: memories.search(principal, "t", "deploy pipeline", limit=5))
    lookups = [sql for sql in statements if " IN (" in sql and "FROM memories" in sql]
    assert len(lookups) >= 2  # the candidates' ages, then the rows returned
    explain = sqlite3.connect(tmp_path / "m.db")
    # an index the planner could be tempted by (the one a migration briefly had)
    explain.execute("CREATE INDEX tempting ON memories (status, embedding_model)")
    for sql in lookups:
        plan = " ".join(row[3] for row in explain.execute("EXPLAIN QUERY PLAN " + sql))
        # the memories table (aliased or not) is probed by its id index, or by rowid for FTS hits
        by_id = "USING INDEX sqlite_autoindex_memories_1 (id=?)" in plan
        by_rowid = "SEARCH memories USING INTEGER PRIMARY KEY (rowid=?)" in plan
        assert by_id or by_rowid, (sql, plan)


def test_saves_find_duplicates_and_custom_ids_through_their_indexes(tmp_path: Path) -> None:
    """A duplicate check that walked the space (88 ms per save at 100 000 memories) is caught here."""
    memories, principal = _opened(tmp_path)
    memories.save_many(principal, "t", [f"note {index}" for index in range(200)])
    statements = _traced(
        memories,
        lambda: (
            memories.save(principal, "t", "a new note"),
            memories.save(principal, "t", "keyed note", custom_id="k"),
        ),
    )
    checks = [sql for sql in statements if sql.lstrip().startswith("SELECT") and "content_hash = " in sql]
    checks += [sql for sql in statements if sql.lstrip().startswith("SELECT") and "custom_id = " in sql]
    assert len(checks) == 4  # each save checks before embedding, then again inside its transaction
    for sql in checks:
        plan = _plan(tmp_path, sql)
        assert "USING INDEX memories_hash" in plan or "USING INDEX memories_custom" in plan, (sql, plan)


def test_a_browsing_page_walks_the_space_index_instead_of_sorting_the_space(tmp_path: Path) -> None:
    """With aliases (several tags) one query over `container_tag IN (...)` sorted the whole space
    (250 ms a page at 100 000 memories); each tag's walk in memories_space order takes 0.5 ms."""
    memories, principal = _opened(tmp_path)
    memories.save_many(principal, "t", [f"note {index}" for index in range(200)])
    memories.save_many(principal, "u", [f"other {index}" for index in range(200)])
    page: list[object] = []
    statements = _traced(
        memories,
        lambda: page.extend(memories.store.page_current(principal.team_id, ["t", "u"], 20, (1e12, "mem_z"))),
    )
    assert len(page) == 20
    walks = [
        sql for sql in statements if sql.lstrip().startswith("SELECT") and "ORDER BY m.updated_at DESC" in sql
    ]
    assert len(walks) == 2
    for sql in walks:
        plan = _plan(tmp_path, sql)
        assert "USING INDEX memories_space" in plan and "TEMP B-TREE FOR ORDER BY" not in plan, (sql, plan)


def test_listing_the_spaces_seeks_the_space_index_instead_of_reading_every_row(tmp_path: Path) -> None:
    """A GROUP BY over every row's index entry took 5.2 s of a door's start at 1 000 000 memories;
    the loose scan seeks once per space (and once for its newest row)."""
    memories, principal = _opened(tmp_path)
    for tag in ("a", "b", "c"):
        memories.save_many(principal, tag, [f"{tag} note {index}" for index in range(100)])
    listed: list[object] = []
    statements = _traced(memories, lambda: listed.extend(tag for _, tag in memories.store.spaces(10)))
    assert listed == ["c", "b", "a"]
    first, *seeks = [sql for sql in statements if sql.lstrip().startswith("SELECT")]
    assert "LIMIT 1" in first and seeks
    for sql in seeks:
        plan = _plan(tmp_path, sql)
        assert plan.startswith("SEARCH memories USING COVERING INDEX memories_space (team_id"), (sql, plan)
        assert "GROUP BY" not in sql and ">(" not in plan.replace(" ", ""), (sql, plan)


def test_the_retention_sweep_walks_the_stored_exchanges_by_age_instead_of_every_row(tmp_path: Path) -> None:
    """`expired_documents` read the whole table each sweep; the partial index of schema v7 holds only
    current stored exchanges, oldest first, so a sweep reads the ones it expires and stops."""
    memories, principal = _opened(tmp_path)
    memories.save_many(principal, "t", [f"note {index}" for index in range(200)])
    statements = _traced(memories, lambda: memories.store.expired_documents("exchange:", 1e12, 10))
    (sql,) = [sql for sql in statements if "kind = 'document'" in sql]
    plan = _plan(tmp_path, sql)
    assert "USING INDEX memories_documents_age" in plan and "TEMP B-TREE" not in plan, plan

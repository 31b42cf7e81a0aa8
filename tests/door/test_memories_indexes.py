"""The memory service's in-memory keyword indexes stay in step with the file: every write, rollback,
another connection's write, an alias, and a database made by an older door with an FTS5 table."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from bli_memory.door import keyword
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Principal
from bli_memory.door.store.sqlite import SCHEMA_VERSION
from tests.door.helpers import open_memories

TAG = "repo-k"


def _open(path: Path) -> tuple[MemoryService, Principal]:
    memories = open_memories(path / "memory.db")
    _, token = memories.store.create_device(person="ada", admin=True)
    principal = memories.authenticate(token)
    assert principal is not None
    return memories, principal


def _found(memories: MemoryService, principal: Principal, query: str, tag: str = TAG) -> list[str]:
    return [hit.memory.content for hit in memories.search(principal, tag, query, limit=10)]


def test_the_index_follows_saves_updates_and_forgets(tmp_path: Path) -> None:
    memories, principal = _open(tmp_path)
    first = memories.save(principal, TAG, "the cache uses Redis 7")
    assert _found(memories, principal, "redis") == ["the cache uses Redis 7"]  # index built here
    memories.save(principal, TAG, "the queue uses Redis streams")  # added to the built index
    assert sorted(_found(memories, principal, "redis")) == [
        "the cache uses Redis 7",
        "the queue uses Redis streams",
    ]
    updated = memories.update(principal, first.id, "the cache uses Valkey 8")
    assert _found(memories, principal, "cache") == ["the cache uses Valkey 8"]
    assert _found(memories, principal, "redis") == ["the queue uses Redis streams"]
    memories.forget(principal, TAG, memory_id=updated.id)
    assert _found(memories, principal, "valkey cache") == []
    memories.close()


def test_a_rolled_back_save_is_not_found(tmp_path: Path) -> None:
    memories, principal = _open(tmp_path)
    memories.save(principal, TAG, "kept fact about kafka")
    assert _found(memories, principal, "kafka") == ["kept fact about kafka"]
    with pytest.raises(RuntimeError), memories.transaction():
        memories.save(principal, TAG, "doomed fact about kafka")
        assert len(_found(memories, principal, "kafka")) == 2  # seen inside the transaction
        raise RuntimeError("undo")
    assert _found(memories, principal, "kafka") == ["kept fact about kafka"]
    memories.close()


def test_another_connections_writes_are_seen(tmp_path: Path) -> None:
    memories, principal = _open(tmp_path)
    memories.save(principal, TAG, "first note about grafana")
    assert _found(memories, principal, "grafana") == ["first note about grafana"]
    other = open_memories(tmp_path / "memory.db")
    note = other.save(principal, TAG, "second note about grafana")
    assert sorted(_found(memories, principal, "grafana")) == [
        "first note about grafana",
        "second note about grafana",
    ]
    other.forget(principal, TAG, memory_id=note.id)
    assert _found(memories, principal, "grafana") == ["first note about grafana"]
    other.close()
    memories.close()


def test_a_space_reads_every_tag_that_names_it(tmp_path: Path) -> None:
    memories, principal = _open(tmp_path)
    memories.save(principal, "old-name", "the deploy needs ArgoCD")
    assert _found(memories, principal, "argocd", tag="old-name") == ["the deploy needs ArgoCD"]
    memories.set_alias(principal, "old-name", "new-name")
    memories.save(principal, "new-name", "ArgoCD syncs every minute")
    found = _found(memories, principal, "argocd", tag="new-name")
    assert sorted(found) == ["ArgoCD syncs every minute", "the deploy needs ArgoCD"]
    memories.close()


def test_warm_builds_every_space(tmp_path: Path) -> None:
    memories, principal = _open(tmp_path)
    for tag in ("a", "b", "c"):
        memories.save(principal, tag, f"space {tag} remembers terraform")
    memories.close()
    memories = open_memories(tmp_path / "memory.db")
    assert memories.warm() == 3
    assert len(memories.indexes._keyword) == 3
    assert _found(memories, principal, "terraform", tag="b") == ["space b remembers terraform"]
    memories.close()


def test_a_version_2_database_loses_its_fts_table_and_keeps_its_memories(tmp_path: Path) -> None:
    memories, principal = _open(tmp_path)
    memories.save(principal, TAG, "written before the upgrade about nginx")
    memories.close()
    db = sqlite3.connect(tmp_path / "memory.db")
    db.execute("CREATE VIRTUAL TABLE memories_fts USING fts5 (content, space)")
    db.execute("DROP INDEX memories_documents_age")  # what v7 added
    db.execute("DROP TABLE bli_change_log")  # what v6 added
    db.execute("DROP TABLE bli_changes")
    db.execute("DROP TABLE hook_stats")  # what v5 added
    db.execute("DROP INDEX jobs_device")  # what v4 added
    db.execute("ALTER TABLE devices DROP COLUMN admin")
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()
    memories = open_memories(tmp_path / "memory.db")
    assert memories.store.schema_version() == SCHEMA_VERSION == 7
    tables = {
        row[0] for row in sqlite3.connect(tmp_path / "memory.db").execute("SELECT name FROM sqlite_master")
    }
    assert "memories_fts" not in tables
    assert _found(memories, principal, "nginx") == ["written before the upgrade about nginx"]
    memories.close()


def test_context_lifts_what_the_same_device_saved_next_to_a_strong_hit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keyword, "FEEDBACK_DOCS", 0)  # context alone: in four rows feedback re-ranks too
    memories, ada = _open(tmp_path)
    _, token = memories.store.create_device(person="bob")
    bob = memories.authenticate(token)
    assert bob is not None and bob.team_id == ada.team_id
    now = time.time()
    memories.save(ada, TAG, "the staging deploy broke after the image update", created_at=now - 120)
    memories.save(
        ada, TAG, "fixed it by pinning the base image digest in the deploy job config", created_at=now - 90
    )
    memories.save(ada, TAG, "lunch is at noon", created_at=now - 60)  # next to the hit, matches nothing
    memories.save(bob, TAG, "deploy checklist", created_at=now - 30)  # another device, fresher, shorter
    with_context = _found(memories, ada, "staging deploy")
    assert with_context == [
        "the staging deploy broke after the image update",
        "fixed it by pinning the base image digest in the deploy job config",
        "deploy checklist",
    ]
    plain = [
        hit.memory.content for hit in memories.search(ada, TAG, "staging deploy", limit=10, context=False)
    ]
    assert plain == [with_context[0], "deploy checklist", with_context[1]]
    memories.close()

"""The store's in-memory keyword indexes stay in step with the file: every write, rollback,
another connection's write, an alias, and a database made by an older door with an FTS5 table."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from bli_memory.door import keyword
from bli_memory.door.model import Principal
from bli_memory.door.store.sqlite import SCHEMA_VERSION, SqliteStore

TAG = "repo-k"


def _open(path: Path) -> tuple[SqliteStore, Principal]:
    store = SqliteStore(path / "memory.db")
    _, token = store.create_device(person="ada", admin=True)
    principal = store.authenticate(token)
    assert principal is not None
    return store, principal


def _found(store: SqliteStore, principal: Principal, query: str, tag: str = TAG) -> list[str]:
    return [hit.memory.content for hit in store.search(principal, tag, query, limit=10)]


def test_the_index_follows_saves_updates_and_forgets(tmp_path: Path) -> None:
    store, principal = _open(tmp_path)
    first = store.save(principal, TAG, "the cache uses Redis 7")
    assert _found(store, principal, "redis") == ["the cache uses Redis 7"]  # index built here
    store.save(principal, TAG, "the queue uses Redis streams")  # added to the built index
    assert sorted(_found(store, principal, "redis")) == [
        "the cache uses Redis 7",
        "the queue uses Redis streams",
    ]
    updated = store.update(principal, first.id, "the cache uses Valkey 8")
    assert _found(store, principal, "cache") == ["the cache uses Valkey 8"]
    assert _found(store, principal, "redis") == ["the queue uses Redis streams"]
    store.forget(principal, TAG, memory_id=updated.id)
    assert _found(store, principal, "valkey cache") == []
    store.close()


def test_a_rolled_back_save_is_not_found(tmp_path: Path) -> None:
    store, principal = _open(tmp_path)
    store.save(principal, TAG, "kept fact about kafka")
    assert _found(store, principal, "kafka") == ["kept fact about kafka"]
    with pytest.raises(RuntimeError), store.atomic():
        store.save(principal, TAG, "doomed fact about kafka")
        assert len(_found(store, principal, "kafka")) == 2  # seen inside the transaction
        raise RuntimeError("undo")
    assert _found(store, principal, "kafka") == ["kept fact about kafka"]
    store.close()


def test_another_connections_writes_are_seen(tmp_path: Path) -> None:
    store, principal = _open(tmp_path)
    store.save(principal, TAG, "first note about grafana")
    assert _found(store, principal, "grafana") == ["first note about grafana"]
    other = SqliteStore(tmp_path / "memory.db")
    note = other.save(principal, TAG, "second note about grafana")
    assert sorted(_found(store, principal, "grafana")) == [
        "first note about grafana",
        "second note about grafana",
    ]
    other.forget(principal, TAG, memory_id=note.id)
    assert _found(store, principal, "grafana") == ["first note about grafana"]
    other.close()
    store.close()


def test_a_space_reads_every_tag_that_names_it(tmp_path: Path) -> None:
    store, principal = _open(tmp_path)
    store.save(principal, "old-name", "the deploy needs ArgoCD")
    assert _found(store, principal, "argocd", tag="old-name") == ["the deploy needs ArgoCD"]
    store.set_alias(principal, "old-name", "new-name")
    store.save(principal, "new-name", "ArgoCD syncs every minute")
    found = _found(store, principal, "argocd", tag="new-name")
    assert sorted(found) == ["ArgoCD syncs every minute", "the deploy needs ArgoCD"]
    store.close()


def test_warm_builds_every_space(tmp_path: Path) -> None:
    store, principal = _open(tmp_path)
    for tag in ("a", "b", "c"):
        store.save(principal, tag, f"space {tag} remembers terraform")
    store.close()
    store = SqliteStore(tmp_path / "memory.db")
    assert store.warm() == 3
    assert len(store._keyword) == 3
    assert _found(store, principal, "terraform", tag="b") == ["space b remembers terraform"]
    store.close()


def test_a_version_2_database_loses_its_fts_table_and_keeps_its_memories(tmp_path: Path) -> None:
    store, principal = _open(tmp_path)
    store.save(principal, TAG, "written before the upgrade about nginx")
    store.close()
    db = sqlite3.connect(tmp_path / "memory.db")
    db.execute("CREATE VIRTUAL TABLE memories_fts USING fts5 (content, space)")
    db.execute("DROP INDEX jobs_device")  # what v4 added
    db.execute("ALTER TABLE devices DROP COLUMN admin")
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()
    store = SqliteStore(tmp_path / "memory.db")
    assert store.schema_version() == SCHEMA_VERSION == 4
    tables = {
        row[0] for row in sqlite3.connect(tmp_path / "memory.db").execute("SELECT name FROM sqlite_master")
    }
    assert "memories_fts" not in tables
    assert _found(store, principal, "nginx") == ["written before the upgrade about nginx"]
    store.close()


def test_context_lifts_what_the_same_device_saved_next_to_a_strong_hit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keyword, "FEEDBACK_DOCS", 0)  # context alone: in four rows feedback re-ranks too
    store, ada = _open(tmp_path)
    _, token = store.create_device(person="bob")
    bob = store.authenticate(token)
    assert bob is not None and bob.team_id == ada.team_id
    now = time.time()
    store.save(ada, TAG, "the staging deploy broke after the image update", created_at=now - 120)
    store.save(
        ada, TAG, "fixed it by pinning the base image digest in the deploy job config", created_at=now - 90
    )
    store.save(ada, TAG, "lunch is at noon", created_at=now - 60)  # next to the hit, matches nothing
    store.save(bob, TAG, "deploy checklist", created_at=now - 30)  # another device, fresher, shorter
    with_context = _found(store, ada, "staging deploy")
    assert with_context == [
        "the staging deploy broke after the image update",
        "fixed it by pinning the base image digest in the deploy job config",
        "deploy checklist",
    ]
    plain = [hit.memory.content for hit in store.search(ada, TAG, "staging deploy", limit=10, context=False)]
    assert plain == [with_context[0], "deploy checklist", with_context[1]]
    store.close()

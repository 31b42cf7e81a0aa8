"""The memory service's per-space caches (keyword index, vector matrix, tags of a space) hold a
bounded number of spaces: searching ever new tags does not grow the door, and the busiest space
stays cached."""

from __future__ import annotations

from pathlib import Path

import pytest

from bli_memory.door import indexes
from bli_memory.door.embed import load_embedder
from bli_memory.door.memories import MemoryService
from bli_memory.door.service import spaces
from bli_memory.door.store.sqlite import SqliteStore
from tests.door.helpers import device_principal

CAP = 8


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MemoryService:
    monkeypatch.setattr(indexes, "SPACE_CACHE_MAX_SPACES", CAP)
    monkeypatch.setattr(spaces, "SPACE_TAGS_CACHE_MAX", CAP)
    embedder, _ = load_embedder("onnx", env={})
    return MemoryService(SqliteStore(tmp_path / "memory.db"), embedder)


def test_searching_many_distinct_tags_keeps_every_cache_bounded(store: MemoryService) -> None:
    principal = device_principal(store)
    store.save(principal, "repo_busy", "the busy space deploys with Flux")
    store.search(principal, "repo_busy", "flux")
    busy_index = store.indexes._keyword.get((principal.team_id, "repo_busy"))
    assert busy_index is not None
    for n in range(5 * CAP):
        store.search(principal, f"repo_never_saved_{n}", "anything at all")
        store.search(principal, "repo_busy", "flux")  # in use all along
    assert len(store.indexes._keyword) == CAP
    assert len(store.indexes._vectors) == CAP
    assert len(store.spaces._tags_cache) == CAP
    assert store.indexes._keyword.get((principal.team_id, "repo_busy")) is busy_index  # never evicted
    assert [hit.memory.content for hit in store.search(principal, "repo_busy", "flux")] == [
        "the busy space deploys with Flux"
    ]
    store.close()


def test_warm_builds_no_more_spaces_than_the_caches_hold(store: MemoryService) -> None:
    principal = device_principal(store)
    for n in range(2 * CAP):
        store.save(principal, f"repo_{n}", f"space {n} remembers terraform")
    store.indexes.drop_all()
    assert store.warm() == CAP
    assert len(store.indexes._keyword) == CAP
    store.close()

"""The experience reader pages in (created_at, id) order and says when it was capped."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.door.helpers import open_memories


def test_pages_in_order_and_caps(tmp_path: Path) -> None:
    memories = open_memories(tmp_path / "m.db")
    principal = memories.authenticate(memories.store.create_device(person="p")[1])
    assert principal is not None
    for index in range(25):
        memories.record_experience(
            principal,
            entry_id=str(uuid.uuid4()),
            store="bli",
            verdict="win",
            reason=f"r{index}",
            created_at=1_000.0 + index // 3,  # ties on time: the id breaks them
        )
    everything, total = memories.experience_rows(principal, 0.0, page_rows=4)
    assert total == 25 and len(everything) == 25 and len({row["id"] for row in everything}) == 25
    assert everything == sorted(everything, key=lambda row: (row["created_at"], row["id"]))
    capped, total = memories.experience_rows(principal, 0.0, page_rows=4, cap_rows=10)
    assert total == 25 and capped == everything[:10]
    recent, total = memories.experience_rows(principal, 1_005.0)
    assert total == len(recent) == 25 - 15

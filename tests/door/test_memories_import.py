"""`MemoryService.import_rows` in-process: imported current rows are embedded at once (and searched by
meaning), history rows are not, and a second import of the same rows embeds nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bli_memory.door.model import Principal
from bli_memory.door.service.transfer import ImportRow
from tests.door.helpers import open_memories


class CountingEmbedder:
    """Four-dimensional vectors from the text's length; counts the texts it was asked for."""

    name = "counting"
    dim = 4

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str], *, kind: str) -> np.ndarray:
        self.texts += list(texts)
        rows = np.array([[1.0, float(len(text)), 1.0, 0.5] for text in texts], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _row(memory_id: str, content: str, **fields: object) -> ImportRow:
    values: dict[str, object] = {
        "id": memory_id,
        "root_id": memory_id,
        "previous_version_id": None,
        "version": 1,
        "status": "current",
        "kind": "memory",
        "container_tag": "t",
        "content": content,
        "custom_id": None,
        "metadata": None,
        "created_at": 1000.0,
        "updated_at": 1000.0,
        "superseded_at": None,
    }
    values.update(fields)
    return ImportRow(**values)  # type: ignore[arg-type]


def test_imported_current_rows_are_embedded_once_and_history_never(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    memories = open_memories(tmp_path / "memory.db", embedder)  # type: ignore[arg-type]
    _, token = memories.store.create_device(person="ana")
    ana = memories.authenticate(token)
    assert isinstance(ana, Principal)
    rows = [
        _row("mem_v1", "first words", status="superseded", superseded_at=1500.0),
        _row(
            "mem_v2",
            "second words",
            version=2,
            root_id="mem_v1",
            previous_version_id="mem_v1",
            updated_at=1500.0,
        ),
        _row("mem_gone", "gone words", status="forgotten", superseded_at=1600.0),
    ]
    assert memories.import_rows(ana, rows) == [("created", None)] * 3
    assert embedder.texts == ["second words"]
    vectors = dict(memories.store.current_vectors(ana.team_id, "t", "counting"))
    assert list(vectors) == ["mem_v2"]
    hits = memories.search(ana, "t", "second")
    assert [hit.memory.id for hit in hits] == ["mem_v2"] and hits[0].similarity is not None
    embedded = len(embedder.texts)  # the search embedded its query
    assert memories.import_rows(ana, rows) == [("unchanged", None)] * 3
    assert len(embedder.texts) == embedded  # nothing embedded again
    memories.close()

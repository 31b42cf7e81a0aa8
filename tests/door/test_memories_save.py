"""MemoryService.save: a save that would change nothing answers `unchanged` before embedding, so a
re-run import or a retried hook costs a read, not a model call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bli_memory.door.embed import Embedder, Kind, load_embedder
from bli_memory.door.memories import MemoryService
from bli_memory.door.store.sqlite import SqliteStore


class Counted:
    """The packaged embedder, counting the texts it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str], *, kind: Kind):  # type: ignore[no-untyped-def]
        self.texts += list(texts)
        return self.inner.embed(texts, kind=kind)


def test_a_save_that_changes_nothing_embeds_nothing(tmp_path: Path) -> None:
    real, _ = load_embedder("onnx", env={})
    counted = Counted(real)
    service = MemoryService(SqliteStore(tmp_path / "memory.db"), counted)
    try:
        _, token = service.store.create_device(person="ada")
        ada = service.authenticate(token)
        assert ada is not None
        first = service.save(ada, "t", "Deploys go out on Tuesdays.", custom_id="k", metadata={"a": 1})
        plain = service.save(ada, "t", "The ledger owns invoices.")
        assert (first.status, plain.status) == ("created", "created") and len(counted.texts) == 2

        again = service.save(ada, "t", "Deploys go out on Tuesdays.", custom_id="k", metadata={"a": 1})
        duplicate = service.save(ada, "t", "The ledger owns invoices.")
        assert (again.status, again.id) == ("unchanged", first.id)
        assert (duplicate.status, duplicate.id) == ("unchanged", plain.id)
        assert len(counted.texts) == 2  # neither repeat reached the model

        changed = service.save(ada, "t", "Deploys go out on Tuesdays.", custom_id="k", metadata={"a": 2})
        assert changed.status == "updated" and len(counted.texts) == 3  # new metadata: a new version
    finally:
        service.close()

"""Shared by the store tests: the stores they run against, and a deterministic embedder."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from bli_memory.door.store.roles import Store
from bli_memory.door.store.sqlite import SqliteStore

#: every store the suite runs against, by its `name`.
STORES = ("sqlite", "postgresql")


def open_kind(kind: str, folder: Path, request: pytest.FixtureRequest, **options: object) -> Store:
    """A store of `kind` for `folder`: its SQLite file, or its database on the session's server."""
    if kind == "sqlite":
        return SqliteStore(folder / "memory.db", **options)  # type: ignore[arg-type]
    from bli_memory.door.store.postgres import PostgresStore

    url = request.getfixturevalue("postgres").database_for(folder)
    return PostgresStore(url, **options)  # type: ignore[arg-type]


class WordsEmbedder:
    """A deterministic stand-in for a model: the sum of each word's own random direction, so that
    texts sharing words are near and no two cosines tie by accident."""

    name = "words-64"
    dim = 64

    def embed(self, texts: Sequence[str], *, kind: str) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                seed = int(hashlib.sha256(word.encode()).hexdigest()[:8], 16)
                out[row] += np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            norm = float(np.linalg.norm(out[row]))
            out[row] /= norm or 1.0
        return out

"""Shared by the store tests: a deterministic embedder."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np


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

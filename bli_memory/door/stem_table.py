"""The stems of a keyword index's snapshot, found without a dictionary (:class:`StemTable`), and the
newline-joined byte arrays a snapshot keeps its texts in. Kept apart from `keyword`, which reads a
snapshot through them: loading a million words makes no Python object per word."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: the multiplier of the stems' polynomial hash (odd, so every byte counts modulo 2**64)
_HASH_MULTIPLIER = 0x100000001B3
_HASH_MASK = (1 << 64) - 1


def stem_hash(stem: str) -> int:
    """The hash :meth:`StemTable.of` gives `stem`: sum of byte * M**position modulo 2**64."""
    value, power = 0, 1
    for byte in stem.encode("utf-8"):
        value = (value + byte * power) & _HASH_MASK
        power = (power * _HASH_MULTIPLIER) & _HASH_MASK
    return value


class StemTable:
    """The stems of a snapshot's terms, found without a dictionary: their newline-joined UTF-8, and
    their hashes sorted (`hashes`) with the term id of each (`order`). A lookup is one binary search
    and a check of the stem's bytes, so loading a million words costs no Python object per word."""

    def __init__(self, joined: np.ndarray, count: int, hashes: np.ndarray, order: np.ndarray) -> None:
        self._joined = joined
        self.count = count
        self.hashes = np.asarray(hashes, dtype=np.uint64)
        self.order = np.asarray(order, dtype=np.int64)
        if self.hashes.size != count or self.order.size != count:
            raise ValueError("the stems' hashes do not match the postings' terms")
        self._bounds: np.ndarray | None = None

    @classmethod
    def empty(cls) -> StemTable:
        return cls(np.zeros(0, dtype=np.uint8), 0, np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64))

    @classmethod
    def of(cls, joined: np.ndarray, count: int) -> StemTable:
        """The table of `count` newline-joined stems, hashed in a few vectorised passes."""
        data = np.asarray(joined, dtype=np.uint8)
        if count == 0:
            return cls(data, 0, np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64))
        bounds = _stem_bounds(data)
        if bounds.size - 1 != count:
            raise ValueError("the stems do not match the postings' terms")
        starts, ends = bounds[:-1], bounds[1:] - 1
        sizes = ends - starts
        if (sizes < 0).any():
            raise ValueError("the stems do not match the postings' terms")
        powers = np.empty(int(sizes.max()), dtype=np.uint64)
        power = 1
        for position in range(powers.size):
            powers[position] = power
            power = (power * _HASH_MULTIPLIER) & _HASH_MASK
        within = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        letters = data[np.repeat(starts, sizes) + within].astype(np.uint64)
        hashes = np.zeros(count, dtype=np.uint64)  # an empty stem (porter makes some) hashes to 0
        filled = sizes > 0
        if filled.any():
            with np.errstate(over="ignore"):
                sums = np.add.reduceat(letters * powers[within], (np.cumsum(sizes) - sizes)[filled])
            hashes[filled] = sums
        order = np.argsort(hashes, kind="stable")
        table = cls(data, count, hashes[order], order)
        table._bounds = bounds
        return table

    def __len__(self) -> int:
        return self.count

    def bounds(self) -> np.ndarray:
        """Where each stem starts in the joined bytes, and one past the last (see `_stem_bounds`)."""
        if self._bounds is None:
            self._bounds = _stem_bounds(np.asarray(self._joined, dtype=np.uint8))
        return self._bounds

    def stem(self, term: int) -> str:
        bounds = self.bounds()
        return bytes(self._joined[bounds[term] : bounds[term + 1] - 1]).decode("utf-8")

    def find(self, stem: str) -> int | None:
        if not self.count:
            return None
        wanted = np.uint64(stem_hash(stem))
        position = int(np.searchsorted(self.hashes, wanted))
        while position < self.count and self.hashes[position] == wanted:
            term = int(self.order[position])
            if self.stem(term) == stem:
                return term
            position += 1
        return None

    def joined(self, more: Sequence[str]) -> np.ndarray:
        """These stems and then `more`, newline-joined."""
        base = np.asarray(self._joined, dtype=np.uint8)
        if not more:
            return base.copy()
        tail = joined_texts(more)
        if not self.count:
            return tail
        return np.concatenate((base, np.frombuffer(b"\n", dtype=np.uint8), tail))


def _stem_bounds(data: np.ndarray) -> np.ndarray:
    """Where each newline-joined stem starts, and one past the end (+1 for the missing last newline)."""
    breaks = np.flatnonzero(data == ord("\n"))
    return np.concatenate(([0], breaks + 1, [data.size + 1])).astype(np.int64)


def joined_texts(texts: Sequence[str]) -> np.ndarray:
    return np.frombuffer("\n".join(texts).encode("utf-8"), dtype=np.uint8)


def split_texts(data: np.ndarray, count: int | None = None) -> list[str]:
    """The texts `joined_texts` wrote; `count` tells one empty text from none."""
    text = data.tobytes().decode("utf-8")
    return text.split("\n") if text or count == 1 else []

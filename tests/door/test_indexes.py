"""The in-memory vector cache of a space stays equal to its rows through any mix of saves and removals."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bli_memory.door.indexes import SpaceVectors

DIM = 4


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 30)), max_size=120))
def test_cache_matches_a_plain_dict(operations: list[tuple[bool, int]]) -> None:
    cache = SpaceVectors(ids=[], matrix=np.zeros((0, DIM), dtype=np.float32))
    expected: dict[str, np.ndarray] = {}
    for add, key in operations:
        memory_id = f"mem_{key}"
        if add and memory_id not in expected:
            vector = np.full(DIM, key, dtype=np.float32)
            cache.add(memory_id, vector)
            expected[memory_id] = vector
        elif not add:
            cache.remove(memory_id)
            expected.pop(memory_id, None)
    assert sorted(cache.ids) == sorted(expected)
    assert cache.matrix.shape == (len(expected), DIM)
    for memory_id, row in cache.index.items():
        assert cache.ids[row] == memory_id
        assert np.array_equal(cache.matrix[row], expected[memory_id])

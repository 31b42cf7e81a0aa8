"""The fusion rule, driven with plain numbers, and through the real memory service with the weights it is given."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bli_memory.door import ranking
from bli_memory.door.embed import load_embedder
from bli_memory.door.ranking import Signals, fuse, recency
from tests.door.helpers import device_principal, open_memories

YEAR_DAYS = 365.0


def test_recency_is_one_when_fresh_and_never_below_the_floor() -> None:
    assert recency(0.0) == pytest.approx(1.0)
    assert recency(-5.0) == pytest.approx(1.0)  # a clock skewed into the future is not a bonus
    half = ranking.RECENCY_FLOOR + (1 - ranking.RECENCY_FLOOR) / 2
    assert recency(ranking.RECENCY_HALF_LIFE_DAYS) == pytest.approx(half)
    assert recency(100 * YEAR_DAYS) == pytest.approx(ranking.RECENCY_FLOOR)
    ages = [0, 1, 30, 90, 365, 3650]
    values = [recency(a) for a in ages]
    assert values == sorted(values, reverse=True)


def test_fresh_beats_stale_at_equal_relevance() -> None:
    # equally relevant: each is first in one channel and second in the other
    stale = Signals(keyword_rank=0, similarity=0.70, age_days=YEAR_DAYS)
    fresh = Signals(keyword_rank=1, similarity=0.71, age_days=0.5)
    stale_score, fresh_score = fuse([stale, fresh])
    assert fresh_score > stale_score


def test_fresh_passes_a_slightly_better_fact_a_season_older() -> None:
    """Rank 2 in both channels today beats rank 1 in both from half a year ago."""
    old = Signals(keyword_rank=0, similarity=0.80, age_days=180.0)
    new = Signals(keyword_rank=1, similarity=0.78, age_days=0.0)
    old_score, new_score = fuse([old, new])
    assert new_score > old_score


def test_strong_old_match_is_not_hidden() -> None:
    """First in both channels, years old, still outranks fresh rows the channels ranked 4th and below."""
    rows = [
        Signals(keyword_rank=i, similarity=0.9 - 0.02 * i, age_days=10 * YEAR_DAYS if i < 3 else 0.0)
        for i in range(20)
    ]
    scores = fuse(rows)
    assert scores[0] == max(scores)


def test_keyword_only_row_and_vector_only_row_both_score() -> None:
    keyword_only = Signals(keyword_rank=0, similarity=None, age_days=0.0)
    vector_only = Signals(keyword_rank=None, similarity=0.9, age_days=0.0)
    nothing = Signals(keyword_rank=None, similarity=None, age_days=0.0)
    a, b, c = fuse([keyword_only, vector_only, nothing])
    assert a > 0 and b > 0 and c == 0
    assert a > b  # an exact keyword hit (an identifier) outweighs the vector channel's best guess


def test_vector_rank_follows_similarity_not_input_order() -> None:
    rows = [Signals(None, s, 0.0) for s in (0.1, 0.9, 0.5)]
    scores = fuse(rows)
    assert scores[1] > scores[2] > scores[0]


def test_channel_only_weights_and_the_default() -> None:
    rows = [Signals(keyword_rank=0, similarity=0.1, age_days=0.0), Signals(None, 0.9, 0.0)]
    keyword = fuse(rows, ranking.KEYWORD_ONLY)
    vector = fuse(rows, ranking.VECTOR_ONLY)
    assert keyword[0] > 0 and keyword[1] == 0
    assert vector[1] > vector[0]
    # channel-only runs carry no recency: the plain channel's order
    old, new = fuse([Signals(None, 0.9, 10 * YEAR_DAYS), Signals(None, 0.8, 0.0)], ranking.VECTOR_ONLY)
    assert old > new
    assert fuse(rows) == fuse(rows, ranking.DEFAULT_WEIGHTS)


def test_searches_in_threads_each_rank_with_the_weights_they_pass(tmp_path: Path) -> None:
    """The door searches in threads: one search's weights never leak into another's (no module state)."""
    embedder, reason = load_embedder("onnx", env={})
    assert reason is None, reason
    memories = open_memories(tmp_path / "memory.db", embedder)
    try:
        principal = device_principal(memories)
        for text in (
            "Use ruff format with line length 110 for this repo.",
            "The formatter wraps code at one hundred and ten columns.",
            "The staging database is reset every Monday at 6am.",
        ):
            memories.save(principal, "repo-a", text)
        modes = {
            "hybrid": ranking.DEFAULT_WEIGHTS,
            "keyword": ranking.KEYWORD_ONLY,
            "vector": ranking.VECTOR_ONLY,
        }

        def ranked(mode: str) -> list[tuple[str, float]]:
            """Ids and scores; rounded, as recency moves a fresh memory's score while the test runs."""
            hits = memories.search(principal, "repo-a", "ruff line length", limit=3, weights=modes[mode])
            return [(hit.memory.id, round(hit.score, 6)) for hit in hits]

        alone = {mode: ranked(mode) for mode in modes}
        assert len({tuple(answer) for answer in alone.values()}) == 3  # the weights change the answer
        with ThreadPoolExecutor(max_workers=4) as pool:
            jobs = [(mode, pool.submit(ranked, mode)) for mode in list(modes) * 20]
            assert all(job.result(timeout=60) == alone[mode] for mode, job in jobs)
    finally:
        memories.close()


def test_context_lends_a_share_of_the_best_neighbouring_seed_divided_by_the_step() -> None:
    scores = {"seed": 1.0, "next": 0.5, "far": 0.5, "other": 0.5}
    neighbours = {"seed": [("next", 1), ("far", 2)]}
    spread = ranking.spread_context(scores, neighbours)
    share = ranking.CONTEXT_SHARE
    assert spread == {"seed": 1.0, "next": 0.5 + share, "far": 0.5 + share / 2, "other": 0.5}
    assert ranking.spread_context(scores, neighbours, ranking.KEYWORD_ONLY) == scores  # context 0


def test_context_takes_the_best_seed_not_the_sum_and_adds_no_rows() -> None:
    scores = {"a": 1.0, "b": 0.8, "between": 0.1}
    neighbours = {"a": [("between", 1), ("unfound", 1)], "b": [("between", 1)]}
    spread = ranking.spread_context(scores, neighbours)
    assert spread["between"] == pytest.approx(0.1 + ranking.CONTEXT_SHARE * 1.0)  # a's share, not a's + b's
    assert "unfound" not in spread  # neither channel found it: context only re-ranks
    # seeds lend from their own scores, before any gain (order of seeds does not matter)
    chain = ranking.spread_context({"x": 1.0, "y": 0.5}, {"x": [("y", 1)], "y": [("x", 1)]})
    assert chain == {"x": 1.0 + ranking.CONTEXT_SHARE * 0.5, "y": 0.5 + ranking.CONTEXT_SHARE * 1.0}

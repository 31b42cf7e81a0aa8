"""The fusion rule and the keyword query builder, driven with plain numbers and a real FTS5 table."""

from __future__ import annotations

import sqlite3

import pytest

from bli_memory.door import ranking
from bli_memory.door.ranking import Signals, fts_query, fuse, recency

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


def test_channel_only_weights_and_use_restores_the_default() -> None:
    rows = [Signals(keyword_rank=0, similarity=0.1, age_days=0.0), Signals(None, 0.9, 0.0)]
    with ranking.use(ranking.KEYWORD_ONLY):
        keyword = fuse(rows)
    with ranking.use(ranking.VECTOR_ONLY):
        vector = fuse(rows)
    assert keyword[0] > 0 and keyword[1] == 0
    assert vector[1] > vector[0]
    # channel-only runs carry no recency: the plain channel's order
    with ranking.use(ranking.VECTOR_ONLY):
        old, new = fuse([Signals(None, 0.9, 10 * YEAR_DAYS), Signals(None, 0.8, 0.0)])
    assert old > new
    assert fuse(rows) == fuse(rows, ranking.DEFAULT_WEIGHTS)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("MAX_POOL_SIZE", '"MAX_POOL_SIZE"'),
        ("useAuthStore", '"useAuthStore"'),
        ("BLI-1234", '"BLI 1234"'),
        ("what is BLI-1234 about", '"BLI 1234" OR "about"'),
        ("src/door/app.py", '"src door app py"'),
        ("John's dog", '"John" OR "dog"'),
        ("what is it", None),
        ("", None),
    ],
)
def test_fts_query_shapes(query: str, expected: str | None) -> None:
    assert fts_query(query) == expected


@pytest.fixture(scope="module")
def fts() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5 (content, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    rows = [
        "MAX_POOL_SIZE is 40 on staging",
        "the login state lives in useAuthStore",
        "BLI-1234 tracks the flaky upload test",
        "max and pool and size appear here apart",
        'quotes " and stars * and NEAR( and a:b in text',
    ]
    db.executemany("INSERT INTO t (content) VALUES (?)", [(r,) for r in rows])
    return db


def _match(db: sqlite3.Connection, query: str) -> list[str]:
    expression = fts_query(query)
    if expression is None:
        return []
    return [r[0] for r in db.execute("SELECT content FROM t WHERE t MATCH ? ORDER BY rank", (expression,))]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        "*",
        "NEAR(",
        "a:b",
        "content:x",
        "AND",
        "OR NOT",
        "-x",
        "^start",
        '"unclosed',
        "x*",
        "(",
        ")",
        "{a b}:c",
        "é",
    ],
)
def test_fts_query_never_injects_syntax(fts: sqlite3.Connection, query: str) -> None:
    _match(fts, query)  # raises sqlite3.OperationalError on a syntax error


def test_identifier_matches_its_memory_not_its_scattered_parts(fts: sqlite3.Connection) -> None:
    assert _match(fts, "MAX_POOL_SIZE") == ["MAX_POOL_SIZE is 40 on staging"]
    assert _match(fts, "useAuthStore") == ["the login state lives in useAuthStore"]
    assert _match(fts, "BLI-1234") == ["BLI-1234 tracks the flaky upload test"]

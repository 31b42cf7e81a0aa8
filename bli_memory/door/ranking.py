"""Fusion of the door's three signals — keyword rank, vector similarity, age — into one score.

Pure functions, no I/O: the store gathers candidates, this module orders them, and tests drive it
with plain numbers.

The scoring function (documented in docs/door-api.md):

    score = (KEYWORD_WEIGHT / (RRF_K + keyword_rank) + VECTOR_WEIGHT / (RRF_K + vector_rank)) * recency
    recency = RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)

Ranks start at 1 within each channel's candidate list; a channel that did not return the row adds
nothing. Reciprocal-rank fusion needs no calibration between BM25 and cosine scales, and the
multiplicative recency term with a floor lets a fresh fact win a tie without hiding a strong old match.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

RRF_K = 60.0
KEYWORD_WEIGHT = 1.0
VECTOR_WEIGHT = 1.0
RECENCY_HALF_LIFE_DAYS = 90.0
RECENCY_FLOOR = 0.6
#: how many rows each channel contributes before fusion.
KEYWORD_CANDIDATES = 100
VECTOR_CANDIDATES = 100
#: words that carry no meaning on their own; dropped from keyword queries so BM25 ranks on content.
STOPWORDS = frozenset(
    (
        "a an and are as at be but by can could did do does for from had has have how i if in into is it "
        "its me my of on or our so that the their them then there these they this to was we were what when "
        "where which who why will with would you your"
    ).split()
)
_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_QUERY_TERMS = 32


@dataclass(frozen=True)
class Signals:
    """What the channels said about one candidate. `keyword_rank` is 0-based; None = not returned."""

    keyword_rank: int | None
    similarity: float | None
    age_days: float


def recency(age_days: float) -> float:
    """A multiplier in [RECENCY_FLOOR, 1]: 1 for a fresh memory, halving its excess every half-life."""
    age = max(0.0, age_days)
    return RECENCY_FLOOR + (1.0 - RECENCY_FLOOR) * 0.5 ** (age / RECENCY_HALF_LIFE_DAYS)


def fuse(signals: Sequence[Signals]) -> list[float]:
    """One score per candidate, higher is better (see the module docstring)."""
    scored = [(index, s.similarity) for index, s in enumerate(signals) if s.similarity is not None]
    scored.sort(key=lambda pair: -(pair[1] or 0.0))
    vector_rank = {index: rank for rank, (index, _) in enumerate(scored, start=1)}
    scores = []
    for index, signal in enumerate(signals):
        total = 0.0
        if signal.keyword_rank is not None:
            total += KEYWORD_WEIGHT / (RRF_K + signal.keyword_rank + 1)
        if index in vector_rank:
            total += VECTOR_WEIGHT / (RRF_K + vector_rank[index])
        scores.append(total * recency(signal.age_days))
    return scores


def fts_query(text: str) -> str | None:
    """An FTS5 expression matching any meaningful word of `text`, or None when there is none.

    Every term is double-quoted, so user text can never inject FTS5 syntax. An identifier such as
    `MAX_POOL_SIZE` or `BLI-1234` becomes a quoted phrase of its parts, which the tokenizer splits the
    same way in the stored text, so it matches the identifier itself.
    """
    terms: list[str] = []
    for chunk in text.split():
        words = _WORD.findall(chunk)
        if not words:
            continue
        if len(words) > 1 and re.search(r"[A-Za-z]", chunk):
            terms.append('"' + " ".join(words) + '"')
            continue
        terms.extend(f'"{word}"' for word in words if word.lower() not in STOPWORDS)
    unique = list(dict.fromkeys(terms))[:_MAX_QUERY_TERMS]
    if not unique:
        return None
    return " OR ".join(unique)

"""Fusion of the door's three signals — keyword rank, vector similarity, age — into one score.

Pure functions, no I/O: the store gathers candidates, this module orders them, and tests drive it
with plain numbers.

The scoring function (documented in docs/door-api.md):

    score = (KEYWORD_WEIGHT / (RRF_K + keyword_rank) + VECTOR_WEIGHT / (RRF_K + vector_rank)) * recency
    recency = RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)

Ranks start at 1 within each channel's candidate list; a channel that did not return the row adds
nothing.

Why these numbers (scripts/eval_locomo.py on ../shared/data/locomo/locomo_dev.json, 7 conversations,
1033 questions of categories 1-4, every turn one memory, packaged MiniLM int8; recall@10 overall
through the real store, and offline sweeps over the same stored signals for the alternatives):

(These sweeps ran when BM25 was SQLite FTS5's. door/keyword.py has BM25's own constants, which took
keyword alone to 0.627 and this rule to 0.653, and 0.669 with keyword feedback. The rule was
re-checked on them: k = 1..5 land at 0.650-0.657, keyword weight 1.25-2.0 at 0.650-0.658.)

- keyword alone 0.610, vector alone 0.482. Reciprocal-rank fusion with the textbook RRF_K = 60 gives
  0.565 (0.546 with this recency), *worse than keyword alone*: at k = 60 rank 1 and rank 10 differ by
  13 %, so a middling row that both channels half-like beats the row one channel is sure of. A small k
  trusts each channel's top: k = 1..10 all land at 0.63-0.65 (a broad plateau, not a spike); k = 3 is
  in its middle. The rule below scores 0.643 (recall@25 0.746).
- BM25 is the stronger channel here and the one that must win for identifiers (`MAX_POOL_SIZE`),
  so it weighs 1.5 against the vector's 1.0 (1.25-1.75 all within 0.005).
- A calibrated blend (BM25 / max BM25 of the query + cosine, either raw or floored) peaked at 0.633,
  z-score fusion at 0.632, Rocchio feedback on the query vector at 0.652 (+0.003, not worth a second
  pass), a longer stopword list and dropping possessives changed nothing (BM25's idf already mutes
  "did", "his"). RRF needs no calibration between BM25 and cosine scales, so it stays.
- Recency: LoCoMo asks about every session alike, so any recency costs a little there (no recency
  0.646, 90 d / floor 0.9: 0.649, 90 d / floor 0.6: 0.644). A coding assistant's memory is not like
  that: a decision replaced last week must lose to this week's. The mem0 bridge's 90 days with a
  floor of 0.6 costs 0.002 here and is strong enough to let a fresh fact pass an equally relevant
  one a quarter older (rank 2 in both channels beats rank 1 after ~90 days), while a strong old match
  drops at most two places (rank 1 in both, at the floor, still beats a fresh rank 4 in both).

- The issue's target (recall@10 >= 0.70) is out of reach of any fusion rule on raw turns with
  these two channels: every variant above sat at 0.63-0.65. What moves it is what is stored: with
  LoCoMo's generated atomic facts saved beside the turns (`--with-facts`, an upper reference for the
  librarian), the same rule scores 0.708, and the vector channel alone rises from 0.482 to 0.650
  because a self-contained fact embeds far better than a chat turn.

Channel-only runs (the eval's keyword/vector columns) swap the weights with :func:`use`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

RRF_K = 3.0
KEYWORD_WEIGHT = 1.5
VECTOR_WEIGHT = 1.0
RECENCY_HALF_LIFE_DAYS = 90.0
RECENCY_FLOOR = 0.6
#: how many rows each channel contributes before fusion (50..200 measured the same at k <= 25).
KEYWORD_CANDIDATES = 100
VECTOR_CANDIDATES = 100


@dataclass(frozen=True)
class Weights:
    """How much each channel counts. Zero switches a channel off (the eval's channel-only runs)."""

    keyword: float = KEYWORD_WEIGHT
    vector: float = VECTOR_WEIGHT
    rrf_k: float = RRF_K
    half_life_days: float = RECENCY_HALF_LIFE_DAYS
    floor: float = RECENCY_FLOOR


DEFAULT_WEIGHTS = Weights()
#: one channel alone, no recency: the numbers a plain BM25 or a plain vector index would give.
KEYWORD_ONLY = Weights(vector=0.0, floor=1.0)
VECTOR_ONLY = Weights(keyword=0.0, floor=1.0)
_active = DEFAULT_WEIGHTS


@contextmanager
def use(weights: Weights) -> Iterator[None]:
    """Rank with `weights` inside the block (evaluation scripts; the door itself never switches)."""
    global _active
    previous, _active = _active, weights
    try:
        yield
    finally:
        _active = previous


@dataclass(frozen=True)
class Signals:
    """What the channels said about one candidate. `keyword_rank` is 0-based; None = not returned."""

    keyword_rank: int | None
    similarity: float | None
    age_days: float


def recency(age_days: float, weights: Weights | None = None) -> float:
    """A multiplier in [floor, 1]: 1 for a fresh memory, halving its excess every half-life."""
    w = weights or _active
    age = max(0.0, age_days)
    return w.floor + (1.0 - w.floor) * 0.5 ** (age / w.half_life_days)


def fuse(signals: Sequence[Signals], weights: Weights | None = None) -> list[float]:
    """One score per candidate, higher is better (see the module docstring).

    Vector ranks come from the similarities of the candidates themselves, so every row the vector
    channel scored takes part, whichever channel brought it.
    """
    w = weights or _active
    scored = [(index, s.similarity) for index, s in enumerate(signals) if s.similarity is not None]
    scored.sort(key=lambda pair: -(pair[1] or 0.0))
    vector_rank = {index: rank for rank, (index, _) in enumerate(scored, start=1)}
    scores = []
    for index, signal in enumerate(signals):
        total = 0.0
        if signal.keyword_rank is not None and w.keyword:
            total += w.keyword / (w.rrf_k + signal.keyword_rank + 1)
        if index in vector_rank and w.vector:
            total += w.vector / (w.rrf_k + vector_rank[index])
        scores.append(total * recency(signal.age_days, w))
    return scores

"""Fusion of the door's three signals — keyword rank, vector similarity, age — into one score.

Pure functions, no I/O: the store gathers candidates, this module orders them, and tests drive it
with plain numbers.

The scoring function (documented in docs/door-api.md):

    score = (KEYWORD_WEIGHT / (RRF_K + keyword_rank) + VECTOR_WEIGHT / (RRF_K + vector_rank)) * recency
    recency = RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)

Ranks start at 1 within each channel's candidate list; a channel that did not return the row adds
nothing. Then context (:func:`spread_context`): each of the CONTEXT_SEEDS best candidates lends
CONTEXT_SHARE of its score, divided by the step, to the candidates its device saved up to
CONTEXT_STEPS saves before and after it within CONTEXT_WINDOW_S; a candidate takes its best lender.

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

- No fusion rule of these two channels reached the issue's target (recall@10 >= 0.70) on raw turns:
  every variant above sat at 0.63-0.65 (0.653-0.669 with door/keyword.py's BM25 and feedback). With
  LoCoMo's generated atomic facts saved beside the turns (`--with-facts`, an upper reference for the
  librarian) the rule scored 0.708: a self-contained fact embeds far better than a chat turn.
- Context is what the turns lacked: a turn is often a reply whose subject is in the turn before it.
  Of the evidence turns missing from the top 10, one in six sat next to a top-5 hit. Lending the
  best candidates' score to their neighbours took recall@10 from 0.669 to 0.710 (single-hop 0.772
  to 0.835), and it helped in each of the 7 conversations (+0.003 to +0.087). The share is a
  plateau: taking the best lender, 0.25-0.5 all scored 0.710-0.717; summing the lenders scored the
  same at 0.2 but let a run of saves lift itself, so the best lender it is. Only candidates gain:
  letting context add rows no channel found gave nothing (0.671) and would return rows that match
  neither the words nor the meaning. The 30-minute window and same-device rule keep it to one
  person's working session; in a team space a teammate's interleaved saves are not context.

Channel-only runs (the eval's keyword/vector columns) swap the weights with :func:`use`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
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
#: context (see :func:`spread_context`): the best CONTEXT_SEEDS rows lend CONTEXT_SHARE of their score,
#: divided by the step, to the CONTEXT_STEPS memories the same device saved just before and after
#: each, within CONTEXT_WINDOW_S of it.
CONTEXT_SEEDS = 10
CONTEXT_STEPS = 2
CONTEXT_SHARE = 0.3
CONTEXT_WINDOW_S = 30 * 60.0


@dataclass(frozen=True)
class Weights:
    """How much each channel counts. Zero switches a channel off (the eval's channel-only runs)."""

    keyword: float = KEYWORD_WEIGHT
    vector: float = VECTOR_WEIGHT
    rrf_k: float = RRF_K
    half_life_days: float = RECENCY_HALF_LIFE_DAYS
    floor: float = RECENCY_FLOOR
    context: float = CONTEXT_SHARE


DEFAULT_WEIGHTS = Weights()
#: one channel alone, no recency: the numbers a plain BM25 or a plain vector index would give.
KEYWORD_ONLY = Weights(vector=0.0, floor=1.0, context=0.0)
VECTOR_ONLY = Weights(keyword=0.0, floor=1.0, context=0.0)
_active = DEFAULT_WEIGHTS


def active() -> Weights:
    """The weights in force (the defaults, or an evaluation's inside :func:`use`)."""
    return _active


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


def spread_context(
    scores: Mapping[str, float],
    neighbours: Mapping[str, Sequence[tuple[str, int]]],
    weights: Weights | None = None,
) -> dict[str, float]:
    """The scores after each candidate gains `context / step` of its best neighbouring seed's score.

    A memory's neighbours are the ones its device saved just before and after it in the same working
    session (`neighbours[seed]` = [(memory id, step)], step 1 the closest): the question a reply
    answers, the decision a fix followed. Context only re-ranks what the channels found: a neighbour
    that is not among `scores` stays out, so a search never returns a row that neither matched the
    words nor the meaning. A row next to several seeds takes the best of them, not their sum (a
    run of saves would otherwise lift itself). Seeds' scores are read before any gain.
    """
    w = weights or _active
    gain: dict[str, float] = {}
    for seed, around in neighbours.items():
        for memory_id, step in around:
            if memory_id in scores:
                gain[memory_id] = max(gain.get(memory_id, 0.0), w.context * scores[seed] / step)
    return {memory_id: score + gain.get(memory_id, 0.0) for memory_id, score in scores.items()}

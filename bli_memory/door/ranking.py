"""Fusion of the door's signals (keyword rank, vector similarity, age, context) into one score.

Pure functions, no I/O and no module state: the store gathers candidates and passes the `Weights`
to rank with; this module orders them. The rule and the measurements behind each constant are in
docs/ranking.md.

Determinism: the order depends only on what the space holds and the query, never on the moment of
the search nor on ids (random per door). Age is counted back from the newest candidate
(:func:`ages_days`), and every tie is broken by save order (:func:`ordered`), so the same memories
saved in the same order rank the same way, with the same scores, in every door and every run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bli_memory.door import answer_kind

SECONDS_PER_DAY = 86_400.0

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
#: a stored exchange one of whose own facts ranks above it keeps this share of its score
#: (:func:`represented_exchanges_yield`); 0 to 0.3 measured the same on the capture set.
REPRESENTED_EXCHANGE_FACTOR = 0.3
#: a distilled fact holding the kind of answer its question asks for (a version for "which version",
#: a path for "where", see answer_kind.py) gains this share of its score, times the share of the asked
#: kinds it holds. Tuned on half the capture set's projects and reported on the other half
#: (docs/ranking.md, Answer kinds).
ANSWER_KIND_BOOST = 1.5
#: rows beyond the ones asked for that a search reads to see which are stored exchanges and facts.
EXCHANGE_WINDOW = 25


@dataclass(frozen=True)
class Weights:
    """How much each channel counts. Zero switches a channel off (the eval's channel-only runs)."""

    keyword: float = KEYWORD_WEIGHT
    vector: float = VECTOR_WEIGHT
    rrf_k: float = RRF_K
    half_life_days: float = RECENCY_HALF_LIFE_DAYS
    floor: float = RECENCY_FLOOR
    context: float = CONTEXT_SHARE
    answer_kind: float = ANSWER_KIND_BOOST


DEFAULT_WEIGHTS = Weights()
#: one channel alone, no recency: the numbers a plain BM25 or a plain vector index would give.
KEYWORD_ONLY = Weights(vector=0.0, floor=1.0, context=0.0, answer_kind=0.0)
VECTOR_ONLY = Weights(keyword=0.0, floor=1.0, context=0.0, answer_kind=0.0)


@dataclass(frozen=True)
class Signals:
    """What the channels said about one candidate. `keyword_rank` is 0-based; None = not returned."""

    keyword_rank: int | None
    similarity: float | None
    age_days: float


#: where a candidate stands in save order: (the position of its tag among the space's tags, canonical
#: first, then aliases by name; its place in that tag's save order). The same in every door that holds
#: the same memories saved in the same order, unlike a memory id.
SavePosition = tuple[int, int]


def ages_days(updated_s: Sequence[float]) -> list[float]:
    """Each candidate's age in days, counted back from the newest candidate rather than from the clock.

    Recency is then a property of the memories alone: the same search gives the same scores a
    second later or in another door, and the moment of a query can never reorder two near-tied rows.
    The newest candidate counts as fresh; an older one loses what it would have lost had the
    query been asked when the newest was saved. (A space's recent past is what its newest row
    says, not what the wall clock says.)
    """
    if not updated_s:
        return []
    newest = max(updated_s)
    return [(newest - when) / SECONDS_PER_DAY for when in updated_s]


def ordered(
    scores: Mapping[str, float],
    updated_s: Mapping[str, float],
    position: Mapping[str, SavePosition],
) -> list[str]:
    """The ids of `scores` best first: higher score, then the newer change, then the earlier save.

    The last key decides exact ties (an import that saved rows with one timestamp, two memories
    with the same text under different custom ids): save order means the same in every door, so
    the tie falls the same way everywhere. Never by id: ids are random per door.
    """
    return sorted(
        scores, key=lambda memory_id: (-scores[memory_id], -updated_s[memory_id], position[memory_id])
    )


def recency(age_days: float, weights: Weights = DEFAULT_WEIGHTS) -> float:
    """A multiplier in [floor, 1]: 1 for a fresh memory, halving its excess every half-life."""
    age = max(0.0, age_days)
    return weights.floor + (1.0 - weights.floor) * 0.5 ** (age / weights.half_life_days)


def fuse(signals: Sequence[Signals], weights: Weights = DEFAULT_WEIGHTS) -> list[float]:
    """One score per candidate, higher is better (the rule is in docs/ranking.md).

    Vector ranks come from the similarities of the candidates themselves, so every row the vector
    channel scored takes part, whichever channel brought it. Equal similarities keep the order of
    `signals` (the caller passes them in save order, so the tie falls the same way in every door).
    """
    scored = [(index, s.similarity) for index, s in enumerate(signals) if s.similarity is not None]
    scored.sort(key=lambda pair: -(pair[1] or 0.0))
    vector_rank = {index: rank for rank, (index, _) in enumerate(scored, start=1)}
    scores = []
    for index, signal in enumerate(signals):
        total = 0.0
        if signal.keyword_rank is not None and weights.keyword:
            total += weights.keyword / (weights.rrf_k + signal.keyword_rank + 1)
        if index in vector_rank and weights.vector:
            total += weights.vector / (weights.rrf_k + vector_rank[index])
        scores.append(total * recency(signal.age_days, weights))
    return scores


def spread_context(
    scores: Mapping[str, float],
    neighbours: Mapping[str, Sequence[tuple[str, int]]],
    weights: Weights = DEFAULT_WEIGHTS,
) -> dict[str, float]:
    """The scores after each candidate gains `context / step` of its best neighbouring seed's score.

    A memory's neighbours are the ones its device saved just before and after it in the same working
    session (`neighbours[seed]` = [(memory id, step)], step 1 the closest): the question a reply
    answers, the decision a fix followed. Context only re-ranks what the channels found: a neighbour
    that is not among `scores` stays out, so a search never returns a row that neither matched the
    words nor the meaning. A row next to several seeds takes the best of them, not their sum (a
    run of saves would otherwise lift itself). Seeds' scores are read before any gain.
    """
    gain: dict[str, float] = {}
    for seed, around in neighbours.items():
        for memory_id, step in around:
            if memory_id in scores:
                gain[memory_id] = max(gain.get(memory_id, 0.0), weights.context * scores[seed] / step)
    return {memory_id: score + gain.get(memory_id, 0.0) for memory_id, score in scores.items()}


def lift_answer_kinds(
    scores: Mapping[str, float], texts: Mapping[str, str], question: str, boost: float = ANSWER_KIND_BOOST
) -> dict[str, float]:
    """`scores` after each memory of `texts` gains `boost` times the share of the kinds of answer
    `question` asks for that it holds (:mod:`bli_memory.door.answer_kind`).

    The channels find the memories about the subject; this picks, among them, the one that holds
    what was asked: for "which release of the validation library are we locked to?" the fact with
    `2.7.4` rather than the fact about why it was pinned. Only the memories in `texts` take part (the
    caller leaves stored exchanges out: an exchange holds every kind of string, so holding one says
    nothing). A question asking for no kind leaves every score as it is.
    """
    kinds = answer_kind.asked(question)
    if not kinds or boost <= 0:
        return dict(scores)
    return {
        memory_id: score * (1.0 + boost * answer_kind.held_share(texts[memory_id], kinds))
        if memory_id in texts
        else score
        for memory_id, score in scores.items()
    }


def represented_exchanges_yield(
    order: Sequence[str],
    scores: Mapping[str, float],
    fact_exchange: Mapping[str, str],
    exchange_key: Mapping[str, str],
    factor: float = REPRESENTED_EXCHANGE_FACTOR,
) -> tuple[list[str], dict[str, float]]:
    """`order` (best first) re-ranked after each stored exchange that one of its own facts outranks
    keeps only `factor` of its score.

    `fact_exchange` maps a distilled fact to the key of the exchange it came from, `exchange_key` a
    stored exchange to its key. Such an exchange is already represented by its fact, which says the
    same in fewer words: in the next place it would repeat that evidence, where another memory of
    comparable score may say something new. It yields to any row scoring at least `factor` of it and
    stays a hit when nothing comes close. An exchange that ranks above all of its facts keeps its
    score: it may hold what the librarian did not distil. Ties keep the order of `order`.
    """
    new_scores = dict(scores)
    represented: set[str] = set()
    for memory_id in order:
        key = fact_exchange.get(memory_id)
        if key is not None:
            represented.add(key)
        elif exchange_key.get(memory_id) in represented:
            new_scores[memory_id] = scores[memory_id] * factor
    place = {memory_id: index for index, memory_id in enumerate(order)}
    ranked = sorted(order, key=lambda memory_id: (-new_scores[memory_id], place[memory_id]))
    return ranked, new_scores

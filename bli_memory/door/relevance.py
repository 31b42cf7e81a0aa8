"""Relevance: a search hit's calibrated chance of answering the query, beside its cosine.

A cosine means different things in different embedding spaces (an unrelated row of one model sits at
0.2, of another at 0.5), and the fused score is only an order. Relevance is a logistic regression
over what a search already knows about a hit (:class:`HitSignals`), fitted per embedder on labelled
pairs (scripts/fit_relevance.py; method and held-out reliability in docs/ranking.md, Relevance). Its
coefficients ship in `relevance.json`, keyed by the embedder's name (`none` for a door without one),
with the door's recall floor: the relevance at which the prompt hook shows a row.

Pure: no I/O beyond reading the packaged coefficients once, no randomness. It never reorders hits.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

COEFFICIENTS_FILE = Path(__file__).with_name("relevance.json")
#: the names of the features, in the order of :func:`features` and of the coefficients file.
FEATURE_NAMES = (
    "cosine",
    "cosine_over_background",
    "keyword_reciprocal_rank",
    "fused_reciprocal_rank",
    "both_channels",
    "score_share_of_best",
    "answer_kind_held",
    "answer_kind_missed",
    "stored_exchange",
    "query_terms_held",
    "best_cosine_over_background",
    "query_worth_held",
    "exchange_without_facts",
)
#: the fit: Newton steps on the L2-penalised log-loss (fixed, so a fit is the same in every run).
FIT_STEPS = 30
FIT_L2 = 1.0


@dataclass(frozen=True)
class HitSignals:
    """What the search knows about one hit when its place is settled.

    `background` is how close the space's rows usually are to the query in this embedding space: the
    median cosine of the vector channel's candidates (None without an embedder). `answer_kind_share`
    is the share of the asked kinds of answer the row holds (`answer_kind.held_share`), None when the
    question asks for none. `query_terms_held` is the share of the query's keyword terms the row
    holds (`keyword.query_terms`), and `best_similarity` the best cosine of the space's rows: how
    far the space as a whole is from the query, which a rank or a share of the best cannot say.
    `query_worth_held` is the same share with each term weighed by its idf in the space
    (`keyword.term_worths`): a row holding the question's rare word, not only its common ones.
    `exchange_without_facts`: the hit is a stored exchange its extraction job distilled no fact
    from (`exchanges.gave_no_facts`): what the librarian judged to hold nothing lasting rarely
    answers a later question."""

    similarity: float | None
    keyword_rank: int | None
    rank: int
    score: float
    best_score: float
    background: float | None
    answer_kind_share: float | None
    both_channels: bool
    stored_exchange: bool
    query_terms_held: float = 0.0
    best_similarity: float | None = None
    query_worth_held: float = 0.0
    exchange_without_facts: bool = False


@dataclass(frozen=True)
class Calibration:
    """One embedder's coefficients (in FEATURE_NAMES order), intercept and recall floor."""

    weights: tuple[float, ...]
    intercept: float
    floor: float

    def relevance(self, signals: HitSignals) -> float:
        """The estimated probability, in [0, 1], that the hit answers the query."""
        z = self.intercept + sum(w * x for w, x in zip(self.weights, features(signals), strict=True))
        return _sigmoid(z)


def features(s: HitSignals) -> list[float]:
    """The hit's features, each in about [-1, 1], in FEATURE_NAMES order. A missing signal is 0."""
    cosine = s.similarity if s.similarity is not None else 0.0
    over = cosine - s.background if s.similarity is not None and s.background is not None else 0.0
    keyword = 0.0 if s.keyword_rank is None else 1.0 / (1 + s.keyword_rank)
    share = s.score / s.best_score if s.best_score > 0 else 0.0
    asked = s.answer_kind_share is not None
    held = s.answer_kind_share or 0.0
    best = s.best_similarity
    best_over = best - s.background if best is not None and s.background is not None else 0.0
    return [
        cosine,
        over,
        keyword,
        1.0 / (1 + s.rank),
        1.0 if s.both_channels else 0.0,
        share,
        held,
        1.0 if asked and held == 0.0 else 0.0,
        1.0 if s.stored_exchange else 0.0,
        s.query_terms_held,
        best_over,
        s.query_worth_held,
        1.0 if s.exchange_without_facts else 0.0,
    ]


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def parse(entry: Mapping[str, object]) -> Calibration:
    """One embedder's entry of the coefficients file; a malformed one is a ValueError."""
    names = entry.get("features")
    weights = entry.get("weights")
    if names != list(FEATURE_NAMES) or not isinstance(weights, list):
        raise ValueError("the coefficients name other features than this door computes")
    intercept, floor = entry.get("intercept"), entry.get("floor")
    if not isinstance(intercept, (int, float)) or not isinstance(floor, (int, float)):
        raise ValueError("intercept and floor must be numbers")
    return Calibration(tuple(float(w) for w in weights), float(intercept), float(floor))


def _entries(path: Path) -> dict[str, object]:
    """The `embedders` object of a coefficients file; ValueError, one sentence, when the file cannot
    be read or holds none."""
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    except ValueError:
        raise ValueError("is not JSON") from None
    entries = table.get("embedders") if isinstance(table, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise ValueError('holds no "embedders" object of calibrations')
    return entries


def calibrations_in(path: Path) -> dict[str, Calibration]:
    """Every calibration of a coefficients file by embedder name; ValueError, one sentence, when the
    file cannot be read, is not such a file or one of its entries was fitted for other features (a
    file a person chose: a wrong one is an error, not hits without relevance)."""
    out = {}
    for name, entry in _entries(path).items():
        if not isinstance(entry, dict):
            raise ValueError(f"{name}: an entry must be an object")
        try:
            out[str(name)] = parse(entry)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
    return out


@cache
def calibration_for(embedder: str, path: Path = COEFFICIENTS_FILE) -> Calibration | None:
    """The calibration of `embedder` (its name: `onnx:all-MiniLM-L6-v2-int8`, `none`) in the
    coefficients file `path` (the packaged one unless the door was given its own), or None when it
    has none (another model: its hits carry no relevance and the answer no floor), or when its entry
    was fitted for other features than these (scripts/fit_relevance.py refits it)."""
    try:
        entry = _entries(path).get(embedder)
        return parse(entry) if isinstance(entry, dict) else None
    except ValueError:  # no such file, or fitted for other features: wrong to score with, not merely off
        return None


def fit(
    rows: Sequence[Sequence[float]], labels: Sequence[int], l2: float = FIT_L2
) -> tuple[list[float], float]:
    """(weights, intercept) of a logistic regression of `labels` (0/1) on `rows` of features.

    Newton's method on the log-loss with an L2 penalty on the weights (not the intercept), FIT_STEPS
    steps: deterministic, no learning rate to tune, and the penalty keeps a feature that never varies
    for an embedder (the cosines under `none`) at 0."""
    import numpy as np

    x = np.asarray(rows, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    x1 = np.hstack([x, np.ones((len(x), 1))])
    theta = np.zeros(x1.shape[1])
    penalty = np.full(x1.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(FIT_STEPS):
        p = 1.0 / (1.0 + np.exp(-(x1 @ theta)))
        gradient = x1.T @ (p - y) + penalty * theta
        hessian = (x1 * (p * (1 - p))[:, None]).T @ x1 + np.diag(penalty) + 1e-9 * np.eye(x1.shape[1])
        theta = theta - np.linalg.solve(hessian, gradient)
    return [float(v) for v in theta[:-1]], float(theta[-1])


def reliability(
    predicted: Sequence[float], labels: Sequence[int], bins: int = 5
) -> list[tuple[str, int, float, float]]:
    """(bin, pairs, mean predicted, observed share of positives) per equal-width bin of `predicted`;
    a calibrated model has the two close in every bin."""
    table = []
    for number in range(bins):
        low, high = number / bins, (number + 1) / bins
        inside = [
            (p, y)
            for p, y in zip(predicted, labels, strict=True)
            if low <= p < high or (number == bins - 1 and p == 1.0)
        ]
        if inside:
            mean_p = sum(p for p, _ in inside) / len(inside)
            observed = sum(y for _, y in inside) / len(inside)
            table.append((f"{low:.1f}-{high:.1f}", len(inside), mean_p, observed))
    return table


def median(values: Sequence[float]) -> float | None:
    """The median of `values`, None for none (the background of a space without vectors)."""
    ordered = sorted(values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2

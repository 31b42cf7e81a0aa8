"""The relevance calibration (`door.relevance`): features, the logistic fit, the reliability table and
the packaged coefficients; pure, no door."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bli_memory.door import relevance
from bli_memory.door.relevance import Calibration, HitSignals


def signals(**changes: object) -> HitSignals:
    base: dict[str, object] = {
        "similarity": 0.5,
        "keyword_rank": 0,
        "rank": 0,
        "score": 0.8,
        "best_score": 0.8,
        "background": 0.1,
        "answer_kind_share": None,
        "both_channels": True,
        "stored_exchange": False,
        "query_terms_held": 0.5,
        "best_similarity": 0.5,
        "query_worth_held": 0.75,
        "exchange_without_facts": True,
    }
    base.update(changes)
    return HitSignals(**base)  # type: ignore[arg-type]


def test_features_follow_the_names_and_a_missing_signal_is_zero() -> None:
    values = relevance.features(signals())
    assert len(values) == len(relevance.FEATURE_NAMES)
    named = dict(zip(relevance.FEATURE_NAMES, values, strict=True))
    assert named["cosine"] == 0.5 and named["cosine_over_background"] == pytest.approx(0.4)
    assert named["keyword_reciprocal_rank"] == 1.0 and named["fused_reciprocal_rank"] == 1.0
    assert named["score_share_of_best"] == 1.0 and named["answer_kind_missed"] == 0.0
    assert named["query_worth_held"] == 0.75 and named["exchange_without_facts"] == 1.0
    bare = dict(
        zip(
            relevance.FEATURE_NAMES,
            relevance.features(
                signals(
                    similarity=None,
                    keyword_rank=None,
                    background=None,
                    best_similarity=None,
                    rank=3,
                    score=0.2,
                    answer_kind_share=0.0,
                    both_channels=False,
                )
            ),
            strict=True,
        )
    )
    assert bare["cosine"] == 0.0 and bare["cosine_over_background"] == 0.0
    assert bare["best_cosine_over_background"] == 0.0 and bare["keyword_reciprocal_rank"] == 0.0
    assert bare["fused_reciprocal_rank"] == 0.25 and bare["score_share_of_best"] == 0.25
    assert bare["answer_kind_missed"] == 1.0  # asked for a kind the row does not hold


def test_relevance_is_a_probability_that_rises_with_a_positive_weight() -> None:
    weights = tuple(1.0 if name == "cosine" else 0.0 for name in relevance.FEATURE_NAMES)
    model = Calibration(weights, -0.5, 0.5)
    low, high = model.relevance(signals(similarity=0.1)), model.relevance(signals(similarity=0.9))
    assert 0.0 < low < 0.5 < high < 1.0
    extreme = Calibration(tuple(1000.0 for _ in weights), 0.0, 0.5)
    assert extreme.relevance(signals()) == 1.0
    assert Calibration(tuple(-1000.0 for _ in weights), 0.0, 0.5).relevance(signals()) == 0.0


def test_the_fit_finds_the_signal_and_is_the_same_every_time() -> None:
    # the label follows the first feature; the second is noise the same for both labels
    rows = [[x / 10, (x * 7) % 3] for x in range(10)] * 4
    labels = [int(row[0] >= 0.5) for row in rows]
    weights, intercept = relevance.fit(rows, labels)
    assert weights[0] > 5 * abs(weights[1])
    assert relevance.fit(rows, labels) == (weights, intercept)
    # a feature that never varies keeps a zero weight (the cosines of a door without an embedder)
    flat = [[row[0], 0.0] for row in rows]
    assert relevance.fit(flat, labels)[0][1] == 0.0


def test_the_reliability_table_bins_predictions_against_what_was_observed() -> None:
    table = relevance.reliability([0.05, 0.1, 0.9, 1.0, 0.5], [0, 1, 1, 1, 0], bins=5)
    assert table == [
        ("0.0-0.2", 2, pytest.approx(0.075), 0.5),
        ("0.4-0.6", 1, 0.5, 0.0),
        ("0.8-1.0", 2, 0.95, 1.0),
    ]


def test_median() -> None:
    assert relevance.median([]) is None
    assert relevance.median([3.0, 1.0, 2.0]) == 2.0 and relevance.median([1.0, 2.0]) == 1.5


def test_the_package_calibrates_the_packaged_model_and_keyword_only() -> None:
    for name in ("onnx:all-MiniLM-L6-v2-int8", "none"):
        model = relevance.calibration_for(name)
        assert model is not None, name
        assert 0.0 < model.floor < 1.0 and len(model.weights) == len(relevance.FEATURE_NAMES)
    assert relevance.calibration_for("openai:text-embedding-3-small") is None  # another space: no relevance


def test_a_coefficients_entry_for_other_features_is_refused() -> None:
    entry = json.loads(relevance.COEFFICIENTS_FILE.read_text(encoding="utf-8"))["embedders"]["none"]
    assert relevance.parse(entry).floor == entry["floor"]
    with pytest.raises(ValueError):
        relevance.parse({**entry, "features": entry["features"][:-1]})
    with pytest.raises(ValueError):
        relevance.parse({**entry, "floor": "high"})


def test_the_coefficients_file_ships_in_the_package() -> None:
    assert relevance.COEFFICIENTS_FILE.parent == Path(relevance.__file__).parent
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    assert '"door/relevance.json"' in pyproject


def test_an_embedder_whose_entry_names_other_features_gets_no_calibration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = json.loads(relevance.COEFFICIENTS_FILE.read_text(encoding="utf-8"))
    stale = dict(table["embedders"]["none"])
    stale["features"] = stale["features"][:-1]
    stale["weights"] = stale["weights"][:-1]
    coefficients = tmp_path / "relevance.json"
    coefficients.write_text(json.dumps({"embedders": {"none": stale}}), encoding="utf-8")
    monkeypatch.setattr(relevance, "COEFFICIENTS_FILE", coefficients)
    relevance.calibration_for.cache_clear()
    try:
        assert relevance.calibration_for("none") is None  # hits carry no relevance: the hook's cosine rule
    finally:
        relevance.calibration_for.cache_clear()

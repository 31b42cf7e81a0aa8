"""Capture quality: replay coding-agent exchanges through a real door and score what the librarian keeps.

Usage: .venv/bin/python scripts/eval_capture.py PATH [--embedder onnx|none] [--projects A,B] [--verbose]
       [--rewrite-standin]

PATH is a capture file: one JSON object a line, `{id, project, exchange, facts: [{query, key: [...]}],
must_not: [...], noise}`. The data set is not part of a checkout; the development machine's copy is
`exchanges_dev.jsonl` (60 exchanges from seven invented repositories). The script starts a real `bli-memory-door serve` on a free loopback port over a
temporary SQLite file, pairs a device with `bli-memory-door pair`, and saves every exchange in file
order with `POST /api/memory/save {extract: true}`, as the Stop hook does, in the project's own space
`repo_<slug>__<sha256(project)[:16]>`, waiting for each job (`GET /api/memory/jobs/{id}`) before the
next save. Then it searches the door and scores:

- recall@5: the share of facts for which one of the top 5 results for the fact's query contains every
  key string (case-insensitive); "as a distilled fact": the first such result has kind `memory`;
  MRR: the mean of 1/rank of that first match (0 when none is in the top 5).
- shown by the prompt hook: the share of facts whose query, asked as a prompt, gets a recall block
  holding every key: the hook's own search (top 5, similarity at least its floor) and its own filter
  (`bli_memory.hooks.prompt.recalled_rows`). What an agent is shown before it answers, not only what
  the door can find.
- wrong facts: the distinct results of kind `memory` that contain one of an exchange's `must_not`
  strings, found by searching each of its facts' queries and each `must_not` string (limit 10).
- noise kept: for each noise exchange, the results of kind `memory` among the top 5 for the first 12
  words of its reply that share a run of 6 consecutive words with the exchange.
- jobs failed: extraction jobs that ended `failed` or were not done within 30 s.
- corrections superseded: a `must_not` string that appears in an earlier exchange of the same project is
  a corrected value; it counts as superseded when a fact holding it was current before the correcting
  exchange was saved and none is current at the end (the other outcomes: the old fact is still current,
  or the old value was never stored as a fact).

A stored exchange (kind `document`) counts neither as noise kept nor as a wrong fact. The bar: recall@5
of at least 0.90, no wrong fact, no failed job.

One column per librarian: the deterministic one always (a door started without the LLM settings), and
the LLM one when BLI_MEMORY_LLM_URL and BLI_MEMORY_LLM_MODEL are set (BLI_MEMORY_LLM_KEY optional); each
runs on a door and a database of its own. `--verbose` adds, per exchange, what each job stored, updated
and superseded (read from the door's database, read-only, after each job), where each fact was found
or what came first instead, the wrong facts and the noise kept, and at the end every space's facts.
The table goes to stdout and is the same for the same input and librarian; progress and timings go to
stderr.

`--rewrite-standin` adds a column: the deterministic librarian on a door whose question rewrite
(`bli_memory.door.rewrite`) is on, its chat endpoint scripts/rewrite_standin.py's deterministic rule
served on a loopback port (no model runs here). The stand-in refuses the librarian's extraction
requests, so that door's jobs fall back to the deterministic extractor: the column differs from the
first only by the rewrite of the fact queries that are questions.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import local_door  # scripts/local_door.py

from bli_memory.door.config import ENV_LLM_KEY, ENV_LLM_MODEL, ENV_LLM_URL
from bli_memory.hooks import prompt as prompt_hook
from bli_memory.hooks.stop import SAVE_METADATA
from bli_memory.hooks.trivial import identifiers

RECALL_TOP_K = 5
WRONG_LIMIT = 10
NOISE_LIMIT = 5
NOISE_QUERY_WORDS = 12
NOISE_RUN_WORDS = 6
RECALL_BAR = 0.90
JOB_DEADLINE_S = 30.0
JOB_POLL_S = 0.05
DOOR_START_TIMEOUT_S = 60.0
DOOR_STOP_TIMEOUT_S = 15.0
PAIR_TIMEOUT_S = 60.0
HTTP_TIMEOUT_S = 60.0
#: how much of a result a verbose line shows when it is not the fact itself.
SHOWN_CHARS = 160
FALLBACK_LOG = "[bli-memory] librarian: the LLM extractor failed"
PROG = "eval_capture"
_WORD = re.compile(r"\w+")
_REPLY = re.compile(r"(?:^|\n)\s*Assistant\s*:\s*", re.IGNORECASE)


class EvalError(Exception):
    """A one-line reason the evaluation cannot run; `status` is the exit code."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# ------------------------------------------------------------------------------------- the capture file


@dataclass(frozen=True)
class Fact:
    query: str
    key: tuple[str, ...]


@dataclass(frozen=True)
class Exchange:
    id: str
    project: str
    text: str
    facts: tuple[Fact, ...]
    must_not: tuple[str, ...]
    noise: bool


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ValueError(f"{what} must be a list of non-empty strings")
    return tuple(value)


def parse_exchange(row: Any) -> Exchange:
    """One line of a capture file; ValueError names what is wrong with it."""
    if not isinstance(row, dict):
        raise ValueError("not a JSON object")
    for name in ("id", "project", "exchange"):
        if not isinstance(row.get(name), str) or not row[name].strip():
            raise ValueError(f"{name} must be a non-empty string")
    if not isinstance(row.get("noise", False), bool):
        raise ValueError("noise must be true or false")
    raw_facts = row.get("facts", [])
    if not isinstance(raw_facts, list):
        raise ValueError("facts must be a list")
    facts = []
    for fact in raw_facts:
        if not isinstance(fact, dict) or not isinstance(fact.get("query"), str) or not fact["query"].strip():
            raise ValueError("each fact needs a non-empty query")
        key = _strings(fact.get("key"), "a fact's key")
        if not key:
            raise ValueError("a fact's key must hold at least one string")
        facts.append(Fact(fact["query"], key))
    return Exchange(
        id=row["id"],
        project=row["project"],
        text=row["exchange"],
        facts=tuple(facts),
        must_not=_strings(row.get("must_not", []), "must_not"),
        noise=bool(row.get("noise", False)),
    )


def load_exchanges(path: Path) -> list[Exchange]:
    """Every exchange of a capture file, in file order; EvalError (exit 2) for a missing or bad file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise EvalError(
            f"{path} does not exist; give a capture file (one JSON exchange a line; see --help)", 2
        ) from None
    except IsADirectoryError:
        raise EvalError(f"{path} is a folder, not a capture file", 2) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalError(f"cannot read {path}: {type(exc).__name__}", 2) from None
    exchanges: list[Exchange] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            exchange = parse_exchange(json.loads(line))
        except ValueError as exc:  # JSONDecodeError is a ValueError
            reason = "not JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise EvalError(f"{path} line {number}: {reason}", 2) from None
        if exchange.id in seen:
            raise EvalError(f"{path} line {number}: id {exchange.id!r} appears twice", 2)
        seen.add(exchange.id)
        exchanges.append(exchange)
    if not exchanges:
        raise EvalError(f"{path} holds no exchange", 2)
    return exchanges


def only_projects(exchanges: Sequence[Exchange], projects: str) -> list[Exchange]:
    """The exchanges of the named projects (comma-separated), in file order; all of them when empty."""
    wanted = {name.strip() for name in projects.split(",") if name.strip()}
    if not wanted:
        return list(exchanges)
    unknown = sorted(wanted - {e.project for e in exchanges})
    if unknown:
        raise EvalError(f"--projects: no exchange belongs to {', '.join(unknown)}", 2)
    return [e for e in exchanges if e.project in wanted]


def space_tag(project: str) -> str:
    """`repo_<slug>__<sha256(project)[:16]>`; the slug is the name lowercased, each run outside
    [a-z0-9] replaced by `_`."""
    slug = re.sub(r"[^a-z0-9]+", "_", project.lower())
    return f"repo_{slug}__{hashlib.sha256(project.encode('utf-8')).hexdigest()[:16]}"


def reply_of(text: str) -> str:
    """The assistant's part of an exchange (the whole text when it names no assistant)."""
    match = _REPLY.search(text)
    return text[match.end() :] if match else text


def noise_query(exchange: Exchange) -> str:
    return " ".join(reply_of(exchange.text).split()[:NOISE_QUERY_WORDS])


def word_runs(text: str, length: int = NOISE_RUN_WORDS) -> set[tuple[str, ...]]:
    """Every run of `length` consecutive words (lowercased letters, digits and `_`) of `text`."""
    words = [w.lower() for w in _WORD.findall(text)]
    return {tuple(words[i : i + length]) for i in range(len(words) - length + 1)}


def holds(content: str, needles: Iterable[str]) -> bool:
    lowered = content.lower()
    return all(needle.lower() in lowered for needle in needles)


def corrected_values(exchanges: Sequence[Exchange]) -> dict[str, list[str]]:
    """exchange id -> its must_not strings that appear in an earlier exchange of the same project."""
    out: dict[str, list[str]] = {}
    for index, exchange in enumerate(exchanges):
        earlier = [e.text.lower() for e in exchanges[:index] if e.project == exchange.project]
        old = [m for m in exchange.must_not if any(m.lower() in text for text in earlier)]
        if old:
            out[exchange.id] = old
    return out


# ------------------------------------------------------------------------------------------- the door


def door_program() -> str:
    beside = Path(sys.executable).parent / "bli-memory-door"
    if beside.exists():
        return str(beside)
    found = shutil.which("bli-memory-door")
    if found is None:
        raise EvalError("bli-memory-door not found; install the door extra (pip install -e '.[door]')", 2)
    return found


class Door:
    """A real `bli-memory-door serve` on a free loopback port over its own SQLite file; stderr is drained
    into `lines` so it never blocks."""

    def __init__(self, folder: Path, embedder: str, env: Mapping[str, str]) -> None:
        self.db = folder / "memory.db"
        home = folder / "home"
        home.mkdir(parents=True, exist_ok=True)
        self.env = {**env, "HOME": str(home), "XDG_DATA_HOME": str(home / "share")}
        self.env.pop("BLI_MEMORY_EMBEDDER", None)
        self.program = door_program()
        self.lines: list[str] = []
        try:
            self.process, self.url = local_door.start_door(
                self.db,
                None,
                embedder,
                "eval_capture",
                DOOR_START_TIMEOUT_S,
                worker=True,
                env=self.env,
                program=self.program,
                lines=self.lines,
            )
        except local_door.DoorDidNotStart as exc:
            raise EvalError(f"the door did not start: {exc.last}") from None
        self.token = self._pair()

    def _pair(self) -> str:
        command = [self.program, "pair", "--person", "eval", "--db", str(self.db)]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, env=self.env, timeout=PAIR_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            raise EvalError("bli-memory-door pair did not answer") from None
        token = done.stdout.strip()
        if done.returncode != 0 or not token:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise EvalError(f"bli-memory-door pair failed: {last}")
        return token

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One HTTP call; (status, decoded JSON). A door that cannot be reached is an EvalError."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
                status, payload = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, payload = error.code, error.read()
        except (urllib.error.URLError, OSError) as exc:
            raise EvalError(f"the door stopped answering ({type(exc).__name__}) on {method} {path}") from None
        try:
            return status, json.loads(payload)
        except ValueError:
            return status, None

    def search(self, tag: str, query: str, limit: int, threshold: float = 0.0) -> list[dict[str, Any]]:
        status, body = self.call(
            "POST",
            "/api/memory/search",
            {"q": query, "containerTag": tag, "limit": limit, "threshold": threshold},
        )
        if status != 200 or not isinstance(body, dict):
            message = body.get("message") if isinstance(body, dict) else None
            raise EvalError(f"search answered HTTP {status}: {message or 'no message'}")
        results = body.get("results")
        return results if isinstance(results, list) else []

    def stop(self) -> None:
        local_door.stop_door(self.process, DOOR_STOP_TIMEOUT_S)


@dataclass(frozen=True)
class Row:
    """One current memory, as the door's database holds it."""

    id: str
    content: str
    kind: str
    version: int
    previous_version_id: str | None
    conflicted: bool


def current_rows(db: Path, tag: str) -> dict[str, Row]:
    """The space's current memories, read from the door's database without writing to it."""
    connection = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        found = connection.execute(
            "SELECT id, content, kind, version, previous_version_id, metadata FROM memories "
            "WHERE container_tag = ? AND status = 'current' ORDER BY rowid",
            (tag,),
        ).fetchall()
    finally:
        connection.close()
    rows = {}
    for memory_id, content, kind, version, previous, metadata in found:
        try:
            conflicted = bool(json.loads(metadata or "{}").get("conflicted"))
        except (ValueError, AttributeError):
            conflicted = False
        rows[memory_id] = Row(memory_id, content, kind, version, previous, conflicted)
    return rows


# ------------------------------------------------------------------------------------------ one run


@dataclass
class FactResult:
    fact: Fact
    rank: int | None  # 1-based rank of the first result holding every key, within the top 5
    kind: str | None
    top: str  # the first result, for the verbose line of a fact missed or found below it
    shown: bool = False  # the prompt hook's recall block for the query would hold every key


@dataclass
class ExchangeResult:
    exchange: Exchange
    tag: str
    job_status: str  # done | failed | timeout | rejected
    outcome: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    added: list[Row] = field(default_factory=list)
    updated: list[tuple[Row, Row]] = field(default_factory=list)  # (old, new)
    removed: list[Row] = field(default_factory=list)
    old_current_before: dict[str, bool] = field(default_factory=dict)  # corrected value -> a fact held it
    facts: list[FactResult] = field(default_factory=list)
    wrong: dict[str, str] = field(default_factory=dict)  # id -> content
    noise_kept: dict[str, str] = field(default_factory=dict)


@dataclass
class Run:
    librarian: str
    embedder: str = ""
    exchanges: list[ExchangeResult] = field(default_factory=list)
    spaces: dict[str, dict[str, Row]] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)  # memory id -> the exchange whose job wrote it
    fallbacks: int = 0
    seconds: float = 0.0


def wait_for_job(door: Door, job_id: str) -> tuple[str, dict[str, Any], str]:
    """(done | failed | timeout, outcome, error) of one job, polled until JOB_DEADLINE_S."""
    deadline = time.monotonic() + JOB_DEADLINE_S
    while True:
        status, body = door.call("GET", f"/api/memory/jobs/{job_id}")
        if status == 200 and isinstance(body, dict) and body.get("status") in ("done", "failed"):
            return str(body["status"]), dict(body.get("outcome") or {}), str(body.get("error") or "")
        if time.monotonic() >= deadline:
            return "timeout", {}, f"not done within {JOB_DEADLINE_S:g} s"
        time.sleep(JOB_POLL_S)


def save_and_wait(door: Door, exchange: Exchange, old_values: Sequence[str]) -> ExchangeResult:
    """Save one exchange in extract mode, wait for its job, and see what it changed in the space."""
    tag = space_tag(exchange.project)
    before = current_rows(door.db, tag) if door.db.exists() else {}
    held = {
        value: any(row.kind == "memory" and holds(row.content, [value]) for row in before.values())
        for value in old_values
    }
    body = {"content": exchange.text, "containerTag": tag, "extract": True, "metadata": dict(SAVE_METADATA)}
    status, answer = door.call("POST", "/api/memory/save", body)
    if status != 202 or not isinstance(answer, dict) or not isinstance(answer.get("jobId"), str):
        message = answer.get("message") if isinstance(answer, dict) else ""
        return ExchangeResult(
            exchange, tag, "rejected", error=f"HTTP {status} {message}".strip(), old_current_before=held
        )
    tag = str(answer.get("containerTag") or tag)
    job_status, outcome, error = wait_for_job(door, answer["jobId"])
    result = ExchangeResult(exchange, tag, job_status, outcome, error)
    after = current_rows(door.db, tag)
    gone = {memory_id: row for memory_id, row in before.items() if memory_id not in after}
    for memory_id, row in after.items():
        if memory_id in before:
            continue
        if row.previous_version_id in gone:
            result.updated.append((gone.pop(row.previous_version_id), row))
        else:
            result.added.append(row)
    result.removed = list(gone.values())
    result.old_current_before = held
    return result


def shown_by_prompt_hook(door: Door, tag: str, fact: Fact) -> bool:
    """Whether the prompt hook's recall block for the fact's query holds every key: the hook's own
    search (top 5 at its similarity floor) and its own filter (`recalled_rows`: the floor, the
    identifier rule for rows without a similarity, a fact before the exchange it came from)."""
    hits = door.search(tag, fact.query, prompt_hook.RECALL_LIMIT, prompt_hook.RECALL_MIN_SIMILARITY)
    rows = prompt_hook.recalled_rows({"results": hits}, identifiers(fact.query))
    return any(holds(str(row.get("content", "")), fact.key) for row in rows)


def score(door: Door, result: ExchangeResult) -> None:
    """Search the door for the exchange's facts, wrong facts and (for noise) what it kept."""
    exchange, tag = result.exchange, result.tag
    for fact in exchange.facts:
        hits = door.search(tag, fact.query, RECALL_TOP_K)
        rank = next(
            (i for i, hit in enumerate(hits, 1) if holds(str(hit.get("content", "")), fact.key)), None
        )
        kind = None if rank is None else str(hits[rank - 1].get("kind"))
        top = str(hits[0].get("content", "")) if hits else ""
        result.facts.append(FactResult(fact, rank, kind, top, shown_by_prompt_hook(door, tag, fact)))
    if exchange.must_not:
        for query in [fact.query for fact in exchange.facts] + list(exchange.must_not):
            for hit in door.search(tag, query, WRONG_LIMIT):
                content = str(hit.get("content", ""))
                if hit.get("kind") != "document" and any(holds(content, [m]) for m in exchange.must_not):
                    result.wrong[str(hit.get("id"))] = content
    if exchange.noise:
        runs = word_runs(exchange.text)
        for hit in door.search(tag, noise_query(exchange), NOISE_LIMIT):
            content = str(hit.get("content", ""))
            if hit.get("kind") != "document" and word_runs(content) & runs:
                result.noise_kept[str(hit.get("id"))] = content


def run_librarian(
    librarian: str, exchanges: Sequence[Exchange], embedder: str, env: Mapping[str, str], folder: Path
) -> Run:
    """Replay every exchange through a door of its own, then score; one column of the table."""
    run = Run(librarian)
    corrections = corrected_values(exchanges)
    started = time.monotonic()
    door = Door(folder, embedder, env)
    try:
        status, health = door.call("GET", "/healthz")
        run.embedder = str(health.get("embedder")) if status == 200 and isinstance(health, dict) else "?"
        for number, exchange in enumerate(exchanges, start=1):
            result = save_and_wait(door, exchange, corrections.get(exchange.id, []))
            run.exchanges.append(result)
            for row in result.added + [new for _, new in result.updated]:
                run.origin[row.id] = exchange.id
            if number % 10 == 0 or number == len(exchanges):
                print(
                    f"  {librarian}: saved {number}/{len(exchanges)} ({time.monotonic() - started:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
        for result in run.exchanges:
            score(door, result)
        for tag in sorted({result.tag for result in run.exchanges}):
            run.spaces[tag] = current_rows(door.db, tag)
        run.fallbacks = sum(1 for line in door.lines if FALLBACK_LOG in line)
    finally:
        door.stop()
    run.seconds = time.monotonic() - started
    return run


# ---------------------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class Summary:
    facts: int
    found: int
    as_memory: int
    shown: int
    mrr: float
    wrong: int
    noise_kept: int
    noise_exchanges_keeping: int
    noise_exchanges: int
    corrections: int
    superseded: int
    still_current: int
    never_stored: int
    jobs: int
    jobs_failed: int
    added: int
    updated: int
    unchanged: int
    conflicted: int
    facts_at_end: int

    @property
    def recall(self) -> float:
        return self.found / self.facts if self.facts else 0.0

    @property
    def meets_bar(self) -> bool:
        return self.recall >= RECALL_BAR and self.wrong == 0 and self.jobs_failed == 0


def correction_outcomes(run: Run) -> list[tuple[str, str, str]]:
    """(exchange id, corrected value, superseded | still current | never stored) per correction."""
    out = []
    for result in run.exchanges:
        for value, was_current in result.old_current_before.items():
            now = run.spaces.get(result.tag, {}).values()
            if any(row.kind == "memory" and holds(row.content, [value]) for row in now):
                verdict = "still current"
            elif was_current:
                verdict = "superseded"
            else:
                verdict = "never stored"
            out.append((result.exchange.id, value, verdict))
    return out


def summarise(run: Run) -> Summary:
    facts = [fact for result in run.exchanges for fact in result.facts]
    noise = [result for result in run.exchanges if result.exchange.noise]
    corrections = [verdict for _, _, verdict in correction_outcomes(run)]
    wrong_ids = {memory_id for result in run.exchanges for memory_id in result.wrong}

    def outcome(name: str) -> int:
        return sum(int(result.outcome.get(name, 0) or 0) for result in run.exchanges)

    return Summary(
        facts=len(facts),
        found=sum(1 for fact in facts if fact.rank is not None),
        as_memory=sum(1 for fact in facts if fact.kind == "memory"),
        shown=sum(1 for fact in facts if fact.shown),
        mrr=sum(1 / fact.rank for fact in facts if fact.rank) / len(facts) if facts else 0.0,
        wrong=len(wrong_ids),
        noise_kept=sum(len(result.noise_kept) for result in noise),
        noise_exchanges_keeping=sum(1 for result in noise if result.noise_kept),
        noise_exchanges=len(noise),
        corrections=len(corrections),
        superseded=corrections.count("superseded"),
        still_current=corrections.count("still current"),
        never_stored=corrections.count("never stored"),
        jobs=len(run.exchanges),
        jobs_failed=sum(1 for result in run.exchanges if result.job_status != "done"),
        added=outcome("added"),
        updated=outcome("updated"),
        unchanged=outcome("unchanged"),
        conflicted=outcome("conflicted"),
        facts_at_end=sum(1 for rows in run.spaces.values() for row in rows.values() if row.kind == "memory"),
    )


def _share(part: int, whole: int) -> str:
    """Three decimals: 88 of 93 is 0.946, which two would print as the 0.95 it falls short of."""
    return f"{part / whole:.3f} ({part}/{whole})" if whole else "n/a"


def table(runs: Sequence[Run]) -> str:
    """The metrics, one column per librarian, as a Markdown table."""
    summaries = [summarise(run) for run in runs]
    rows: list[tuple[str, list[str]]] = [
        ("facts found again, top 5 (recall@5)", [_share(s.found, s.facts) for s in summaries]),
        ("found as a distilled fact (kind memory)", [_share(s.as_memory, s.facts) for s in summaries]),
        ("MRR (top 5)", [f"{s.mrr:.3f}" for s in summaries]),
        (
            f"shown by the prompt hook (top {prompt_hook.RECALL_LIMIT}, similarity >= "
            f"{prompt_hook.RECALL_MIN_SIMILARITY:.2f})",
            [_share(s.shown, s.facts) for s in summaries],
        ),
        ("wrong facts", [str(s.wrong) for s in summaries]),
        (
            "noise facts kept",
            [f"{s.noise_kept} (from {s.noise_exchanges_keeping} of {s.noise_exchanges})" for s in summaries],
        ),
        (
            "corrections superseded",
            [
                f"{s.superseded} of {s.corrections} (old fact still current {s.still_current}, "
                f"never stored {s.never_stored})"
                for s in summaries
            ],
        ),
        ("jobs failed", [f"{s.jobs_failed} of {s.jobs}" for s in summaries]),
        (
            "jobs: added / updated / unchanged / conflicted",
            [f"{s.added} / {s.updated} / {s.unchanged} / {s.conflicted}" for s in summaries],
        ),
        ("distilled facts current at the end", [str(s.facts_at_end) for s in summaries]),
    ]
    if any(run.librarian != "deterministic" for run in runs):
        rows.append(
            (
                "LLM answers that fell back to the deterministic one",
                ["-" if run.librarian == "deterministic" else str(run.fallbacks) for run in runs],
            )
        )
    rows.append(
        (
            f"bar met (recall@5 >= {RECALL_BAR:.2f}, no wrong fact, no failed job)",
            ["yes" if s.meets_bar else "no" for s in summaries],
        )
    )
    lines = ["| | " + " | ".join(run.librarian for run in runs) + " |", "|---|" + "---:|" * len(runs)]
    lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows]
    return "\n".join(lines)


def _quote(text: str, limit: int | None = None) -> str:
    flat = " ".join(text.split())
    if limit is not None and len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return json.dumps(flat, ensure_ascii=False)


def details(run: Run) -> str:
    """Per exchange: the job, what it stored, each fact's rank, the wrong facts and the noise kept;
    then every space's current facts, each with the exchange that wrote it."""
    lines = [f"### {run.librarian}: per exchange"]
    verdicts = {(e, v): verdict for e, v, verdict in correction_outcomes(run)}
    for result in run.exchanges:
        exchange = result.exchange
        counts = ", ".join(
            f"{name} {result.outcome.get(name, 0)}"
            for name in ("added", "updated", "unchanged", "conflicted")
        )
        job = f"job {result.job_status}" + (f" ({result.error})" if result.error else "")
        noise = " [noise]" if exchange.noise else ""
        lines.append(f"{exchange.id} {exchange.project}{noise}: {job}; {counts}")
        for row in result.added:
            if row.kind != "memory":
                lines.append(f"  + kept the exchange as a {row.kind} {_quote(row.content, SHOWN_CHARS)}")
                continue
            flag = " (conflict)" if row.conflicted else ""
            lines.append(f"  + stored{flag} {_quote(row.content)}")
        for old, new in result.updated:
            lines.append(f"  ~ updated {_quote(old.content)} -> {_quote(new.content)}")
        for row in result.removed:
            lines.append(f"  - gone {_quote(row.content)}")
        for fact in result.facts:
            keys = ", ".join(fact.fact.key)
            if fact.rank is None:
                lines.append(
                    f"  MISSED [{keys}] {_quote(fact.fact.query)}; first result: {_quote(fact.top, SHOWN_CHARS)}"
                )
            else:
                above = f"; first result: {_quote(fact.top, SHOWN_CHARS)}" if fact.rank > 1 else ""
                hook = "" if fact.shown else " (not shown by the prompt hook)"
                lines.append(
                    f"  found at {fact.rank} ({fact.kind}){hook} [{keys}] {_quote(fact.fact.query)}{above}"
                )
        for content in result.wrong.values():
            lines.append(f"  WRONG {_quote(content)}")
        for content in result.noise_kept.values():
            lines.append(f"  NOISE KEPT {_quote(content)}")
        for value in result.old_current_before:
            lines.append(f"  correction of {value!r}: {verdicts[(exchange.id, value)]}")
    lines.append("")
    lines.append(f"### {run.librarian}: facts per space at the end")
    for tag, rows in run.spaces.items():
        facts = [row for row in rows.values() if row.kind == "memory"]
        lines.append(f"{tag}: {len(facts)} current, and {len(rows) - len(facts)} stored exchanges")
        for row in facts:
            version = f" v{row.version}" if row.version > 1 else ""
            lines.append(f"  [{run.origin.get(row.id, '?')}{version}] {_quote(row.content)}")
    return "\n".join(lines)


def librarians(env: Mapping[str, str]) -> list[tuple[str, dict[str, str]]]:
    """(column name, door environment): the deterministic librarian always, the LLM one when configured."""
    plain = {k: v for k, v in env.items() if k not in (ENV_LLM_URL, ENV_LLM_MODEL, ENV_LLM_KEY)}
    chosen = [("deterministic", plain)]
    url, model = env.get(ENV_LLM_URL, "").strip(), env.get(ENV_LLM_MODEL, "").strip()
    if url and model:
        chosen.append((f"llm ({model})", dict(env)))
    return chosen


#: the column of `--rewrite-standin`: its door's extraction requests are refused by the stand-in, so
#: its librarian falls back to the deterministic one on every job (the fallback row says so)
REWRITE_COLUMN = "deterministic + rewrite (stand-in rule)"


@contextlib.contextmanager
def _rewrite_endpoint(wanted: bool) -> Iterator[str | None]:
    """The stand-in rule served as a chat endpoint (scripts/rewrite_standin.py), or None."""
    if not wanted:
        yield None
        return
    from rewrite_standin import serving_rule  # beside this script: the rule, not a model

    with serving_rule() as url:
        yield url


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="eval_capture.py",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
        epilog=__doc__.split("\n\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("path", type=Path, help="a capture file (JSON lines), e.g. exchanges_dev.jsonl")
    parser.add_argument(
        "--embedder", default="onnx", help="the door's embedder: onnx (default, the packaged MiniLM) or none"
    )
    parser.add_argument(
        "--verbose", action="store_true", help="per exchange: what was stored, found, missed and wrong"
    )
    parser.add_argument(
        "--projects",
        default="",
        help="comma-separated project names: replay and score only their exchanges (e.g. to tune the "
        "librarian on some projects and report the others as held out)",
    )
    parser.add_argument(
        "--rewrite-standin",
        action="store_true",
        help="one more column: the deterministic librarian on a door whose question rewrite asks "
        "scripts/rewrite_standin.py's rule, not a model",
    )
    args = parser.parse_args(argv)
    try:
        exchanges = only_projects(load_exchanges(args.path), args.projects)
        with (
            tempfile.TemporaryDirectory(prefix="bli-capture-") as folder,
            _rewrite_endpoint(args.rewrite_standin) as rewrite_url,
        ):
            runs = []
            chosen = librarians(os.environ)
            if rewrite_url is not None:
                chosen.append(
                    (REWRITE_COLUMN, {**chosen[0][1], ENV_LLM_URL: rewrite_url, ENV_LLM_MODEL: "rule"})
                )
            for index, (name, env) in enumerate(chosen):
                print(f"{PROG}: {name} librarian, embedder {args.embedder}", file=sys.stderr, flush=True)
                runs.append(run_librarian(name, exchanges, args.embedder, env, Path(folder) / str(index)))
                print(f"{PROG}: {name} done in {runs[-1].seconds:.0f} s", file=sys.stderr, flush=True)
    except EvalError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    facts = sum(len(e.facts) for e in exchanges)
    noise = sum(1 for e in exchanges if e.noise)
    print(
        f"capture: {args.path.name}, {len(exchanges)} exchanges ({noise} noise), {facts} facts, "
        f"{len({e.project for e in exchanges})} projects; embedder {runs[0].embedder}"
    )
    print(table(runs))
    if args.verbose:
        for run in runs:
            print()
            print(details(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())

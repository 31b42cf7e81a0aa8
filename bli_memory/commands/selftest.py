"""`bli-memory-mcp selftest`: a live smoke test of the configured door, step by step.

A uniquely marked probe memory goes through save, search, update, history and forget in a scratch
space of its own (`bli-selftest-<random>`), then a last search checks that none of the probe's ids
comes back (other memories in scope, a global one say, may still match its words). Each step prints
its outcome and latency; the first failure stops the run, the probe is forgotten anyway (by id, else
by its exact text), and the command exits 1 naming the failed step. The scratch space keeps only the
probe's tombstone and history, never a current memory.

Exit status: 0 every step passed, 1 a step failed (or the machine is unpaired), 2 bad input.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bli_memory import render
from bli_memory.commands.base import JSON_HELP, new_parser, paired_door_client, parse, print_json
from bli_memory.errors import EXIT_FAILED, EXIT_OK, CliError
from bli_memory.settings import load_settings
from bli_memory.wire.reasons import to_log_reason

if TYPE_CHECKING:
    from bli_memory.door_client import DoorClient

#: each step's door round trip must finish within this, unless --timeout says otherwise.
STEP_TIMEOUT_S = 10.0
MAX_STEP_TIMEOUT_S = 120.0
SCRATCH_PREFIX = "bli-selftest-"
STEPS = ("health", "save", "search", "update", "history", "forget", "gone")


class StepFailed(Exception):
    """A step's answer was not what a healthy door gives; the text says what was wrong."""


@dataclass
class Probe:
    """The probe memory: its marker, its texts, and the id of its current version as known so far."""

    marker: str
    space: str
    text: str
    updated_text: str
    current_id: str | None = None
    forgotten: bool = False
    #: every id the probe has had (each version's), so "gone" looks for these and nothing else
    ids: list[str] = field(default_factory=list)


@dataclass
class Report:
    door: str
    space: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    failed: str | None = None
    cleanup: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.failed is None,
            "door": self.door,
            "space": self.space,
            "steps": self.steps,
            "failed": self.failed,
            "cleanup": self.cleanup,
        }


def _step_timeout(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {value!r}") from None
    if not 0 < number <= MAX_STEP_TIMEOUT_S:  # also refuses nan
        raise argparse.ArgumentTypeError(
            f"must be more than 0 and at most {MAX_STEP_TIMEOUT_S:g}, got {value}"
        )
    return number


def main(argv: list[str]) -> int:
    parser = new_parser(
        "selftest",
        "A live smoke test of the door this machine is paired with: a uniquely marked probe memory is\n"
        "saved, searched, updated, its history read, and forgotten, in a scratch space of its own\n"
        f"({SCRATCH_PREFIX}<random>); a last search checks it is gone. Each step prints its latency.\n"
        "On a failure the probe is forgotten anyway and the failed step is named.",
        "exit status: 0 every step passed, 1 a step failed or unpaired, 2 bad input",
    )
    parser.add_argument(
        "--timeout",
        type=_step_timeout,
        default=STEP_TIMEOUT_S,
        metavar="SECONDS",
        help=f"each step's time limit (default {STEP_TIMEOUT_S:g})",
    )
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    settings = load_settings()
    client = paired_door_client(settings)
    door = render.display_url(settings.door_url) or "?"
    try:
        report = run(client, door, args.timeout, None if args.json else _print_line)
    finally:
        client.close()
    if args.json:
        print_json(report.as_json())
    if report.failed is not None:
        raise CliError(f"bli-memory-mcp selftest: FAILED at {report.failed}", EXIT_FAILED)
    return EXIT_OK


def _print_line(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def new_probe() -> Probe:
    marker = "selftestprobe" + secrets.token_hex(6)
    return Probe(
        marker=marker,
        space=SCRATCH_PREFIX + secrets.token_hex(6),
        text=f"The {marker} checks that this door saves and finds a memory.",
        updated_text=f"The {marker} checks that this door updates a memory and keeps its history.",
    )


def run(client: DoorClient, door: str, timeout_s: float, say: Callable[[str], None] | None) -> Report:
    """Every step in order until one fails; the probe is cleaned up whatever happened."""
    probe = new_probe()
    report = Report(door=door, space=probe.space)
    out = say or (lambda line: None)
    out(f"bli-memory selftest of the door at {door} (scratch space {probe.space})")
    steps: dict[str, Callable[[DoorClient, Probe, float], str]] = {
        "health": _health,
        "save": _save,
        "search": _search,
        "update": _update,
        "history": _history,
        "forget": _forget,
        "gone": _gone,
    }
    total_ms = 0
    try:
        for name in STEPS:
            started = time.monotonic()
            try:
                detail, ok = steps[name](client, probe, time.monotonic() + timeout_s), True
            except StepFailed as exc:
                detail, ok = str(exc), False
            except Exception as exc:  # a door or wire failure, by its closed-set reason
                detail, ok = _door_failure(exc, door), False
            elapsed_ms = round((time.monotonic() - started) * 1000)
            total_ms += elapsed_ms
            report.steps.append({"step": name, "ok": ok, "ms": elapsed_ms, "detail": detail})
            out(f"  {'ok  ' if ok else 'FAIL'}  {name:<8} {elapsed_ms:>6} ms  {detail}")
            if not ok:
                report.failed = name
                break
    finally:
        if not probe.forgotten and report.steps and report.steps[0]["ok"]:
            report.cleanup = _clean_up(client, probe, timeout_s)
            out(f"  cleanup  {report.cleanup}")
    if report.failed is None:
        out(f"PASS: {len(report.steps)} steps in {total_ms} ms")
    else:
        out(f"FAIL at {report.failed}: {report.steps[-1]['detail']}")
    return report


def _door_failure(exc: Exception, door: str) -> str:
    reason = to_log_reason(exc)
    text = f"{reason}: {render.explain_reason(reason, door)}"
    message = getattr(exc, "message", None)
    if isinstance(message, str) and message:
        text += f" ({message.rstrip('.')})"
    return text


def _health(client: DoorClient, probe: Probe, deadline: float) -> str:
    health = client.healthz(deadline=deadline)
    if health.get("ok") is not True:
        raise StepFailed(
            f"the door says it is not healthy: {health.get('message') or health.get('reason') or health}"
        )
    return f"door {health.get('version', '?')}, store {health.get('store', '?')}, embedder {health.get('embedder', '?')}"


def _save(client: DoorClient, probe: Probe, deadline: float) -> str:
    answer = client.save(probe.text, probe.space, deadline=deadline)
    memory_id = answer.get("id")
    if not isinstance(memory_id, str) or answer.get("status") != "created":
        raise StepFailed(f"the save did not answer a new memory's id: {_short(answer)}")
    probe.current_id = memory_id
    probe.ids.append(memory_id)
    return f"saved {memory_id}"


def _search(client: DoorClient, probe: Probe, deadline: float) -> str:
    answer = client.search(probe.marker, probe.space, limit=5, deadline=deadline)
    ids = _result_ids(answer)
    if probe.current_id not in ids:
        raise StepFailed(f"searching for the probe's marker did not find {probe.current_id} (found {ids})")
    return f"found {probe.current_id} at rank {ids.index(probe.current_id) + 1}"


def _update(client: DoorClient, probe: Probe, deadline: float) -> str:
    assert probe.current_id is not None
    answer = client.update(probe.current_id, probe.updated_text, deadline=deadline)
    new_id = answer.get("id")
    if (
        not isinstance(new_id, str)
        or answer.get("version") != 2
        or answer.get("previousVersionId") != probe.current_id
    ):
        raise StepFailed(f"the update did not answer version 2 of {probe.current_id}: {_short(answer)}")
    probe.current_id = new_id
    probe.ids.append(new_id)
    return f"version 2 is {new_id}"


def _history(client: DoorClient, probe: Probe, deadline: float) -> str:
    assert probe.current_id is not None
    answer = client.history(probe.current_id, deadline=deadline)
    versions = answer.get("versions")
    texts = [v.get("content") for v in versions if isinstance(v, dict)] if isinstance(versions, list) else []
    if texts != [probe.text, probe.updated_text]:
        raise StepFailed(f"the history is not the original then the update: {_short(answer)}")
    return "2 versions: the original, then the update"


def _forget(client: DoorClient, probe: Probe, deadline: float) -> str:
    assert probe.current_id is not None
    answer = client.forget(probe.space, memory_id=probe.current_id, deadline=deadline)
    forgotten = answer.get("forgotten")
    if not isinstance(forgotten, dict) or forgotten.get("id") != probe.current_id:
        raise StepFailed(f"the forget did not name {probe.current_id}: {_short(answer)}")
    probe.forgotten = True
    return f"tombstoned {probe.current_id}"


def _gone(client: DoorClient, probe: Probe, deadline: float) -> str:
    """The probe's own ids must be gone from the search; other hits are no failure: a global memory
    is in scope of every space, and a door that searches by meaning answers any query with it."""
    answer = client.search(probe.marker, probe.space, limit=5, deadline=deadline)
    back = [memory_id for memory_id in _result_ids(answer) if memory_id in probe.ids]
    if back:
        raise StepFailed(f"search still finds the forgotten probe: {back}")
    return "search no longer finds it"


def _clean_up(client: DoorClient, probe: Probe, timeout_s: float) -> str:
    """Forget the probe after a failed run: by its current id, else by each text it may hold now."""
    attempts: list[dict[str, str]] = []
    if probe.current_id is not None:
        attempts.append({"memory_id": probe.current_id})
    attempts += [{"content": probe.updated_text}, {"content": probe.text}]
    problems: list[str] = []
    for attempt in attempts:
        try:
            answer = client.forget(probe.space, deadline=time.monotonic() + timeout_s, **attempt)
        except Exception as exc:
            if getattr(exc, "status", None) in (404, 409):
                continue  # not that one (gone, superseded or never written): try the next
            problems.append(to_log_reason(exc))
            continue
        forgotten = answer.get("forgotten")
        if isinstance(forgotten, dict):
            probe.forgotten = True
            return f"forgot the probe {forgotten.get('id', '?')}"
    if not problems:
        return "no probe memory was left behind"
    return (
        f"FAILED ({', '.join(problems)}): the probe may remain in space {probe.space}; remove it with "
        f"`bli-memory-mcp forget --container-tag {probe.space} --query {probe.marker}`"
    )


def _result_ids(answer: dict[str, Any]) -> list[str]:
    results = answer.get("results")
    if not isinstance(results, list):
        raise StepFailed(f"the search answer has no results list: {_short(answer)}")
    return [str(row.get("id")) for row in results if isinstance(row, dict)]


def _short(value: object) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= 200 else text[:199] + "…"

"""The three hooks against the real door (the `door` fixture of conftest.py): recall, context, and a
Stop that redacts and queues the turn for extraction — including from a 40 MB transcript."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bli_memory.hooks import prompt
from tests.helpers import TRANSCRIPTS, DoorProcess
from tests.hooks.helpers import (
    PROMPT,
    SECRET,
    SESSION_START,
    STOP,
    assert_one_block_or_nothing,
    counts,
    hook_env,
    job_done,
    paired,
    run_hook,
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def remember(door: Any, tag: str, content: str) -> str:
    status, body = door.post("/api/memory/save", {"content": content, "containerTag": tag})
    assert status == 201, body
    return str(body["id"])


def test_prompt_recalls_what_the_space_remembers(home: Path, door: Any, tag: str) -> None:
    memory_id = remember(door, tag, "stop.py saves the last exchange in extract mode.")
    remember(door, tag, "Lunch is at noon on Fridays.")
    run = run_hook(
        "prompt",
        {**PROMPT, "prompt": "how does stop.py save a turn?"},
        home,
        env=paired(home, door, tag),
    )
    assert run.returncode == 0
    assert_one_block_or_nothing(run.stdout, "bli-memory-recall")
    assert "stop.py saves the last exchange in extract mode." in run.stdout and "Lunch" not in run.stdout
    assert memory_id in run.stdout
    hook, status, fields = run.receipt()
    assert (hook, status, fields["via"]) == ("prompt", "ok", "direct")
    assert 1 <= int(str(fields["hits"])) <= 5 and fields["deadline_ms"] == 2000
    assert counts(home, "prompt")["ok"] == 1


def test_a_long_memory_is_shown_by_its_sentences_that_bear_on_the_prompt(
    home: Path, door: Any, tag: str
) -> None:
    """The real hook against the real door: a long row is cut to the sentence that answers the
    prompt, and the receipt counts what the door found, what was shown and what was held back."""
    before = " ".join(f"Check {n} of the runbook reads disk {n} on the build host." for n in range(40))
    after = " ".join(f"Step {n} of the runbook checks disk {n} on the build host." for n in range(40))
    remember(door, tag, f"{before} Staging syncs every 5 minutes from release/main. {after}")
    remember(door, tag, "Lunch is at noon on Fridays.")
    run = run_hook(
        "prompt",
        {**PROMPT, "prompt": "how often does staging sync from release/main?"},
        home,
        env=paired(home, door, tag),
    )
    assert_one_block_or_nothing(run.stdout, "bli-memory-recall")
    assert "… Staging syncs every 5 minutes from release/main." in run.stdout
    assert "Check 0 of" not in run.stdout and "Step 39 of" not in run.stdout
    assert len(run.stdout) <= prompt.RECALL_BLOCK_MAX_CHARS
    _, status, fields = run.receipt()
    assert status == "ok" and fields["hits"] == 1
    assert fields["found"] == int(str(fields["hits"])) + int(str(fields["held"])), fields


def test_a_short_prompt_naming_an_identifier_is_searched(home: Path, door: Any, tag: str) -> None:
    remember(door, tag, "BLI-3580 made identifiers always searchable.")
    run = run_hook("prompt", {**PROMPT, "prompt": "BLI-3580?"}, home, env=paired(home, door, tag))
    assert run.receipt()[1] == "ok"
    assert "BLI-3580 made identifiers always searchable." in run.stdout


def test_zero_hits_prints_nothing(home: Path, door: Any, tag: str) -> None:
    run = run_hook("prompt", PROMPT, home, env=paired(home, door, tag))
    _, status, fields = run.receipt()
    assert run.stdout == "" and (status, fields["hits"]) == ("ok", 0)


def test_session_start_prints_profile_and_recent_context(home: Path, door: Any, tag: str) -> None:
    remember(door, tag, "The team ships the client as a zipapp.")
    run = run_hook("session-start", SESSION_START, home, env=paired(home, door, tag))
    assert run.returncode == 0
    assert_one_block_or_nothing(run.stdout, "bli-memory-context")
    assert "The team ships the client as a zipapp." in run.stdout
    hook, status, fields = run.receipt()
    assert (hook, status) == ("session-start", "ok") and fields["deadline_ms"] == 8000
    assert int(str(fields["profile"])) + int(str(fields["recent"])) >= 1


def test_session_start_in_an_empty_space_prints_nothing(home: Path, door: Any, tag: str) -> None:
    run = run_hook("session-start", SESSION_START, home, env=paired(home, door, tag))
    assert run.stdout == ""
    assert run.receipt()[1] == "ok"


def test_a_bad_token_is_a_quiet_http_401(home: Path, door: Any, tag: str) -> None:
    env = hook_env(
        home,
        BLI_MEMORY_DASHBOARD_URL=door.url,
        BLI_MEMORY_DEVICE_TOKEN="bli_wrong",
        BLI_MEMORY_CONTAINER_TAG=tag,
    )
    run = run_hook("prompt", PROMPT, home, env=env)
    _, status, fields = run.receipt()
    assert run.stdout == "" and (status, fields["reason"]) == ("failed", "http_401")
    assert "bli_wrong" not in run.stderr


def test_stop_redacts_and_queues_the_last_exchange(home: Path, door: Any, tag: str) -> None:
    transcript = home / "session.jsonl"
    lines = (TRANSCRIPTS / "claude_session.jsonl").read_text().splitlines()
    lines.append(
        json.dumps(
            {
                "type": "user",
                "message": {"role": "user", "content": f"Use token {SECRET} for the zipapp release."},
            }
        )
    )
    transcript.write_text("\n".join(lines) + "\n")
    payload = {
        **STOP,
        "transcript_path": str(transcript),
        "last_assistant_message": "We decided to publish the zipapp from the release job.",
    }
    run = run_hook("stop", payload, home, env=paired(home, door, tag))
    assert run.returncode == 0 and run.stdout == ""
    hook, status, fields = run.receipt()
    assert (hook, status) == ("stop", "ok")
    assert fields["queued"] is True and "saved" not in fields
    assert int(str(fields["masked"])) >= 1 and 0 < int(str(fields["chars"])) <= 12 * 1024
    rows = job_done(door, tag, "zipapp")
    assert all(SECRET not in row["content"] for row in rows)
    assert SECRET not in run.stderr


def test_stop_with_a_40_mb_transcript_costs_what_a_small_one_does(home: Path, door: Any, tag: str) -> None:
    transcript = home / "big.jsonl"
    filler = json.dumps(
        {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "tool_result", "content": "z" * 8000}]},
        }
    ).encode()
    with open(transcript, "wb") as handle:
        for _ in range(40 * 1024 * 1024 // (len(filler) + 1) + 1):
            handle.write(filler + b"\n")
        handle.write((TRANSCRIPTS / "claude_session.jsonl").read_bytes())
    assert transcript.stat().st_size > 40 * 1024 * 1024
    run = run_hook("stop", {**STOP, "transcript_path": str(transcript)}, home, env=paired(home, door, tag))
    hook, status, fields = run.receipt()
    assert (hook, status, fields["queued"]) == ("stop", "ok", True)
    assert int(str(fields["elapsed_ms"])) < 1500
    assert counts(home, "stop")["ok"] == 1


def test_codex_stop_success_prints_an_empty_object(home: Path, door: Any, tag: str) -> None:
    run = run_hook(
        "stop", {**STOP, "turn_id": "t1", "transcript_path": None}, home, env=paired(home, door, tag)
    )
    assert run.stdout == "{}\n"
    assert run.receipt()[1] == "ok"


def test_the_daemon_core_answers_on_a_warm_connection_it_does_not_close(
    door: Any, tag: str, tmp_path: Path
) -> None:
    from bli_memory.hooks.run import answer
    from bli_memory.settings import Settings
    from bli_memory.wire.http import Connection

    remember(door, tag, "daemon.py keeps one warm connection to the door.")
    settings = Settings(
        door_url=door.url, token=door.token, container_tag=tag, isolate_worktrees=False, daemon_enabled=True
    )
    connection = Connection(door.url)
    try:
        for _ in range(2):
            result = answer(
                "prompt",
                {"prompt": "what does daemon.py keep warm?"},
                str(tmp_path),
                via="daemon",
                settings=settings,
                connection=connection,
            )
            assert result.outcome["status"] == "ok" and result.outcome["via"] == "daemon"
            assert "daemon.py keeps one warm connection to the door." in result.stdout
        context = answer(
            "session-start", {}, str(tmp_path), via="daemon", settings=settings, connection=connection
        )
        assert context.outcome["status"] == "ok" and "<bli-memory-context> [bli]" in context.stdout
    finally:
        connection.close()


def test_a_turn_the_stop_hook_saves_is_recalled_as_its_distilled_fact(
    home: Path, door_onnx: DoorProcess, tag: str
) -> None:
    """The capture path end to end, each part real: the Stop hook reads the turn from the transcript
    and sends it in extract mode, the door's librarian keeps the durable fact (not the test count) and
    the exchange beside it, and the next prompt's hook recalls the fact, not the exchange it repeats."""
    transcript = home / "session.jsonl"
    request = (
        "From now on every database migration must be reversible, never a `pass` downgrade. "
        "Can you add a CI check for that?"
    )
    transcript.write_text(
        json.dumps({"type": "user", "message": {"role": "user", "content": request}}) + "\n"
    )
    reply = (
        "Added a CI step, `scripts/check_downgrades.py`, that fails when a migration's `downgrade()` "
        "body is only `pass`.\n\nI ran the suite, and the migration tests pass (12)."
    )
    env = paired(home, door_onnx, tag)
    stop = run_hook(
        "stop", {**STOP, "transcript_path": str(transcript), "last_assistant_message": reply}, home, env=env
    )
    assert stop.returncode == 0 and stop.receipt()[:2] == ("stop", "ok")
    job_done(door_onnx, tag, "check_downgrades.py")

    status, body = door_onnx.post(
        "/api/memory/search", {"q": "check_downgrades.py migration", "containerTag": tag, "limit": 10}
    )
    assert status == 200
    facts = [row["content"] for row in body["results"] if row["kind"] == "memory"]
    exchanges = [row["content"] for row in body["results"] if row["kind"] == "document"]
    assert any("`scripts/check_downgrades.py`" in fact for fact in facts)  # the code span byte for byte
    assert any(fact.startswith("From now on every database migration must be reversible") for fact in facts)
    assert not any("(12)" in fact for fact in facts)  # a test run's count is no fact
    assert len(exchanges) == 1 and request in exchanges[0]  # the exchange itself, kept as history

    prompt = run_hook(
        "prompt", {**PROMPT, "prompt": "which CI step checks migration downgrades?"}, home, env=env
    )
    assert prompt.returncode == 0 and prompt.receipt()[:2] == ("prompt", "ok")
    assert_one_block_or_nothing(prompt.stdout, "bli-memory-recall")
    assert "`scripts/check_downgrades.py`" in prompt.stdout
    assert "Assistant:" not in prompt.stdout  # its fact is shown: the exchange that says it again is not
    rule = run_hook(
        "prompt", {**PROMPT, "prompt": "must our database migrations be reversible?"}, home, env=env
    )
    assert "every database migration must be reversible" in rule.stdout and "Assistant:" not in rule.stdout


def test_prompt_shows_a_row_below_the_cosine_floor_whose_relevance_clears_the_doors_floor(
    home: Path, door_onnx: DoorProcess, tag: str
) -> None:
    """The hook asks with the 0.55 cosine threshold and `keepRelevant`: the door keeps the row its
    relevance floor keeps, though its cosine is under 0.55, and the hook shows it. The same request
    without `keepRelevant` (what a door without relevance does) drops it."""
    pinned = "We pin pydantic to 2.7.4 because 2.8 broke the validators."
    for content in (
        pinned,
        "The nightly job runs APScheduler inside the API process.",
        "Lunch is at noon on Fridays.",
        "Deploys go through ArgoCD; the staging cluster syncs every 5 minutes.",
    ):
        remember(door_onnx, tag, content)
    question = "which release of the validation library are we locked to?"
    body = {"q": question, "containerTag": tag, "limit": prompt.RECALL_LIMIT}
    status, plain = door_onnx.post("/api/memory/search", body)
    assert status == 200, plain
    row = next(hit for hit in plain["results"] if hit["content"] == pinned)
    assert row["similarity"] < prompt.RECALL_MIN_SIMILARITY <= 1 and row["relevance"] >= plain["floor"]
    threshold = {**body, "threshold": prompt.RECALL_MIN_SIMILARITY}
    status, cosine_only = door_onnx.post("/api/memory/search", threshold)
    assert status == 200 and pinned not in [hit["content"] for hit in cosine_only["results"]]
    status, kept = door_onnx.post("/api/memory/search", {**threshold, "keepRelevant": True})
    assert status == 200 and [hit["content"] for hit in kept["results"]] == [pinned]
    run = run_hook("prompt", {**PROMPT, "prompt": question}, home, env=paired(home, door_onnx, tag))
    assert run.returncode == 0
    assert_one_block_or_nothing(run.stdout, "bli-memory-recall")
    assert "pydantic to 2.7.4" in run.stdout and "Lunch" not in run.stdout
    _, status_word, fields = run.receipt()
    assert status_word == "ok" and fields["hits"] == 1


def test_prompt_shows_nothing_when_no_row_clears_the_doors_floor(
    home: Path, door_onnx: DoorProcess, tag: str
) -> None:
    remember(door_onnx, tag, "We pin pydantic to 2.7.4 because 2.8 broke the validators.")
    remember(door_onnx, tag, "Lunch is at noon on Fridays.")
    run = run_hook(
        "prompt",
        {**PROMPT, "prompt": "what's our policy on code review?"},
        home,
        env=paired(home, door_onnx, tag),
    )
    assert run.returncode == 0 and run.stdout == ""
    _, status_word, fields = run.receipt()
    assert status_word == "ok" and fields["hits"] == 0

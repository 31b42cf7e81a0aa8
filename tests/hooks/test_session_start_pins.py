"""Pins and scopes in the hooks, run as the host runs them (a subprocess, a temporary HOME, the real
door): session start prints every pin that applies first, word for word, within PINS_MAX_CHARS, and
names the ones left out in the block's last line; the prompt hook recalls from both spaces and labels
a hit of the person's global space (docs/scopes-and-pins.md)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from bli_memory.hooks import prompt, session_start
from tests.helpers import DoorProcess
from tests.hooks.helpers import (
    PROMPT,
    SESSION_START,
    assert_one_block_or_nothing,
    person_home,
    post,
    run_hook,
)

CONTEXT = session_start.CONTEXT_TAG


def test_session_start_prints_every_pin_first_word_for_word(
    tmp_path: Path, door: DoorProcess, tag: str
) -> None:
    token, env = person_home(tmp_path, door, tag)
    post(
        door,
        "/api/memory/save",
        {"content": "The API uses FastAPI for its routes.", "containerTag": tag},
        token,
    )
    project = post(
        door,
        "/api/memory/pin",
        {"content": "Never push to main.\n  Open a pull request.", "containerTag": tag},
        token,
    )
    mine = post(
        door, "/api/memory/pin", {"content": "Call me Sam.", "containerTag": tag, "scope": "global"}, token
    )
    run = run_hook("session-start", SESSION_START, Path(env["HOME"]), env=env)
    assert run.returncode == 0 and run.receipt()[1] == "ok", run.stderr
    assert run.receipt()[2]["pins"] == 2
    assert_one_block_or_nothing(run.stdout, CONTEXT)
    lines = run.stdout.splitlines()
    assert lines[2:6] == [
        "[bli] ## Pinned (always true here; follow them)",
        f"[bli] - [pin · id {project['id']}] Never push to main.",
        "[bli]     Open a pull request.",
        f"[bli] - [pin · global · id {mine['id']}] Call me Sam.",
    ]
    assert "[bli] - The API uses FastAPI for its routes." in lines
    assert run.stdout.count("Call me Sam.") == 1  # not again under the profile
    assert "more pins not shown" not in run.stdout


def test_pins_past_the_cap_are_named_in_the_last_line_and_the_rest_still_shows(
    tmp_path: Path, door: DoorProcess, tag: str
) -> None:
    token, env = person_home(tmp_path, door, tag)
    size = session_start.PINS_MAX_CHARS // 3
    for index in range(5):  # three fit exactly, two do not
        body = f"Rule {index}: " + "keep the hook path on the standard library; " * 40
        post(door, "/api/memory/pin", {"content": body[:size], "containerTag": tag}, token)
    for index in range(12):  # enough profile to fill the rest of the block, so it gets cut
        fact = f"Module m{index} uses ruff and mypy before each commit. " * 10
        post(door, "/api/memory/save", {"content": fact.strip(), "containerTag": tag}, token)
    run = run_hook("session-start", SESSION_START, Path(env["HOME"]), env=env)
    assert run.returncode == 0, run.stderr
    assert_one_block_or_nothing(run.stdout, CONTEXT)
    lines = run.stdout.splitlines()
    assert lines[-2] == "[bli] … 2 more pins not shown: run `bli-memory-mcp pins`"
    assert [line.split(":")[0] for line in lines if line.startswith("[bli] - [pin")] == [
        f"[bli] - [pin · id {row['id']}] Rule {index}"
        for index, row in enumerate(listed_pins(door, tag, token)[:3])
    ]
    assert "[bli] ## User Profile" in lines  # the pins did not crowd the profile out
    assert len(run.stdout) <= prompt.BLOCK_MAX_CHARS + 100
    assert run.receipt()[2]["pins"] == 3


def listed_pins(door: DoorProcess, tag: str, token: str) -> list[dict[str, Any]]:
    return list(post(door, "/api/memory/pins", {"containerTag": tag}, token)["pins"])


def test_the_prompt_hook_recalls_from_both_spaces_and_labels_the_global_hit(
    tmp_path: Path, door: DoorProcess, tag: str
) -> None:
    token, env = person_home(tmp_path, door, tag)
    word = f"BLI-{uuid.uuid4().int % 10_000}"
    post(
        door,
        "/api/memory/save",
        {"content": f"The state of {word}: fixed in this repo", "containerTag": tag},
        token,
    )
    post(
        door,
        "/api/memory/save",
        # both rows answer the prompt, so the door's relevance floor keeps both
        {
            "content": f"I track {word} in my notes: its state is fixed upstream",
            "containerTag": tag,
            "scope": "global",
        },
        token,
    )
    run = run_hook(
        "prompt", {**PROMPT, "prompt": f"what is the state of {word}?"}, Path(env["HOME"]), env=env
    )
    assert run.returncode == 0 and run.receipt()[2]["hits"] == 2, run.stderr
    assert f"Memories from this space ({tag}) and your global space" in run.stdout
    [global_line] = [line for line in run.stdout.splitlines() if f"I track {word}" in line]
    assert "· global · id mem_" in global_line
    [project_line] = [line for line in run.stdout.splitlines() if f"{word}: fixed" in line]
    assert "global" not in project_line


def test_the_block_keeps_its_last_line_whatever_is_cut() -> None:
    block = prompt.render_block("t", ["x" * 100] * 200, last="the end")
    lines = block.splitlines()
    assert lines[-3:] == ["[bli] […]", "[bli] the end", "</t> [bli]"]
    assert len(block) <= prompt.BLOCK_MAX_CHARS + 1

"""The session-start hook as the host runs it (a subprocess, a temporary HOME, the real door): after the
pins, a briefing of the space's lasting facts in force, then the recent context it does not already
state (door/service/profile.py)."""

from __future__ import annotations

from pathlib import Path

from bli_memory.hooks import session_start
from tests.helpers import DoorProcess
from tests.hooks.helpers import (
    SESSION_START,
    assert_one_block_or_nothing,
    person_home,
    post,
    run_hook,
)


def test_session_start_briefs_the_lasting_facts_in_force_and_then_what_is_new(
    tmp_path: Path, door: DoorProcess, tag: str
) -> None:
    token, env = person_home(tmp_path, door, tag)
    saved = [
        "`versions.tf` pins Terraform `1.7.5` for every stack.",
        "Who to ask: the AWS account and IAM roles are owned by Jon Berg (platform); ping #infra.",
        "Which queue does mail use? The mailer runs on the `mail` queue, never on `default`.",
        "`docker-compose.yml`: removed the `beat` service.",
        "We need the new provider API, go to Terraform 1.8.2.",
        "Ownership: the AWS account and IAM roles are owned by Mei Chen (platform).",
    ]
    for content in saved:
        post(door, "/api/memory/save", {"content": content, "containerTag": tag}, token)
    post(door, "/api/memory/pin", {"content": "Never push to main.", "containerTag": tag}, token)
    run = run_hook("session-start", SESSION_START, Path(env["HOME"]), env=env)
    assert run.returncode == 0 and run.receipt()[1] == "ok", run.stderr
    assert_one_block_or_nothing(run.stdout, session_start.CONTEXT_TAG)
    lines = run.stdout.splitlines()
    profile = lines.index("[bli] ## User Profile")
    recent = lines.index("[bli] ## Recent Context")
    assert lines.index("[bli] ## Pinned (always true here; follow them)") < profile < recent
    assert lines[profile + 1 : recent] == [
        "[bli] - Ownership: the AWS account and IAM roles are owned by Mei Chen (platform).",
        "[bli] - We need the new provider API, go to Terraform 1.8.2.",
        "[bli] - The mailer runs on the `mail` queue, never on `default`.",
    ]
    assert lines[recent + 1].endswith("`docker-compose.yml`: removed the `beat` service.")
    assert "1.7.5" not in run.stdout and "Jon Berg" not in run.stdout and "?" not in run.stdout


def test_the_hook_shows_every_fact_the_doors_briefing_holds(
    tmp_path: Path, door: DoorProcess, tag: str
) -> None:
    """The door chooses at most PROFILE_BRIEFING_COUNT facts; the hook, which imports nothing of the
    door, must not cut that list shorter (it once showed 20 of the door's 30)."""
    from bli_memory.door.service.profile import PROFILE_BRIEFING_COUNT

    assert session_start.PROFILE_MAX_ITEMS == PROFILE_BRIEFING_COUNT
    token, env = person_home(tmp_path, door, tag)
    for number in range(PROFILE_BRIEFING_COUNT + 5):
        content = f"Service svc-{number:02d} runs on host node-{number:02d}.internal, port {8000 + number}."
        post(door, "/api/memory/save", {"content": content, "containerTag": tag}, token)
    run = run_hook("session-start", SESSION_START, Path(env["HOME"]), env=env)
    assert run.returncode == 0 and run.receipt()[1] == "ok", run.stderr
    lines = run.stdout.splitlines()
    profile = lines.index("[bli] ## User Profile")
    end = lines.index("[bli] ## Recent Context") if "[bli] ## Recent Context" in lines else len(lines) - 1
    shown = [line for line in lines[profile + 1 : end] if line.startswith("[bli] - ")]
    assert len(shown) == PROFILE_BRIEFING_COUNT

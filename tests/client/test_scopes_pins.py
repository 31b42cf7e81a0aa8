"""Scopes and pins through the MCP server (the SDK's own client over stdio) and the human CLI
(subprocesses), each with a temporary HOME, against the real door (docs/scopes-and-pins.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bli_memory.settings import write_session
from tests.helpers import DoorProcess

BIN = Path(sys.executable).parent / "bli-memory-mcp"
SESSION_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 60.0


def mcp_calls(
    home: Path, url: str, token: str, tag: str, calls: list[tuple[str, dict[str, Any]]]
) -> list[Any]:
    """Spawn `bli-memory-mcp`, run `calls` in order through one SDK client session, return the results."""
    env = {
        "HOME": str(home),
        "BLI_MEMORY_DASHBOARD_URL": url,
        "BLI_MEMORY_DEVICE_TOKEN": token,
        "BLI_MEMORY_DAEMON": "0",
        "BLI_MEMORY_CONTAINER_TAG": tag,
    }

    async def run() -> list[Any]:
        params = StdioServerParameters(command=str(BIN), args=[], env=env, cwd=str(home))
        with (
            open(home / "server-stderr.log", "w", encoding="utf-8") as err,
            anyio.fail_after(SESSION_TIMEOUT_S),
        ):
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return [await session.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(run)


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def cli(home: Path, tag: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(home),
        "PATH": os.environ["PATH"],
        "BLI_MEMORY_DAEMON": "0",
        "BLI_MEMORY_CONTAINER_TAG": tag,
    }
    return subprocess.run(
        [str(BIN), *args], capture_output=True, text=True, env=env, cwd=home, timeout=RUN_TIMEOUT_S
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def paired_person(door: DoorProcess, home: Path, team: str | None = None) -> str:
    """Pair `home` as a new person of its own (a global space no other test writes); the token."""
    token = door.pair(f"p{uuid.uuid4().hex[:10]}", team=team)
    write_session(door.url, token, env={"HOME": str(home)})
    return token


# ---------------------------------------------------------------------------- MCP


def test_mcp_search_labels_each_hit_with_its_scope_and_save_takes_one(
    door: DoorProcess, home: Path, tag: str
) -> None:
    token = paired_person(door, home)
    word = f"gannet{uuid.uuid4().hex[:6]}"
    saved_global, saved_project, merged, only_global, bad = mcp_calls(
        home,
        door.url,
        token,
        tag,
        [
            ("save_memory", {"content": f"I write {word} commit messages in English", "scope": "global"}),
            ("save_memory", {"content": f"The {word} service listens on 8080"}),
            ("search_memory", {"query": word}),
            ("search_memory", {"query": word, "scope": "global"}),
            ("search_memory", {"query": word, "scope": "everywhere"}),
        ],
    )
    assert text_of(saved_global).startswith("Saved memory mem_") and "in your global space" in text_of(
        saved_global
    )
    assert saved_global.structured_content["scope"] == "global"
    assert saved_project.structured_content["scope"] == "project" and f"in space {tag}" in text_of(
        saved_project
    )
    text = text_of(merged)
    assert text.startswith(
        f"2 remembered facts and 0 documents for “{word}” in space {tag} and your global space."
    )
    assert f"· scope global]\n   I write {word} commit messages in English" in text
    assert f"· scope project · source {tag}]\n   The {word} service listens on 8080" in text
    assert sorted(row["scope"] for row in merged.structured_content["memories"]) == ["global", "project"]
    assert [row["content"] for row in only_global.structured_content["memories"]] == [
        f"I write {word} commit messages in English"
    ]
    assert "in your global space" in text_of(only_global) and "bli:" not in text_of(only_global)
    assert bad.is_error and "`scope` must be one of: project, global, all" in text_of(bad)


def test_mcp_pins_are_verbatim_listed_kept_out_of_search_and_unpinned(
    door: DoorProcess, home: Path, tag: str
) -> None:
    token = paired_person(door, home)
    word = f"shrike{uuid.uuid4().hex[:6]}"
    text = f"Never force-push {word} branches.\n  Rebase instead."
    pinned, mine, listed, searched = mcp_calls(
        home,
        door.url,
        token,
        tag,
        [
            ("pin_memory", {"content": text}),
            ("pin_memory", {"content": f"{word}: call me Sam", "scope": "global"}),
            ("list_pins", {}),
            ("search_memory", {"query": word}),
        ],
    )
    assert text_of(pinned).startswith(f"Pinned {pinned.structured_content['id']} in space {tag}")
    assert text_of(pinned).endswith("   Never force-push " + word + " branches.\n     Rebase instead.")
    assert "your global space (every project)" in text_of(mine)
    listing = text_of(listed)
    assert listing.startswith(f"2 pins apply in space {tag}: 1 of the space, 1 of your global space.")
    assert (
        f"This space:\n1. [id {pinned.structured_content['id']} · <1h]\n   Never force-push {word} branches.\n     Rebase instead."
        in listing
    )
    assert (
        f"Your global space:\n2. [id {mine.structured_content['id']} · <1h]\n   {word}: call me Sam"
        in listing
    )
    assert [row["content"] for row in listed.structured_content["pins"]] == [text, f"{word}: call me Sam"]
    assert searched.structured_content["silent"] is True

    unpinned, relisted, found = mcp_calls(
        home,
        door.url,
        token,
        tag,
        [
            ("unpin_memory", {"id": pinned.structured_content["id"]}),
            ("list_pins", {}),
            ("search_memory", {"query": word, "scope": "project"}),
        ],
    )
    new_id = unpinned.structured_content["id"]
    assert text_of(unpinned).startswith(
        f"Unpinned {pinned.structured_content['id']}: it is an ordinary memory"
    )
    assert f"forget --id {new_id}" in text_of(unpinned)
    assert [row["scope"] for row in relisted.structured_content["pins"]] == ["global"]
    assert [row["id"] for row in found.structured_content["memories"]] == [new_id]


def test_unpin_checks_the_id_before_any_request(tmp_path: Path, home: Path, tag: str) -> None:
    """No door listens at the URL: an id that passed the check would fail as unreachable instead."""
    with __import__("socket").socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    results = mcp_calls(
        home,
        f"http://127.0.0.1:{port}",
        "bli_" + "x" * 43,
        tag,
        [
            ("unpin_memory", {"id": "../forget"}),
            ("unpin_memory", {"id": "mem_NOTHEX"}),
            ("unpin_memory", {"id": "mem_0123abcd"}),
            ("pin_memory", {"content": "x" * 2001}),
        ],
    )
    assert all(result.is_error for result in results)
    reasons = [text_of(result).split("(reason: ", 1)[1].split(")", 1)[0] for result in results]
    assert reasons == ["invalid_arguments", "invalid_arguments", "dashboard_unreachable", "invalid_arguments"]
    assert "`id` must be a memory id" in text_of(results[0])
    assert "at most 2000 characters" in text_of(results[3])


# ---------------------------------------------------------------------------- CLI


def test_cli_scope_on_save_search_and_forget(door: DoorProcess, home: Path, tag: str) -> None:
    paired_person(door, home)
    word = f"avocet{uuid.uuid4().hex[:6]}"
    saved = cli(home, tag, "save", "--scope", "global", f"I run {word} tests with -x")
    assert saved.returncode == 0 and "in your global space (status: created)" in saved.stdout, saved.stderr
    assert cli(home, tag, "save", f"The {word} repo uses ruff").returncode == 0

    both = json.loads(cli(home, tag, "search", word, "--json").stdout)
    assert both["scope"] == "all"
    assert sorted((row["scope"], row["content"]) for row in both["memories"]) == [
        ("global", f"I run {word} tests with -x"),
        ("project", f"The {word} repo uses ruff"),
    ]
    project = cli(home, tag, "search", "--scope", "project", word)
    assert f"in space {tag}." in project.stdout and "-x" not in project.stdout
    mine = cli(home, tag + "_other", "search", "--scope", "global", word)
    assert mine.stdout.startswith(f"1 remembered fact and 0 documents for “{word}” in your global space.")

    missed = cli(home, tag, "forget", "--content", f"I run {word} tests with -x")
    assert missed.returncode == 1 and "Nothing forgotten" in missed.stdout
    forgot = cli(home, tag, "forget", "--scope", "global", "--content", f"I run {word} tests with -x")
    assert forgot.returncode == 0 and "in your global space (by exact text)" in forgot.stdout, forgot.stderr
    bad = cli(home, tag, "search", "--scope", "team", word)
    assert bad.returncode == 2 and "invalid choice: 'team'" in bad.stderr and bad.stdout == ""


def test_cli_pin_pins_unpin(door: DoorProcess, home: Path, tag: str) -> None:
    paired_person(door, home)
    word = f"curlew{uuid.uuid4().hex[:6]}"
    pinned = cli(home, tag, "pin", "--json", f"Ship {word} only from the release branch")
    assert pinned.returncode == 0, pinned.stderr
    pin = json.loads(pinned.stdout)
    assert pin["status"] == "created" and pin["scope"] == "project"
    again = cli(home, tag, "pin", f"Ship {word} only from the release branch")
    assert again.returncode == 0 and again.stdout.startswith(f"Already pinned {pin['id']} in space {tag}")
    assert cli(home, tag, "pin", "--scope", "global", f"{word}: I am on the infra team").returncode == 0

    listed = cli(home, tag, "pins")
    assert listed.returncode == 0 and listed.stdout.startswith(f"2 pins apply in space {tag}")
    rows = json.loads(cli(home, tag, "pins", "--json").stdout)["pins"]
    assert [(row["scope"], row["content"]) for row in rows] == [
        ("project", f"Ship {word} only from the release branch"),
        ("global", f"{word}: I am on the infra team"),
    ]
    assert json.loads(cli(home, tag, "search", word, "--json").stdout)["silent"] is True

    unpinned = cli(home, tag, "unpin", pin["id"])
    assert unpinned.returncode == 0 and unpinned.stdout.startswith(f"Unpinned {pin['id']}"), unpinned.stderr
    twice = cli(home, tag, "unpin", pin["id"])
    assert twice.returncode == 1 and "not_current" in twice.stderr
    bad = cli(home, tag, "unpin", "not-an-id")
    assert bad.returncode == 2 and "must be a memory id" in bad.stderr and "Traceback" not in bad.stderr
    long = cli(home, tag, "pin", "y" * 2001)
    assert long.returncode == 2 and "at most 2000 characters" in long.stderr

"""Browsing as people and agents meet it: `bli-memory-mcp list|recent` as subprocesses with a HOME of
their own, and the `list_memories` / `recent_memories` tools over the MCP server's stdio, each
against the real door."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bli_memory.settings import write_session
from tests.client.helpers import mcp_session, run_cli
from tests.helpers import DoorProcess


@pytest.fixture
def home(tmp_path: Path, door: DoorProcess) -> str:
    folder = tmp_path / "home"
    folder.mkdir()
    write_session(door.url, door.token, env={"HOME": str(folder)})
    return str(folder)


def save(door: DoorProcess, tag: str, content: str, **extra: Any) -> str:
    status, body = door.post("/api/memory/save", {"content": content, "containerTag": tag, **extra})
    assert status == 201, body
    return str(body["id"])


def test_list_prints_age_kind_and_source_and_pages_with_the_cursor(
    door: DoorProcess, tag: str, home: str, tmp_path: Path
) -> None:
    save(door, tag, "The CI runs on every push.", metadata={"source": "stop_hook"})
    save(door, tag, "# Runbook\nRestart the worker first.", kind="document")
    save(door, tag, "Releases are cut on Fridays.")
    first = run_cli(home, str(tmp_path), "list", "--container-tag", tag, "--limit", "2")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith(f"The 2 memories of space {tag}, newest first; more with cursor c1.")
    assert re.match(r"1\. \[id mem_\w+ · <1h old · fact · source tester on dev_\w+\]", lines[1]), lines[1]
    assert lines[2] == "   Releases are cut on Fridays."
    assert re.match(r"2\. \[id mem_\w+ · <1h old · document · source tester on dev_\w+\]", lines[3]), lines[3]
    cursor = lines[0].rsplit(" ", 1)[1].rstrip(".")

    second = run_cli(home, str(tmp_path), "list", "--container-tag", tag, "--cursor", cursor, "--json")
    assert second.returncode == 0, second.stderr
    answer = json.loads(second.stdout)
    (row,) = answer["memories"]
    assert row["content"] == "The CI runs on every push." and answer["nextCursor"] is None
    assert row["kind"] == "fact" and row["age"] == "<1h"
    assert row["source"] == {"origin": "stop_hook", "person": "tester", "device": row["source"]["device"]}
    assert (
        "source stop_hook, tester on dev_"
        in run_cli(home, str(tmp_path), "list", "--container-tag", tag).stdout
    )


def test_recent_shows_the_latest_and_an_empty_space_is_an_answer(
    door: DoorProcess, tag: str, home: str, tmp_path: Path
) -> None:
    empty = run_cli(home, str(tmp_path), "recent", "--container-tag", tag)
    assert empty.returncode == 0 and empty.stdout == f"No memories in space {tag}.\n", empty
    for index in range(4):
        save(door, tag, f"recent note {index}")
    done = run_cli(home, str(tmp_path), "recent", "--container-tag", tag, "--limit", "2", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert [row["content"] for row in answer["memories"]] == ["recent note 3", "recent note 2"]
    assert "nextCursor" not in answer


def test_bad_input_is_one_line_and_exit_2(door: DoorProcess, tag: str, home: str, tmp_path: Path) -> None:
    for args in (
        ("list", "--limit", "0"),
        ("recent", "--limit", "x"),
        ("list", "--bogus"),
        ("list", "--scope", "everywhere"),
    ):
        done = run_cli(home, str(tmp_path), *args, "--container-tag", tag)
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done
        assert "Traceback" not in done.stderr
    wrong_cursor = run_cli(home, str(tmp_path), "list", "--cursor", "c1.nonsense", "--container-tag", tag)
    assert wrong_cursor.returncode == 1 and len(wrong_cursor.stderr.splitlines()) == 1
    assert "not a cursor this door gave" in wrong_cursor.stderr


def test_the_tools_page_under_concurrent_writes_over_mcp(
    door: DoorProcess, tag: str, home: str, tmp_path: Path
) -> None:
    existing = [save(door, tag, f"mcp existing {index}") for index in range(9)]

    async def steps(session: Any) -> dict[str, Any]:
        listed = await session.list_tools()
        names = {tool.name for tool in listed.tools}
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            arguments: dict[str, Any] = {"containerTag": tag, "limit": 4}
            if cursor:
                arguments["cursor"] = cursor
            result = await session.call_tool("list_memories", arguments)
            assert not result.is_error, result.content
            seen += [row["id"] for row in result.structured_content["memories"]]
            cursor = result.structured_content["nextCursor"]
            pages += 1
            save(door, tag, f"mcp written while paging {pages}")
            if cursor is None:
                break
        recent = await session.call_tool("recent_memories", {"containerTag": tag, "limit": 2})
        wrong = await session.call_tool("list_memories", {"containerTag": tag, "scope": "everything"})
        return {"names": names, "seen": seen, "recent": recent, "wrong": wrong}

    found: Any = mcp_session(home, str(tmp_path), door.url, door.token, steps)
    assert {"list_memories", "recent_memories"} <= found["names"]
    assert found["seen"] == list(reversed(existing))
    recent = found["recent"].structured_content["memories"]
    assert [row["content"] for row in recent] == ["mcp written while paging 3", "mcp written while paging 2"]
    assert "· fact · source tester on dev_" in found["recent"].content[0].text
    assert (
        found["wrong"].is_error
        and "`scope` must be one of: project, global, all" in found["wrong"].content[0].text
    )


def test_the_listing_view_names_a_stored_exchange_and_an_unknown_source() -> None:
    import datetime as dt

    from bli_memory import render

    now = dt.datetime(2026, 5, 10, tzinfo=dt.timezone.utc)
    answer = {
        "memories": [
            {
                "id": "mem_1",
                "content": "User: hi\nAssistant: hello",
                "kind": "document",
                "exchange": True,
                "updatedAt": "2026-05-07T00:00:00Z",
                "source": {"origin": "exchange", "person": None, "device": "dev_9"},
            },
            {"id": "mem_2", "content": "no source at all", "createdAt": "2026-03-01T00:00:00Z"},
            "not a row",
        ],
        "nextCursor": "c1.abc",
        "containerTag": "canonical",
    }
    text, structured = render.render_listing(answer, "asked", now)
    lines = text.splitlines()
    assert lines[0] == "The 2 memories of space canonical, newest first; more with cursor c1.abc."
    assert lines[1] == "1. [id mem_1 · 3d old · document (stored exchange) · source exchange, dev_9]"
    assert lines[2:4] == ["   User: hi", "   Assistant: hello"]
    assert lines[4] == "2. [id mem_2 · 2mo old · fact · source unknown]"
    assert structured["nextCursor"] == "c1.abc" and [row["age"] for row in structured["memories"]] == [
        "3d",
        "2mo",
    ]
    recent_text, recent = render.render_listing(answer, "asked", now, recent=True)
    assert "cursor" not in recent_text and "nextCursor" not in recent
    assert recent_text.startswith("The 2 most recent memories of space canonical, newest first.")

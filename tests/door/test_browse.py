"""Browsing a space over the door's API (`/api/memory/list`, `/api/memory/recent`), against the real
`bli-memory-door serve` process, once over a SQLite file and once over a PostgreSQL database (the
module's `door` fixture): newest first, keyset pages that writes between fetches cannot shift, each
row's kind and source."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.door.helpers import STORE_KINDS, serve_on_store
from tests.helpers import DoorProcess


@pytest.fixture(scope="module", params=STORE_KINDS)
def door(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DoorProcess]:
    """The door this module's tests share, over each store in turn."""
    process = serve_on_store(request.param, request, tmp_path_factory)
    yield process
    process.stop()


def save(door: DoorProcess, tag: str, content: str, token: str | None = None, **extra: Any) -> dict[str, Any]:
    status, body = door.post("/api/memory/save", {"content": content, "containerTag": tag, **extra}, token)
    assert status == 201, body
    return body


def page(door: DoorProcess, tag: str, token: str | None = None, **extra: Any) -> dict[str, Any]:
    status, body = door.post("/api/memory/list", {"containerTag": tag, **extra}, token)
    assert status == 200, body
    return body


def test_list_pages_newest_first_and_recent_shows_the_latest(door: DoorProcess, tag: str) -> None:
    for index in range(5):
        save(door, tag, f"browse note {index}")
    first = page(door, tag, limit=2)
    assert [row["content"] for row in first["memories"]] == ["browse note 4", "browse note 3"]
    assert first["nextCursor"] and first["containerTag"] == tag
    second = page(door, tag, limit=2, cursor=first["nextCursor"])
    third = page(door, tag, limit=2, cursor=second["nextCursor"])
    assert [row["content"] for row in second["memories"] + third["memories"]] == [
        "browse note 2",
        "browse note 1",
        "browse note 0",
    ]
    assert third["nextCursor"] is None
    status, recent = door.post("/api/memory/recent", {"containerTag": tag, "limit": 3})
    assert status == 200, recent
    assert [row["content"] for row in recent["memories"]] == [
        "browse note 4",
        "browse note 3",
        "browse note 2",
    ]
    assert recent["nextCursor"] is None


def test_paging_under_concurrent_writes_neither_repeats_nor_skips(door: DoorProcess, tag: str) -> None:
    existing = [save(door, tag, f"existing row {index}")["id"] for index in range(12)]
    seen: list[str] = []
    cursor = None
    written = 0
    forgotten = existing[-1]  # the newest: it is on the first page, then forgotten
    while True:
        body = page(door, tag, limit=4, **({"cursor": cursor} if cursor else {}))
        seen += [row["id"] for row in body["memories"]]
        cursor = body["nextCursor"]
        # between two fetches: new rows, and a row already listed is forgotten
        for _ in range(3):
            save(door, tag, f"written while paging {written}")
            written += 1
        if written == 3:
            status, answer = door.post("/api/memory/forget", {"containerTag": tag, "id": forgotten})
            assert status == 200, answer
        if cursor is None:
            break
    assert len(seen) == len(set(seen)), "a row repeated"
    assert seen == list(reversed(existing)), "a row that existed at the start was skipped or moved"


def test_each_row_says_its_kind_age_and_source(door: DoorProcess, tag: str) -> None:
    token = door.pair("browser-ana", team="local")
    save(door, tag, "Deploys go out on Tuesdays.", token, metadata={"source": "stop_hook"})
    save(door, tag, "# Release guide\nStep one.", token, kind="document")
    rows = page(door, tag, token)["memories"]
    document, fact = rows
    assert (fact["kind"], document["kind"]) == ("fact", "document")
    assert fact["source"]["origin"] == "stop_hook" and document["source"]["origin"] is None
    assert fact["source"]["person"] == "browser-ana" and fact["source"]["device"].startswith("dev_")
    assert fact["exchange"] is False
    assert fact["createdAt"].endswith("Z") and fact["updatedAt"].endswith("Z") and fact["version"] == 1


def test_browsing_never_crosses_teams_and_pinned_memories_are_not_listed(door: DoorProcess, tag: str) -> None:
    save(door, tag, "team local row")
    save(door, tag, "a pinned rule", metadata={"pinned": True})
    outsider = door.pair("browser-eve", team=f"other-{tag}")
    assert page(door, tag, outsider)["memories"] == []
    assert [row["content"] for row in page(door, tag)["memories"]] == ["team local row"]


@pytest.mark.parametrize(
    "cursor",
    [
        "nonsense",
        "c1.!!!",
        "c1." + base64.urlsafe_b64encode(b'["x","mem_1"]').decode().rstrip("="),
        "c1." + base64.urlsafe_b64encode(b"[1.0]").decode().rstrip("="),
        "c1." + base64.urlsafe_b64encode(b'[1e999,"mem_1"]').decode().rstrip("="),
    ],
)
def test_a_cursor_the_door_did_not_give_is_a_clear_400(door: DoorProcess, tag: str, cursor: str) -> None:
    status, body = door.post("/api/memory/list", {"containerTag": tag, "cursor": cursor})
    assert status == 400 and body["error"] == "invalid_request" and "cursor" in body["message"], body


@pytest.mark.parametrize("limit", [0, 101, "5", True])
def test_a_bad_limit_is_a_400(door: DoorProcess, tag: str, limit: Any) -> None:
    for path in ("/api/memory/list", "/api/memory/recent"):
        status, body = door.post(path, {"containerTag": tag, "limit": limit})
        assert status == 400 and body["error"] == "invalid_request", body


def test_browsing_needs_a_token(door: DoorProcess, tag: str) -> None:
    status, body = door.post("/api/memory/list", {"containerTag": tag}, token="")
    assert status == 401 and body["error"] == "unauthorized"


def test_an_update_moves_a_memory_to_the_top_with_its_new_time(door: DoorProcess, tag: str) -> None:
    first = save(door, tag, "the build uses make")
    save(door, tag, "the linter is ruff")
    time.sleep(0.01)
    status, updated = door.post("/api/memory/update", {"id": first["id"], "content": "the build uses just"})
    assert status == 200, updated
    rows = page(door, tag)["memories"]
    assert [row["content"] for row in rows] == ["the build uses just", "the linter is ruff"]
    assert rows[0]["version"] == 2 and rows[0]["id"] == updated["id"]


def test_browsing_reads_the_callers_global_space_and_labels_each_row(door: DoorProcess, tag: str) -> None:
    """scope global lists only the caller's own global space, scope all lists both newest first with
    each row labelled; another person's global space never shows."""
    mine = door.pair(f"browser-{tag}")
    theirs = door.pair(f"other-{tag}")
    save(door, tag, "project fact for browsing", mine)
    save(door, tag, "my global preference", mine, scope="global")
    save(door, tag, "their global preference", theirs, scope="global")

    own = page(door, tag, mine, scope="global")
    assert [row["content"] for row in own["memories"]] == ["my global preference"]
    assert own["memories"][0]["scope"] == "global" and own["scope"] == "global"
    assert own["containerTag"] == tag and own["searched"] == []
    both = page(door, tag, mine, scope="all")
    assert [(row["content"], row["scope"]) for row in both["memories"]] == [
        ("my global preference", "global"),
        ("project fact for browsing", "project"),
    ]
    project = page(door, tag, mine)
    assert [row["content"] for row in project["memories"]] == ["project fact for browsing"]
    status, recent = door.post("/api/memory/recent", {"containerTag": tag, "scope": "global"}, theirs)
    assert status == 200 and [row["content"] for row in recent["memories"]] == ["their global preference"]

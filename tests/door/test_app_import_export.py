"""The door's export and import endpoints (`POST /api/memory/export`, `POST /api/memory/import`) on a
real door over each store in turn: a space's rows with their history, keyset-paged, and the same rows
written back exactly, into a door over the other store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.door.helpers import STORE_KINDS, serve_on_store
from tests.helpers import DoorProcess, export_row


@pytest.fixture(scope="module", params=STORE_KINDS)
def door(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DoorProcess]:
    """The door this module's tests share, over each store in turn."""
    process = serve_on_store(request.param, request, tmp_path_factory)
    yield process
    process.stop()


def _history(door: DoorProcess, tag: str, token: str | None = None) -> dict[str, str]:
    """A space with a two-version memory, a tombstone and a plain memory; their ids by name."""
    status, first = door.post(
        "/api/memory/save",
        {"content": "Deploys go out on Tuesdays", "containerTag": tag, "customId": "deploy-day"},
        token,
    )
    assert status == 201
    status, second = door.post(
        "/api/memory/update", {"id": first["id"], "content": "Deploys go out on Thursdays"}, token
    )
    assert status == 200
    status, gone = door.post(
        "/api/memory/save",
        {
            "content": "The old CI runner is ci-7",
            "containerTag": tag,
            "createdAt": "2024-05-01T12:00:00.123456Z",
        },
        token,
    )
    assert status == 201
    status, _ = door.post("/api/memory/forget", {"containerTag": tag, "id": gone["id"]}, token)
    assert status == 200
    status, plain = door.post(
        "/api/memory/save",
        {
            "content": "Pinned: releases are signed",
            "containerTag": tag,
            "metadata": {"pinned": True, "by": "ana"},
        },
        token,
    )
    assert status == 201
    return {"v1": first["id"], "v2": second["id"], "gone": gone["id"], "plain": plain["id"]}


def _export(door: DoorProcess, body: dict[str, Any], token: str | None = None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    after = None
    while True:
        status, page = door.post("/api/memory/export", {**body, **({"after": after} if after else {})}, token)
        assert status == 200, page
        rows += page["rows"]
        after = page["next"]
        if after is None:
            return rows


def test_export_pages_a_space_s_rows_with_history_and_tombstones_in_write_order(
    door: DoorProcess, tag: str
) -> None:
    ids = _history(door, tag)
    status, page = door.post("/api/memory/export", {"containerTag": tag, "limit": 2})
    assert status == 200
    assert [row["id"] for row in page["rows"]] == [ids["v1"], ids["v2"]]
    assert page["next"] == ids["v2"] and page["searched"] == [tag]
    rows = _export(door, {"containerTag": tag, "limit": 2})
    assert [(row["id"], row["status"], row["version"]) for row in rows] == [
        (ids["v1"], "superseded", 1),
        (ids["v2"], "current", 2),
        (ids["gone"], "forgotten", 1),
        (ids["plain"], "current", 1),
    ]
    v1, v2, gone, plain = rows
    assert (v2["rootId"], v2["previousVersionId"], v2["customId"]) == (ids["v1"], ids["v1"], "deploy-day")
    assert v1["supersededAt"] is not None and v2["supersededAt"] is None
    assert gone["createdAt"] == "2024-05-01T12:00:00.123456Z"  # microseconds, as saved
    assert plain["metadata"] == {"pinned": True, "by": "ana"}
    assert set(v1) == {
        "id", "rootId", "previousVersionId", "version", "status", "kind", "containerTag", "content",
        "customId", "metadata", "createdAt", "updatedAt", "supersededAt",
    }  # fmt: skip


def test_export_is_the_caller_s_team_only_and_needs_no_admin(door: DoorProcess, tag: str) -> None:
    _history(door, tag)
    member = door.pair("bo", team="local")  # same team, not an admin
    assert len(_export(door, {"containerTag": tag}, member)) == 4
    stranger = door.pair("eve", team=f"other_{tag}")
    assert _export(door, {"containerTag": tag}, stranger) == []
    assert _export(door, {"all": True}, stranger) == []
    mine = _export(door, {"all": True}, member)
    assert {row["containerTag"] for row in mine} >= {tag}


def test_export_refuses_a_bad_scope_or_cursor(door: DoorProcess, tag: str) -> None:
    assert door.post("/api/memory/export", {"containerTag": tag, "all": True})[0] == 400
    assert door.post("/api/memory/export", {})[0] == 400
    status, body = door.post("/api/memory/export", {"containerTag": tag, "after": "mem_nothere"})
    assert status == 400 and "after" in body["message"]
    assert door.post("/api/memory/export", {"containerTag": tag, "after": "../x"})[0] == 400
    assert door.post("/api/memory/export", {"containerTag": tag}, token="bli_wrong")[0] == 401


def test_imported_rows_export_exactly_as_they_were_from_a_fresh_door(
    door: DoorProcess, tag: str, start_door: Callable[..., DoorProcess]
) -> None:
    _history(door, tag)
    rows = _export(door, {"containerTag": tag})
    fresh = start_door(store="sqlite" if door.on_postgres else "postgresql")  # the other store
    status, answer = fresh.post("/api/memory/import", {"rows": rows})
    assert status == 200, answer
    assert [result["status"] for result in answer["results"]] == ["created"] * 4
    assert _export(fresh, {"containerTag": tag}) == rows
    status, again = fresh.post("/api/memory/import", {"rows": rows})
    assert [result["status"] for result in again["results"]] == ["unchanged"] * 4
    assert _export(fresh, {"containerTag": tag}) == rows
    status, found = fresh.post("/api/memory/search", {"q": "deploys", "containerTag": tag})
    assert [hit["content"] for hit in found["results"]] == ["Deploys go out on Thursdays"]  # current only
    status, profile = fresh.post("/api/memory/v4/profile", {"containerTag": tag})
    assert profile["profile"]["static"] == ["Pinned: releases are signed"]
    status, saved = fresh.post(
        "/api/memory/save",
        {"content": "Deploys go out on Fridays", "containerTag": tag, "customId": "deploy-day"},
    )
    assert saved["status"] == "updated"  # the imported customId is live


def test_a_refused_row_is_named_and_the_others_are_imported(door: DoorProcess, tag: str) -> None:
    unique = tag[-12:]
    rows = [
        export_row(tag, f"mem_a{unique}", "first"),
        export_row(
            tag,
            f"mem_b{unique}",
            "orphan",
            version=2,
            rootId=f"mem_x{unique}",
            previousVersionId=f"mem_x{unique}",
        ),
        export_row(tag, f"mem_c{unique}", "from the future", createdAt="2999-01-01T00:00:00Z"),
        export_row(tag, f"mem_d{unique}", "retired but no time", status="forgotten"),
        export_row(
            tag,
            f"mem_e{unique}",
            "second version",
            version=2,
            rootId=f"mem_a{unique}",
            previousVersionId=f"mem_a{unique}",
        ),
        export_row(tag, f"mem_f{unique}", "keyed", customId="k"),
        export_row(tag, f"mem_g{unique}", "keyed twice", customId="k"),
    ]
    status, answer = door.post("/api/memory/import", {"rows": rows})
    assert status == 200, answer
    results = answer["results"]
    assert results[0] == {"id": f"mem_a{unique}", "status": "created"}
    assert results[1]["error"] == "missing_previous" and "not here" in results[1]["message"]
    assert results[2]["error"] == "invalid_request" and "future" in results[2]["message"]
    assert results[3]["error"] == "invalid_request" and "supersededAt" in results[3]["message"]
    assert results[4]["status"] == "created"  # supersedes the current first version
    assert results[5]["status"] == "created"
    assert results[6]["error"] == "conflict" and "customId" in results[6]["message"]
    status, history = door.get(f"/api/memory/mem_a{unique}/history")
    assert [version["status"] for version in history["versions"]] == ["superseded", "current"]
    status, taken = door.post(
        "/api/memory/import", {"rows": [export_row(tag, f"mem_a{unique}", "other text")]}
    )
    assert taken["results"][0]["error"] == "conflict"


def test_another_teams_id_is_imported_under_an_id_of_the_team_s_own_and_answered_as_a_free_one(
    door: DoorProcess, tag: str
) -> None:
    """An import is no test of whether an id exists in another team: the answer is the one a free
    id gets, the row lands under an id of the importing team's own, and importing the same file
    again (or the row's next version) finds it there."""
    memory_id = f"mem_t{tag[-12:]}"
    free_id = f"mem_u{tag[-12:]}"
    assert door.post("/api/memory/import", {"rows": [export_row(tag, memory_id, "ours")]})[1]["results"][
        0
    ] == {
        "id": memory_id,
        "status": "created",
    }
    stranger = door.pair("mallory", team=f"other_{tag}")
    rows = [export_row(tag, memory_id, "theirs"), export_row(tag, free_id, "theirs too")]
    status, answer = door.post("/api/memory/import", {"rows": rows}, stranger)
    assert status == 200
    assert answer["results"] == [{"id": memory_id, "status": "created"}, {"id": free_id, "status": "created"}]
    assert door.get(f"/api/memory/{memory_id}/history", stranger)[0] == 404
    theirs = _export(door, {"containerTag": tag}, stranger)
    assert sorted(row["content"] for row in theirs) == ["theirs", "theirs too"]
    stand_in = next(row for row in theirs if row["content"] == "theirs")
    assert stand_in["id"] != memory_id and stand_in["rootId"] == stand_in["id"]
    # ours is untouched, and the stranger's next version of the row continues the stand-in
    assert [row["content"] for row in _export(door, {"containerTag": tag})] == ["ours"]
    again = door.post("/api/memory/import", {"rows": rows}, stranger)[1]["results"]
    assert [result["status"] for result in again] == ["unchanged", "unchanged"]
    later = export_row(
        tag,
        f"mem_v{tag[-12:]}",
        "theirs, later",
        version=2,
        rootId=memory_id,
        previousVersionId=memory_id,
        createdAt="2025-01-02T00:00:00.000000Z",
        updatedAt="2025-01-02T00:00:00.000000Z",
    )
    assert (
        door.post("/api/memory/import", {"rows": [later]}, stranger)[1]["results"][0]["status"] == "created"
    )
    status, history = door.get(f"/api/memory/{stand_in['id']}/history", stranger)
    assert status == 200 and [v["content"] for v in history["versions"]] == ["theirs", "theirs, later"]


def _teammates(door: DoorProcess, tag: str) -> tuple[str, str, dict[str, str]]:
    """Alice's and Bob's tokens (one team), and Bob's rows: a project memory, a global memory and a
    global pin."""
    team = f"team_{tag[-12:]}"
    alice = door.pair("alice", team=team)
    bob = door.pair("bob", team=team)
    ids = {}
    for name, body, path in (
        ("project", {"content": "Bob's project note", "containerTag": tag}, "/api/memory/save"),
        (
            "global",
            {"content": "Bob's private note", "containerTag": tag, "scope": "global"},
            "/api/memory/save",
        ),
        ("pin", {"content": "Bob's private pin", "containerTag": tag, "scope": "global"}, "/api/memory/pin"),
    ):
        status, saved = door.post(path, body, bob)
        assert status == 201, saved
        ids[name] = saved["id"]
    return alice, bob, ids


def test_export_of_every_space_holds_no_teammates_global_rows_or_pins(door: DoorProcess, tag: str) -> None:
    alice, bob, ids = _teammates(door, tag)
    status, own = door.post(
        "/api/memory/save", {"content": "Alice's own", "containerTag": tag, "scope": "global"}, alice
    )
    assert status == 201
    exported = _export(door, {"all": True}, alice)
    contents = {row["content"] for row in exported}
    assert "Bob's project note" in contents and "Alice's own" in contents
    assert not contents & {"Bob's private note", "Bob's private pin"}
    assert not {row["id"] for row in exported} & {ids["global"], ids["pin"]}
    assert all(not row["containerTag"].startswith("bli:") or row["id"] == own["id"] for row in exported)
    # nor can one of Bob's rows be a cursor (it would say that it exists)
    status, answer = door.post("/api/memory/export", {"all": True, "after": ids["global"]}, alice)
    assert status == 400 and "no memory row" in answer["message"]
    bobs = {row["content"] for row in _export(door, {"all": True}, bob)}
    assert {"Bob's private note", "Bob's private pin"} <= bobs


def test_import_cannot_forget_or_change_a_teammates_global_row_or_pin(door: DoorProcess, tag: str) -> None:
    alice, bob, ids = _teammates(door, tag)
    bobs_rows = [row for row in _export(door, {"all": True}, bob) if row["id"] in (ids["global"], ids["pin"])]
    assert len(bobs_rows) == 2
    forged = [
        {**row, "status": "forgotten", "supersededAt": row["updatedAt"], "containerTag": tag}
        for row in bobs_rows
    ]
    status, answer = door.post("/api/memory/import", {"rows": forged}, alice)
    assert status == 200
    assert all("error" in result or result["status"] == "created" for result in answer["results"])
    status, pins = door.post("/api/memory/pins", {"containerTag": tag}, bob)
    assert status == 200 and ids["pin"] in {pin["id"] for pin in pins["pins"]}
    for memory_id in (ids["global"], ids["pin"]):
        status, history = door.get(f"/api/memory/{memory_id}/history", bob)
        assert status == 200 and history["versions"][-1]["status"] == "current"


def test_import_does_not_retire_a_row_of_another_space(door: DoorProcess, tag: str) -> None:
    """A row already here is only retired by an import that names its own space."""
    status, saved = door.post("/api/memory/save", {"content": "stays current", "containerTag": tag})
    assert status == 201
    row = next(row for row in _export(door, {"containerTag": tag}) if row["id"] == saved["id"])
    forged = {
        **row,
        "status": "forgotten",
        "supersededAt": row["updatedAt"],
        "containerTag": f"{tag}_elsewhere",
    }
    status, answer = door.post("/api/memory/import", {"rows": [forged]})
    assert status == 200 and answer["results"][0]["error"] == "conflict"
    assert "another space" in answer["results"][0]["message"]
    status, history = door.get(f"/api/memory/{saved['id']}/history")
    assert history["versions"][-1]["status"] == "current"


def test_import_bodies_are_validated(door: DoorProcess, tag: str) -> None:
    assert door.post("/api/memory/import", {"rows": []})[0] == 400
    assert door.post("/api/memory/import", {"rows": [export_row(tag, "not-an-id", "x")]})[0] == 400
    assert (
        door.post("/api/memory/import", {"rows": [export_row(tag, "mem_ok1", "x", status="lost")]})[0] == 400
    )
    assert door.post("/api/memory/import", {"rows": [export_row(tag, "mem_ok2", "   ")]})[0] == 400

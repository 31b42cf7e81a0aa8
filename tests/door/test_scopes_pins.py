"""Scopes and pins against the real door, over each store in turn (docs/scopes-and-pins.md).

Scopes: a person's global space beside each repository's space, derived by the door from the token;
search merges both into one labelled ranking; no client can name the global space, and nobody reads or
writes another person's, in the same team or another. Pins: kept verbatim, out of search, listed,
loaded by the profile, unpinned into ordinary memories, and never touched by the librarian.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from bli_memory.wire.contract import MAX_PIN_CHARS
from tests.door.helpers import STORE_KINDS, serve_on_store
from tests.helpers import DoorProcess


@pytest.fixture(scope="module", params=STORE_KINDS)
def door(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DoorProcess]:
    """The door this module's tests share, over each store in turn."""
    process = serve_on_store(request.param, request, tmp_path_factory)
    yield process
    process.stop()


def person(door: DoorProcess, team: str | None = None) -> str:
    """A token of a person of the test's own (a global space nobody else's test writes to)."""
    return door.pair(f"p{uuid.uuid4().hex[:10]}", team=team)


def post(door: DoorProcess, path: str, body: dict[str, Any], token: str) -> dict[str, Any]:
    status, answer = door.post(path, body, token)
    assert 200 <= status < 300, (status, answer)
    return dict(answer)


def search(door: DoorProcess, token: str, tag: str, q: str, **extra: Any) -> dict[str, Any]:
    return post(door, "/api/memory/search", {"q": q, "containerTag": tag, "limit": 20, **extra}, token)


def labelled(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(row["scope"], row["content"]) for row in answer["results"]]


# ---------------------------------------------------------------------------- scopes


def test_search_merges_the_project_and_the_global_space_each_hit_labelled(
    door: DoorProcess, tag: str
) -> None:
    ada = person(door)
    word = f"kestrel{uuid.uuid4().hex[:6]}"
    project = post(door, "/api/memory/save", {"content": f"{word} builds use tox", "containerTag": tag}, ada)
    mine = post(
        door,
        "/api/memory/save",
        {"content": f"I like {word} answers short", "containerTag": tag, "scope": "global"},
        ada,
    )
    assert project["scope"] == "project" and project["containerTag"] == tag
    assert mine["scope"] == "global" and mine["containerTag"] != tag

    merged = search(door, ada, tag, word)
    assert merged["scope"] == "all" and merged["searched"] == [tag]
    assert sorted(labelled(merged)) == [
        ("global", f"I like {word} answers short"),
        ("project", f"{word} builds use tox"),
    ]
    assert labelled(search(door, ada, tag, word, scope="project")) == [("project", f"{word} builds use tox")]
    assert labelled(search(door, ada, tag, word, scope="global")) == [
        ("global", f"I like {word} answers short")
    ]
    # the global space follows the person into any other repository's space
    assert labelled(search(door, ada, tag + "_other", word)) == [("global", f"I like {word} answers short")]
    # one ranking, the same every time
    assert [row["id"] for row in merged["results"]] == [
        row["id"] for row in search(door, ada, tag, word)["results"]
    ]


def test_merged_ties_are_broken_the_same_way_every_time(door: DoorProcess, tag: str) -> None:
    ada = person(door)
    word = f"plover{uuid.uuid4().hex[:6]}"
    for index in range(3):  # identical-looking rows in both spaces: only the tie-break orders them
        post(door, "/api/memory/save", {"content": f"{word} note {index}", "containerTag": tag}, ada)
        post(
            door,
            "/api/memory/save",
            {"content": f"{word} note {index} ", "containerTag": tag, "scope": "global"},
            ada,
        )
    orders = {tuple(row["id"] for row in search(door, ada, tag, word)["results"]) for _ in range(5)}
    assert len(orders) == 1 and len(next(iter(orders))) == 6


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/memory/search", {"q": "x", "containerTag": "bli:global:1"}),
        ("/api/memory/save", {"content": "x", "containerTag": "bli:global:1"}),
        ("/api/memory/forget", {"containerTag": "bli:global:1", "content": "x"}),
        ("/api/memory/v4/profile", {"containerTag": "bli:anything"}),
        ("/api/memory/pin", {"content": "x", "containerTag": "bli:global:1"}),
        ("/api/memory/pins", {"containerTag": "bli:global:1"}),
        ("/api/memory/aliases", {"alias": "bli:global:1", "canonical": "repo_x"}),
        ("/api/memory/aliases", {"alias": "repo_x", "canonical": "bli:global:1"}),
        # the door's own tags are recognised in any case and with white space inside or around
        ("/api/memory/save", {"content": "x", "containerTag": "BLI:GLOBAL:3"}),
        ("/api/memory/save", {"content": "x", "containerTag": " bli:global:3"}),
        ("/api/memory/pin", {"content": "x", "containerTag": "Bli :\tGlobal:3"}),
        ("/api/memory/export", {"containerTag": "bLi:global:3"}),
        ("/api/memory/aliases", {"alias": "repo_x", "canonical": "BLI: global:1"}),
    ],
)
def test_no_client_may_name_a_reserved_tag(door: DoorProcess, path: str, body: dict[str, Any]) -> None:
    status, answer = door.post(path, body)
    assert status == 400 and answer["error"] == "invalid_request", answer
    assert "reserved" in answer["message"]


def _isolation(door: DoorProcess, tag: str, ada: str, other: str) -> None:
    word = f"osprey{uuid.uuid4().hex[:6]}"
    private = post(
        door,
        "/api/memory/save",
        {"content": f"My {word} password hint is blue", "containerTag": tag, "scope": "global"},
        ada,
    )
    pinned = post(
        door,
        "/api/memory/pin",
        {"content": f"{word}: ada's pin", "containerTag": tag, "scope": "global"},
        ada,
    )
    for scope in ("all", "global", "project"):
        assert search(door, other, tag, word, scope=scope)["results"] == []
    assert search(door, ada, tag, word)["results"] != []
    for memory_id in (private["id"], pinned["id"]):
        assert door.get(f"/api/memory/{memory_id}/history", other)[0] == 404
        status, answer = door.post("/api/memory/update", {"id": memory_id, "content": "taken over"}, other)
        assert status == 404, answer
        status, answer = door.post("/api/memory/forget", {"containerTag": tag, "id": memory_id}, other)
        assert status == 404, answer
    assert door.post("/api/memory/unpin", {"id": pinned["id"]}, other)[0] == 404
    assert (
        door.post(
            "/api/memory/forget",
            {"containerTag": tag, "content": f"My {word} password hint is blue", "scope": "global"},
            other,
        )[0]
        == 404
    )
    listed = post(door, "/api/memory/pins", {"containerTag": tag}, other)["pins"]
    assert all(word not in row["content"] for row in listed)
    profile = post(door, "/api/memory/v4/profile", {"containerTag": tag}, other)
    assert word not in str(profile)
    # and the owner still has both, untouched
    assert door.get(f"/api/memory/{private['id']}/history", ada)[1]["versions"][-1]["status"] == "current"
    assert [row["id"] for row in post(door, "/api/memory/pins", {"containerTag": tag}, ada)["pins"]] == [
        pinned["id"]
    ]


def test_another_person_of_the_same_team_never_reads_or_writes_my_global_space(
    door: DoorProcess, tag: str
) -> None:
    team = f"t{uuid.uuid4().hex[:8]}"
    _isolation(door, tag, person(door, team), person(door, team))


def test_a_person_of_another_team_never_reads_or_writes_my_global_space(door: DoorProcess, tag: str) -> None:
    _isolation(door, tag, person(door, f"t{uuid.uuid4().hex[:8]}"), person(door, f"t{uuid.uuid4().hex[:8]}"))


def test_forget_by_id_reaches_my_global_space_and_by_text_follows_the_scope(
    door: DoorProcess, tag: str
) -> None:
    ada = person(door)
    text = f"I review pull requests before lunch {uuid.uuid4().hex[:6]}"
    saved = post(door, "/api/memory/save", {"content": text, "containerTag": tag, "scope": "global"}, ada)
    status, answer = door.post("/api/memory/forget", {"containerTag": tag, "content": text}, ada)
    assert status == 404 and answer["error"] == "no_match"  # the project space does not hold it
    forgot = post(door, "/api/memory/forget", {"containerTag": tag, "content": text, "scope": "global"}, ada)
    assert forgot["forgotten"]["id"] == saved["id"] and forgot["scope"] == "global"
    again = post(door, "/api/memory/save", {"content": text, "containerTag": tag, "scope": "global"}, ada)
    by_id = post(door, "/api/memory/forget", {"containerTag": tag + "_elsewhere", "id": again["id"]}, ada)
    assert by_id["forgotten"]["id"] == again["id"] and by_id["scope"] == "global"


def test_the_profile_merges_both_spaces(door: DoorProcess, tag: str) -> None:
    ada = person(door)
    post(door, "/api/memory/save", {"content": "The project uses uv for installs.", "containerTag": tag}, ada)
    post(
        door,
        "/api/memory/save",
        {"content": "I prefer British spelling in docs.", "containerTag": tag, "scope": "global"},
        ada,
    )
    profile = post(door, "/api/memory/v4/profile", {"containerTag": tag}, ada)
    recent = {row["content"] for row in profile["recent"]}
    assert {"The project uses uv for installs.", "I prefer British spelling in docs."} <= recent
    assert profile["containerTag"] == tag and profile["searched"] == [tag]


# ---------------------------------------------------------------------------- pins


def test_a_pin_is_verbatim_listed_with_its_scope_and_kept_out_of_search(door: DoorProcess, tag: str) -> None:
    ada = person(door)
    word = f"heron{uuid.uuid4().hex[:6]}"
    text = f"  Never run `{word} deploy` on Fridays.\n\n    Ask Ana first;  always.  "
    pinned = post(door, "/api/memory/pin", {"content": text, "containerTag": tag}, ada)
    assert pinned["status"] == "created" and pinned["scope"] == "project" and pinned["containerTag"] == tag
    mine = post(
        door,
        "/api/memory/pin",
        {"content": f"{word}: I use vim keys", "containerTag": tag, "scope": "global"},
        ada,
    )
    again = post(door, "/api/memory/pin", {"content": text, "containerTag": tag}, ada)
    assert again == {**pinned, "status": "unchanged"}

    listed = post(door, "/api/memory/pins", {"containerTag": tag}, ada)["pins"]
    assert [(row["id"], row["content"], row["scope"]) for row in listed] == [
        (pinned["id"], text, "project"),
        (mine["id"], f"{word}: I use vim keys", "global"),
    ]
    assert search(door, ada, tag, word)["results"] == []  # neither space's pin is a search hit
    profile = post(door, "/api/memory/v4/profile", {"containerTag": tag}, ada)
    assert [row["content"] for row in profile["pins"]] == [text, f"{word}: I use vim keys"]
    assert profile["profile"]["static"] == [text, f"{word}: I use vim keys"]
    assert all(word not in row["content"] for row in profile["recent"])
    # an ordinary memory with the same text is its own row, and is searched
    plain = post(door, "/api/memory/save", {"content": text, "containerTag": tag}, ada)
    assert plain["status"] == "created" and plain["id"] != pinned["id"]
    assert [row["id"] for row in search(door, ada, tag, word)["results"]] == [plain["id"]]


def test_pins_have_a_size_cap_and_are_never_extracted(door: DoorProcess, tag: str) -> None:
    status, answer = door.post("/api/memory/pin", {"content": "x" * (MAX_PIN_CHARS + 1), "containerTag": tag})
    assert status == 400 and "content" in answer["message"]
    status, answer = door.post(
        "/api/memory/save",
        {"content": "We pin numpy.", "containerTag": tag, "extract": True, "metadata": {"pinned": True}},
    )
    assert status == 400 and "never extracted" in answer["message"]


def test_unpin_keeps_the_memory_as_an_ordinary_one_with_the_pin_as_history(
    door: DoorProcess, tag: str
) -> None:
    ada = person(door)
    word = f"ibis{uuid.uuid4().hex[:6]}"
    pinned = post(
        door, "/api/memory/pin", {"content": f"{word} releases need two approvals", "containerTag": tag}, ada
    )
    unpinned = post(door, "/api/memory/unpin", {"id": pinned["id"]}, ada)
    assert unpinned["previousVersionId"] == pinned["id"] and unpinned["status"] == "unpinned"
    assert unpinned["content"] == f"{word} releases need two approvals" and unpinned["scope"] == "project"
    assert post(door, "/api/memory/pins", {"containerTag": tag}, ada)["pins"] == []
    assert [row["id"] for row in search(door, ada, tag, word)["results"]] == [unpinned["id"]]
    versions = door.get(f"/api/memory/{unpinned['id']}/history", ada)[1]["versions"]
    assert [(v["id"], v["status"]) for v in versions] == [
        (pinned["id"], "superseded"),
        (unpinned["id"], "current"),
    ]
    status, answer = door.post("/api/memory/unpin", {"id": unpinned["id"]}, ada)
    assert status == 409 and answer["error"] == "not_pinned"
    status, answer = door.post("/api/memory/unpin", {"id": pinned["id"]}, ada)
    assert status == 409 and answer["error"] == "not_current"
    assert door.post("/api/memory/unpin", {"id": "mem_000000000000000000000000"}, ada)[0] == 404


def test_the_librarian_never_merges_or_supersedes_a_pin(door: DoorProcess, tag: str) -> None:
    """The same exchange that updates an ordinary fact (tests/door/test_stored_exchanges.py) leaves a
    pin as it is: the new fact is added beside it."""
    pinned = post(
        door,
        "/api/memory/pin",
        {"content": "We use PostgreSQL 15 in production.", "containerTag": tag},
        door.token,
    )
    status, queued = door.post(
        "/api/memory/save",
        {"content": "Assistant: We use PostgreSQL 16 in production.", "containerTag": tag, "extract": True},
    )
    assert status == 202, queued
    job = door.wait_job(queued["jobId"], 30)
    assert job["status"] == "done" and job["outcome"]["updated"] == 0 and job["outcome"]["added"] == 1, job
    versions = door.get(f"/api/memory/{pinned['id']}/history")[1]["versions"]
    assert [(v["content"], v["status"]) for v in versions] == [
        ("We use PostgreSQL 15 in production.", "current")
    ]
    same = door.post(
        "/api/memory/save",
        {"content": "Assistant: We use PostgreSQL 15 in production.", "containerTag": tag, "extract": True},
    )[1]
    job = door.wait_job(same["jobId"], 30)
    # the ordinary fact the first job added is corrected back; the pin is no neighbour, so untouched
    assert job["outcome"]["updated"] == 1, job
    assert len(door.get(f"/api/memory/{pinned['id']}/history")[1]["versions"]) == 1

"""The door's HTTP API, end to end against the real `bli-memory-door serve` process, once over a
SQLite file and once over a PostgreSQL database (the module's `door` fixture)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import socket
import uuid
from collections.abc import Iterator, MutableMapping
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


def search(door: DoorProcess, tag: str, q: str, token: str | None = None, **extra: Any) -> dict[str, Any]:
    status, body = door.post("/api/memory/search", {"q": q, "containerTag": tag, **extra}, token)
    assert status == 200, body
    return body


def contents(answer: dict[str, Any]) -> list[str]:
    return [row["content"] for row in answer["results"]]


# ---------------------------------------------------------------------------- health and docs


def test_healthz_needs_no_token_and_reports_store_and_embedder(door: DoorProcess) -> None:
    status, body = door.get("/healthz", token="")
    assert status == 200
    assert body["ok"] is True and body["embedder"] == "none"
    assert body["store"] == ("postgresql" if door.on_postgres else "sqlite")
    assert body["storeVersion"].startswith("16." if door.on_postgres else "3.")
    from bli_memory import __version__

    assert body["version"] == __version__


def test_healthz_and_the_search_answer_say_the_recall_floor_and_each_hits_relevance(
    door: DoorProcess, tag: str
) -> None:
    """A door without an embedder ranks by keyword: its hits carry the keyword-only calibration's
    relevance, and the answer and /healthz its floor; relevance never reorders the hits."""
    from bli_memory.door import relevance

    floor = relevance.calibration_for("none")
    assert floor is not None
    status, health = door.get("/healthz", token="")
    assert status == 200 and health["floor"] == floor.floor
    save(door, tag, "The payments service retries webhooks with exponential backoff.")
    save(door, tag, "Lunch is at noon on Fridays.")
    answer = search(door, tag, "payments webhooks retries", limit=5)
    assert answer["floor"] == floor.floor
    hits = answer["results"]
    assert hits and all(0.0 <= hit["relevance"] <= 1.0 for hit in hits)
    assert [hit["score"] for hit in hits] == sorted((hit["score"] for hit in hits), reverse=True)
    assert hits[0]["content"].startswith("The payments service") and hits[0]["relevance"] >= floor.floor
    assert search(door, tag, "payments webhooks retries", limit=5) == answer  # the same every time


def test_openapi_lists_every_endpoint(door: DoorProcess) -> None:
    status, spec = door.get("/openapi.json", token="")
    assert status == 200
    paths = set(spec["paths"])
    for path in (
        "/api/memory/search",
        "/api/memory/save",
        "/api/memory/update",
        "/api/memory/forget",
        "/api/memory/v4/profile",
        "/api/memory/aliases",
        "/api/memory/{memory_id}/history",
        "/api/memory/jobs/{job_id}",
        "/api/memory/experience",
        "/api/ops/memory-usage",
        "/api/ops/hook-stats",
        "/healthz",
    ):
        assert path in paths
    # it documents what the door really answers: 400 {error, message}, never FastAPI's 422
    assert "422" not in json.dumps(spec)
    search_post = spec["paths"]["/api/memory/search"]["post"]
    assert {"400", "401", "413"} <= set(search_post["responses"])
    assert spec["components"]["schemas"]["ErrorBody"]["required"] == ["error", "message"]
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert "202" in spec["paths"]["/api/memory/save"]["post"]["responses"]


# ---------------------------------------------------------------------------- save and search


def test_save_then_keyword_search_finds_it_with_null_similarity(door: DoorProcess, tag: str) -> None:
    saved = save(door, tag, "We pin MAX_POOL_SIZE to 20 in config/database.yml")
    assert saved["status"] == "created" and saved["containerTag"] == tag and saved["id"].startswith("mem_")
    save(door, tag, "The release train leaves every Tuesday")
    answer = search(door, tag, "MAX_POOL_SIZE")
    assert answer["searched"] == [tag]
    assert contents(answer)[0] == "We pin MAX_POOL_SIZE to 20 in config/database.yml"
    top = answer["results"][0]
    assert top["similarity"] is None and top["score"] > 0
    assert top["matchedBy"] == ["keyword"]
    assert top["kind"] == "memory" and top["containerTag"] == tag
    assert top["createdAt"].endswith("Z") and top["updatedAt"].endswith("Z")


def test_exact_duplicate_is_unchanged_not_stored_twice(door: DoorProcess, tag: str) -> None:
    first = save(door, tag, "Use pnpm, never npm, in this repository")
    again = save(door, tag, "Use pnpm, never npm, in this repository")
    assert again == {**first, "status": "unchanged"}
    assert len(contents(search(door, tag, "pnpm npm repository", limit=10))) == 1


def test_custom_id_upserts_a_new_version(door: DoorProcess, tag: str) -> None:
    first = save(door, tag, "Deploys go through ArgoCD", customId="deploy-tool")
    same = save(door, tag, "Deploys go through ArgoCD", customId="deploy-tool")
    assert same["status"] == "unchanged" and same["id"] == first["id"]
    second = save(door, tag, "Deploys go through Flux now", customId="deploy-tool")
    assert second["status"] == "updated" and second["id"] != first["id"]
    assert contents(search(door, tag, "deploys", limit=10)) == ["Deploys go through Flux now"]
    status, history = door.get(f"/api/memory/{second['id']}/history")
    assert status == 200
    assert [v["content"] for v in history["versions"]] == [
        "Deploys go through ArgoCD",
        "Deploys go through Flux now",
    ]


def test_created_at_keeps_imported_history_and_refuses_the_future(door: DoorProcess, tag: str) -> None:
    saved = save(door, tag, "Imported: the old build used Make", createdAt="2024-03-01T10:00:00Z")
    row = search(door, tag, "Make build")["results"][0]
    assert row["id"] == saved["id"] and row["createdAt"] == "2024-03-01T10:00:00.000Z"
    future = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2)).isoformat()
    status, body = door.post(
        "/api/memory/save", {"content": "x y z", "containerTag": tag, "createdAt": future}
    )
    assert status == 400 and body["error"] == "invalid_request" and "future" in body["message"]
    status, body = door.post(
        "/api/memory/save", {"content": "x y z", "containerTag": tag, "createdAt": "yesterday"}
    )
    assert status == 400 and "ISO 8601" in body["message"]


def test_newer_memory_outranks_an_equally_relevant_older_one(door: DoorProcess, tag: str) -> None:
    save(door, tag, "The staging database host is db-old.internal", createdAt="2025-01-01T00:00:00Z")
    save(door, tag, "The staging database host is db-new.internal")
    assert contents(search(door, tag, "staging database host"))[0].endswith("db-new.internal")


def test_limit_caps_results(door: DoorProcess, tag: str) -> None:
    for index in range(7):
        save(door, tag, f"Runbook step {index}: restart the widget service")
    assert len(search(door, tag, "widget service", limit=3)["results"]) == 3
    assert len(search(door, tag, "widget service")["results"]) == 5


def test_search_is_safe_against_fts_syntax(door: DoorProcess, tag: str) -> None:
    save(door, tag, "Quote handling: the parser accepts NEAR and AND as words")
    for query in ['"', "*", "NEAR(", "a:b", "AND OR NOT", "(((", "content: x", "-", "^foo"]:
        answer = search(door, tag, query)
        assert isinstance(answer["results"], list)
    assert contents(search(door, tag, "NEAR parser"))


# ---------------------------------------------------------------------------- update, history, forget


def test_update_keeps_history_and_search_sees_only_the_new_text(door: DoorProcess, tag: str) -> None:
    saved = save(door, tag, "The API rate limit is 100 requests per minute")
    status, updated = door.post(
        "/api/memory/update", {"id": saved["id"], "content": "The API rate limit is 300 requests per minute"}
    )
    assert status == 200
    assert updated["version"] == 2 and updated["previousVersionId"] == saved["id"]
    assert contents(search(door, tag, "API rate limit")) == ["The API rate limit is 300 requests per minute"]
    for memory_id in (saved["id"], updated["id"]):
        status, history = door.get(f"/api/memory/{memory_id}/history")
        assert status == 200
        versions = history["versions"]
        assert [v["version"] for v in versions] == [1, 2]
        assert [v["status"] for v in versions] == ["superseded", "current"]
        assert versions[0]["supersededAt"] is not None and versions[1]["supersededAt"] is None
    status, body = door.post("/api/memory/update", {"id": saved["id"], "content": "again"})
    assert status == 409 and body["error"] == "not_current" and updated["id"] in body["message"]


def test_forget_by_id_exact_and_closest(door: DoorProcess, tag: str) -> None:
    by_id = save(door, tag, "Temporary: the demo uses port 3999")
    save(door, tag, "Secrets live in Vault under kv/team")
    status, body = door.post("/api/memory/forget", {"containerTag": tag, "id": by_id["id"]})
    assert status == 200 and body["match"] == "id" and body["forgotten"]["id"] == by_id["id"]
    status, body = door.post(
        "/api/memory/forget", {"containerTag": tag, "content": "Secrets live in Vault under kv/team"}
    )
    assert status == 200 and body["match"] == "exact"
    assert search(door, tag, "demo port Vault secrets")["results"] == []
    status, body = door.post("/api/memory/forget", {"containerTag": tag, "id": by_id["id"]})
    assert status == 409 and body["error"] == "not_current"
    status, body = door.post("/api/memory/forget", {"containerTag": tag, "content": "never saved"})
    assert status == 404 and body["error"] == "no_match"
    # closest needs meaning: with no embedder there is no similarity, so it refuses rather than guess
    save(door, tag, "Lint with ruff before every commit")
    status, body = door.post("/api/memory/forget", {"containerTag": tag, "query": "ruff lint"})
    assert status == 404 and body["error"] == "no_match"
    assert contents(search(door, tag, "ruff")) == ["Lint with ruff before every commit"]


def test_forget_needs_exactly_one_selector(door: DoorProcess, tag: str) -> None:
    for body in ({"containerTag": tag}, {"containerTag": tag, "id": "mem_x", "content": "y"}):
        status, answer = door.post("/api/memory/forget", body)
        assert status == 400 and answer["error"] == "invalid_request"


def test_tombstoned_and_superseded_rows_never_come_back(door: DoorProcess, tag: str) -> None:
    old = save(door, tag, "Canary deploys start at 5 percent")
    door.post("/api/memory/update", {"id": old["id"], "content": "Canary deploys start at 10 percent"})
    gone = save(door, tag, "Canary deploys are paused on Fridays")
    door.post("/api/memory/forget", {"containerTag": tag, "id": gone["id"]})
    shown = contents(search(door, tag, "canary deploys", limit=100))
    assert shown == ["Canary deploys start at 10 percent"]
    status, profile = door.post("/api/memory/v4/profile", {"containerTag": tag})
    assert status == 200
    assert [row["content"] for row in profile["recent"]] == ["Canary deploys start at 10 percent"]
    assert profile["profile"]["dynamic"] == ["Canary deploys start at 10 percent"]
    # a forgotten text can be saved again as a new memory
    again = save(door, tag, "Canary deploys are paused on Fridays")
    assert again["status"] == "created" and again["id"] != gone["id"]


# ---------------------------------------------------------------------------- profile


def test_profile_static_pinned_dynamic_and_recent(door: DoorProcess, tag: str) -> None:
    save(door, tag, "Team convention: conventional commits", metadata={"pinned": True})
    for index in range(12):
        save(door, tag, f"Session note {index}: touched module m{index}")
    status, answer = door.post("/api/memory/v4/profile", {"containerTag": tag})
    assert status == 200
    assert answer["profile"]["static"] == ["Team convention: conventional commits"]
    assert answer["profile"]["dynamic"][0] == "Session note 11: touched module m11"
    assert len(answer["recent"]) == 10 and answer["recent"][0]["content"].startswith("Session note 11")
    status, answer = door.post("/api/memory/v4/profile", {"containerTag": tag, "q": "m3"})
    assert status == 200 and answer["profile"]["dynamic"][0] == "Session note 3: touched module m3"


# ---------------------------------------------------------------------------- aliases


def test_aliases_merge_spaces_for_search_and_route_saves(door: DoorProcess, tag: str) -> None:
    alias = tag + "_old"
    save(door, alias, "Written under the old repo name: use Node 20")
    status, body = door.post("/api/memory/aliases", {"alias": alias, "canonical": tag})
    assert status == 200 and body["tags"] == [tag, alias]
    answer = search(door, tag, "Node 20")
    assert answer["searched"] == [tag, alias] and contents(answer) == [
        "Written under the old repo name: use Node 20"
    ]
    saved = save(door, alias, "Saved through the alias lands in the canonical tag")
    assert saved["containerTag"] == tag
    assert search(door, alias, "canonical tag")["results"][0]["containerTag"] == tag


def test_only_admins_set_aliases(door: DoorProcess, tag: str) -> None:
    plain = door.pair("plain-member")
    status, body = door.post("/api/memory/aliases", {"alias": tag + "_a", "canonical": tag}, token=plain)
    assert status == 403 and body["error"] == "forbidden"
    status, body = door.post("/api/memory/aliases", {"alias": tag, "canonical": tag})
    assert status == 400


# ---------------------------------------------------------------------------- teams and tokens


def test_teams_are_isolated_and_people_in_a_team_share_spaces(door: DoorProcess, tag: str) -> None:
    alice = door.pair("alice", team="acme")
    bob = door.pair("bob", team="acme")
    eve = door.pair("eve", team="other")
    saved = save(door, tag, "Acme's payments service is in Go", token=alice)
    assert contents(search(door, tag, "payments service", token=bob)) == ["Acme's payments service is in Go"]
    assert search(door, tag, "payments service", token=eve)["results"] == []
    for method, path, body in (
        ("GET", f"/api/memory/{saved['id']}/history", None),
        ("POST", "/api/memory/update", {"id": saved["id"], "content": "taken over"}),
        ("POST", "/api/memory/forget", {"containerTag": tag, "id": saved["id"]}),
    ):
        status, answer = door.request(method, path, body, token=eve)
        assert status == 404 and answer["error"] == "not_found", (path, answer)
        assert "payments" not in json.dumps(answer)
    status, profile = door.post("/api/memory/v4/profile", {"containerTag": tag}, token=eve)
    assert status == 200 and profile["recent"] == []
    # the row records who saved it: a same-team search shows the memory, history shows both versions
    status, _ = door.post(
        "/api/memory/update", {"id": saved["id"], "content": "Acme's payments service is in Rust"}, token=bob
    )
    assert status == 200
    rows = door.rows(
        "SELECT p.name FROM memories m JOIN people p ON p.id = m.person_id WHERE m.root_id = ? ORDER BY m.version",
        (saved["id"],),
    )
    assert [row[0] for row in rows] == ["alice", "bob"]


@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Bearer ", "Basic abc", "Bearer bli_not_a_real_token", "bli_without_scheme"],
)
def test_missing_or_wrong_token_is_401(door: DoorProcess, tag: str, header: str | None) -> None:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        door.url + "/api/memory/search",
        data=json.dumps({"q": "x", "containerTag": tag}).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    if header is not None:
        request.add_header("Authorization", header)
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 401
    assert json.loads(caught.value.read())["error"] == "unauthorized"


def test_revoked_token_is_401_and_tokens_list_never_shows_tokens(door: DoorProcess, tag: str) -> None:
    import subprocess

    token = door.pair("leaver")
    save(door, tag, "Written before leaving", token=token)
    listing = subprocess.run(
        [str(door_bin()), "tokens", "list", "--json", "--db", str(door.db)],
        capture_output=True,
        text=True,
        check=True,
    )
    devices = json.loads(listing.stdout)
    assert token not in listing.stdout and "bli_" not in listing.stdout
    leaver = [device for device in devices if device["person"] == "leaver" and device["revokedAt"] is None]
    assert len(leaver) == 1
    revoke = subprocess.run(
        [str(door_bin()), "tokens", "revoke", leaver[0]["id"], "--db", str(door.db)],
        capture_output=True,
        text=True,
    )
    assert revoke.returncode == 0, revoke.stderr
    status, body = door.post("/api/memory/search", {"q": "leaving", "containerTag": tag}, token=token)
    assert status == 401 and body["error"] == "unauthorized"
    again = subprocess.run(
        [str(door_bin()), "tokens", "revoke", leaver[0]["id"], "--db", str(door.db)],
        capture_output=True,
        text=True,
    )
    assert again.returncode == 1 and again.stderr.count("\n") == 1 and "Traceback" not in again.stderr


def door_bin() -> Any:
    from tests.helpers import BIN

    return BIN / "bli-memory-door"


def test_the_door_stores_only_token_hashes(door: DoorProcess) -> None:
    token = door.pair("hash-check")
    dump = door.dump()
    assert "hash-check" in dump  # the dump holds the device's rows
    assert token not in dump and token[4:] not in dump


# ---------------------------------------------------------------------------- bad input


BAD_BODIES: list[tuple[str, Any, str]] = [
    ("/api/memory/search", {"containerTag": "t"}, "q is required"),
    ("/api/memory/search", {"q": "x"}, "containerTag is required"),
    ("/api/memory/search", {"q": 5, "containerTag": "t"}, "q:"),
    ("/api/memory/search", {"q": "", "containerTag": "t"}, "q:"),
    ("/api/memory/search", {"q": "x", "containerTag": "t", "limit": 0}, "limit:"),
    ("/api/memory/search", {"q": "x", "containerTag": "t", "limit": 101}, "limit:"),
    ("/api/memory/search", {"q": "x", "containerTag": "t", "limit": "5"}, "limit:"),
    ("/api/memory/search", {"q": "x", "containerTag": "t", "threshold": 1.5}, "threshold:"),
    ("/api/memory/search", {"q": "x", "containerTag": "t", "threshold": -0.1}, "threshold:"),
    ("/api/memory/search", [1, 2], "body"),
    ("/api/memory/save", {"containerTag": "t"}, "content is required"),
    ("/api/memory/save", {"content": "", "containerTag": "t"}, "content:"),
    ("/api/memory/save", {"content": "   \n ", "containerTag": "t"}, "content"),
    ("/api/memory/save", {"content": "x" * 100_001, "containerTag": "t"}, "content:"),
    ("/api/memory/save", {"content": "x", "containerTag": ""}, "containerTag:"),
    ("/api/memory/save", {"content": "x", "containerTag": "t", "extract": "yes"}, "extract:"),
    ("/api/memory/save", {"content": "x", "containerTag": "t", "metadata": "m"}, "metadata:"),
    ("/api/memory/save", {"content": "a\u0000b", "containerTag": "t"}, "NUL character"),
    ("/api/memory/save", {"content": "x", "containerTag": "t\u0000", "customId": "k"}, "NUL character"),
    ("/api/memory/update", {"id": "mem_1"}, "content is required"),
    ("/api/memory/update", {"content": "x"}, "id is required"),
    ("/api/memory/forget", {"id": "mem_1"}, "containerTag is required"),
    ("/api/memory/v4/profile", {}, "containerTag is required"),
    ("/api/memory/aliases", {"alias": "a"}, "canonical is required"),
    ("/api/memory/experience", {"store": "bli", "verdict": "great", "reason": "r"}, "verdict:"),
    ("/api/memory/experience", {"store": "bli", "verdict": "win", "reason": ""}, "reason:"),
    ("/api/memory/experience", {"store": "bli", "verdict": "win", "reason": "r" * 501}, "reason:"),
    ("/api/memory/experience", {"store": "bli", "verdict": "win", "reason": "a\nb"}, "one line"),
]


@pytest.mark.parametrize(("path", "body", "needle"), BAD_BODIES)
def test_bad_bodies_are_400_with_a_message(door: DoorProcess, path: str, body: Any, needle: str) -> None:
    status, answer = door.post(path, body)
    assert status == 400, answer
    assert answer["error"] == "invalid_request"
    assert needle in answer["message"]
    assert "Traceback" not in answer["message"]


def test_malformed_json_is_400(door: DoorProcess) -> None:
    for raw in (b'{"q": ', b"not json", b"", b"\xff\xfe"):
        status, answer = door.request("POST", "/api/memory/search", raw=raw)
        assert status == 400 and answer["error"] == "invalid_request", (raw, answer)


def _raw_exchange(door: DoorProcess, head: bytes, chunks: list[bytes]) -> bytes:
    """Send a request head and some body bytes on a raw socket, then read the whole answer."""
    host, port = door.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(head)
        for chunk in chunks:
            conn.sendall(chunk)
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < _length(answer):
            data = conn.recv(65536)
            if not data:
                break
            answer += data
    return answer


def _length(answer: bytes) -> int:
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def test_body_over_one_mebibyte_is_413_even_when_streamed(door: DoorProcess, tag: str) -> None:
    host = door.url.removeprefix("http://")
    auth = (
        f"Host: {host}\r\nAuthorization: Bearer {door.token}\r\nContent-Type: application/json\r\n".encode()
    )
    declared = _raw_exchange(
        door, b"POST /api/memory/save HTTP/1.1\r\nContent-Length: 2000000\r\n" + auth + b"\r\n", []
    )
    assert declared.startswith(b"HTTP/1.1 413 ") and b'"error": "body_too_large"' in declared
    chunk = b"x" * 65536
    # just over the cap (17 x 64 KiB), then stop and listen: the answer must come without the end
    streamed = _raw_exchange(
        door,
        b"POST /api/memory/save HTTP/1.1\r\nTransfer-Encoding: chunked\r\n" + auth + b"\r\n",
        [f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" for _ in range(17)],
    )
    assert streamed.startswith(b"HTTP/1.1 413 ") and b'"error": "body_too_large"' in streamed
    status, _ = door.post("/api/memory/save", {"content": "small is fine", "containerTag": tag})
    assert status == 201


def test_unknown_ids_are_404(door: DoorProcess, tag: str) -> None:
    status, body = door.get("/api/memory/mem_doesnotexist/history")
    assert status == 404 and body["error"] == "not_found"
    status, body = door.post("/api/memory/update", {"id": "mem_doesnotexist", "content": "x"})
    assert status == 404 and body["error"] == "not_found"
    status, body = door.post("/api/memory/forget", {"containerTag": tag, "id": "mem_doesnotexist"})
    assert status == 404 and body["error"] == "not_found"
    status, body = door.get("/api/memory/jobs/job_doesnotexist")
    assert status == 404 and body["error"] == "not_found"
    status, body = door.get("/api/nothing/here")
    assert status == 404 and set(body) == {"error", "message"}


def test_request_log_has_no_tokens_or_bodies(door: DoorProcess, tag: str) -> None:
    secret_text = f"unforgettable-body-{uuid.uuid4().hex}"
    save(door, tag, secret_text)
    search(door, tag, secret_text)
    door.post("/api/memory/search", {"q": secret_text}, token="bli_wrong_" + secret_text)
    door.wait_for_log("POST /api/memory/search 401")
    log = "\n".join(door.lines)
    assert secret_text not in log and door.token not in log
    assert "POST /api/memory/save 201" in log


# ---------------------------------------------------------------------------- experience log


def test_experience_insert_retry_conflict_and_usage(door: DoorProcess) -> None:
    token = door.pair("reviewer", team="exp-team")
    entry = {
        "id": str(uuid.uuid4()),
        "store": "bli",
        "verdict": "win",
        "reason": "the dated decision answered it",
    }
    status, body = door.post("/api/memory/experience", entry, token=token)
    assert status == 201 and body["id"] == entry["id"]
    status, _ = door.post("/api/memory/experience", entry, token=token)
    assert status == 200
    status, body = door.post("/api/memory/experience", {**entry, "verdict": "loss"}, token=token)
    assert status == 409 and body["error"] == "conflict"
    status, _ = door.post(
        "/api/memory/experience", {"store": "both", "verdict": "noise", "reason": "two blocks"}, token=token
    )
    assert status == 201
    status, usage = door.get("/api/ops/memory-usage", token=token)
    assert status == 200
    experience = usage["experience"]
    assert experience["windows"]["7d"]["bli"]["reviewer"] == {"win": 1}
    assert experience["windows"]["30d"]["both"]["reviewer"] == {"noise": 1}
    assert experience["lastReasons"]["bli"][0]["reason"] == "the dated decision answered it"
    assert experience["rows"] == {"requested": 2, "returned": 2, "unique": 2, "capped": False, "failed": None}
    status, other = door.get("/api/ops/memory-usage", token=door.pair("outsider", team="elsewhere"))
    assert status == 200 and other["experience"]["windows"]["7d"] == {}


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('{"content": "poison", "containerTag": "%s", "metadata": {"k": "\\ud800"}}', "lone surrogate"),
        ('{"content": "poison \\udfff", "containerTag": "%s"}', "unicode"),
        (
            '{"content": "poison", "containerTag": "%s", "metadata": '
            + "[" * 0
            + '{"a": '
            + "[" * 40
            + "]" * 40
            + "}}",
            "deeper",
        ),
        ('{"content": "poison", "containerTag": "%s", "metadata": {"n": NaN}}', "NaN"),
        (
            '{"content": "poison", "containerTag": "%s", "createdAt": "0001-01-01T00:00:00+14:00"}',
            "before 1970",
        ),
        (
            '{"content": "poison", "containerTag": "%s", "metadata": {"big": "' + "x" * 17000 + '"}}',
            "larger than",
        ),
        ('{"content": "poison", "containerTag": "   "}', "containerTag must not be blank"),
        ('{"content": "poison", "containerTag": "%s", "extract": true, "customId": "k"}', "plain save"),
    ],
)
def test_values_the_door_could_not_send_back_are_refused(
    door: DoorProcess, tag: str, body: str, needle: str
) -> None:
    raw = (body % tag if "%s" in body else body).encode()
    status, answer = door.request("POST", "/api/memory/save", raw=raw)
    assert status == 400 and answer["error"] == "invalid_request", answer
    assert needle in answer["message"]
    status, found = door.post("/api/memory/search", {"q": "poison", "containerTag": tag})
    assert status == 200 and found["results"] == []


def test_created_at_with_an_offset_is_kept(door: DoorProcess, tag: str) -> None:
    status, _ = door.post(
        "/api/memory/save",
        {"content": "offset time", "containerTag": tag, "createdAt": "2024-05-01T12:00:00+02:00"},
    )
    assert status == 201
    status, found = door.post("/api/memory/search", {"q": "offset time", "containerTag": tag})
    assert found["results"][0]["createdAt"] == "2024-05-01T10:00:00.000Z"


def test_a_path_cannot_forge_log_lines_or_leak_into_the_log(door: DoorProcess) -> None:
    forged = "/x%0Abli-memory-door%20POST%20/api/memory/save%20201%201.0ms%0Abli_SECRETTOKEN"
    status, body = door.request("GET", forged)
    assert status == 404 and body["error"] == "not_found"
    door.wait_for_log("GET (no route) 404")
    assert not any("SECRETTOKEN" in line for line in door.lines)
    assert all(line.startswith(("bli-memory-door", "[bli-memory]")) for line in door.lines)


def test_an_unexpected_error_is_one_json_500_and_one_log_line() -> None:
    """Sans-I/O: drive the outer request log with an app that raises after nothing was sent."""
    from bli_memory.door.api.gate import RequestLog

    async def broken(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom with a secret body")

    sent: list[MutableMapping[str, Any]] = []
    lines: list[str] = []

    class Stream:
        def write(self, text: str) -> None:
            lines.append(text)

        def flush(self) -> None:
            pass

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    asyncio.run(RequestLog(broken, Stream())({"type": "http", "method": "POST", "path": "/p"}, receive, send))
    assert sent[0]["status"] == 500
    assert json.loads(sent[1]["body"]) == {"error": "internal", "message": "the door failed; see its log"}
    assert (
        lines == [lines[0]] and "500" in lines[0] and "RuntimeError" in lines[0] and "secret" not in lines[0]
    )


def test_forget_by_id_respects_the_space(door: DoorProcess, tag: str) -> None:
    status, saved = door.post("/api/memory/save", {"content": "lives in one space", "containerTag": tag})
    status, body = door.post("/api/memory/forget", {"containerTag": tag + "_other", "id": saved["id"]})
    assert status == 404 and body["error"] == "not_found"
    status, found = door.post("/api/memory/search", {"q": "lives in one space", "containerTag": tag})
    assert [row["id"] for row in found["results"]] == [saved["id"]]


def test_experience_ids_are_per_team_and_validated(door: DoorProcess) -> None:
    mine, theirs = door.pair("exp-a", team="exp-one"), door.pair("exp-b", team="exp-two")
    entry = {"id": str(uuid.uuid4()), "store": "bli", "verdict": "win", "reason": "useful"}
    assert door.post("/api/memory/experience", entry, token=mine)[0] == 201
    assert door.post("/api/memory/experience", {**entry, "verdict": "loss"}, token=theirs)[0] == 201
    for bad, needle in (
        ({**entry, "id": "-" * 36}, "UUID"),
        ({**entry, "id": "0" * 8 + "-0000-0000-0000-" + "0" * 12}, "UUID"),
        ({**entry, "id": None, "reason": "   "}, "blank"),
        ({**entry, "id": None, "reason": "one\u2028two"}, "one line"),
    ):
        status, answer = door.post("/api/memory/experience", bad, token=mine)
        assert status == 400 and needle in answer["message"], (bad, answer)

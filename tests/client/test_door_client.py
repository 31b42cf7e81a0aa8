"""The typed door client: against the real door for the API, against stand-ins for a door that misbehaves."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from bli_memory.door_client import REWRITE_RESERVE_S, DoorCallError, DoorClient
from bli_memory.wire import http
from bli_memory.wire.reasons import to_log_reason
from tests.client.helpers import DEADLINE_MARGIN_S, SHORT_DEADLINE_S, StandIn
from tests.helpers import DoorProcess

#: the stand-in fixture of the wire tests: threads on 127.0.0.1 playing a door that misbehaves.

DEADLINE_S = 20.0


def soon(seconds: float = DEADLINE_S) -> float:
    return time.monotonic() + seconds


def contents(answer: dict[str, object]) -> list[str]:
    return [row["content"] for row in answer["results"]]  # type: ignore[attr-defined]


@pytest.fixture
def client(door: DoorProcess) -> DoorClient:
    return DoorClient(door.url, door.token)


# -- against the real door --------------------------------------------------------------------------


def test_healthz_answers_without_a_token(door: DoorProcess) -> None:
    with DoorClient(door.url, None) as anonymous:
        health = anonymous.healthz(deadline=soon())
    assert health["ok"] is True and health["embedder"] == "none" and health["version"]


def test_save_search_update_history_forget_round_trip(client: DoorClient, tag: str) -> None:
    with client:
        saved = client.save("The deploy script lives in ops/deploy.sh", tag, deadline=soon())
        assert saved["status"] == "created" and saved["containerTag"] == tag
        memory_id = saved["id"]

        found = client.search("deploy script", tag, deadline=soon())
        assert contents(found) == ["The deploy script lives in ops/deploy.sh"]
        assert found["searched"] == [tag] and found["results"][0]["id"] == memory_id

        updated = client.update(memory_id, "The deploy script moved to tools/deploy.sh", deadline=soon())
        assert updated["version"] == 2 and updated["previousVersionId"]

        assert contents(client.search("deploy script", tag, deadline=soon())) == [
            "The deploy script moved to tools/deploy.sh"
        ]
        history = client.history(updated["id"], deadline=soon())
        assert [v["content"] for v in history["versions"]] == [
            "The deploy script lives in ops/deploy.sh",
            "The deploy script moved to tools/deploy.sh",
        ]

        forgotten = client.forget(tag, memory_id=updated["id"], deadline=soon())
        assert forgotten["match"] == "id"
        assert forgotten["forgotten"]["content"] == "The deploy script moved to tools/deploy.sh"
        assert client.search("deploy script", tag, deadline=soon())["results"] == []


def test_custom_id_upserts_and_exact_text_forgets(client: DoorClient, tag: str) -> None:
    with client:
        first = client.save(
            "Lint with ruff", tag, custom_id="lint", metadata={"source": "test"}, deadline=soon()
        )
        again = client.save("Lint with ruff and mypy", tag, custom_id="lint", deadline=soon())
        assert first["status"] == "created" and again["status"] == "updated"
        forgotten = client.forget(tag, content="Lint with ruff and mypy", deadline=soon())
        assert forgotten["match"] == "exact"


def test_extract_save_is_queued_and_its_job_can_be_read(client: DoorClient, tag: str) -> None:
    with client:
        queued = client.save(
            "user: which port does the door use?\nassistant: The door listens on port 8765 by default.",
            tag,
            extract=True,
            deadline=soon(),
        )
        assert queued["queued"] is True and queued["jobId"]
        job = client.job(queued["jobId"], deadline=soon())
        assert job["status"] in ("queued", "running", "done", "failed")


def test_profile_names_the_space_it_read(client: DoorClient, tag: str) -> None:
    with client:
        client.save("Prefers small typed functions", tag, deadline=soon())
        profile = client.profile(tag, deadline=soon())
        assert "profile" in profile and "recent" in profile


def test_experience_insert_then_identical_retry(client: DoorClient) -> None:
    entry = {
        "id": "0b7c2f0e-6a4e-4e0f-9c1d-3f2a9b8c7d6e",
        "store": "bli",
        "verdict": "win",
        "reason": "the dated decision answered the question directly",
    }
    with client:
        assert client.experience(entry, deadline=soon())["status"] in ("inserted", "exists")
        assert client.experience(entry, deadline=soon())["status"] == "exists"


def test_one_connection_carries_every_call(client: DoorClient, tag: str) -> None:
    connection = http.Connection(client._origin)
    with DoorClient(client._origin, client._DoorClient__token, connection=connection) as reusing:  # type: ignore[attr-defined]
        reusing.healthz(deadline=soon())
        first = connection._sock
        for _ in range(3):
            reusing.search("anything at all", tag, deadline=soon())
        assert first is not None and connection._sock is first


def test_an_unknown_token_is_http_401_and_the_token_never_shows(door: DoorProcess, tag: str) -> None:
    token = "bli_not-a-real-token-0123456789"
    with DoorClient(door.url, token) as stranger, pytest.raises(DoorCallError) as caught:
        stranger.search("anything", tag, deadline=soon())
    error = caught.value
    assert (error.reason, error.status, error.code) == ("http_401", 401, "unauthorized")
    assert to_log_reason(error) == "http_401"
    assert token not in f"{error} {error!r} {error.args} {error.message}"
    assert token not in repr(stranger)


def test_forget_without_a_match_is_http_404_no_match(client: DoorClient, tag: str) -> None:
    with client, pytest.raises(DoorCallError) as caught:
        client.forget(tag, query="nothing was ever saved here", deadline=soon())
    assert (caught.value.reason, caught.value.code) == ("http_404", "no_match")


def test_invalid_requests_are_http_400_with_the_doors_code(client: DoorClient, tag: str) -> None:
    with client, pytest.raises(DoorCallError) as caught:
        client.search("q", tag, limit=0, deadline=soon())
    assert (caught.value.reason, caught.value.code) == ("http_400", "invalid_request")
    assert caught.value.message


def test_ids_are_escaped_into_their_path_segment(client: DoorClient) -> None:
    with client, pytest.raises(DoorCallError) as caught:
        client.history("../../healthz", deadline=soon())
    assert caught.value.reason == "http_404"


# -- against stand-ins ------------------------------------------------------------------------------


def answering(
    status_line: bytes, body: bytes, extra: bytes = b""
) -> Callable[[socket.socket, int, StandIn], None]:
    def handler(conn: socket.socket, index: int, server: StandIn) -> None:
        while server.read_request(conn):
            conn.sendall(status_line + b"\r\n" + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body)

    return handler


def test_the_request_carries_bearer_json_and_the_base_path(stand_in: Callable[..., StandIn]) -> None:
    server = stand_in(answering(b"HTTP/1.1 200 OK", b'{"results":[],"searched":["t"]}'))
    with DoorClient(server.url + "/memory/", "bli_secret") as client:
        client.search("wie heißt", "t", limit=3, deadline=soon())
        client.healthz(deadline=soon())
        client.job("a/b c", deadline=soon())
    search, health, job = server.requests
    head, _, body = search.partition(b"\r\n\r\n")
    assert head.startswith(b"POST /memory/api/memory/search HTTP/1.1\r\n")
    assert b"\r\nAuthorization: Bearer bli_secret" in head and b"\r\nContent-Type: application/json" in head
    sent = json.loads(body)
    # the rest of the deadline, less the search's own reserve, may go to the door's question rewrite
    assert 0 <= sent.pop("rewriteBudgetMs") <= 1000 * (DEADLINE_S - REWRITE_RESERVE_S)
    assert sent == {"q": "wie heißt", "containerTag": "t", "limit": 3, "threshold": 0.0}
    assert health.startswith(b"GET /memory/healthz ") and b"Authorization" not in health
    assert job.startswith(b"GET /memory/api/memory/jobs/a%2Fb%20c HTTP/1.1")


@pytest.mark.parametrize(
    ("status_line", "body", "reason", "code", "message"),
    [
        (
            b"HTTP/1.1 500 Internal Server Error",
            b'{"error":"internal","message":"the door\\nfailed"}',
            "http_500",
            "internal",
            "the door failed",
        ),
        (b"HTTP/1.1 502 Bad Gateway", b"<html>proxy</html>", "http_502", None, None),
        (b"HTTP/1.1 302 Found", b"", "http_302", None, None),
        (
            b"HTTP/1.1 200 OK",
            b"<html>not json</html>",
            "bad_response",
            None,
            "the door's answer is not a JSON object",
        ),
        (b"HTTP/1.1 200 OK", b"[1, 2]", "bad_response", None, "the door's answer is not a JSON object"),
        (b"HTTP/1.1 200 OK", b"\xff\xfe", "bad_response", None, "the door's answer is not a JSON object"),
    ],
)
def test_a_door_answering_badly_is_one_closed_reason(
    stand_in: Callable[..., StandIn],
    status_line: bytes,
    body: bytes,
    reason: str,
    code: str | None,
    message: str | None,
) -> None:
    server = stand_in(answering(status_line, body, b"Location: http://127.0.0.1:9/\r\n"))
    with DoorClient(server.url, "bli_secret") as client, pytest.raises(DoorCallError) as caught:
        client.search("q", "t", deadline=soon())
    error = caught.value
    assert (error.reason, error.code, error.message) == (reason, code, message)
    assert to_log_reason(error) == reason
    assert len(server.requests) == 1  # a redirect is never followed


def test_a_hanging_door_is_a_timeout_within_the_deadline(stand_in: Callable[..., StandIn]) -> None:
    server = stand_in(lambda conn, index, srv: srv.stop.wait(30) and None)
    started = time.monotonic()
    with DoorClient(server.url, "bli_secret") as client, pytest.raises(DoorCallError) as caught:
        client.search("q", "t", deadline=soon(SHORT_DEADLINE_S))
    assert caught.value.reason == "timeout"
    assert time.monotonic() - started < SHORT_DEADLINE_S + DEADLINE_MARGIN_S


def test_a_door_that_is_not_there_is_dashboard_unreachable() -> None:
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with (
        DoorClient(f"http://127.0.0.1:{port}", "bli_secret") as client,
        pytest.raises(DoorCallError) as caught,
    ):
        client.healthz(deadline=soon())
    assert to_log_reason(caught.value) == "dashboard_unreachable"


def test_a_token_that_cannot_be_a_header_is_named_without_being_shown(
    stand_in: Callable[..., StandIn],
) -> None:
    server = stand_in(answering(b"HTTP/1.1 200 OK", b"{}"))
    with DoorClient(server.url, "bli_secret\r\nX-Evil: 1") as client, pytest.raises(DoorCallError) as caught:
        client.search("q", "t", deadline=soon())
    assert to_log_reason(caught.value) == "unknown_internal:InvalidToken"
    assert "bli_secret" not in f"{caught.value} {caught.value!r}"
    assert server.requests == []


def test_an_unexpected_failure_is_unknown_internal_never_a_network_reason() -> None:
    class Broken(http.Connection):
        def request(self, *args: object, **kwargs: object) -> http.Response:
            raise LookupError("a bug")

    broken = Broken("http://127.0.0.1:9")
    with (
        DoorClient("http://127.0.0.1:9", "t", connection=broken) as client,
        pytest.raises(LookupError) as caught,
    ):
        client.healthz(deadline=soon())
    assert to_log_reason(caught.value) == "unknown_internal:LookupError"


def test_importing_the_door_client_loads_no_forbidden_module() -> None:
    code = (
        "import sys, bli_memory.door_client; "
        "bad = {'ssl', 'http.client', 'urllib.request', 'email', 'asyncio', 'subprocess', 'logging', "
        "'uuid', 'typing', 'dataclasses', 'argparse', 'mcp'} & set(sys.modules); print(sorted(bad))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout.strip() == "[]"

"""What a web page in a browser could do to a door on loopback: reach it under a rebound name (a foreign
`Host`), call it cross-origin (`Origin`), post a form or `text/plain` body a page may send without a
preflight, or load the interactive docs with their third-party scripts. Each is refused."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers import DoorProcess


def _call(
    door: DoorProcess,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    token: bool = True,
) -> tuple[int, Any]:
    """One request with exactly these headers (http.client sends Host itself unless given one)."""
    host, port = door.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    sent = dict(headers or {})
    if token:
        sent.setdefault("Authorization", f"Bearer {door.token}")
    try:
        connection.putrequest(method, path, skip_host="Host" in sent, skip_accept_encoding=True)
        for name, value in sent.items():
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        payload = response.read()
    finally:
        connection.close()
    try:
        return response.status, json.loads(payload)
    except ValueError:
        return response.status, payload.decode(errors="replace")


def _search_body(tag: str) -> bytes:
    return json.dumps({"q": "anything", "containerTag": tag}).encode()


JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example:{port}", ""])
def test_a_foreign_host_is_refused(door: DoorProcess, tag: str, host: str) -> None:
    port = door.url.rsplit(":", 1)[1]
    headers = {**JSON, "Host": host.format(port=port)}
    status, answer = _call(door, "POST", "/api/memory/search", body=_search_body(tag), headers=headers)
    assert status == 403 and answer["error"] == "host_not_allowed", answer
    status, answer = _call(door, "GET", "/healthz", headers={"Host": host.format(port=port)}, token=False)
    assert status == 403 and set(answer) == {"error", "message"}


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]"])
def test_the_loopback_names_with_the_port_are_answered(door: DoorProcess, tag: str, name: str) -> None:
    port = door.url.rsplit(":", 1)[1]
    headers = {**JSON, "Host": f"{name}:{port}"}
    status, answer = _call(door, "POST", "/api/memory/search", body=_search_body(tag), headers=headers)
    assert status == 200, answer
    status, _ = _call(door, "GET", "/healthz", headers={"Host": f"{name}:1"}, token=False)
    assert status == 403  # the right name on another port is another origin


def test_allowed_host_adds_names(start_door: Callable[..., DoorProcess]) -> None:
    door = start_door(
        "--embedder", "none", "--allowed-host", "door.example", "--allowed-host", "team.example:8443"
    )
    for host, expected in [
        ("door.example", 200),
        ("door.example:443", 200),
        ("team.example:8443", 200),
        ("team.example", 403),
        ("evil.example", 403),
    ]:
        status, _ = _call(door, "GET", "/healthz", headers={"Host": host}, token=False)
        assert status == expected, host


def test_a_cross_origin_request_is_refused(door: DoorProcess, tag: str) -> None:
    own = door.url
    for origin in ("http://evil.example", "null", own.replace("127.0.0.1", "localhost"), own + "0"):
        headers = {**JSON, "Origin": origin}
        status, answer = _call(door, "POST", "/api/memory/search", body=_search_body(tag), headers=headers)
        assert status == 403 and answer["error"] == "cross_origin", (origin, answer)
    status, _ = _call(door, "GET", "/healthz", headers={"Origin": "http://evil.example"}, token=False)
    assert status == 403
    # the door's own origin (a same-origin page) is answered
    status, _ = _call(
        door, "POST", "/api/memory/search", body=_search_body(tag), headers={**JSON, "Origin": own}
    )
    assert status == 200


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin-1",
        "application/jsonp",
    ],
)
def test_a_body_that_is_not_declared_json_is_415(
    door: DoorProcess, tag: str, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    status, answer = _call(door, "POST", "/api/memory/save", body=_search_body(tag), headers=headers)
    assert status == 415 and answer["error"] == "unsupported_media_type", answer
    assert "application/json" in answer["message"]
    status, found = door.post("/api/memory/search", {"q": "anything", "containerTag": tag})
    assert status == 200 and found["results"] == []  # nothing was saved


@pytest.mark.parametrize(
    "content_type", ["application/json", "Application/JSON; charset=utf-8", "application/json;charset=UTF8"]
)
def test_json_with_or_without_charset_is_accepted(door: DoorProcess, tag: str, content_type: str) -> None:
    status, answer = _call(
        door, "POST", "/api/memory/search", body=_search_body(tag), headers={"Content-Type": content_type}
    )
    assert status == 200, answer


def test_no_page_loads_third_party_scripts(door: DoorProcess) -> None:
    for path in ("/docs", "/redoc", "/docs/oauth2-redirect"):
        status, answer = _call(door, "GET", path, token=False)
        assert status == 404 and answer["error"] == "not_found", (path, answer)
    status, schema = _call(door, "GET", "/openapi.json", token=False)
    assert status == 200 and "/api/memory/search" in schema["paths"]
    assert {"403", "415"} <= set(schema["paths"]["/api/memory/search"]["post"]["responses"])

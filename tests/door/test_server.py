"""Misbehaving clients against the real door over loopback: silent sockets, huge or slow headers, a
trickling body, a flood of idle connections. Each test sets short limits through `serve` options, so
it takes seconds, and checks the door still answers a health check afterwards."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tests.helpers import BIN, DoorProcess

DOOR = str(BIN / "bli-memory-door")
#: the headers the API sets on every answer (written out here, so a header dropped from both sides
#: still fails).
SECURITY_HEADER_NAMES = (
    b"content-security-policy",
    b"x-content-type-options",
    b"referrer-policy",
    b"x-frame-options",
)

#: how long a test waits for an answer it expects, at most.
ANSWER_WAIT_S = 10.0
#: a health check must be answered this fast while a misbehaving client holds on (generous: the
#: machine running the tests may be busy; a stalled door takes the whole ANSWER_WAIT_S or more).
HEALTHZ_WAIT_S = 2.0


def _address(door: DoorProcess) -> tuple[str, int]:
    host, port = door.url.removeprefix("http://").split(":")
    return host, int(port)


def _host(door: DoorProcess) -> bytes:
    return door.url.removeprefix("http://").encode()


@contextmanager
def _connect(door: DoorProcess, timeout_s: float = ANSWER_WAIT_S) -> Iterator[socket.socket]:
    with socket.create_connection(_address(door), timeout=timeout_s) as conn:
        yield conn


def _read_until_closed(conn: socket.socket) -> bytes:
    """Everything the door sends until it closes the connection (the socket's timeout bounds it)."""
    answer = b""
    while True:
        try:
            data = conn.recv(65536)
        except ConnectionResetError:
            return answer
        if not data:
            return answer
        answer += data


def _json_body(answer: bytes) -> dict[str, object]:
    parsed: dict[str, object] = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    return parsed


def _header_lines(answer: bytes) -> dict[bytes, bytes]:
    """A raw answer's headers, by lower-case name."""
    head = answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]
    return {name.strip().lower(): value.strip() for name, _, value in (line.partition(b":") for line in head)}


def _assert_security_headers_as_the_api(door: DoorProcess, answer: bytes) -> None:
    """The raw answer carries every security header the API's own answers carry, with equal values."""
    with _connect(door) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: " + _host(door) + b"\r\nConnection: close\r\n\r\n")
        api = _header_lines(_read_until_closed(conn))
    security = {name: api[name] for name in SECURITY_HEADER_NAMES}
    assert {name: _header_lines(answer).get(name) for name in security} == security


def _healthz_s(door: DoorProcess) -> float:
    """Seconds a fresh connection takes to get `/healthz` answered 200 (fails if it is not)."""
    started = time.monotonic()
    status, body = door.get("/healthz", token="")
    assert status == 200 and body["ok"] is True, body
    return time.monotonic() - started


def test_a_connection_that_sends_nothing_is_closed_within_the_idle_timeout(
    start_door: Callable[..., DoorProcess],
) -> None:
    door = start_door("--embedder", "none", "--idle-timeout", "1")
    with _connect(door) as conn:
        started = time.monotonic()
        assert _read_until_closed(conn) == b""  # closed without a word: nothing was asked
        assert time.monotonic() - started < 4.0
    # and between requests on a kept-alive connection
    with _connect(door) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: " + _host(door) + b"\r\n\r\n")
        started = time.monotonic()
        answer = _read_until_closed(conn)
        assert answer.startswith(b"HTTP/1.1 200 ") and time.monotonic() - started < 4.0


def test_oversized_headers_get_431_quickly_and_the_door_stays_responsive(door: DoorProcess) -> None:
    # whole and oversized: answered 431 at once
    with _connect(door) as conn:
        conn.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: " + _host(door) + b"\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n"
        )
        answer = _read_until_closed(conn)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert _json_body(answer)["error"] == "headers_too_large"
    _assert_security_headers_as_the_api(door, answer)
    # unfinished and growing (128 MB would freeze a door whose parser buffers it): cut off early
    sent = 0
    with _connect(door) as conn:
        started = time.monotonic()
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: " + _host(door) + b"\r\nX-Big: ")
        chunk = b"a" * 65536
        try:
            while sent < 64 * 1024 * 1024 and time.monotonic() - started < ANSWER_WAIT_S:
                conn.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the door closed it: what we want
        answer = _read_until_closed(conn)
        elapsed_s = time.monotonic() - started
    assert sent < 8 * 1024 * 1024, f"the door read {sent} bytes of one header"
    assert elapsed_s < 5.0
    assert answer == b"" or answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert _healthz_s(door) < HEALTHZ_WAIT_S


def test_headers_that_trickle_past_the_read_timeout_get_408(start_door: Callable[..., DoorProcess]) -> None:
    door = start_door("--embedder", "none", "--read-timeout", "1")
    with _connect(door) as conn:
        started = time.monotonic()
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: " + _host(door) + b"\r\n")
        answer = b""
        try:
            for _ in range(int(ANSWER_WAIT_S / 0.2)):  # one header byte every 0.2 s, never finished
                conn.sendall(b"X")
                time.sleep(0.2)
                conn.setblocking(False)
                try:
                    answer = conn.recv(65536)
                except BlockingIOError:
                    continue
                finally:
                    conn.setblocking(True)
                break
        except (BrokenPipeError, ConnectionResetError):
            pass
        elapsed_s = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert _json_body(answer)["error"] == "request_timeout"
    assert 0.9 < elapsed_s < 4.0
    _assert_security_headers_as_the_api(door, answer)
    assert _healthz_s(door) < HEALTHZ_WAIT_S


def test_a_body_that_trickles_past_the_read_timeout_gets_408(start_door: Callable[..., DoorProcess]) -> None:
    door = start_door("--embedder", "none", "--read-timeout", "1")
    body = json.dumps({"content": "slow " * 20, "containerTag": "slow"}).encode()
    head = (
        b"POST /api/memory/save HTTP/1.1\r\nHost: "
        + _host(door)
        + b"\r\nAuthorization: Bearer "
        + door.token.encode()
        + b"\r\nContent-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
    )
    answer = b""
    with _connect(door) as conn:
        started = time.monotonic()
        conn.sendall(head + body[:10])
        try:
            for byte in body[10:]:  # a byte every 0.2 s: the whole body would take 20 s
                conn.setblocking(False)
                try:
                    answer = conn.recv(65536)
                    break
                except BlockingIOError:
                    pass
                finally:
                    conn.setblocking(True)
                conn.sendall(bytes([byte]))
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer += _read_until_closed(conn)
        elapsed_s = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b"connection: close" in answer.lower()
    assert _json_body(answer)["error"] == "request_timeout"
    assert 0.9 < elapsed_s < 4.0
    assert door.wait_for_log("POST /api/memory/save 408")
    status, found = door.post("/api/memory/search", {"q": "slow", "containerTag": "slow"})
    assert status == 200 and found["results"] == []  # nothing half-saved


def test_a_request_that_is_not_http_gets_a_json_400_with_the_security_headers(door: DoorProcess) -> None:
    with _connect(door) as conn:
        conn.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
        answer = _read_until_closed(conn)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert _json_body(answer)["error"] == "bad_request"
    _assert_security_headers_as_the_api(door, answer)
    assert _healthz_s(door) < HEALTHZ_WAIT_S


def _open_descriptors(door: DoorProcess) -> int:
    assert door.process is not None
    return len(os.listdir(f"/proc/{door.process.pid}/fd"))


def test_a_flood_of_idle_connections_cannot_exhaust_descriptors_or_block_healthz(
    start_door: Callable[..., DoorProcess],
) -> None:
    cap = 20
    door = start_door("--embedder", "none", "--max-connections", str(cap), "--idle-timeout", "60")
    assert _healthz_s(door) < HEALTHZ_WAIT_S
    baseline = _open_descriptors(door)
    with ExitStack() as stack:
        for number in range(3 * cap):
            conn = stack.enter_context(_connect(door))
            if number % 2:  # half of them also start a request they never finish
                conn.sendall(b"GET /healthz HTTP/1.1\r\n")
        time.sleep(0.3)  # let the door accept every one of them
        assert _open_descriptors(door) <= baseline + cap + 2
        for _ in range(5):
            assert _healthz_s(door) < HEALTHZ_WAIT_S


def test_when_every_connection_is_busy_a_newcomer_gets_503(start_door: Callable[..., DoorProcess]) -> None:
    cap = 20
    door = start_door("--embedder", "none", "--max-connections", str(cap), "--read-timeout", "30")
    head = (
        b"POST /api/memory/search HTTP/1.1\r\nHost: "
        + _host(door)
        + b"\r\nAuthorization: Bearer "
        + door.token.encode()
        + b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    )
    with ExitStack() as stack:
        for _ in range(cap):  # each is mid-body: the door is waiting on all of them
            stack.enter_context(_connect(door)).sendall(head)
        time.sleep(1.0)  # let the door read every head and start waiting on every body
        with _connect(door) as conn:
            answer = _read_until_closed(conn)
        assert answer.startswith(b"HTTP/1.1 503 "), answer[:200]
        assert _json_body(answer)["error"] == "busy"
    _assert_security_headers_as_the_api(door, answer)
    # the busy ones are gone: room again
    deadline = time.monotonic() + ANSWER_WAIT_S
    while True:
        status, _ = door.get("/healthz", token="")
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert status == 200


def test_normal_calls_are_untouched_by_the_limits(start_door: Callable[..., DoorProcess]) -> None:
    """Many requests on one kept-alive connection, and a body near the 1 MiB cap sent in pieces,
    pass under short limits."""
    door = start_door("--embedder", "none", "--read-timeout", "2", "--max-connections", "5")
    import http.client

    host, port = _address(door)
    connection = http.client.HTTPConnection(host, port, timeout=ANSWER_WAIT_S)
    headers = {"Authorization": f"Bearer {door.token}", "Content-Type": "application/json"}
    for number in range(50):
        body = json.dumps({"content": f"note {number}", "containerTag": "calm"})
        connection.request("POST", "/api/memory/save", body=body, headers=headers)
        response = connection.getresponse()
        assert response.status == 201, response.read()
        response.read()
    big = json.dumps({"content": "y" * 90_000, "containerTag": "calm"}).encode()
    connection.putrequest("POST", "/api/memory/save")
    for name, value in {**headers, "Content-Length": str(len(big))}.items():
        connection.putheader(name, value)
    connection.endheaders()
    for start in range(0, len(big), 16_384):
        connection.send(big[start : start + 16_384])
        time.sleep(0.01)
    response = connection.getresponse()
    assert response.status == 201, response.read()
    connection.close()
    answered: list[float] = []
    threads = [threading.Thread(target=lambda: answered.append(_healthz_s(door))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(ANSWER_WAIT_S)
    assert len(answered) == 4


def test_serve_help_names_each_limit_and_its_default(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run([DOOR, "serve", "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    for option, default in [
        ("--max-connections", "default 200"),
        ("--idle-timeout", "default 5"),
        ("--read-timeout", "default 20"),
        ("--max-header-bytes", "default 32768"),
        ("--allowed-host", "localhost"),
    ]:
        assert option in text and default in text.split(option, 2)[-1], option
    done = subprocess.run(
        [DOOR, "serve", "--idle-timeout", "0", "--db", str(tmp_path / "m.db")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2 and "must be more than 0" in done.stderr and "Traceback" not in done.stderr

"""The HTTP/1.1 client: the pure parser driven with bytes, then the socket layer against stand-ins.

The stand-ins are threads on 127.0.0.1 playing a door that misbehaves on demand (hangs, resets,
answers garbage or 500, sends an endless body, redirects, trickles past the deadline). The real door
is exercised through the typed client in test_door_client.py.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bli_memory.wire import http
from bli_memory.wire.http import (
    BadResponse,
    Connection,
    Response,
    ResponseParser,
    Unreachable,
    WireTimeout,
    encode_request,
    parse_url,
)
from bli_memory.wire.reasons import to_log_reason
from tests.client.helpers import DEADLINE_MARGIN_S, SHORT_DEADLINE_S, StandIn

# A self-signed certificate for 127.0.0.1 / localhost, valid 2000..2999, so https is tested offline.
TEST_CERT_PEM = """-----BEGIN CERTIFICATE-----
MIIBaDCCAQ2gAwIBAgIUTDUu07gTLKJXXSnYGxPaxvfbVpAwCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPYmxpLW1lbW9yeSB0ZXN0MCAXDTAwMDEwMTAwMDAwMFoYDzI5
OTkwMTAxMDAwMDAwWjAaMRgwFgYDVQQDDA9ibGktbWVtb3J5IHRlc3QwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAAQf5j4d5XfG7S+UovKWM9OhD8U14lyFFtzP0max
k8Rt+DhprPYC5H+Z80mHvzDQI/7VIjfMaypQEyP7kO7wyFMHoy8wLTAaBgNVHREE
EzARhwR/AAABgglsb2NhbGhvc3QwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQD
AgNJADBGAiEA6NH402zyX8XYU6agV8kC/140/4Aqj9b2m/ASLl0YRFgCIQD0Ko63
H4Z0AcLpiTghqA3/zywsCPJP1UhNoXQjzZn0ww==
-----END CERTIFICATE-----
"""
TEST_KEY_PEM = """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg1RsEBYRtX0vNTT3l
IJ6r5/FoiJV+JJIA1eOKEiOoiOehRANCAAQf5j4d5XfG7S+UovKWM9OhD8U14lyF
FtzP0maxk8Rt+DhprPYC5H+Z80mHvzDQI/7VIjfMaypQEyP7kO7wyFMH
-----END PRIVATE KEY-----
"""

OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


def ok(body: bytes = b'{"ok":true}', extra: bytes = b"") -> bytes:
    return OK_HEAD + extra + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body


def chunked(chunks: list[bytes], trailers: bytes = b"") -> bytes:
    framed = b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks if c)
    return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + framed + b"0\r\n" + trailers + b"\r\n"


def parse_all(data: bytes, pieces: list[int] | None = None, **options: object) -> tuple[Response, bool]:
    """Feed `data` split at `pieces` (cut points); return the response and keep_alive."""
    parser = ResponseParser(**options)  # type: ignore[arg-type]
    cuts = sorted({p for p in (pieces or []) if 0 < p < len(data)})
    response = None
    start = 0
    for cut in [*cuts, len(data)]:
        response = parser.feed(data[start:cut]) or response
        start = cut
    if response is None:
        response = parser.feed(b"")
    assert response is not None
    return response, parser.keep_alive


# -- the pure parser --------------------------------------------------------------------------------


def test_a_content_length_response_parses_even_one_byte_at_a_time() -> None:
    data = ok(b'{"hits":[]}', extra=b"X-Dup: a\r\nx-dup: b\r\n")
    response, keep_alive = parse_all(data, list(range(len(data))))
    assert (response.status, response.body) == (200, b'{"hits":[]}')
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-dup"] == "a, b"
    assert keep_alive


def test_a_chunked_body_with_extensions_and_trailers_is_reassembled() -> None:
    data = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"4;name=value\r\nabcd\r\n"
        b"A\r\n0123456789\r\n"
        b"0\r\nX-Trailer: yes\r\n\r\n"
    )
    response, keep_alive = parse_all(data)
    assert response.body == b"abcd0123456789"
    assert keep_alive


@settings(max_examples=200, deadline=None)
@given(
    chunks=st.lists(st.binary(min_size=0, max_size=300), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=5000), max_size=20),
    trailers=st.sampled_from([b"", b"X-A: 1\r\n", b"X-A: 1\r\nX-B: 2\r\n"]),
)
def test_chunked_framing_split_at_arbitrary_points_gives_the_same_body(
    chunks: list[bytes], cuts: list[int], trailers: bytes
) -> None:
    response, keep_alive = parse_all(chunked(chunks, trailers), cuts)
    assert response.body == b"".join(chunks)
    assert keep_alive


@settings(max_examples=100, deadline=None)
@given(body=st.binary(max_size=2000), cuts=st.lists(st.integers(min_value=0, max_value=2200), max_size=10))
def test_content_length_framing_split_at_arbitrary_points_gives_the_same_body(
    body: bytes, cuts: list[int]
) -> None:
    response, _ = parse_all(ok(body), cuts)
    assert response.body == body


def test_a_body_without_framing_runs_until_the_peer_closes_and_is_not_reused() -> None:
    parser = ResponseParser()
    assert parser.feed(b"HTTP/1.1 200 OK\r\n\r\nsome ") is None
    assert parser.feed(b"bytes") is None
    response = parser.feed(b"")
    assert response is not None and response.body == b"some bytes"
    assert not parser.keep_alive


def test_bare_lf_line_ends_are_tolerated() -> None:
    response, _ = parse_all(b"HTTP/1.1 200 OK\nContent-Length: 2\n\nhi")
    assert response.body == b"hi"


@pytest.mark.parametrize(
    ("data", "expect_body", "keep_alive"),
    [
        (b"HTTP/1.1 204 No Content\r\n\r\n", True, True),
        (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n", True, True),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", False, True),  # an answer to HEAD
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", True, False),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", True, False),
        (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", True, True),
    ],
)
def test_responses_without_a_body_and_connection_persistence(
    data: bytes, expect_body: bool, keep_alive: bool
) -> None:
    parser = ResponseParser(expect_body=expect_body)
    response = parser.feed(data)
    assert response is not None and response.body == b""
    assert parser.keep_alive is keep_alive


def test_interim_1xx_answers_are_skipped() -> None:
    response, _ = parse_all(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n" + ok()
    )
    assert response.status == 200 and response.headers.get("link") is None


def test_bytes_after_the_response_make_the_connection_unreusable() -> None:
    parser = ResponseParser()
    assert parser.feed(ok() + b"HTTP/1.1 200 OK\r\n") is not None
    assert not parser.keep_alive


@pytest.mark.parametrize(
    "data",
    [
        b"hello there\r\n\r\n",
        b"HTTP/2 200\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 099 Low\r\n\r\n",
        b"HTTP/1.1 600 High\r\n\r\n",
        b"HTTP/1.1 20x OK\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\nx",
        b"HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY",
    ],
)
def test_garbage_is_a_bad_response(data: bytes) -> None:
    with pytest.raises(BadResponse) as caught:
        ResponseParser().feed(data)
    assert to_log_reason(caught.value) == "bad_response"


def test_a_repeated_identical_content_length_is_accepted() -> None:
    response, _ = parse_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nhi")
    assert response.body == b"hi"


@pytest.mark.parametrize(
    "data",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        b"HTTP/1.1 200 OK\r\nContent-",
    ],
)
def test_a_response_cut_short_by_the_peer_is_a_bad_response(data: bytes) -> None:
    parser = ResponseParser()
    assert parser.feed(data) is None
    with pytest.raises(BadResponse):
        parser.feed(b"")


@pytest.mark.parametrize(
    "data",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 101\r\n\r\n",  # refused from the header, before the body
        chunked([b"x" * 60, b"y" * 60]),
        b"HTTP/1.1 200 OK\r\n\r\n" + b"z" * 101,
    ],
)
def test_a_body_over_the_cap_is_a_bad_response(data: bytes) -> None:
    with pytest.raises(BadResponse, match="over 100 bytes"):
        ResponseParser(max_body_bytes=100).feed(data)


def test_a_head_over_the_cap_is_a_bad_response_even_before_it_ends() -> None:
    parser = ResponseParser(max_header_bytes=1000)
    with pytest.raises(BadResponse):
        parser.feed(b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 2000)


def test_endless_trailers_are_a_bad_response() -> None:
    parser = ResponseParser(max_header_bytes=1000)
    parser.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n")
    with pytest.raises(BadResponse):
        for _ in range(200):
            parser.feed(b"X-T: 1234567890\r\n")


# -- requests and URLs ------------------------------------------------------------------------------


def test_encode_request_frames_the_body_and_keeps_headers() -> None:
    data = encode_request("POST", "/api/x", "127.0.0.1:9", {"Authorization": "Bearer t"}, b"{}")
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /api/x HTTP/1.1"
    assert b"Host: 127.0.0.1:9" in lines and b"Content-Length: 2" in lines
    assert b"Authorization: Bearer t" in lines and body == b"{}"
    assert b"Content-Length: 0" in encode_request("POST", "/x", "h", None, None).split(b"\r\n")
    assert b"Content-Length" not in encode_request("GET", "/x", "h", None, None)


@pytest.mark.parametrize(
    ("method", "target", "headers"),
    [
        ("GET", "/x", {"Authorization": "Bearer bli_secret\r\nX-Evil: 1"}),
        ("GET", "/x", {"Bad Name": "v"}),
        ("GET", "/x", {"Content-Length": "5"}),
        ("GE T", "/x", {}),
        ("GET", "/x y", {}),
        ("GET", "x", {}),
    ],
)
def test_encode_request_refuses_what_would_break_framing_without_echoing_values(
    method: str, target: str, headers: dict[str, str]
) -> None:
    with pytest.raises(ValueError) as caught:
        encode_request(method, target, "h", headers, None)
    assert "bli_secret" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "parts"),
    [
        ("http://127.0.0.1:8765", ("http", "127.0.0.1", 8765, "/")),
        ("HTTPS://door.example/base/?q=1#frag", ("https", "door.example", 443, "/base/?q=1")),
        ("http://[::1]:81/x", ("http", "::1", 81, "/x")),
        ("http://h?q", ("http", "h", 80, "/?q")),
    ],
)
def test_parse_url(url: str, parts: tuple[str, str, int, str]) -> None:
    assert parse_url(url) == parts


@pytest.mark.parametrize(
    "url",
    [
        "ftp://h/",
        "127.0.0.1:80",
        "http://",
        "http://h:0",
        "http://h:99999",
        "http://h:x",
        "http://[::1",
        "http://u:bli_secret@h/",
    ],
)
def test_parse_url_refuses_without_echoing_the_url(url: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_url(url)
    assert "bli_secret" not in str(caught.value)


def test_a_connection_refuses_a_url_of_another_origin() -> None:
    with pytest.raises(ValueError):
        Connection("http://127.0.0.1:9").request("GET", "http://127.0.0.2:9/x", deadline=time.monotonic() + 1)


# -- stand-in servers -------------------------------------------------------------------------------


def in_s(seconds: float) -> float:
    return time.monotonic() + seconds


def timed(call: Callable[[], object]) -> tuple[BaseException | None, float]:
    started = time.monotonic()
    try:
        call()
    except Exception as exc:
        return exc, time.monotonic() - started
    return None, time.monotonic() - started


def reset(conn: socket.socket) -> None:
    """Close with RST instead of FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    conn.close()


def answer_ok(conn: socket.socket, index: int, server: StandIn) -> None:
    while server.read_request(conn):
        conn.sendall(ok())


def test_a_plain_request_gets_its_response(stand_in: Callable[..., StandIn]) -> None:
    server = stand_in(answer_ok)
    response = http.request("POST", server.url + "/api/x", body=b"{}", headers={"X-A": "1"}, deadline=in_s(5))
    assert (response.status, response.body) == (200, b'{"ok":true}')
    assert server.requests[0].startswith(b"POST /api/x HTTP/1.1\r\n")
    assert server.requests[0].endswith(b"\r\n\r\n{}")


def test_keep_alive_reuses_one_connection(stand_in: Callable[..., StandIn]) -> None:
    server = stand_in(answer_ok)
    with Connection(server.url) as connection:
        for _ in range(5):
            assert connection.request("GET", "/healthz", deadline=in_s(5)).status == 200
    assert server.connections == 1 and len(server.requests) == 5


def test_connection_close_from_the_door_is_honoured(stand_in: Callable[..., StandIn]) -> None:
    def once_then_close(conn: socket.socket, index: int, server: StandIn) -> None:
        server.read_request(conn)
        conn.sendall(ok(extra=b"Connection: close\r\n"))

    server = stand_in(once_then_close)
    with Connection(server.url) as connection:
        for _ in range(3):
            assert connection.request("GET", "/", deadline=in_s(5)).status == 200
    assert server.connections == 3


def test_an_idle_connection_the_door_closed_is_replaced_before_sending(
    stand_in: Callable[..., StandIn],
) -> None:
    def one_request_per_connection(conn: socket.socket, index: int, server: StandIn) -> None:
        server.read_request(conn)
        conn.sendall(ok())  # says keep-alive, then closes anyway (an idle timeout on the door)

    server = stand_in(one_request_per_connection)
    with Connection(server.url) as connection:
        assert connection.request("GET", "/", deadline=in_s(5)).status == 200
        time.sleep(0.1)  # let the FIN arrive
        assert connection.request("GET", "/", deadline=in_s(5)).status == 200
    assert server.connections == 2 and len(server.requests) == 2


def test_a_reused_connection_closed_before_the_answer_is_retried_once(
    stand_in: Callable[..., StandIn],
) -> None:
    def close_on_second_request(conn: socket.socket, index: int, server: StandIn) -> None:
        if index == 0:
            server.read_request(conn)
            conn.sendall(ok())
            server.read_request(conn)  # the second request arrives on the reused connection ...
            return  # ... and the door closes without a byte
        answer_ok(conn, index, server)

    server = stand_in(close_on_second_request)
    with Connection(server.url) as connection:
        assert connection.request("GET", "/first", deadline=in_s(5)).status == 200
        assert connection.request("POST", "/second", body=b"x", deadline=in_s(5)).status == 200
    assert server.connections == 2
    assert [r.split(b" ")[1] for r in server.requests] == [b"/first", b"/second", b"/second"]


def test_the_retry_happens_once_only(stand_in: Callable[..., StandIn]) -> None:
    def always_close_after_first(conn: socket.socket, index: int, server: StandIn) -> None:
        server.read_request(conn)
        if index == 0:
            conn.sendall(ok())
            server.read_request(conn)

    server = stand_in(always_close_after_first)
    with Connection(server.url) as connection:
        connection.request("GET", "/", deadline=in_s(5))
        with pytest.raises(Unreachable):
            connection.request("GET", "/", deadline=in_s(5))
    assert server.connections == 2


def test_a_fresh_connection_closed_before_the_answer_is_not_retried(stand_in: Callable[..., StandIn]) -> None:
    server = stand_in(lambda conn, index, srv: srv.read_request(conn) and None)
    error, _ = timed(lambda: http.request("GET", server.url + "/", deadline=in_s(5)))
    assert isinstance(error, Unreachable) and to_log_reason(error) == "dashboard_unreachable"
    assert server.connections == 1


def test_a_door_that_hangs_after_the_request_times_out_at_the_deadline(
    stand_in: Callable[..., StandIn],
) -> None:
    def hang(conn: socket.socket, index: int, server: StandIn) -> None:
        server.read_request(conn)
        server.stop.wait(30)

    server = stand_in(hang)
    error, elapsed = timed(lambda: http.request("GET", server.url + "/", deadline=in_s(SHORT_DEADLINE_S)))
    assert isinstance(error, WireTimeout) and to_log_reason(error) == "timeout"
    assert SHORT_DEADLINE_S - 0.05 <= elapsed < SHORT_DEADLINE_S + DEADLINE_MARGIN_S


def test_a_door_that_never_accepts_times_out_in_connect() -> None:
    """A listener that never accepts, with its one-slot queue full: the SYN goes unanswered."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    filler = socket.create_connection(listener.getsockname())
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
        error, elapsed = timed(lambda: http.request("GET", url, deadline=in_s(SHORT_DEADLINE_S)))
    finally:
        filler.close()
        listener.close()
    assert isinstance(error, WireTimeout)
    assert elapsed < SHORT_DEADLINE_S + DEADLINE_MARGIN_S


def test_a_deadline_already_past_is_a_timeout_without_touching_the_network() -> None:
    error, _ = timed(lambda: http.request("GET", "http://127.0.0.1:9/", deadline=time.monotonic() - 1))
    assert isinstance(error, WireTimeout)


def test_a_refused_port_is_unreachable() -> None:
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    error, _ = timed(lambda: http.request("GET", f"http://127.0.0.1:{port}/", deadline=in_s(5)))
    assert isinstance(error, Unreachable) and to_log_reason(error) == "dashboard_unreachable"


def test_an_unresolvable_host_is_unreachable() -> None:
    error, _ = timed(lambda: http.request("GET", "http://no-such-host.invalid/", deadline=in_s(5)))
    assert to_log_reason(error) == "dashboard_unreachable"  # type: ignore[arg-type]


@pytest.mark.parametrize("read_first", [True, False])
def test_a_door_that_resets_is_unreachable(stand_in: Callable[..., StandIn], read_first: bool) -> None:
    def reset_it(conn: socket.socket, index: int, server: StandIn) -> None:
        if read_first:
            server.read_request(conn)
        reset(conn)

    server = stand_in(reset_it)
    error, _ = timed(lambda: http.request("POST", server.url + "/", body=b"x" * 1000, deadline=in_s(5)))
    assert to_log_reason(error) == "dashboard_unreachable"  # type: ignore[arg-type]


def test_a_reset_in_the_middle_of_the_body_is_unreachable(stand_in: Callable[..., StandIn]) -> None:
    def half_then_reset(conn: socket.socket, index: int, server: StandIn) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc")
        time.sleep(0.05)
        reset(conn)

    server = stand_in(half_then_reset)
    error, _ = timed(lambda: http.request("GET", server.url + "/", deadline=in_s(5)))
    assert to_log_reason(error) == "dashboard_unreachable"  # type: ignore[arg-type]


def test_a_door_answering_garbage_is_a_bad_response(stand_in: Callable[..., StandIn]) -> None:
    def garbage(conn: socket.socket, index: int, server: StandIn) -> None:
        server.read_request(conn)
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")

    server = stand_in(garbage)
    error, _ = timed(lambda: http.request("GET", server.url + "/", deadline=in_s(5)))
    assert isinstance(error, BadResponse) and to_log_reason(error) == "bad_response"


def test_a_truncated_body_is_a_bad_response(stand_in: Callable[..., StandIn]) -> None:
    def short(conn: socket.socket, index: int, server: StandIn) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc")

    server = stand_in(short)
    error, _ = timed(lambda: http.request("GET", server.url + "/", deadline=in_s(5)))
    assert isinstance(error, BadResponse)


def test_a_500_is_a_response_not_an_error(stand_in: Callable[..., StandIn]) -> None:
    def fail(conn: socket.socket, index: int, server: StandIn) -> None:
        while server.read_request(conn):
            body = b'{"error":"internal","message":"boom"}'
            conn.sendall(
                b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )

    server = stand_in(fail)
    with Connection(server.url) as connection:
        assert connection.request("GET", "/", deadline=in_s(5)).status == 500
        assert connection.request("GET", "/", deadline=in_s(5)).status == 500  # and the connection lives on
    assert server.connections == 1


def test_a_redirect_is_returned_never_followed(stand_in: Callable[..., StandIn]) -> None:
    def redirect(conn: socket.socket, index: int, server: StandIn) -> None:
        while server.read_request(conn):
            conn.sendall(
                b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:9/elsewhere\r\nContent-Length: 0\r\n\r\n"
            )

    server = stand_in(redirect)
    response = http.request("GET", server.url + "/api/x", deadline=in_s(5))
    assert response.status == 302 and response.headers["location"].endswith("/elsewhere")
    assert len(server.requests) == 1


@pytest.mark.parametrize("framing", ["chunked", "until_close"])
def test_an_endless_body_stops_at_the_size_cap(stand_in: Callable[..., StandIn], framing: str) -> None:
    def endless(conn: socket.socket, index: int, server: StandIn) -> None:
        server.read_request(conn)
        if framing == "chunked":
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            piece = b"4000\r\n" + b"x" * 0x4000 + b"\r\n"
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
            piece = b"x" * 0x4000
        while not server.stop.is_set():
            conn.sendall(piece)

    server = stand_in(endless)
    error, elapsed = timed(
        lambda: http.request("GET", server.url + "/", deadline=in_s(10), max_body_bytes=1024 * 1024)
    )
    assert isinstance(error, BadResponse) and "over 1048576 bytes" in str(error)
    assert elapsed < 5


def test_a_door_trickling_bytes_past_the_deadline_times_out_on_time(stand_in: Callable[..., StandIn]) -> None:
    """Each byte arrives well within a per-read timeout; only an absolute deadline stops this."""

    def trickle(conn: socket.socket, index: int, server: StandIn) -> None:
        server.read_request(conn)
        for byte in ok(b"x" * 1000):
            if server.stop.wait(0.02):
                return
            conn.sendall(bytes([byte]))

    server = stand_in(trickle)
    error, elapsed = timed(lambda: http.request("GET", server.url + "/", deadline=in_s(SHORT_DEADLINE_S)))
    assert isinstance(error, WireTimeout)
    assert SHORT_DEADLINE_S - 0.05 <= elapsed < SHORT_DEADLINE_S + DEADLINE_MARGIN_S


def test_a_connection_that_failed_is_usable_again(stand_in: Callable[..., StandIn]) -> None:
    def first_garbage(conn: socket.socket, index: int, server: StandIn) -> None:
        if index == 0:
            server.read_request(conn)
            conn.sendall(b"nonsense\r\n\r\n")
            return
        answer_ok(conn, index, server)

    server = stand_in(first_garbage)
    with Connection(server.url) as connection:
        with pytest.raises(BadResponse):
            connection.request("GET", "/", deadline=in_s(5))
        assert connection.request("GET", "/", deadline=in_s(5)).status == 200


# -- https ------------------------------------------------------------------------------------------


@pytest.fixture
def tls_server_context(tmp_path: Path) -> ssl.SSLContext:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text(TEST_CERT_PEM)
    key.write_text(TEST_KEY_PEM)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


def test_https_with_keep_alive(stand_in: Callable[..., StandIn], tls_server_context: ssl.SSLContext) -> None:
    server = stand_in(answer_ok, tls=tls_server_context)
    client_context = ssl.create_default_context(cadata=TEST_CERT_PEM)
    with Connection(server.url, tls_context=client_context) as connection:
        for _ in range(3):
            assert connection.request("GET", "/healthz", deadline=in_s(5)).body == b'{"ok":true}'
    assert server.connections == 1


def test_https_idle_connection_closed_by_the_door_is_replaced(
    stand_in: Callable[..., StandIn], tls_server_context: ssl.SSLContext
) -> None:
    def one_request_per_connection(conn: socket.socket, index: int, server: StandIn) -> None:
        server.read_request(conn)
        conn.sendall(ok())
        assert isinstance(conn, ssl.SSLSocket)
        conn.unwrap()  # close_notify, then FIN: the door's idle timeout

    server = stand_in(one_request_per_connection, tls=tls_server_context)
    client_context = ssl.create_default_context(cadata=TEST_CERT_PEM)
    with Connection(server.url, tls_context=client_context) as connection:
        assert connection.request("GET", "/", deadline=in_s(5)).status == 200
        time.sleep(0.1)
        assert connection.request("GET", "/", deadline=in_s(5)).status == 200
    assert server.connections == 2 and len(server.requests) == 2


def test_https_to_an_untrusted_certificate_is_unreachable(
    stand_in: Callable[..., StandIn], tls_server_context: ssl.SSLContext
) -> None:
    server = stand_in(answer_ok, tls=tls_server_context)
    error, _ = timed(lambda: http.request("GET", server.url + "/", deadline=in_s(5)))
    assert isinstance(error, Unreachable)


def test_https_handshake_that_hangs_times_out(stand_in: Callable[..., StandIn]) -> None:
    server = stand_in(lambda conn, index, srv: srv.stop.wait(30) and None)
    url = server.url.replace("http://", "https://") + "/"
    error, elapsed = timed(lambda: http.request("GET", url, deadline=in_s(SHORT_DEADLINE_S)))
    assert isinstance(error, WireTimeout)
    assert elapsed < SHORT_DEADLINE_S + DEADLINE_MARGIN_S


# -- reasons and imports ----------------------------------------------------------------------------


def test_every_wire_error_maps_to_its_reason_and_anything_else_is_unknown_internal() -> None:
    assert to_log_reason(WireTimeout("x")) == "timeout"
    assert to_log_reason(Unreachable("x")) == "dashboard_unreachable"
    assert to_log_reason(BadResponse("x")) == "bad_response"
    assert to_log_reason(KeyError("x")) == "unknown_internal:KeyError"


def test_importing_the_client_stays_cheap_and_never_loads_forbidden_modules() -> None:
    code = (
        "import sys, bli_memory.wire.http, bli_memory.wire.reasons; "
        "bad = {'ssl', 'http.client', 'urllib.request', 'email', 'asyncio', 'subprocess', 'logging', "
        "'uuid', 'typing', 'dataclasses', 'argparse', 'mcp'} & set(sys.modules); print(sorted(bad))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout.strip() == "[]"

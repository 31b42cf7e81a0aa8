"""A small HTTP/1.1 client: absolute deadlines, keep-alive, Content-Length and chunked bodies, a size cap.

Why not ``http.client`` / ``urllib.request``: every hook imports this module, and those pull in
``email``, ``ssl`` and friends on import (tens of milliseconds a run, on every prompt of every session).
They also cannot hold one absolute deadline across connect, send and read: their timeout restarts on
every socket operation, so a door that trickles one byte a second never times out.

Strategy, after h11: the protocol is a pure parser, ``ResponseParser``, that takes bytes and returns a
``Response`` once one is whole; it knows nothing of sockets, so tests drive it with bytes split at any
point. ``Connection`` is the thin socket layer around it. Every failure is raised as a ``WireError``
whose ``reason`` is a member of the closed set in ``wire.reasons``:

- ``timeout``: the absolute deadline (a ``time.monotonic()`` value) passed, in connect, send or read;
- ``dashboard_unreachable``: name resolution, connect, TLS or the socket itself failed (refused,
  reset, closed before the answer began);
- ``bad_response``: bytes arrived that are not one readable HTTP/1.1 response (garbage, a truncated
  body, a body over the cap).

A status is never an error here: a 3xx, 4xx or 5xx is a ``Response`` like any other, and redirects
are never followed (the caller turns a non-2xx into ``http_<status>``).

Imports: only ``socket``, ``time`` and ``contextlib`` (which interpreter start-up loads anyway) at the
top; ``ssl`` lazily, for https only. One ``Connection`` belongs to one thread at a time.
"""

from __future__ import annotations

import contextlib
import socket
import time

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported at run time
    import ssl
    from collections.abc import Mapping

#: the answers we expect are a few KB; a few MB is already far past any legitimate door answer.
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
#: status line + headers (and, separately, chunked trailers) larger than this are not a door talking.
MAX_HEADER_BYTES = 64 * 1024
#: a chunk-size line is a hex number plus optional extensions; longer is garbage.
MAX_CHUNK_LINE_BYTES = 1024
RECV_BYTES = 64 * 1024
USER_AGENT = "bli-memory"

_DEFAULT_PORTS = {"http": 80, "https": 443}
_NO_BODY_STATUSES = frozenset((204, 304))
_TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")


class WireError(Exception):
    """A request did not produce a response; ``reason`` is the closed-set reason for the receipt."""

    reason = "dashboard_unreachable"


class WireTimeout(WireError):
    """The absolute deadline passed before the response was whole."""

    reason = "timeout"


class Unreachable(WireError):
    """The door could not be reached or the connection broke (resolve, connect, TLS, reset)."""

    reason = "dashboard_unreachable"


class BadResponse(WireError):
    """The peer answered with bytes that are not one readable HTTP/1.1 response within the caps."""

    reason = "bad_response"


class InvalidURL(ValueError):
    """The door URL cannot be used. A ValueError for callers that validate input; a hook receipt names
    it `bad_config` (the session file or BLI_MEMORY_DASHBOARD_URL is wrong, not the network)."""

    reason = "bad_config"


class _Stale(Exception):
    """The connection closed before any byte of the response: retryable once on a reused connection."""


class Response:
    """One HTTP response: status, headers (lower-case names, repeats joined by ``", "``), body."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def __repr__(self) -> str:
        return f"Response(status={self.status}, body_bytes={len(self.body)})"


# Parser states.
_HEAD = "head"
_LENGTH = "length"
_CHUNK_SIZE = "chunk_size"
_CHUNK_DATA = "chunk_data"
_CHUNK_END = "chunk_end"
_TRAILERS = "trailers"
_UNTIL_CLOSE = "until_close"
_DONE = "done"


class ResponseParser:
    """Bytes in, one ``Response`` out; no I/O. Raises ``BadResponse`` on anything unreadable.

    Feed every received chunk to ``feed``; feed ``b""`` when the peer closed. ``feed`` returns the
    ``Response`` once it is whole, else None. ``keep_alive`` then says whether the connection may
    carry another request.
    """

    def __init__(
        self,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        expect_body: bool = True,
        max_header_bytes: int = MAX_HEADER_BYTES,
    ) -> None:
        self.max_body_bytes = max_body_bytes
        self.max_header_bytes = max_header_bytes
        self.expect_body = expect_body
        self.bytes_received = 0
        self.keep_alive = False
        self._buf = bytearray()
        self._body = bytearray()
        self._state = _HEAD
        self._remaining = 0
        self._trailer_bytes = 0
        self._status = 0
        self._headers: dict[str, str] = {}
        self._http10 = False
        self._response: Response | None = None

    @property
    def done(self) -> bool:
        return self._response is not None

    def feed(self, data: bytes) -> Response | None:
        """Add received bytes (``b""`` = the peer closed) and return the response once it is whole."""
        if self._response is not None:
            if data:  # bytes nobody asked for: the connection cannot carry another request
                self.keep_alive = False
            return self._response
        if data:
            self.bytes_received += len(data)
            self._buf += data
            self._advance()
        else:
            self._at_eof()
        return self._response

    # -- the state machine -------------------------------------------------------------------------

    def _advance(self) -> None:
        while self._response is None:
            state = self._state
            if state == _HEAD:
                progressed = self._read_head()
            elif state == _LENGTH:
                progressed = self._read_length()
            elif state == _CHUNK_SIZE:
                progressed = self._read_chunk_size()
            elif state == _CHUNK_DATA:
                progressed = self._read_chunk_data()
            elif state == _CHUNK_END:
                progressed = self._read_chunk_end()
            elif state == _TRAILERS:
                progressed = self._read_trailers()
            else:  # _UNTIL_CLOSE
                self._take_body(len(self._buf))
                progressed = False
            if not progressed:
                return

    def _at_eof(self) -> None:
        if self._state == _UNTIL_CLOSE:
            self._finish(keep_alive=False)
            return
        if self._state == _HEAD and not self._buf:
            raise BadResponse("the connection closed before a response")
        raise BadResponse("the connection closed in the middle of the response")

    def _finish(self, *, keep_alive: bool) -> None:
        self.keep_alive = keep_alive and not self._buf
        self._state = _DONE
        self._response = Response(self._status, self._headers, bytes(self._body))
        self._body = bytearray()

    def _take_line(self, limit: int, what: str) -> bytes | None:
        """One line without its CRLF (a bare LF is tolerated), or None when it has not all arrived."""
        end = self._buf.find(b"\n")
        if end < 0:
            if len(self._buf) > limit:
                raise BadResponse(f"{what} longer than {limit} bytes")
            return None
        if end > limit:
            raise BadResponse(f"{what} longer than {limit} bytes")
        line = bytes(self._buf[:end])
        del self._buf[: end + 1]
        return line[:-1] if line.endswith(b"\r") else line

    def _take_body(self, count: int) -> None:
        if len(self._body) + count > self.max_body_bytes:
            raise BadResponse(f"response body over {self.max_body_bytes} bytes")
        self._body += self._buf[:count]
        del self._buf[:count]

    def _read_head(self) -> bool:
        end = _head_end(self._buf)
        if end < 0:
            if len(self._buf) > self.max_header_bytes:
                raise BadResponse(f"response head over {self.max_header_bytes} bytes")
            return False
        if end > self.max_header_bytes:
            raise BadResponse(f"response head over {self.max_header_bytes} bytes")
        head = bytes(self._buf[:end])
        del self._buf[:end]
        lines = [line[:-1] if line.endswith(b"\r") else line for line in head.split(b"\n")]
        status, http10 = _parse_status_line(lines[0])
        headers = _parse_header_lines(lines[1:])
        if 100 <= status < 200:
            if status == 101:
                raise BadResponse("the peer switched protocols unasked")
            return True  # an interim answer (100 Continue, 103 Early Hints): the real one follows
        self._status, self._headers, self._http10 = status, headers, http10
        self._choose_framing()
        return True

    def _choose_framing(self) -> None:
        headers = self._headers
        tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
        persistent = ("keep-alive" in tokens) if self._http10 else ("close" not in tokens)
        if not self.expect_body or self._status in _NO_BODY_STATUSES:
            self._finish(keep_alive=persistent)
            return
        if "transfer-encoding" in headers:
            codings = [c.strip().lower() for c in headers["transfer-encoding"].split(",")]
            if codings != ["chunked"]:
                raise BadResponse("unsupported transfer coding")
            self._state = _CHUNK_SIZE
            self.keep_alive = persistent
            return
        if "content-length" in headers:
            values = {v.strip() for v in headers["content-length"].split(",")}
            value = values.pop() if len(values) == 1 else ""
            if not (value.isascii() and value.isdigit()) or len(value) > 18:
                raise BadResponse("invalid Content-Length")
            length = int(value)
            if length > self.max_body_bytes:
                raise BadResponse(f"response body over {self.max_body_bytes} bytes")
            self._remaining = length
            self.keep_alive = persistent
            if length == 0:
                self._finish(keep_alive=persistent)
            else:
                self._state = _LENGTH
            return
        self._state = _UNTIL_CLOSE

    def _read_length(self) -> bool:
        count = min(self._remaining, len(self._buf))
        self._take_body(count)
        self._remaining -= count
        if self._remaining == 0:
            self._finish(keep_alive=self.keep_alive)
        return False

    def _read_chunk_size(self) -> bool:
        line = self._take_line(MAX_CHUNK_LINE_BYTES, "chunk-size line")
        if line is None:
            return False
        size_text = line.split(b";", 1)[0].strip(b" \t")
        if not size_text or len(size_text) > 15 or any(b not in _HEX_DIGITS for b in size_text):
            raise BadResponse("invalid chunk size")
        size = int(size_text, 16)
        if size == 0:
            self._state = _TRAILERS
            return True
        if len(self._body) + size > self.max_body_bytes:
            raise BadResponse(f"response body over {self.max_body_bytes} bytes")
        self._remaining = size
        self._state = _CHUNK_DATA
        return True

    def _read_chunk_data(self) -> bool:
        count = min(self._remaining, len(self._buf))
        if count == 0:
            return False
        self._take_body(count)
        self._remaining -= count
        if self._remaining == 0:
            self._state = _CHUNK_END
            return True
        return False

    def _read_chunk_end(self) -> bool:
        if self._buf.startswith(b"\r\n"):
            del self._buf[:2]
        elif self._buf.startswith(b"\n"):
            del self._buf[:1]
        elif self._buf in (b"", b"\r"):
            return False
        else:
            raise BadResponse("chunk data not followed by CRLF")
        self._state = _CHUNK_SIZE
        return True

    def _read_trailers(self) -> bool:
        before = len(self._buf)
        line = self._take_line(self.max_header_bytes, "trailer line")
        if line is None:
            return False
        self._trailer_bytes += before - len(self._buf)
        if self._trailer_bytes > self.max_header_bytes:
            raise BadResponse(f"trailers over {self.max_header_bytes} bytes")
        if not line:
            self._finish(keep_alive=self.keep_alive)
            return False
        return True  # trailer fields are read and dropped: the door sends none we need


def _head_end(buf: bytearray) -> int:
    """Index just past the blank line that ends the head, or -1 (CRLF or bare LF line ends)."""
    ends = []
    crlf = buf.find(b"\n\r\n")
    if crlf >= 0:
        ends.append(crlf + 3)
    lf = buf.find(b"\n\n")
    if lf >= 0:
        ends.append(lf + 2)
    return min(ends) if ends else -1


def _parse_status_line(line: bytes) -> tuple[int, bool]:
    """``HTTP/1.1 200 OK`` → (200, False); the bool says HTTP/1.0."""
    parts = line.split(b" ", 2)
    if len(parts) < 2 or parts[0] not in (b"HTTP/1.1", b"HTTP/1.0"):
        raise BadResponse("not an HTTP/1.x status line")
    code = parts[1]
    if len(code) != 3 or not code.isdigit() or not 100 <= int(code) <= 599:
        raise BadResponse("invalid status code")
    return int(code), parts[0] == b"HTTP/1.0"


def _parse_header_lines(lines: list[bytes]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for raw in lines:
        if not raw:
            continue
        if raw[:1] in (b" ", b"\t"):
            raise BadResponse("obsolete folded header line")
        name_bytes, colon, value_bytes = raw.partition(b":")
        name = name_bytes.decode("latin-1")
        if not colon or not name or any(c not in _TOKEN_CHARS for c in name):
            raise BadResponse("invalid header line")
        key = name.lower()
        value = value_bytes.strip(b" \t").decode("latin-1")
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


# -- requests ---------------------------------------------------------------------------------------


def encode_request(
    method: str, target: str, host: str, headers: Mapping[str, str] | None, body: bytes | None
) -> bytes:
    """The bytes of one request. Raises ValueError for a name or value that would break framing.

    The error never repeats a header value: one of them carries the device token.
    """
    if not method or any(c not in _TOKEN_CHARS for c in method):
        raise ValueError("invalid HTTP method")
    if not target.startswith("/") or not target.isascii() or any(c in target for c in " \r\n\t\0"):
        raise ValueError("invalid request target")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", f"User-Agent: {USER_AGENT}"]
    given = set()
    for name, value in (headers or {}).items():
        if not name or any(c not in _TOKEN_CHARS for c in name):
            raise ValueError("invalid header name")
        if any(c in value for c in "\r\n\0"):
            raise ValueError(f"invalid value for header {name}")
        given.add(name.lower())
        lines.append(f"{name}: {value}")
    if "content-length" in given or "transfer-encoding" in given or "host" in given:
        raise ValueError("framing headers are set by the client itself")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    elif method in ("POST", "PUT", "PATCH"):
        lines.append("Content-Length: 0")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + body if body else head


def parse_url(url: str) -> tuple[str, str, int, str]:
    """``https://door.example:8443/base?x`` → ("https", "door.example", 8443, "/base?x").

    Only http and https; no user info (a credential in a URL would end up in logs). The error never
    repeats the URL, for the same reason.
    """
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in _DEFAULT_PORTS:
        raise InvalidURL("door URL must start with http:// or https://")
    cut = len(rest)
    for stop in "/?#":
        index = rest.find(stop)
        if 0 <= index < cut:
            cut = index
    authority, target = rest[:cut], rest[cut:].partition("#")[0]
    if "@" in authority:
        raise InvalidURL("door URL must not carry user info")
    if authority.startswith("["):
        host, bracket, port_part = authority[1:].partition("]")
        if not bracket or (port_part and not port_part.startswith(":")):
            raise InvalidURL("door URL has an invalid IPv6 host")
        port_text = port_part[1:]
    else:
        host, _, port_text = authority.partition(":")
    if not host:
        raise InvalidURL("door URL has no host")
    if port_text:
        if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
            raise InvalidURL("door URL has an invalid port")
        port = int(port_text)
    else:
        port = _DEFAULT_PORTS[scheme]
    if not target.startswith("/"):
        target = "/" + target
    return scheme, host, port, target


def _remaining_s(deadline: float) -> float:
    """Seconds left before the absolute deadline; raises WireTimeout when none are."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise WireTimeout("deadline passed")
    return left


_tls_default: ssl.SSLContext | None = None


def _default_tls_context() -> ssl.SSLContext:
    """The system trust store, built once per process (it costs a few milliseconds)."""
    global _tls_default
    if _tls_default is None:
        import ssl

        _tls_default = ssl.create_default_context()
    return _tls_default


class Connection:
    """A reusable (keep-alive) connection to one origin, e.g. ``Connection("http://127.0.0.1:8765")``.

    ``request`` takes a path (``/api/...``, sent as is) or an absolute URL of the same origin. An idle
    connection the door has closed meanwhile is noticed before sending and replaced; if a reused
    connection still turns out closed before any byte of the response, the request is sent once more
    on a fresh one, within the same deadline. Not thread-safe: one Connection per thread.
    """

    def __init__(self, url: str, *, tls_context: ssl.SSLContext | None = None) -> None:
        self.scheme, self.host, self.port, self.base_path = parse_url(url)
        self._tls_context = tls_context
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = _DEFAULT_PORTS[self.scheme]
        self.host_header = host if self.port == default else f"{host}:{self.port}"
        self.origin = f"{self.scheme}://{self.host_header}"
        self._sock: socket.socket | None = None

    def __repr__(self) -> str:
        return f"Connection({self.origin!r}, open={self._sock is not None})"

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()

    def request(
        self,
        method: str,
        url_or_path: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        deadline: float,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> Response:
        """Send one request and read its whole response before ``deadline`` (absolute monotonic).

        Raises:
            WireTimeout, Unreachable, BadResponse: see the module docstring.
            ValueError: a malformed method, target, header or URL of another origin (a caller bug).
        """
        data = encode_request(method, self._target(url_or_path), self.host_header, headers, body)
        expect_body = method != "HEAD"
        reused = self._sock is not None and self._idle_socket_usable()
        if not reused:
            self.close()
        try:
            try:
                return self._exchange(data, deadline, max_body_bytes, expect_body)
            except _Stale:
                self.close()
                if not reused:
                    raise Unreachable("the connection closed before the response") from None
            try:
                return self._exchange(data, deadline, max_body_bytes, expect_body)
            except _Stale:
                raise Unreachable("the connection closed before the response") from None
        except BaseException:
            self.close()
            raise

    def _target(self, url_or_path: str) -> str:
        if url_or_path.startswith("/"):
            return url_or_path
        scheme, host, port, target = parse_url(url_or_path)
        if (scheme, host, port) != (self.scheme, self.host, self.port):
            raise ValueError("URL is not of this connection's origin")
        return target

    def _idle_socket_usable(self) -> bool:
        """An idle keep-alive socket is usable only if nothing is readable: data or EOF means done."""
        sock = self._sock
        if sock is None:
            return False
        pending = getattr(sock, "pending", None)
        if pending is not None and pending():
            return False
        try:
            sock.setblocking(False)
            # The raw TCP socket, even under TLS: a close_notify, stray bytes or EOF all mean "stale".
            socket.socket.recv(sock, 1, socket.MSG_PEEK)
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            with contextlib.suppress(OSError):
                sock.setblocking(True)
        return False

    def _connect(self, deadline: float) -> socket.socket:
        _remaining_s(deadline)
        try:
            infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        except OSError:
            raise Unreachable("cannot resolve the door's host") from None
        sock: socket.socket | None = None
        for family, kind, proto, _, address in infos:
            candidate = socket.socket(family, kind, proto)
            try:
                candidate.settimeout(_remaining_s(deadline))
                candidate.connect(address)
            except OSError as exc:
                candidate.close()
                if isinstance(exc, TimeoutError):
                    raise WireTimeout("deadline passed while connecting") from None
                continue
            except BaseException:
                candidate.close()
                raise
            sock = candidate
            break
        if sock is None:
            raise Unreachable("cannot connect to the door")
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.scheme == "https":
                sock = self._start_tls(sock, deadline)
        except BaseException:
            sock.close()
            raise
        return sock

    def _start_tls(self, sock: socket.socket, deadline: float) -> socket.socket:
        context = self._tls_context or _default_tls_context()
        sock.settimeout(_remaining_s(deadline))
        try:
            return context.wrap_socket(sock, server_hostname=self.host)
        except TimeoutError:
            raise WireTimeout("deadline passed during the TLS handshake") from None
        except OSError:  # ssl.SSLError included: a door we cannot verify is a door we cannot reach
            raise Unreachable("TLS handshake with the door failed") from None

    def _exchange(self, data: bytes, deadline: float, max_body_bytes: int, expect_body: bool) -> Response:
        """Send, then read one response; a close before any response byte raises _Stale."""
        if self._sock is None:
            self._sock = self._connect(deadline)
        sock = self._sock
        sock.settimeout(_remaining_s(deadline))
        try:
            sock.sendall(data)
        except TimeoutError:
            raise WireTimeout("deadline passed while sending") from None
        except OSError:
            raise _Stale from None
        parser = ResponseParser(max_body_bytes=max_body_bytes, expect_body=expect_body)
        while True:
            sock.settimeout(_remaining_s(deadline))
            try:
                chunk = sock.recv(RECV_BYTES)
            except TimeoutError:
                raise WireTimeout("deadline passed while reading") from None
            except OSError:
                if parser.bytes_received == 0:
                    raise _Stale from None
                raise Unreachable("the connection broke during the response") from None
            if not chunk and parser.bytes_received == 0:
                raise _Stale
            response = parser.feed(chunk)
            if response is not None:
                if not parser.keep_alive:
                    self.close()
                return response


def request(
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    deadline: float,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    tls_context: ssl.SSLContext | None = None,
) -> Response:
    """One request on a fresh connection that is closed afterwards."""
    with Connection(url, tls_context=tls_context) as connection:
        return connection.request(
            method, url, body=body, headers=headers, deadline=deadline, max_body_bytes=max_body_bytes
        )

"""The gate in front of the API, and the request log around it: both plain ASGI wrappers.

`RequestGate` refuses a request before FastAPI reads it — a `Host` that is not one of the door's names
(`AllowedHosts`, `door_hosts`), a foreign `Origin`, a body not declared JSON, over the size cap or too
slow to arrive — counting a body's bytes as they come, where Starlette would read any size into
memory first. `RequestLog` writes one stderr line per request and turns an exception that escaped the
app into a JSON 500. Both answer with the same `{error, message}` shape as the API's handlers.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from bli_memory.door.errors import DoorError, Forbidden, RequestTimeout, TooLarge, UnsupportedMediaType
from bli_memory.door.server import READ_TIMEOUT_S

MAX_BODY_BYTES = 1024 * 1024

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class AllowedHosts:
    """The `Host` values the door answers: `name:port` exactly, or a bare name with any port.

    A web page cannot choose the Host its browser sends, only the name it resolves: checking the Host
    keeps a page whose name was rebound to 127.0.0.1 (DNS rebinding) from reaching a loopback door.
    """

    def __init__(self, hosts: Iterable[str]) -> None:
        self.exact: set[str] = set()
        self.names: set[str] = set()
        self.any = False
        for host in hosts:
            host = host.strip().lower()
            if host == "*":
                self.any = True
            elif _split_host(host)[1]:
                self.exact.add(host)
            elif host:
                self.names.add(host)

    def allows(self, host: str) -> bool:
        host = host.lower()
        return self.any or host in self.exact or _split_host(host)[0] in self.names


def _split_host(host: str) -> tuple[str, str]:
    """`name:port` or `[v6]:port` -> (name, port); the port is "" when absent."""
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            return host, ""
        return host[: end + 1], host[end + 2 :] if host[end + 1 : end + 2] == ":" else ""
    name, colon, port = host.rpartition(":")
    return (name, port) if colon and ":" not in name else (host, "")


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def door_hosts(bind_host: str, port: int, extra: Iterable[str] = ()) -> AllowedHosts:
    """The names a door bound to `bind_host:port` answers by default — that address and the loopback
    names, each with the port — plus `extra` (`name` for any port, `name:port`, or `*` for any)."""
    bound = f"[{bind_host}]" if ":" in bind_host else bind_host
    names = {bound, *LOOPBACK_NAMES} - {"0.0.0.0", "[::]"}
    return AllowedHosts([*(f"{name}:{port}" for name in sorted(names)), *extra])


def _json_media_type(value: bytes) -> bool:
    """`application/json`, optionally with `charset=utf-8` (JSON is UTF-8)."""
    media, _, params = value.decode("latin-1").partition(";")
    if media.strip().lower() != "application/json":
        return False
    for param in params.split(";"):
        name, _, given = param.partition("=")
        if name.strip().lower() == "charset" and given.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return False
    return True


async def _receive_by(receive: Receive, deadline_s: float) -> MutableMapping[str, Any] | None:
    """The next message, or None when it has not come by `deadline_s` (the loop's clock)."""
    remaining_s = deadline_s - asyncio.get_running_loop().time()
    if remaining_s <= 0:
        return None
    try:
        if sys.version_info >= (3, 11):
            async with asyncio.timeout(remaining_s):
                return await receive()
        return await asyncio.wait_for(receive(), remaining_s)
    except asyncio.TimeoutError:
        return None


class RequestGate:
    """Check a request before the API sees it: its `Host` is one of the door's names, an `Origin` (a
    browser's cross-site call) is the door's own, a body is declared JSON, is under `limit` bytes
    (whether it says its length or streams it) and arrives within `read_timeout_s`.

    Starlette would read any size into memory before validation; this counts bytes as they arrive.
    A refusal closes the connection: the rest of an unread body is not wanted.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: AllowedHosts | None = None,
        limit: int = MAX_BODY_BYTES,
        read_timeout_s: float = READ_TIMEOUT_S,
    ) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts
        self.limit = limit
        self.read_timeout_s = read_timeout_s

    def _refusal(self, headers: list[tuple[bytes, bytes]]) -> DoorError | None:
        host = origin = content_type = None
        body = False
        for name, value in headers:
            if name == b"host":
                host = value
            elif name == b"origin":
                origin = value
            elif name == b"content-type":
                content_type = value
            elif name == b"content-length":
                if value.isdigit() and int(value) > self.limit:
                    return TooLarge(f"the body is larger than {self.limit} bytes")
                body = body or value != b"0"
            elif name == b"transfer-encoding":
                body = True
        shown = "" if host is None else host.decode("latin-1").lower()
        if self.allowed_hosts is not None and not self.allowed_hosts.allows(shown):
            return Forbidden(
                "this door does not answer to that Host; start it with --allowed-host for another name"
                if host is not None
                else "the request has no Host header",
                code="host_not_allowed",
            )
        if origin is not None:  # only browsers send one; the door's own page would be same-origin
            scheme, sep, authority = origin.decode("latin-1").lower().partition("://")
            if not sep or scheme not in ("http", "https") or authority != shown:
                return Forbidden("cross-origin requests are refused", code="cross_origin")
        if body and (content_type is None or not _json_media_type(content_type)):
            return UnsupportedMediaType("the body must be JSON, sent as Content-Type: application/json")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope.get("headers", []))
        if refusal is not None:
            await _send_error(send, refusal, close=True)
            return
        deadline_s = asyncio.get_running_loop().time() + self.read_timeout_s
        received = 0
        refused = False

        async def limited_receive() -> MutableMapping[str, Any]:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await _receive_by(receive, deadline_s)
            if message is None:
                refused = True
                seconds = f"{self.read_timeout_s:g}"
                await _send_error(
                    send, RequestTimeout(f"the request body did not arrive within {seconds} s"), close=True
                )
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    # Answer now; whatever the app makes of the cut-off body is dropped below.
                    refused = True
                    await _send_error(
                        send, TooLarge(f"the body is larger than {self.limit} bytes"), close=True
                    )
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: MutableMapping[str, Any]) -> None:
            if not refused:
                await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if not refused:
                raise


async def _send_error(send: Send, error: DoorError, *, close: bool = False) -> None:
    """Answer `error` as `{error, message}` straight on the ASGI channel (no app is involved)."""
    body = json.dumps({"error": error.code, "message": error.message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RequestLog:
    """One stderr line per request: method, route path, status, milliseconds. Never a token or a body."""

    def __init__(self, app: ASGIApp, stream: Any = None) -> None:
        self.app = app
        self.stream = stream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def recording_send(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        started_response = False

        async def guarded_send(message: MutableMapping[str, Any]) -> None:
            nonlocal started_response
            if message["type"] == "http.response.start":
                started_response = True
            await recording_send(message)

        failure = ""
        try:
            await self.app(scope, receive, guarded_send)
        except Exception as exc:
            # Starlette answers 500 through our handler, then re-raises for the server to log a
            # traceback; stop it here: one line, and a JSON 500 if nothing was sent yet.
            failure = f" internal error {type(exc).__name__}"
            if not started_response:
                status = 500
                await _send_error(
                    send, DoorError("the door failed; see its log", code="internal", status=500)
                )
        finally:
            elapsed_ms = (time.perf_counter() - started) * 1000
            stream = self.stream or sys.stderr
            stream.write(
                f"bli-memory-door {scope.get('method', '?')} {_route_of(scope)} {status} {elapsed_ms:.1f}ms{failure}\n"
            )
            stream.flush()


def _route_of(scope: Scope) -> str:
    """The matched route's template (`/api/memory/{memory_id}/history`), never the raw path: a path
    is the caller's text (it could forge log lines or carry a pasted token)."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "(no route)"

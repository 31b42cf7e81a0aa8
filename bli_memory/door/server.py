"""The door's HTTP connections, bounded: uvicorn's httptools protocol with the limits uvicorn lacks.

uvicorn bounds neither the size of a request's headers (httptools buffers them whole, at a cost that
grows with the square of their size) nor the time a client takes to send them, nor how long a fresh
connection may stay silent, nor how many connections are open at once. Each connection here:

- is closed when it stays silent for `idle_timeout_s`, on connect as after a response (keep-alive);
- gets 431 and is closed when its headers pass `max_head_bytes`;
- gets 408 and is closed when its headers take longer than `read_timeout_s`, or when a body is still
  arriving `read_timeout_s` (plus a grace second) after its headers — the API answers that 408
  itself when it is waiting for the body (`api.gate.RequestGate`); this is the backstop for a body nobody
  reads;
- is one of at most `max_connections`: a new connection over the cap closes the connection that has
  been idle (or stuck in its headers) longest, so a flood of idle sockets cannot hold descriptors or
  lock out a health check; when every connection has a request in progress the newcomer gets 503.

A request that arrives whole in one read (every normal call) arms no timer. uvicorn and httptools are
imported only when `serve` builds the protocol, so the CLI's other commands start without them.
"""

from __future__ import annotations

import asyncio
import functools
import http
import json
from dataclasses import dataclass
from typing import Any

from bli_memory.door.api.headers import SECURITY_HEADERS

#: headers beyond this many bytes get 431 (a door request's headers are a few hundred bytes).
MAX_HEAD_BYTES = 32 * 1024
#: a request's headers, and then its body, must each arrive within this many seconds.
READ_TIMEOUT_S = 20.0
#: a connection silent this long (before its first request or between requests) is closed.
IDLE_TIMEOUT_S = 5.0
#: open connections at most; past it the longest-idle one is closed to make room.
MAX_CONNECTIONS = 200
#: the protocol's body backstop waits this much longer than the API's own 408, so the API answers.
BODY_BACKSTOP_GRACE_S = 1.0

_IDLE, _HEAD, _BODY = 0, 1, 2


@dataclass(frozen=True)
class ServerLimits:
    max_head_bytes: int = MAX_HEAD_BYTES
    read_timeout_s: float = READ_TIMEOUT_S
    idle_timeout_s: float = IDLE_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS


def _raw_error(status: int, code: str, message: str) -> bytes:
    """A whole `{error, message}` response that closes the connection, for answers given before the
    API has a request to answer (oversized or slow headers, no room, unparsable HTTP). It carries the
    API's security headers: a browser must get the same protections from every answer of the door."""
    body = json.dumps({"error": code, "message": message}).encode()
    return b"".join(
        [
            f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\n".encode(),
            *(name + b": " + value + b"\r\n" for name, value in SECURITY_HEADERS),
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n",
            b"connection: close\r\n\r\n",
            body,
        ]
    )


def bounded_protocol(limits: ServerLimits) -> type[asyncio.Protocol]:
    """The protocol class for uvicorn's `Config(http=...)`, carrying these limits."""
    return type("BoundedProtocol", (_protocol_class(),), {"limits": limits})


@functools.cache
def _protocol_class() -> type[asyncio.Protocol]:
    import httptools
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class BoundedProtocol(HttpToolsProtocol):
        """uvicorn's httptools protocol with bounded headers, read deadlines, idle closing and a cap."""

        limits = ServerLimits()

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # uvicorn types this int (whole seconds); its timer, call_later, takes any float
            self.timeout_keep_alive = self.limits.idle_timeout_s  # type: ignore[assignment]
            self._phase = _IDLE
            self._phase_started_s = 0.0
            self._head_bytes = 0
            self._refusal: tuple[int, str, str] | None = None
            self._read_timer: asyncio.TimerHandle | None = None
            self._read_timer_phase = _IDLE
            self._last_active_s = 0.0

        # ---------------------------------------------------------------- connections

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._last_active_s = self.loop.time()
            if len(self.connections) > self.limits.max_connections and not self._make_room():
                self.connections.discard(self)  # not counted while it closes
                self._refuse(503, "busy", "the door has no room for another connection; try again shortly")
                return
            # uvicorn arms its keep-alive timer only after a response: a connection that never sends a
            # byte would stay open for good.
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_read_timer()
            super().connection_lost(exc)

        def _make_room(self) -> bool:
            """Close the connection that has waited longest without a request in progress."""
            victim: BoundedProtocol | None = None
            best: tuple[int, float] | None = None
            for connection in self.connections:
                if connection is self or not isinstance(connection, BoundedProtocol):
                    continue
                rank = connection._eviction_rank()
                if rank is not None and (best is None or rank < best):
                    victim, best = connection, rank
            if victim is None:
                return False
            self.connections.discard(victim)  # gone now, so a burst of arrivals does not pick it twice
            victim._cancel_read_timer()
            victim.transport.close()
            return True

        def _eviction_rank(self) -> tuple[int, float] | None:
            """(0, since) for an idle connection, (1, since) for one stuck in its headers or in a body
            nobody reads; None while a request is being served (never closed to make room)."""
            cycle = self.cycle
            if self.transport.is_closing() or not (cycle is None or cycle.response_complete):
                return None
            if self._phase == _IDLE:
                return (0, self._last_active_s)
            return (1, self._phase_started_s)

        # ---------------------------------------------------------------- reading

        def data_received(self, data: bytes) -> None:
            self._unset_keepalive_if_required()
            if self.transport.is_closing():
                return
            self._last_active_s = self.loop.time()
            if self._phase == _IDLE:
                self._begin(_HEAD)
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserUpgrade:
                if self._should_upgrade():  # as uvicorn does; the door serves no WebSocket
                    self.handle_websocket_upgrade()
                else:
                    self._unsupported_upgrade_warning()
                return
            except httptools.HttpParserError:
                if self._refusal is not None:
                    self._refuse(*self._refusal)
                else:
                    self.logger.warning("Invalid HTTP request received.")
                    self._refuse(400, "bad_request", "the request is not valid HTTP")
                return
            if self._phase == _HEAD:
                self._head_bytes += len(data)
                if self._head_bytes > self.limits.max_head_bytes:
                    self._refuse(*self._head_too_large())
                    return
            if self._phase != _IDLE:
                self._arm_read_timer()

        def _begin(self, phase: int) -> None:
            self._phase = phase
            self._phase_started_s = self.loop.time()
            self._head_bytes = 0

        def _head_too_large(self) -> tuple[int, str, str]:
            limit = self.limits.max_head_bytes
            return 431, "headers_too_large", f"the request headers are larger than {limit} bytes"

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._phase != _HEAD:  # a pipelined request right behind the previous one
                self._begin(_HEAD)

        def on_headers_complete(self) -> None:
            size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
            if size > self.limits.max_head_bytes:
                self._refusal = self._head_too_large()
                raise ValueError("headers too large")  # stops the parser; data_received answers
            self._begin(_BODY)
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._phase = _IDLE
            self._cancel_read_timer()

        # ---------------------------------------------------------------- deadlines

        def _arm_read_timer(self) -> None:
            if self._read_timer is not None and self._read_timer_phase == self._phase:
                return
            self._cancel_read_timer()
            delay = self.limits.read_timeout_s
            if self._phase == _BODY:
                delay += BODY_BACKSTOP_GRACE_S
            self._read_timer_phase = self._phase
            self._read_timer = self.loop.call_at(self._phase_started_s + delay, self._read_timed_out)

        def _cancel_read_timer(self) -> None:
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None

        def _read_timed_out(self) -> None:
            self._read_timer = None
            if self.transport.is_closing() or self._phase == _IDLE:
                return
            what = "headers" if self._phase == _HEAD else "body"
            cycle = self.cycle
            if self._phase == _BODY and cycle is not None and cycle.response_started:
                self.transport.close()  # answered already; the rest of the body is not wanted
                return
            seconds = f"{self.limits.read_timeout_s:g}"
            self._refuse(408, "request_timeout", f"the request {what} did not arrive within {seconds} s")

        def _refuse(self, status: int, code: str, message: str) -> None:
            """Answer `{error, message}` before (or instead of) the API, then close the connection."""
            self._cancel_read_timer()
            self._unset_keepalive_if_required()
            if self.transport.is_closing():
                return
            cycle = self.cycle
            busy = cycle is not None and not cycle.response_complete
            if busy:
                cycle.disconnected = True  # whatever the API still sends is dropped
                cycle.message_event.set()
            if not (busy and cycle.response_started):  # never write into the middle of a response
                self.transport.write(_raw_error(status, code, message))
            self.transport.close()

    return BoundedProtocol

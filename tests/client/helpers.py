"""Helpers shared by the client's HTTP tests (tests/client/test_wire_http.py and test_door_client.py): a
loopback stand-in for a door that misbehaves on demand, and the deadlines the tests hold it to."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable

#: slack for a loaded 2-core machine: a deadline must hold within this much.
DEADLINE_MARGIN_S = 0.5
SHORT_DEADLINE_S = 0.4
Handler = Callable[[socket.socket, int, "StandIn"], None]


class StandIn:
    """A TCP listener on 127.0.0.1; each accepted connection runs `handler(conn, index, self)` in a thread."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None, backlog: int = 16) -> None:
        self.handler = handler
        self.tls = tls
        self.stop = threading.Event()
        self.connections = 0
        self.requests: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=backlog)
        self.port = self.listener.getsockname()[1]
        self.scheme = "https" if tls else "http"
        self.url = f"{self.scheme}://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn, self.connections - 1), daemon=True).start()

    def _serve(self, conn: socket.socket, index: int) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            self.handler(conn, index, self)
        except OSError:
            pass
        finally:
            conn.close()

    def read_request(self, conn: socket.socket) -> bytes:
        """One whole request (head + Content-Length body), or b"" if the client closed."""
        data = b""
        while b"\r\n\r\n" not in data:
            piece = conn.recv(65536)
            if not piece:
                return b""
            data += piece
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            body += conn.recv(65536)
        self.requests.append(head + b"\r\n\r\n" + body)
        return head

    def close(self) -> None:
        self.stop.set()
        self.listener.close()

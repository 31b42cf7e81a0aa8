"""Read the host's JSON payload from stdin under a hard deadline and a size cap.

Why not `sys.stdin.read()`: a host that never closes the pipe (or a person who runs the hook in a
terminal) would hold the hook forever, and a runaway payload would be read whole into memory. Here
the read is `select` + `os.read` on the raw file descriptor, against an absolute `time.monotonic()`
deadline, and it stops at `max_bytes`. Each way it can fail is its own reason literal, so a
receipt says what happened: a malformed payload never touched the network, so it is never called
`bad_response`.

A host that writes a whole JSON object and then keeps the pipe open is still served: when the pipe
goes quiet for `QUIET_S` and what arrived parses as an object, the read ends there.
"""

from __future__ import annotations

import os
import select
import time

from bli_memory.wire import tinyjson

#: Claude Code and Codex payloads are a few KB; a Stop payload carries the last assistant message,
#: which can be long. Anything past this is not a payload we should be parsing on every turn.
STDIN_MAX_BYTES = 4 * 1024 * 1024
READ_CHUNK_BYTES = 64 * 1024
#: After a pause this long with a complete-looking object in hand, stop waiting for EOF.
QUIET_S = 0.05


class StdinFailure(Exception):
    """The payload could not be read; `reason` is one of the six stdin reasons of wire/reasons.py."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _parse(raw: bytes) -> dict[str, object]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise StdinFailure("stdin_unreadable") from None
    if not text.strip():
        raise StdinFailure("stdin_empty")
    try:
        data = tinyjson.loads(text)
    except ValueError:
        raise StdinFailure("stdin_malformed") from None
    if not isinstance(data, dict):
        raise StdinFailure("stdin_malformed")
    return data


def _complete_object(raw: bytes) -> dict[str, object] | None:
    """The payload if `raw` already holds one whole JSON object, else None (cheap pre-check first)."""
    if not raw.rstrip().endswith(b"}"):
        return None
    try:
        return _parse(raw)
    except StdinFailure:
        return None


def read_payload(fd: int, deadline: float, *, max_bytes: int = STDIN_MAX_BYTES) -> dict[str, object]:
    """The JSON object on `fd`, read until EOF, the absolute `deadline`, or `max_bytes`.

    Raises StdinFailure with reason no_stdin (no usable fd, or a terminal), stdin_timeout,
    stdin_too_large, stdin_unreadable (a read error or not UTF-8), stdin_empty or stdin_malformed.
    """
    now = time.monotonic
    try:
        if os.isatty(fd):
            raise StdinFailure("no_stdin")
        os.fstat(fd)
    except OSError:
        raise StdinFailure("no_stdin") from None
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining_s = deadline - now()
        if remaining_s <= 0:
            return _on_deadline(b"".join(chunks))
        wait_s = min(remaining_s, QUIET_S) if chunks else remaining_s
        try:
            ready, _, _ = select.select([fd], [], [], wait_s)
        except (OSError, ValueError):
            raise StdinFailure("stdin_unreadable") from None
        if not ready:
            if chunks:
                payload = _complete_object(b"".join(chunks))
                if payload is not None:
                    return payload
            continue
        try:
            chunk = os.read(fd, READ_CHUNK_BYTES)
        except OSError:
            raise StdinFailure("stdin_unreadable") from None
        if not chunk:
            return _parse(b"".join(chunks))
        size += len(chunk)
        if size > max_bytes:
            raise StdinFailure("stdin_too_large")
        chunks.append(chunk)


def _on_deadline(raw: bytes) -> dict[str, object]:
    payload = _complete_object(raw) if raw else None
    if payload is None:
        raise StdinFailure("stdin_timeout")
    return payload

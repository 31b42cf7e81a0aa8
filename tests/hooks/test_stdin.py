"""The hooks' stdin reader (`hooks/stdin.py`) on real pipes: a whole object, each failure its own reason,
the size cap and the deadline."""

from __future__ import annotations

import contextlib
import os
import threading
import time

import pytest

from bli_memory.hooks.stdin import StdinFailure, read_payload
from bli_memory.wire.reasons import is_known_reason


def _pipe_with(data: bytes, close: bool = True) -> tuple[int, int]:
    read_fd, write_fd = os.pipe()
    if data:
        threading.Thread(target=lambda: _write_and_close(write_fd, data, close), daemon=True).start()
    elif close:
        os.close(write_fd)
    return read_fd, write_fd


def _write_and_close(fd: int, data: bytes, close: bool) -> None:
    with contextlib.suppress(BrokenPipeError), open(fd, "wb", closefd=close) as handle:
        handle.write(data)
        handle.flush()


def test_stdin_reads_a_whole_object() -> None:
    read_fd, _ = _pipe_with(b'{"prompt": "hello"}')
    assert read_payload(read_fd, time.monotonic() + 2) == {"prompt": "hello"}
    os.close(read_fd)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "stdin_empty"),
        (b"  \n", "stdin_empty"),
        (b"{not json", "stdin_malformed"),
        (b"[1, 2]", "stdin_malformed"),
        (b'{"a": "\xff\xfe"}', "stdin_unreadable"),
    ],
)
def test_stdin_failures_are_their_own_reasons(data: bytes, reason: str) -> None:
    read_fd, _ = _pipe_with(data)
    with pytest.raises(StdinFailure) as caught:
        read_payload(read_fd, time.monotonic() + 2)
    assert caught.value.reason == reason and is_known_reason(reason)
    os.close(read_fd)


def test_stdin_past_the_size_cap_is_too_large() -> None:
    read_fd, _ = _pipe_with(b'{"prompt": "' + b"x" * 300_000 + b'"}')
    with pytest.raises(StdinFailure) as caught:
        read_payload(read_fd, time.monotonic() + 5, max_bytes=100_000)
    assert caught.value.reason == "stdin_too_large"
    os.close(read_fd)


def test_a_pipe_that_never_closes_nor_speaks_times_out_on_the_deadline() -> None:
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    with pytest.raises(StdinFailure) as caught:
        read_payload(read_fd, started + 0.3)
    elapsed = time.monotonic() - started
    assert caught.value.reason == "stdin_timeout"
    assert 0.28 <= elapsed < 0.6
    os.close(read_fd)
    os.close(write_fd)


def test_a_whole_object_on_a_pipe_left_open_is_served_without_waiting_for_eof() -> None:
    read_fd, write_fd = _pipe_with(b'{"prompt": "hello"}', close=False)
    started = time.monotonic()
    assert read_payload(read_fd, started + 2) == {"prompt": "hello"}
    assert time.monotonic() - started < 0.5
    os.close(read_fd)
    os.close(write_fd)


def test_a_closed_stdin_is_no_stdin() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    os.close(write_fd)
    with pytest.raises(StdinFailure) as caught:
        read_payload(read_fd, time.monotonic() + 1)
    assert caught.value.reason == "no_stdin"

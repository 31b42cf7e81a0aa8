"""Hooks hold their deadlines on hostile inputs: a prompt of megabytes, a transcript path that is a FIFO,
a device or a directory.

The hooks run as real subprocesses against the real door, and their receipts must show they finished
well inside their own deadlines. The pure parts they rely on are timed in CPU seconds next to their
modules' other tests (tests/hooks/test_trivial.py, tests/client/test_tinyjson.py, tests/hooks/test_transcript.py).
"""

from __future__ import annotations

import json
import os
import random
import threading
from pathlib import Path
from typing import Any

import pytest

from bli_memory.hooks.run import DEADLINE_S
from bli_memory.hooks.stdin import STDIN_MAX_BYTES
from tests.hooks.helpers import BIG_CHARS, PROMPT, STOP, code_prompt, paired, run_hook, unblock_fifo_reader

#: a hook returns this long after it starts when nothing blocks it (interpreter start on a busy machine)
PROMPT_RETURNS_WITHIN_S = 3.0
STOP_RETURNS_WITHIN_S = 3.0


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


# -- the trivial-prompt rule ---------------------------------------------------------------------


# -- tinyjson on megabytes -------------------------------------------------------------------------


# -- transcript paths that are no regular file ---------------------------------------------------------


# -- the real hooks ------------------------------------------------------------------------------


def _prompt_payload() -> bytes:
    """A prompt hook payload as large as the stdin cap allows: megabytes of pasted code."""
    prompt = code_prompt(BIG_CHARS)
    data = json.dumps({**PROMPT, "prompt": prompt}).encode()
    while len(data) > STDIN_MAX_BYTES:
        prompt = prompt[: len(prompt) - (len(data) - STDIN_MAX_BYTES) - 64]
        data = json.dumps({**PROMPT, "prompt": prompt}).encode()
    assert len(data) > 0.9 * STDIN_MAX_BYTES
    return data


def test_a_4_mb_prompt_is_answered_well_inside_the_prompt_deadline(home: Path, door: Any, tag: str) -> None:
    run = run_hook("prompt", _prompt_payload(), home, env=paired(home, door, tag))
    assert run.returncode == 0
    hook, status, fields = run.receipt()
    assert (hook, status) == ("prompt", "ok"), run.stderr
    assert fields["deadline_ms"] == int(DEADLINE_S["prompt"] * 1000)
    assert int(str(fields["elapsed_ms"])) < 0.75 * int(str(fields["deadline_ms"])), fields
    assert run.elapsed_s < PROMPT_RETURNS_WITHIN_S


def _special_path(kind: str, tmp_path: Path) -> str:
    if kind == "fifo":
        fifo = tmp_path / "transcript.jsonl"
        os.mkfifo(fifo)
        return str(fifo)
    return str(tmp_path) if kind == "directory" else "/dev/zero"


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_stop_with_a_transcript_path_that_is_no_file_saves_the_reply_at_once(
    kind: str, home: Path, door: Any, tag: str, tmp_path: Path
) -> None:
    path = _special_path(kind, tmp_path)
    needle = f"reply{random.Random(kind).randrange(10**9)}"
    payload = {**STOP, "transcript_path": path, "last_assistant_message": f"We decided {needle} ships."}
    unblock = threading.Timer(STOP_RETURNS_WITHIN_S + 1.0, unblock_fifo_reader, args=(Path(path),))
    if kind == "fifo":
        unblock.start()  # a hook stuck opening the FIFO is let go after the bound (then fails it)
    try:
        run = run_hook("stop", payload, home, env=paired(home, door, tag))
    finally:
        unblock.cancel()
    assert run.returncode == 0
    hook, status, fields = run.receipt()
    assert (hook, status, fields.get("queued")) == ("stop", "ok", True), run.stderr
    assert run.elapsed_s < STOP_RETURNS_WITHIN_S
    assert int(str(fields["elapsed_ms"])) < STOP_RETURNS_WITHIN_S * 1000

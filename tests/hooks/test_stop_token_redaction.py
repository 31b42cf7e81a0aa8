"""The Stop hook never saves one of the door's own device tokens into shared memory.

A reply that quotes a freshly paired token ("her new device token is bli_…") goes through the real
Stop hook (a subprocess with a temporary HOME, paired to the real door); the door must not hold the
token anywhere afterwards: not in the search results, not in any column of any table of its SQLite
file, not even as a 16-character piece.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from bli_memory.door.model import TOKEN_PREFIX
from tests.hooks.helpers import STOP, job_done, paired, run_hook

WINDOW_CHARS = 16


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def _pieces(token: str) -> list[str]:
    """The token's material after its prefix, as every 16-character window."""
    body = token[len(TOKEN_PREFIX) :]
    return [body[i : i + WINDOW_CHARS] for i in range(len(body) - WINDOW_CHARS + 1)]


def _stored_texts(db: Path) -> list[str]:
    """Every text and blob value of every table of the door's database (read-only, WAL included)."""
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        values: list[str] = []
        for table in tables:
            for row in connection.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, str):
                        values.append(value)
                    elif isinstance(value, bytes):
                        values.append(value.decode("utf-8", "replace"))
        return values
    finally:
        connection.close()


def _finished_job(db: Path, tag: str, timeout_s: float = 30.0) -> tuple[str, str]:
    """(status, content) of the space's extraction job once the door's worker has finished it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        try:
            row = connection.execute(
                "SELECT status, content FROM memory_extract_jobs WHERE container_tag = ?", (tag,)
            ).fetchone()
        finally:
            connection.close()
        if row is not None and row[0] in ("done", "failed"):
            return str(row[0]), str(row[1])
        time.sleep(0.2)
    raise AssertionError(f"no finished extraction job in {tag}")


def test_a_reply_quoting_a_fresh_device_token_never_reaches_the_door(home: Path, door: Any, tag: str) -> None:
    token = door.pair(f"maria-{uuid.uuid4().hex[:8]}", team="local", admin=True)
    assert token.startswith(TOKEN_PREFIX)
    status, _ = door.post("/api/memory/search", {"q": "anything", "containerTag": tag}, token=token)
    assert status == 200  # a live admin token: exactly what must never be shared
    needle = f"laptop{uuid.uuid4().hex[:10]}"
    transcript = home / "session.jsonl"
    transcript.write_text(
        '{"type": "user", "message": {"role": "user", "content": "Pair the '
        + needle
        + ' laptop for Maria."}}\n'
    )
    reply = (
        f"We decided that the {needle} laptop logs in with the admin device token {token} from now on. "
        f"Maria runs `printf %s {token} | bli-memory-mcp login --token-stdin` once."
    )
    payload = {**STOP, "transcript_path": str(transcript), "last_assistant_message": reply}

    run = run_hook("stop", payload, home, env=paired(home, door, tag))

    hook, status_word, fields = run.receipt()
    assert (hook, status_word) == ("stop", "ok"), run.stderr
    assert int(str(fields["masked"])) >= 2
    job_status, job_content = _finished_job(door.db, tag)
    assert job_status == "done"
    assert needle in job_content and "bli_[REDACTED:bli_token]" in job_content, job_content
    rows = job_done(door, tag, needle)  # what extraction filed from it, as a teammate's search sees it
    stored = _stored_texts(door.db)
    for piece in _pieces(token):
        assert not any(piece in row["content"] for row in rows)
        assert not any(piece in text for text in stored), "a piece of the token was stored"
        assert piece not in run.stderr and piece not in run.stdout

"""Defects a review found in the door, each pinned by a test: poisoned rows, an embedder that goes down,
forged log lines, cross-space forgets, experience ids across teams, stale autopair sessions, CLI edges."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import sqlite3
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, MutableMapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import BIN, DoorProcess

DOOR = str(BIN / "bli-memory-door")


# ---------------------------------------------------------------------------- poisoned rows


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('{"content": "poison", "containerTag": "%s", "metadata": {"k": "\\ud800"}}', "lone surrogate"),
        ('{"content": "poison \\udfff", "containerTag": "%s"}', "unicode"),
        (
            '{"content": "poison", "containerTag": "%s", "metadata": '
            + "[" * 0
            + '{"a": '
            + "[" * 40
            + "]" * 40
            + "}}",
            "deeper",
        ),
        ('{"content": "poison", "containerTag": "%s", "metadata": {"n": NaN}}', "NaN"),
        (
            '{"content": "poison", "containerTag": "%s", "createdAt": "0001-01-01T00:00:00+14:00"}',
            "before 1970",
        ),
        (
            '{"content": "poison", "containerTag": "%s", "metadata": {"big": "' + "x" * 17000 + '"}}',
            "larger than",
        ),
        ('{"content": "poison", "containerTag": "   "}', "containerTag must not be blank"),
        ('{"content": "poison", "containerTag": "%s", "extract": true, "customId": "k"}', "plain save"),
    ],
)
def test_values_the_door_could_not_send_back_are_refused(
    door: DoorProcess, tag: str, body: str, needle: str
) -> None:
    raw = (body % tag if "%s" in body else body).encode()
    status, answer = door.request("POST", "/api/memory/save", raw=raw)
    assert status == 400 and answer["error"] == "invalid_request", answer
    assert needle in answer["message"]
    status, found = door.post("/api/memory/search", {"q": "poison", "containerTag": tag})
    assert status == 200 and found["results"] == []


def test_created_at_with_an_offset_is_kept(door: DoorProcess, tag: str) -> None:
    status, _ = door.post(
        "/api/memory/save",
        {"content": "offset time", "containerTag": tag, "createdAt": "2024-05-01T12:00:00+02:00"},
    )
    assert status == 201
    status, found = door.post("/api/memory/search", {"q": "offset time", "containerTag": tag})
    assert found["results"][0]["createdAt"] == "2024-05-01T10:00:00.000Z"


# ---------------------------------------------------------------------------- embedder outage


class _Embeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/embeddings whose health the test switches; vectors from word hashes."""

    up = True

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not type(self).up:
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = [{"index": i, "embedding": _vector(text)} for i, text in enumerate(body["input"])]
        payload = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


def _vector(text: str) -> list[float]:
    vector = [0.0] * 16
    for word in text.lower().split():
        vector[hashlib.sha256(word.encode()).digest()[0] % 16] += 1.0
    return vector


@pytest.fixture
def embeddings() -> Iterator[tuple[str, type[_Embeddings]]]:
    handler = type("Embeddings", (_Embeddings,), {"up": True})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()


def test_an_embedder_that_goes_down_degrades_to_keyword_and_comes_back(
    start_door: Callable[..., DoorProcess], embeddings: tuple[str, type[_Embeddings]]
) -> None:
    url, handler = embeddings
    door = start_door(
        "--embedder", "openai", env={"BLI_MEMORY_EMBED_URL": url, "BLI_MEMORY_EMBED_MODEL": "m"}
    )
    status, _ = door.post("/api/memory/save", {"content": "alpha beta gamma", "containerTag": "t"})
    assert status == 201
    handler.up = False
    status, during = door.post("/api/memory/save", {"content": "saved while down delta", "containerTag": "t"})
    assert status == 201
    status, found = door.post("/api/memory/search", {"q": "delta", "containerTag": "t"})
    assert status == 200 and found["results"][0]["id"] == during["id"]
    assert found["results"][0]["similarity"] is None
    status, health = door.get("/healthz", token="")
    assert health["ok"] is True and "503" in health["embedderError"]
    assert (
        len([line for line in door.lines if "serving keyword + recency until it answers again" in line]) == 1
    )
    assert not any("Traceback" in line for line in door.lines)
    handler.up = True
    door.wait_for_log("backfilled vectors", timeout_s=30)
    status, found = door.post("/api/memory/search", {"q": "delta", "containerTag": "t"})
    assert found["results"][0]["similarity"] is not None
    status, health = door.get("/healthz", token="")
    assert "embedderError" not in health


def test_rows_saved_without_a_model_get_vectors_when_one_is_loaded(
    start_door: Callable[..., DoorProcess],
) -> None:
    door = start_door("--embedder", "none")
    status, saved = door.post(
        "/api/memory/save", {"content": "Staging deploys run on every merge", "containerTag": "t"}
    )
    assert status == 201
    door.stop()
    door.extra_args = ["--embedder", "onnx"]
    door.start()
    door.wait_for_log("backfilled vectors", timeout_s=60)
    status, found = door.post(
        "/api/memory/search", {"q": "how do releases reach staging?", "containerTag": "t"}
    )
    assert found["results"][0]["id"] == saved["id"] and found["results"][0]["similarity"] > 0.3
    model = sqlite3.connect(door.db).execute("SELECT embedding_model FROM memories").fetchone()[0]
    assert model.startswith("onnx:")


# ---------------------------------------------------------------------------- the request log


def test_a_path_cannot_forge_log_lines_or_leak_into_the_log(door: DoorProcess) -> None:
    forged = "/x%0Abli-memory-door%20POST%20/api/memory/save%20201%201.0ms%0Abli_SECRETTOKEN"
    status, body = door.request("GET", forged)
    assert status == 404 and body["error"] == "not_found"
    door.wait_for_log("GET (no route) 404")
    assert not any("SECRETTOKEN" in line for line in door.lines)
    assert all(line.startswith(("bli-memory-door", "[bli-memory]")) for line in door.lines)


def test_an_unexpected_error_is_one_json_500_and_one_log_line() -> None:
    """Sans-I/O: drive the outer request log with an app that raises after nothing was sent."""
    from bli_memory.door.app import RequestLog

    async def broken(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom with a secret body")

    sent: list[MutableMapping[str, Any]] = []
    lines: list[str] = []

    class Stream:
        def write(self, text: str) -> None:
            lines.append(text)

        def flush(self) -> None:
            pass

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    asyncio.run(RequestLog(broken, Stream())({"type": "http", "method": "POST", "path": "/p"}, receive, send))
    assert sent[0]["status"] == 500
    assert json.loads(sent[1]["body"]) == {"error": "internal", "message": "the door failed; see its log"}
    assert (
        lines == [lines[0]] and "500" in lines[0] and "RuntimeError" in lines[0] and "secret" not in lines[0]
    )


# ---------------------------------------------------------------------------- spaces, teams, experience


def test_forget_by_id_respects_the_space(door: DoorProcess, tag: str) -> None:
    status, saved = door.post("/api/memory/save", {"content": "lives in one space", "containerTag": tag})
    status, body = door.post("/api/memory/forget", {"containerTag": tag + "_other", "id": saved["id"]})
    assert status == 404 and body["error"] == "not_found"
    status, found = door.post("/api/memory/search", {"q": "lives in one space", "containerTag": tag})
    assert [row["id"] for row in found["results"]] == [saved["id"]]


def test_experience_ids_are_per_team_and_validated(door: DoorProcess) -> None:
    mine, theirs = door.pair("exp-a", team="exp-one"), door.pair("exp-b", team="exp-two")
    entry = {"id": str(uuid.uuid4()), "store": "bli", "verdict": "win", "reason": "useful"}
    assert door.post("/api/memory/experience", entry, token=mine)[0] == 201
    assert door.post("/api/memory/experience", {**entry, "verdict": "loss"}, token=theirs)[0] == 201
    for bad, needle in (
        ({**entry, "id": "-" * 36}, "UUID"),
        ({**entry, "id": "0" * 8 + "-0000-0000-0000-" + "0" * 12}, "UUID"),
        ({**entry, "id": None, "reason": "   "}, "blank"),
        ({**entry, "id": None, "reason": "one\u2028two"}, "one line"),
    ):
        status, answer = door.post("/api/memory/experience", bad, token=mine)
        assert status == 400 and needle in answer["message"], (bad, answer)


# ---------------------------------------------------------------------------- CLI edges


def _run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "share")}
    return subprocess.run([DOOR, *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_bad_port_is_one_line(tmp_path: Path, port: str) -> None:
    done = _run("serve", "--port", port, "--db", str(tmp_path / "m.db"), home=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "port" in done.stderr


def test_tokens_list_does_not_create_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "m.db"
    done = _run("tokens", "list", "--db", str(missing), home=tmp_path)
    assert done.returncode == 1 and "no memory database" in done.stderr
    assert not missing.parent.exists()


def test_pair_refuses_a_name_with_a_newline(tmp_path: Path) -> None:
    done = _run("pair", "--person", "a\nb", "--db", str(tmp_path / "m.db"), home=tmp_path)
    assert done.returncode == 2 and "one line" in done.stderr


def test_autopair_pairs_again_when_the_database_was_reset(tmp_path: Path) -> None:
    def serve_once(port: int) -> list[str]:
        env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "share"), "USER": "dana"}
        process = subprocess.Popen(
            [DOOR, "serve", "--port", str(port), "--embedder", "none"],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        lines = []
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if "listening on" in line:
                break
        process.terminate()
        process.wait(15)
        return lines

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    first = serve_once(port)
    session = tmp_path / ".config" / "bli-cockpit" / "session.json"
    token = json.loads(session.read_text())["device_token"]
    assert any("paired local user" in line for line in first)
    (tmp_path / "share" / "bli-memory" / "memory.db").unlink()
    for suffix in ("-wal", "-shm"):
        (tmp_path / "share" / "bli-memory" / f"memory.db{suffix}").unlink(missing_ok=True)
    time.sleep(0.2)
    second = serve_once(port)
    assert any("unknown to this database; pairing again" in line for line in second)
    assert json.loads(session.read_text())["device_token"] != token

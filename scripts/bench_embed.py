"""How fast the door's embedder is: query-embed p50 (one text at a time) and passage throughput.

Usage: .venv/bin/python scripts/bench_embed.py [--embedder SPEC] [--texts N] [--fastembed-model-dir DIR]

The texts are synthetic memory-sized sentences (10-40 words), so the numbers need no data set.
`--fastembed-model-dir` also times fastembed on the same model files, for the issue's "measure both,
keep one": fastembed can only fetch its models from a hub this machine cannot reach, so it is pointed
at a local folder (``specific_model_path``) holding the same int8 MiniLM graph and tokenizer files.
Run it from an environment where fastembed is installed; without it that row says why it is missing.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Sequence

from bli_memory.door.embed import Embedder, load_embedder, measure

WORDS = (
    "the staging database pool size is set to forty connections because the load test showed "
    "timeouts we decided to keep using postgres sixteen and run migrations with alembic before "
    "each deploy prefer ruff over flake8 the auth store lives in useAuthStore and the release "
    "branch is cut on thursdays fix the flaky test by pinning the clock"
).split()
QUERY_RUNS = 200
AGREEMENT_TEXTS = 50


def synthetic_texts(count: int, seed: int = 7) -> list[str]:
    """Memory-like sentences of 10-40 words (deterministic)."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 40))) for _ in range(count)]


def bench_fastembed(folder: str, texts: Sequence[str], ours: Embedder) -> dict[str, float] | str:
    """fastembed's numbers on a local model folder (and how close its vectors are to ours), or why not."""
    try:
        from fastembed import TextEmbedding  # type: ignore[import-not-found]
    except ImportError:
        return "fastembed is not installed in this environment"
    try:
        model = TextEmbedding(
            model_name="sentence-transformers/all-MiniLM-L6-v2", specific_model_path=folder, threads=None
        )
    except Exception as exc:  # fastembed raises many kinds for a model it cannot fetch or read
        return f"fastembed could not load {folder}: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    import numpy as np

    sample = list(texts)[:AGREEMENT_TEXTS]
    theirs = np.array(list(model.passage_embed(sample)), dtype=np.float32)
    theirs /= np.linalg.norm(theirs, axis=1, keepdims=True)
    agreement = float(np.min(np.sum(theirs * ours.embed(sample, kind="passage"), axis=1)))
    singles = []
    for text in list(texts)[:QUERY_RUNS]:
        start = time.perf_counter()
        list(model.query_embed([text]))
        singles.append((time.perf_counter() - start) * 1000.0)
    singles.sort()
    start = time.perf_counter()
    list(model.passage_embed(list(texts), batch_size=32))
    elapsed = time.perf_counter() - start
    return {
        "query_ms_p50": singles[len(singles) // 2],
        "passage_texts_per_s": len(texts) / elapsed,
        "min_cosine_to_ours": agreement,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--embedder", default="onnx", help="embedder spec (default: onnx, the packaged MiniLM)"
    )
    parser.add_argument("--texts", type=int, default=1000, help="passages for the throughput run")
    parser.add_argument("--fastembed-model-dir", default="", help="also time fastembed on this local folder")
    args = parser.parse_args(argv)
    if args.texts < 1:
        print("bench_embed: --texts must be at least 1", file=sys.stderr)
        return 2
    texts = synthetic_texts(args.texts)
    started = time.perf_counter()
    embedder, reason = load_embedder(args.embedder, os.environ)
    load_s = time.perf_counter() - started
    if reason:
        print(f"bench_embed: {reason}", file=sys.stderr)
        return 1
    embedder.embed(texts[:4], kind="passage")  # warm-up: first run allocates the arena
    numbers = measure(embedder, texts[:QUERY_RUNS] if len(texts) >= QUERY_RUNS else texts)
    start = time.perf_counter()
    embedder.embed(texts, kind="passage")
    throughput = len(texts) / (time.perf_counter() - start)
    print(f"{'embedder':<44}{'load s':>8}{'query p50 ms':>14}{'passages/s':>12}")
    print(f"{embedder.name:<44}{load_s:>8.2f}{numbers['query_ms_p50']:>14.2f}{throughput:>12.0f}")
    if args.fastembed_model_dir:
        result = bench_fastembed(args.fastembed_model_dir, texts, embedder)
        if isinstance(result, str):
            print(f"{'fastembed':<44}  {result}")
        else:
            print(
                f"{'fastembed (same model files)':<44}{'':>8}{result['query_ms_p50']:>14.2f}"
                f"{result['passage_texts_per_s']:>12.0f}   min cosine to ours {result['min_cosine_to_ours']:.4f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

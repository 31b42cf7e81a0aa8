#!/usr/bin/env python3
"""Vector search over one big space: exact numpy (float32, float16, int8) against HNSW graphs
(usearch float16 / int8, hnswlib float32), each built single-threaded in save order.

    .venv/bin/python scripts/bench_vector_index.py --pool /tmp/pool.npy --size 100000 [--queries 200]

`--pool` is a .npy of real embeddings of distinct texts (`scripts/bench_door.py --scale` writes one);
vector i of the space is the normalised sum of two of them (`bench_door.mixed_vectors`), so a
space can be bigger than the pool and still hold no two equal vectors. The queries are real query
embeddings. For each method: build time, memory it holds (bytes of the matrix, or the graph's own
count), search p50/p95 of the VECTOR_CANDIDATES nearest, and recall@10 against exact float32
search, where the candidates are re-scored with the float32 vectors (as the door does).
hnswlib is optional (`pip install hnswlib`; an sdist that compiles here).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_door

from bli_memory.door.embed import load_embedder
from bli_memory.door.vectors import ANN_CONNECTIVITY, ANN_EXPANSION_ADD, ANN_EXPANSION_SEARCH

CANDIDATES = 100
TOP = 10


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def exact_top(matrix: np.ndarray, query: np.ndarray, count: int) -> np.ndarray:
    sims = matrix @ query
    near = np.argpartition(-sims, count)[:count]
    return near[np.lexsort((near, -sims[near]))]


def measure(
    name: str,
    search: Callable[[np.ndarray], np.ndarray],
    queries: np.ndarray,
    matrix: np.ndarray,
    truth: list[set[int]],
    build_s: float,
    bytes_held: int,
) -> None:
    timings, recalls = [], []
    for query, expected in zip(queries, truth, strict=True):
        started = time.perf_counter()
        rows = search(query)
        timings.append((time.perf_counter() - started) * 1000)
        rescored = rows[np.argsort(-(matrix[rows] @ query), kind="stable")][:TOP]
        recalls.append(len(expected & set(rescored.tolist())) / TOP)
    print(
        f"| {name} | {build_s:.1f} | {bytes_held / 2**20:,.0f} | {statistics.median(timings):.2f} | "
        f"{percentile(timings, 0.95):.2f} | {statistics.mean(recalls):.3f} |",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pool", type=Path, required=True, help=".npy of real passage embeddings")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    pool = np.load(args.pool)
    matrix = bench_door.mixed_vectors(pool, 0, args.size)
    embedder, warning = load_embedder("onnx", os.environ)
    if warning:
        raise SystemExit(warning)
    rng = random.Random(11)
    queries = embedder.embed([bench_door.query(rng) for _ in range(args.queries)], kind="query")
    truth = [set(exact_top(matrix, query, TOP).tolist()) for query in queries]
    load = ", ".join(f"{value:.1f}" for value in __import__("os").getloadavg())
    print(f"{args.size:,} vectors of {matrix.shape[1]} dims, {args.queries} queries, load average {load}")
    print("| method | build s | memory MiB | p50 ms | p95 ms | recall@10 |")
    print("|---|---:|---:|---:|---:|---:|")

    measure(
        "exact float32",
        lambda q: exact_top(matrix, q, CANDIDATES),
        queries,
        matrix,
        truth,
        0.0,
        matrix.nbytes,
    )
    half = matrix.astype(np.float16)
    measure(
        "exact float16",
        lambda q: exact_top(half, q.astype(np.float16), CANDIDATES),
        queries, matrix, truth, 0.0, half.nbytes,
    )  # fmt: skip
    scale = 127.0 / np.abs(matrix).max()
    small = np.round(matrix * scale).astype(np.int8)
    measure(
        "exact int8",
        lambda q: exact_top(small, np.round(q * scale).astype(np.int8).astype(np.int32), CANDIDATES),
        queries, matrix, truth, 0.0, small.nbytes,
    )  # fmt: skip

    from usearch.index import Index

    for dtype in ("f16", "i8"):
        graph = Index(
            ndim=matrix.shape[1],
            metric="cos",
            dtype=dtype,
            connectivity=ANN_CONNECTIVITY,
            expansion_add=ANN_EXPANSION_ADD,
            expansion_search=ANN_EXPANSION_SEARCH,
        )
        started = time.perf_counter()
        for start in range(0, len(matrix), 4096):
            keys = np.arange(start, min(start + 4096, len(matrix)), dtype=np.uint64)
            graph.add(keys, matrix[start : start + 4096], threads=1)
        build_s = time.perf_counter() - started

        def usearch_search(q: np.ndarray, graph: Index = graph) -> np.ndarray:
            return np.asarray(graph.search(q, CANDIDATES, threads=1).keys).astype(np.int64)

        measure(f"usearch HNSW {dtype}", usearch_search, queries, matrix, truth, build_s, graph.memory_usage)
    try:
        import hnswlib  # type: ignore[import-not-found]
    except ImportError:
        print("| hnswlib | not installed |")
        return 0
    graph = hnswlib.Index(space="cosine", dim=matrix.shape[1])
    graph.init_index(
        max_elements=len(matrix), M=ANN_CONNECTIVITY, ef_construction=ANN_EXPANSION_ADD, random_seed=100
    )
    graph.set_num_threads(1)
    started = time.perf_counter()
    graph.add_items(matrix, np.arange(len(matrix)))
    build_s = time.perf_counter() - started
    graph.set_ef(ANN_EXPANSION_SEARCH)

    def hnswlib_search(q: np.ndarray) -> np.ndarray:
        labels, _ = graph.knn_query(q, k=CANDIDATES, num_threads=1)
        return np.asarray(labels[0]).astype(np.int64)

    # hnswlib's own memory: float32 vectors plus 2*M links of level 0 and the label, per element
    held = len(matrix) * (matrix.shape[1] * 4 + 2 * ANN_CONNECTIVITY * 4 + 4 + 8)
    measure("hnswlib HNSW f32", hnswlib_search, queries, matrix, truth, build_s, held)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

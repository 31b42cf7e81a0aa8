"""docs/benchmarks.md cites only what a checkout holds: every repository path it names exists, and it
points at no file outside the repository."""

from __future__ import annotations

import re

from tests.helpers import REPO

BENCHMARKS = REPO / "docs" / "benchmarks.md"
#: a path inside the repository, as the page writes one: `scripts/x.py`, bli_memory/door/keyword.py
REPO_PATH = re.compile(r"(?<![\w/.-])((?:bli_memory|scripts|tests|docs)/[\w./-]*[\w/])")


def test_every_repository_path_the_benchmarks_page_names_exists() -> None:
    text = BENCHMARKS.read_text(encoding="utf-8")
    named = set(REPO_PATH.findall(text))
    assert {"scripts/bench_door.py", "bli_memory/door/keyword.py", "tests/fixtures/redaction/"} <= named
    missing = sorted(path for path in named if not (REPO / path).exists())
    assert missing == []


def test_the_benchmarks_page_cites_no_file_outside_the_repository() -> None:
    text = BENCHMARKS.read_text(encoding="utf-8")
    for outside in ("../shared", "/work/shared", "DESIGN.md", "`space.py`"):
        assert outside not in text, outside

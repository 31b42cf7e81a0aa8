"""The docs cite only what a checkout holds: every repository path they name exists, and they
point at no file outside the repository (benchmarks.md, then every page and the README)."""

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


PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_every_page_names_only_repository_paths_that_exist() -> None:
    """README and every docs page: a path like `bli_memory/door/memories.py` must exist (a module
    moved without its docs is caught here)."""
    assert len(PAGES) >= 5
    missing = {
        page.name: sorted(
            path
            for path in set(REPO_PATH.findall(page.read_text(encoding="utf-8")))
            if not (REPO / path).exists()
        )
        for page in PAGES
    }
    assert {page: paths for page, paths in missing.items() if paths} == {}


def test_no_page_sends_the_reader_outside_the_repository() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for outside in ("../shared", "/work/shared", "DESIGN.md", "seed README"):
            assert outside not in text, (page.name, outside)

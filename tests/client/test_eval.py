"""`bli-memory-mcp eval FILE` as a subprocess with a HOME of its own, against the real door: hit@k and
MRR from the ranks it finds, expectations by id or by text, malformed lines named and skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bli_memory.settings import write_session
from tests.client.helpers import run_cli
from tests.helpers import DoorProcess


@pytest.fixture
def home(tmp_path: Path, door: DoorProcess) -> str:
    folder = tmp_path / "home"
    folder.mkdir()
    write_session(door.url, door.token, env={"HOME": str(folder)})
    return str(folder)


def save(door: DoorProcess, tag: str, content: str) -> str:
    status, body = door.post("/api/memory/save", {"content": content, "containerTag": tag})
    assert status == 201, body
    return str(body["id"])


def lines(*items: Any) -> str:
    return "\n".join(item if isinstance(item, str) else json.dumps(item) for item in items) + "\n"


def test_hit_at_k_and_mrr_from_the_ranks_the_door_gives(
    door: DoorProcess, tag: str, home: str, tmp_path: Path
) -> None:
    save(door, tag, "Kiwi builds run on the old runner.")
    save(door, tag, "Kiwi builds run on the new runner.")
    walrus = save(door, tag, "The walrus service listens on port 9090.")
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        lines(
            {"query": "which port does walrus use?", "expect": "PORT 9090"},  # text, any case: rank 1
            {"query": "walrus", "expect": walrus},  # by id: rank 1
            {"query": "kiwi builds new runner", "expect": ["old runner"]},  # the weaker match: rank 2
            {"query": "walrus", "expect": "something never saved"},  # a miss
        )
    )
    done = run_cli(home, str(tmp_path), "eval", str(questions), "--container-tag", tag, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [r["rank"] for r in report["results"]] == [1, 1, 2, None]
    assert report["queries"] == 4 and report["k"] == 5 and report["skipped"] == []
    assert report["hitAtK"] == 0.75 and report["mrr"] == round((1 + 1 + 0.5) / 4, 4)

    first_only = run_cli(home, str(tmp_path), "eval", str(questions), "--container-tag", tag, "--k", "1")
    assert first_only.returncode == 0, first_only.stderr
    assert first_only.stdout.splitlines()[-1] == "hit@1 0.500  MRR 0.500"
    assert "  line 3    miss    kiwi builds new runner" in first_only.stdout


def test_malformed_lines_are_named_with_their_number_and_skipped(
    door: DoorProcess, tag: str, home: str, tmp_path: Path
) -> None:
    save(door, tag, "The heron queue drains every minute.")
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        lines(
            "not json at all",
            "",
            {"query": "heron queue", "expect": "drains"},
            ["a", "list"],
            {"query": "heron"},
            {"query": " ", "expect": "x"},
            {"query": "heron", "expect": []},
        )
    )
    done = run_cli(home, str(tmp_path), "eval", str(questions), "--container-tag", tag)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"bli-memory-mcp eval: {questions}:1: not JSON; skipped",
        f"bli-memory-mcp eval: {questions}:4: not a JSON object; skipped",
        f"bli-memory-mcp eval: {questions}:5: `expect` must be a non-empty string or a list of them; skipped",
        f"bli-memory-mcp eval: {questions}:6: `query` must be a non-empty string; skipped",
        f"bli-memory-mcp eval: {questions}:7: `expect` must be a non-empty string or a list of them; skipped",
    ]
    assert done.stdout.splitlines()[-1] == "hit@5 1.000  MRR 1.000 (5 malformed lines skipped)"


def test_bad_files_are_exit_2_and_a_door_failure_exit_1(home: str, tmp_path: Path) -> None:
    missing = run_cli(home, str(tmp_path), "eval", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    useless = tmp_path / "useless.jsonl"
    useless.write_text("{}\n")
    nothing = run_cli(home, str(tmp_path), "eval", str(useless))
    assert nothing.returncode == 2 and "no usable {query, expect} line" in nothing.stderr.splitlines()[-1]
    good = tmp_path / "good.jsonl"
    good.write_text(lines({"query": "q", "expect": "e"}))
    write_session("http://127.0.0.1:9", "bli_unused", env={"HOME": home})
    down = run_cli(home, str(tmp_path), "eval", str(good), "--container-tag", "t")
    assert down.returncode == 1 and len(down.stderr.splitlines()) == 1
    assert "the search of line 1 failed (dashboard_unreachable)" in down.stderr

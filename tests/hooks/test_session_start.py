"""The session-start hook's context block (`hooks/session_start.py`): profile and recent context, without
repeats."""

from __future__ import annotations

import time

from bli_memory.hooks import session_start


def test_the_context_block_has_profile_and_recent_context_without_repeats() -> None:
    answer: dict[str, object] = {
        "profile": {
            "static": ["Uses SQLite", {"content": "Prefers small commits"}],
            "dynamic": ["Uses SQLite"],
        },
        "recent": [
            {"id": "mem_9", "content": "Prefers small commits"},
            {"id": "mem_8", "content": "Fixed the hook"},
        ],
    }
    facts = session_start.profile_facts(answer)
    recent = session_start.recent_rows(answer, facts)
    assert facts == ["Uses SQLite", "Prefers small commits"]
    block = session_start.render_context(facts, recent, "repo_x", time.time())
    lines = block.splitlines()
    assert lines[0] == "<bli-memory-context> [bli]"
    assert "[bli] ## User Profile" in lines and "[bli] ## Recent Context" in lines
    assert all("[bli]" in line for line in lines)
    assert block.count("Prefers small commits") == 1 and "Fixed the hook" in block

"""The prompt the prompt hook remembers for Stop (`hooks/last_prompt.py`): taken once per session and turn,
private, bounded, pruned."""

from __future__ import annotations

import os
import time
from pathlib import Path


def test_the_remembered_prompt_is_taken_once_per_session_and_turn(tmp_path: Path) -> None:
    from bli_memory.hooks import last_prompt

    env = {"HOME": str(tmp_path)}
    assert last_prompt.remember({"session_id": "s-1", "prompt": " Prompt B "}, env)
    where = Path(last_prompt.folder(env))
    assert oct(where.stat().st_mode & 0o777) == "0o700"
    assert oct((where / "s-1.json").stat().st_mode & 0o777) == "0o600"
    assert last_prompt.take("s-1", None, env) == "Prompt B"
    assert last_prompt.take("s-1", None, env) is None  # taken: never paired with a later turn
    assert not last_prompt.remember({"session_id": "../../etc/x", "prompt": "p"}, env)  # a name, no path
    last_prompt.remember({"session_id": "s-2", "prompt": "p", "turn_id": "t1"}, env)
    assert last_prompt.take("s-2", "t2", env) is None  # Codex: another turn's prompt
    last_prompt.remember({"session_id": "s-3", "prompt": "p"}, env)
    last_prompt.remember({"session_id": "s-3", "prompt": "  "}, env)  # this turn had no prompt
    assert last_prompt.take("s-3", None, env) is None
    last_prompt.remember({"session_id": "s-4", "prompt": "x" * 10_000}, env)
    assert last_prompt.take("s-4", None, env) == "x" * last_prompt.PROMPT_MAX_BYTES
    last_prompt.remember({"session_id": "old", "prompt": "p"}, env)
    last_prompt.remember({"session_id": "new", "prompt": "p"}, env)
    later = time.time() + last_prompt.KEEP_S + 10
    os.utime(where / "new.json", (later, later))
    assert last_prompt.prune(env, now_s=later) == 1
    assert sorted(os.listdir(where)) == ["new.json"]

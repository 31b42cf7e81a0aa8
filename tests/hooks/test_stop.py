"""The Stop hook's own output (`hooks/stop.py`): a failure is one JSON line for the host."""

from __future__ import annotations

import json

from bli_memory.hooks import stop


def test_a_failed_stop_message_is_one_json_line() -> None:
    line = stop.failure_message("timeout")
    assert line.endswith("\n") and line.count("\n") == 1
    assert json.loads(line) == {
        "systemMessage": "[bli] bli-memory: this turn was not saved to memory (timeout)."
    }

"""`bli-memory-mcp search` and `forget --query` (the search_memory and forget_memory tools the MCP server
runs too, `bli_memory/tools.py`) mask secrets in the query before it leaves the machine, as a save
is masked. The real CLI asks the real door through a loopback relay that keeps every byte sent."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import recording_relay

#: the door behind a relay is asked under the relay's port: it must answer 127.0.0.1 on any port
RELAYED_DOOR_ARGS = ("--embedder", "none", "--allowed-host", "127.0.0.1")
RUN_TIMEOUT_S = 60


@pytest.mark.parametrize("command", [["search"], ["forget", "--query"]])
def test_a_query_is_masked_before_it_is_sent(
    tmp_path: Path, start_door: Callable[..., Any], tag: str, command: list[str]
) -> None:
    rng = random.Random(3)
    token = "".join(
        rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") for _ in range(36)
    )
    door = start_door(*RELAYED_DOOR_ARGS)
    with recording_relay(door.url) as relay:
        env = {
            "HOME": str(tmp_path),
            "PATH": os.environ["PATH"],
            "BLI_MEMORY_DASHBOARD_URL": relay.url,
            "BLI_MEMORY_DEVICE_TOKEN": door.token,
            "BLI_MEMORY_CONTAINER_TAG": tag,
            "BLI_MEMORY_DAEMON": "0",
        }
        done = subprocess.run(
            [sys.executable, "-m", "bli_memory", *command, f"why was ghp_{token} revoked"],
            capture_output=True,
            text=True,
            env=env,
            timeout=RUN_TIMEOUT_S,
        )
        sent = relay.sent().decode("utf-8", "replace")
    assert done.returncode in (0, 1), done.stderr  # forget: nothing matched in an empty space
    assert "/api/memory/" in sent and "ghp_[REDACTED:github_token]" in sent
    assert token[:12] not in sent
    assert token[:12] not in done.stdout + done.stderr

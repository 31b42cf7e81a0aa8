"""Through the daemon, too, the prompt hook never sends a secret of the prompt to the door: the resident
process masks the query (it loads the redactor at start, so every prompt is redacted at no import
cost). A real daemon and a real hook subprocess ask the real door through a loopback relay that keeps
every byte sent to it."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bli_memory.settings import write_session
from tests.daemon.helpers import Daemon, daemon_env
from tests.helpers import recording_relay
from tests.hooks.helpers import PROMPT, run_hook

#: the door behind a relay is asked under the relay's port: it must answer 127.0.0.1 on any port
RELAYED_DOOR_ARGS = ("--embedder", "none", "--allowed-host", "127.0.0.1")


def _run(rng: random.Random, size: int) -> str:
    alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(rng.choice(alnum) for _ in range(size))


def test_the_prompt_hook_through_the_daemon_sends_no_secret_of_the_prompt(
    home: Path, daemons: list[Daemon], start_door: Callable[..., Any], tag: str
) -> None:
    rng = random.Random(2)
    api_key, github, password = _run(rng, 40), _run(rng, 36), "Pw9" + _run(rng, 13)
    text = (
        f"the deploy fails with sk-{api_key}; the CI has GITHUB_TOKEN=ghp_{github}\n"
        f"and the database URL is postgres://app:{password}@db.internal:5432/app - why?"
    )
    door = start_door(*RELAYED_DOOR_ARGS)
    with recording_relay(door.url) as relay:
        write_session(relay.url, door.token, env={"HOME": str(home)})
        one = Daemon(home)
        daemons.append(one)
        done = run_hook(
            "prompt",
            {**PROMPT, "prompt": text, "cwd": str(home)},
            home,
            env=daemon_env(home, BLI_MEMORY_CONTAINER_TAG=tag),
        )
        sent = relay.sent().decode("utf-8", "replace")
    hook, status, fields = done.receipt()
    assert (hook, status, fields["via"]) == ("prompt", "ok", "daemon"), done.stderr + one.stderr()
    assert "POST /api/memory/search" in sent and "[REDACTED:" in sent
    for secret in (api_key, github, password):
        assert secret[:12] not in sent
        assert secret[:12] not in one.stderr()

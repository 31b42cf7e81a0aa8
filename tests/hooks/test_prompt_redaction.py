"""The prompt hook never sends a secret of the prompt to the door: the query it searches by is masked
as a save is (`hooks/prompt.search_query`). A real hook subprocess (temporary HOME, direct path) asks
the real door through a loopback relay that keeps every byte it sent; the daemon's path has its own
test in tests/daemon/test_daemon_redaction.py."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bli_memory.settings import write_session
from tests.helpers import recording_relay
from tests.hooks.helpers import PROMPT, hook_env, run_hook


def secrets_of_a_prompt(seed: int) -> dict[str, str]:
    """Fake secrets made at test time, each in a shape the redactor recognises."""
    rng = random.Random(seed)
    alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

    def run(size: int) -> str:
        return "".join(rng.choice(alnum) for _ in range(size))

    return {
        "api_key": "sk-" + run(40),
        "env_line": "Zq7" + run(21),
        "pem_body": "\n".join(run(64) for _ in range(4)),
    }


def prompt_with(secrets: dict[str, str]) -> str:
    return (
        f"why does the client get 401 with {secrets['api_key']}?\n"
        f"my .env has OPENAI_API_KEY={secrets['env_line']}\n"
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        f"{secrets['pem_body']}\n"
        "-----END OPENSSH PRIVATE KEY-----\n"
    )


def assert_nothing_secret_sent(sent: bytes, secrets: dict[str, str]) -> None:
    assert b"POST /api/memory/search" in sent, "the hook did not search through the relay"
    assert b"[REDACTED:" in sent  # the masked query did go out
    text = sent.decode("utf-8", "replace")
    for name, secret in secrets.items():
        material = secret.removeprefix("sk-")
        for line in material.splitlines():
            assert line[:16] not in text, name


#: the door behind a relay is asked under the relay's port: it must answer 127.0.0.1 on any port
RELAYED_DOOR_ARGS = ("--embedder", "none", "--allowed-host", "127.0.0.1")


def test_the_direct_prompt_hook_sends_no_secret_of_the_prompt(
    tmp_path: Path, start_door: Callable[..., Any], tag: str
) -> None:
    door = start_door(*RELAYED_DOOR_ARGS)
    home = tmp_path / "home"
    home.mkdir()
    secrets = secrets_of_a_prompt(1)
    with recording_relay(door.url) as relay:
        write_session(relay.url, door.token, env={"HOME": str(home)})
        done = run_hook(
            "prompt",
            {**PROMPT, "prompt": prompt_with(secrets), "cwd": str(home)},
            home,
            env=hook_env(home, BLI_MEMORY_CONTAINER_TAG=tag),
        )
        sent = relay.sent()
    assert done.returncode == 0
    hook, status, fields = done.receipt()
    assert (hook, status, fields["via"]) == ("prompt", "ok", "direct"), done.stderr
    assert_nothing_secret_sent(sent, secrets)
    for secret in secrets.values():
        assert secret.splitlines()[0] not in done.stderr  # nor in the receipt

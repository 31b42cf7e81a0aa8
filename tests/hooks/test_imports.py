"""The hook path imports no heavy module: each hook runs under `python -X importtime` and the modules it
loaded are checked against the forbidden list (a hook runs on every turn, so its cold start is the
product: `mcp` alone costs ~650 ms, `urllib.request` ~30 ms, `http.client` ~25 ms via `email`,
`subprocess` ~11 ms)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bli_memory.settings import write_session
from tests.helpers import TRANSCRIPTS
from tests.hooks.helpers import PROMPT, SESSION_START, STOP, hook_env, imports_without_site

FORBIDDEN = (
    "mcp",
    "asyncio",
    "argparse",
    "urllib.request",
    "http.client",
    "email",
    "subprocess",
    "logging",
    "uuid",
)


def imported_modules(event: str, payload: object, env: dict[str, str], *args: str) -> tuple[set[str], str]:
    """(modules the hook imported, its receipt line)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "bli_memory", "hook", event, *args],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0
    stderr = done.stderr.decode()
    modules = {
        line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")
    }
    modules.discard("imported package")  # the header line
    receipts = [line for line in stderr.splitlines() if line.startswith("[bli-memory] ")]
    assert len(receipts) == 1, stderr
    return modules, receipts[0]


def forbidden_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def test_the_trivial_path_imports_nothing_forbidden_nor_the_door_client(home: Path) -> None:
    modules, receipt = imported_modules("prompt", {**PROMPT, "prompt": "ok"}, hook_env(home))
    assert "trivial_prompt" in receipt
    assert forbidden_in(modules) == []
    assert not {"bli_memory.door_client", "bli_memory.settings", "bli_memory.space", "socket"} & modules
    # the skip is decided before the recall code is imported (contextlib comes with runpy anyway)
    assert not {"bli_memory.hooks.prompt", "bli_memory.hooks.transcript", "datetime"} & modules


def test_every_hook_on_its_full_path_imports_nothing_forbidden(
    home: Path, door: Any, tag: str, tmp_path: Path
) -> None:
    write_session(door.url, door.token, env={"HOME": str(home)})
    env = hook_env(home, BLI_MEMORY_CONTAINER_TAG=tag)
    status, _ = door.post(
        "/api/memory/save", {"content": "The stop hook saves the turn.", "containerTag": tag}
    )
    assert status == 201
    runs: dict[str, tuple[object, str]] = {
        "prompt": (PROMPT, "prompt ok"),
        "session-start": (SESSION_START, "session-start ok"),
        "stop": ({**STOP, "transcript_path": str(TRANSCRIPTS / "claude_session.jsonl")}, "stop ok"),
    }
    for event, (payload, expected) in runs.items():
        modules, receipt = imported_modules(event, payload, env)
        assert expected in receipt, receipt
        assert forbidden_in(modules) == [], event
        assert "bli_memory.door_client" in modules  # the path under test really reached the door
    # a failing door and an unpaired machine take other branches; they must stay clean too
    unpaired, receipt = imported_modules("stop", STOP, hook_env(tmp_path))
    assert "unpaired" in receipt and forbidden_in(unpaired) == []
    codex, receipt = imported_modules("stop", {**STOP, "stop_hook_active": True}, env, "--host", "codex")
    assert "reentrant" in receipt and forbidden_in(codex) == []


def test_the_trivial_path_needs_no_json_re_typing_or_collections(home: Path) -> None:
    """The trivial path's whole budget is the interpreter floor + 50 %: json alone (with the `re`,
    `enum` and `functools` it imports) was 12-18 ms of it."""
    modules, stderr, _ = imports_without_site("prompt", {**PROMPT, "prompt": "ok"}, hook_env(home))
    assert "trivial_prompt" in stderr, stderr
    assert (
        not {"json", "re", "enum", "typing", "collections", "contextlib", "importlib", "functools"} & modules
    )


def test_the_prompt_hook_loads_the_redactor_only_for_a_prompt_that_may_hold_a_secret(
    home: Path, door: Any, tag: str
) -> None:
    """The query is masked before it is sent, but importing the redactor (`dataclasses` → `inspect`)
    costs more than the rest of the recall path: a one-shot hook loads it only when the pre-scan
    (`secret_scan.py`) says the prompt may hold a secret."""
    write_session(door.url, door.token, env={"HOME": str(home)})
    env = hook_env(home, BLI_MEMORY_CONTAINER_TAG=tag)
    plain, receipt = imported_modules("prompt", PROMPT, env)
    assert "prompt ok" in receipt and "bli_memory.door_client" in plain
    assert "bli_memory.secret_scan" in plain
    assert not {"bli_memory.redact", "dataclasses", "inspect"} & plain
    secret = {**PROMPT, "prompt": "why is ghp_" + "Ab1" * 12 + " refused by the API?"}
    masked, receipt = imported_modules("prompt", secret, env)
    assert "prompt ok" in receipt and "bli_memory.redact" in masked
    assert forbidden_in(masked) == []

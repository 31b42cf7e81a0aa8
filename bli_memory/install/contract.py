"""What install registers, and how to recognise it again: the names, the three hooks, the v1 contract.

`install_contract()` is the `bli-memory-install-config.v1` document that `--print-config=claude`
prints: the server id, the MCP server's command, one entry per hook (event, shell command, host
timeout in seconds) and the one tool Claude Code is told to allow without asking (`search_memory`).

Codex hook output (decided here; the hooks honour it). Codex validates hook JSON with
`additionalProperties: false` and treats plain text on Stop as an error (older builds also fail on an
empty Stop stdout), so the Codex hook commands carry an explicit argument:
`bli-memory-mcp hook session-start --host codex`, `... hook prompt --host codex`,
`... hook stop --host codex`. With `--host codex`:

- session-start and prompt print exactly what they print for Claude: nothing, or one plain-text
  block. Codex takes plain stdout (not starting with `{`) as additional context, like Claude.
- stop prints exactly one JSON object line, always: `{}` on every branch, or
  `{"systemMessage": "..."}` when the save failed. No `hookSpecificOutput`, no other key.

The Claude Code commands carry no `--host`: there session-start and prompt print nothing or one
plain-text block, and stop prints nothing unless the save failed (then one `systemMessage` line).
The installer writes the argument for Codex rather than leave a hook to tell its host from the payload.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SERVER_ID = "bli-memory"
BIN_NAME = "bli-memory-mcp"
ZIPAPP_NAME = "bli-memory-mcp.pyz"
MODULE_NAME = "bli_memory"
CONTRACT_SCHEMA = "bli-memory-install-config.v1"
PERMISSION = f"mcp__{SERVER_ID}__search_memory"
CODEX_HOST_ARGS = ("--host", "codex")


@dataclass(frozen=True)
class HookSpec:
    event: str
    subcommand: str
    timeout_s: int


#: the host timeouts sit above each hook's own deadline (session-start 8 s, prompt 2 s, stop 15 s:
#: `bli_memory.hooks.run.DEADLINE_S`), so a host never kills a hook that is still inside its budget.
HOOKS: tuple[HookSpec, ...] = (
    HookSpec("SessionStart", "session-start", 30),
    HookSpec("UserPromptSubmit", "prompt", 5),
    HookSpec("Stop", "stop", 30),
)
HOOK_SUBCOMMANDS = frozenset(spec.subcommand for spec in HOOKS)

#: what a registered hook runs instead of the console script, under the package: pip's generated
#: `bli-memory-mcp` script imports `re` before our code (~13 ms on every hook; the trivial-prompt path's
#: whole budget is the interpreter floor + 50 %), and `python -m` pays about as much for runpy. The
#: console script's own interpreter runs this file, `<python> <…>/bli_memory/install/launch/
#: bli_memory_mcp.py hook prompt`: as cheap, and a person asked to trust the hook reads what it runs.
HOOK_LAUNCHER = ("install", "launch", "bli_memory_mcp.py")
#: what hooks ran before HOOK_LAUNCHER (`python -c` with this line): still recognised as ours, so
#: that install replaces such a registration and uninstall removes it.
HOOK_LAUNCH = "import sys; from bli_memory.cli import main; sys.exit(main())"


def hook_command(prefix: Sequence[str], spec: HookSpec, *, codex: bool = False) -> str:
    """The shell command a host runs for one hook (hosts run it through `sh -c`)."""
    argv = [*prefix, "hook", spec.subcommand]
    if codex:
        argv += CODEX_HOST_ARGS
    return shlex.join(argv)


def install_contract(prefix: Sequence[str] = (BIN_NAME,)) -> dict[str, Any]:
    """The `bli-memory-install-config.v1` contract, with `prefix` as the command in every string."""
    return {
        "schema": CONTRACT_SCHEMA,
        "server_id": SERVER_ID,
        "mcp_server": {"command": prefix[0], "args": list(prefix[1:]), "env": {}},
        "hooks": [
            {"event": spec.event, "command": hook_command(prefix, spec), "timeout_seconds": spec.timeout_s}
            for spec in HOOKS
        ],
        "permissions_allow": [PERMISSION],
    }


def is_our_hook_command(command: object, own: Sequence[str] = ()) -> bool:
    """True for any command string that runs one of our hooks, whatever path or host argument it has.

    Recognising ours by shape (not by the exact string) lets install replace a registration made by
    an older install from another path, and uninstall remove it. `own` is the running program's
    prefix, so a zipapp under any file name also knows its own registrations.
    """
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for index in range(1, len(words) - 1):
        if words[index] != "hook" or words[index + 1] not in HOOK_SUBCOMMANDS:
            continue
        before = words[:index]
        if own and before[-len(own) :] == list(own):
            return True
        program = os.path.basename(before[-1])
        if program in (BIN_NAME, ZIPAPP_NAME) or before[-2:] in (["-m", MODULE_NAME], ["-c", HOOK_LAUNCH]):
            return True
        if before[-1].replace(os.sep, "/").endswith("/" + "/".join((MODULE_NAME, *HOOK_LAUNCHER))):
            return True
    return False


def is_our_handler(handler: object, own: Sequence[str]) -> bool:
    """True for a handler object (`{"type": "command", "command": ...}`) that runs one of our hooks."""
    return isinstance(handler, dict) and is_our_hook_command(handler.get("command"), own)

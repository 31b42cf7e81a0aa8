"""Which program is running, which python runs it, and whether that python can run the MCP server.

`resolve_command` finds the absolute command of the program that is running, so install registers
itself and not whatever else is on PATH. `hook_prefix` is what the registered hooks run: for a
console script, its own interpreter with the package's launcher file (the hooks are timed for cold
start, and a person reviewing a hook reads what it runs).

The MCP server is registered only when the python that would run it can import `mcp` (checked by
running that interpreter, `can_run_server`). The zipapp on a bare python3 has none: install then
registers the hooks (which need nothing but the standard library), leaves the server entries as they
are, and says in one line how to get the server. Registering a server that cannot start would show a
broken MCP server in every session; refusing would withhold the hooks, which work.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from bli_memory.install.contract import BIN_NAME, HOOK_LAUNCHER, MODULE_NAME


def resolve_command(
    argv0: str | None = None, executable: str | None = None, which: Callable[[str], str | None] | None = None
) -> list[str]:
    """The absolute argv prefix that runs this very program.

    In order: the console script that is running (argv[0] named `bli-memory-mcp`), the zipapp that is
    running (`python3 /abs/x.pyz`), the console script next to this interpreter (`python -m
    bli_memory` from a venv), the console script on PATH, and last `python -m bli_memory`.
    """
    import shutil

    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = os.path.abspath(sys.executable if executable is None else executable)
    which = shutil.which if which is None else which
    base = os.path.basename(argv0)
    if base == BIN_NAME and os.path.isfile(argv0):
        return [os.path.abspath(argv0)]
    if base.endswith(".pyz") and os.path.isfile(argv0):
        return [executable, os.path.abspath(argv0)]
    sibling = os.path.join(os.path.dirname(executable), BIN_NAME)
    if os.path.isfile(sibling) and os.access(sibling, os.X_OK):
        return [sibling]
    on_path = which(BIN_NAME)
    if on_path:
        return [os.path.abspath(on_path)]
    return [executable, "-m", MODULE_NAME]


#: the probe an interpreter runs to say whether it can import the SDK the MCP server needs (exit 0: yes).
MCP_PROBE = "import importlib.util, sys; sys.exit(importlib.util.find_spec('mcp') is None)"
MCP_PROBE_TIMEOUT_S = 20.0


def server_interpreter(prefix: Sequence[str]) -> str:
    """The python that runs the registered MCP server command.

    `python x.pyz` and `python -m bli_memory` name it first; a console script names it in its
    shebang (`#!/venv/bin/python`, or `#!/usr/bin/env python3`, looked up on PATH).
    """
    import shutil

    if len(prefix) > 1:
        return prefix[0]
    try:
        with open(prefix[0], "rb") as handle:
            first = handle.readline(4096)
    except OSError:
        return sys.executable
    if not first.startswith(b"#!"):
        return sys.executable
    words = first[2:].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [word for word in words[1:] if not word.startswith("-")]
        found = shutil.which(words[0]) if words else None
        return found or sys.executable
    return words[0] if words else sys.executable


def can_run_server(prefix: Sequence[str]) -> bool:
    """True when the interpreter of `prefix` can import `mcp` (install registers the server only then).

    The zipapp runs on whatever python3 is at hand, which usually has no `mcp`; registering a server
    that cannot start would show the person a broken MCP server in every session.
    """
    import subprocess

    try:
        done = subprocess.run(
            [server_interpreter(prefix), "-c", MCP_PROBE],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=MCP_PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def launcher_path() -> str:
    """The absolute path of this package's hook launcher file (`contract.HOOK_LAUNCHER`)."""
    import bli_memory

    return os.path.join(os.path.dirname(os.path.abspath(bli_memory.__file__)), *HOOK_LAUNCHER)


def hook_prefix(prefix: Sequence[str]) -> list[str]:
    """The argv prefix registered hooks run: the console script's own interpreter with the launcher
    file (`<python> <…>/bli_memory/install/launch/bli_memory_mcp.py`) when `prefix` is a console
    script or `python -m bli_memory` (which would put the project's folder first on sys.path), else
    `prefix` itself (a zipapp)."""
    if len(prefix) == 3 and list(prefix[1:]) == ["-m", MODULE_NAME] and os.path.isfile(launcher_path()):
        return [prefix[0], launcher_path()]
    if len(prefix) == 1 and os.path.basename(prefix[0]) == BIN_NAME:
        python = server_interpreter(prefix)
        launcher = launcher_path()
        if os.path.isabs(python) and os.access(python, os.X_OK) and os.path.isfile(launcher):
            return [python, launcher]
    return list(prefix)

"""The `bli-memory-mcp` entry point.

Dispatch is a table of (module, function, summary) looked up by hand from argv,
so that a hook run imports only its own module: no argparse, no SDK, no
subcommand it does not need (pip's `commands/__init__.py` habit). Every
subcommand exposes `main(argv: list[str]) -> int`.
"""

from __future__ import annotations

import sys

# name -> (module, function, one-line summary shown by --help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "hook": ("bli_memory.hooks.run", "main", "run a Claude Code / Codex hook: session-start | prompt | stop"),
    "daemon": (
        "bli_memory.daemon",
        "main",
        "run the resident daemon that keeps the prompt hook warm; `daemon stop` stops it",
    ),
    "search": ("bli_memory.commands.search", "main", "search the memories of this folder's space"),
    "save": ("bli_memory.commands.save", "main", "remember a piece of text in this folder's space"),
    "forget": ("bli_memory.commands.forget", "main", "tombstone a memory by id, exact text or closest match"),
    "list": (
        "bli_memory.commands.browse",
        "list_main",
        "list this folder's memories, newest first, a page at a time",
    ),
    "recent": ("bli_memory.commands.browse", "recent_main", "show this folder's most recent memories"),
    "pin": ("bli_memory.commands.pins", "pin_main", "pin a fact shown at every session start (verbatim)"),
    "pins": ("bli_memory.commands.pins", "pins_main", "list the pins that apply here (this space + global)"),
    "unpin": ("bli_memory.commands.pins", "unpin_main", "make a pin an ordinary memory again, by id"),
    "status": ("bli_memory.commands.status", "main", "show pairing, door, daemon and space health"),
    "selftest": (
        "bli_memory.commands.selftest",
        "main",
        "live smoke test of the door: save, search, update, history, forget",
    ),
    "eval": (
        "bli_memory.commands.eval",
        "main",
        "hit@k and MRR of your own {query, expect} lines against the door",
    ),
    "space": ("bli_memory.commands.space", "main", "print the space (container tag) of a folder"),
    "login": (
        "bli_memory.commands.login",
        "login_main",
        "pair this machine with a door (writes the session file)",
    ),
    "logout": ("bli_memory.commands.login", "logout_main", "forget this machine's pairing"),
    "install": (
        "bli_memory.install.cli",
        "install_main",
        "register the MCP server and hooks with Claude Code and Codex",
    ),
    "uninstall": ("bli_memory.install.cli", "uninstall_main", "remove what install registered"),
    "log": (
        "bli_memory.commands.experience",
        "log_main",
        "record a win/loss/noise opinion in the experience log",
    ),
    "sync": ("bli_memory.commands.experience", "sync_main", "ship queued experience entries to the door"),
    # import and export (docs/import.md)
    "import": (
        "bli_memory.commands.importing",
        "main",
        "import memories from mem0, Supermemory, claude-mem, the MCP memory server, CLAUDE.md/AGENTS.md, or an export",
    ),
    "export": (
        "bli_memory.commands.exporting",
        "main",
        "write every memory of a space (or --all) with its history, as jsonl or markdown",
    ),
    "open": (
        "bli_memory.commands.web_open",
        "main",
        "open the door's memory page in a browser, signed in by a one-time link (--print: print it)",
    ),
    "ops": (
        "bli_memory.commands.ops",
        "main",
        "the A/B's ops view: the door's experience totals and this machine's hook stats",
    ),
}

SERVER = ("bli_memory.mcp_server", "main")
PRINT_CONFIG = ("bli_memory.install.cli", "print_config_main")
PRINT_SKILL = ("bli_memory.install.skill", "print_skill_main")


def usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        "usage: bli-memory-mcp [COMMAND] [ARGS]",
        "",
        "With no command, runs the MCP stdio server (stdout carries JSON-RPC only).",
        "",
        "commands:",
    ]
    lines += [f"  {name.ljust(width)}  {summary}" for name, (_, _, summary) in COMMANDS.items()]
    lines += [
        "",
        "options:",
        "  --print-config[=claude|codex]  print the install contract or the Codex config block",
        "  --print-skill                  print the bli-memory skill (SKILL.md) install writes",
        "  -V, --version                  print the version",
        "  --help                         show this help",
        "",
        "Run `bli-memory-mcp COMMAND --help` for a command's own help.",
    ]
    return "\n".join(lines)


def _run(module_name: str, function_name: str, argv: list[str]) -> int:
    # __import__ + sys.modules rather than importlib: importlib pulls in `warnings` on every hook run
    __import__(module_name)
    module = sys.modules[module_name]
    result: int = getattr(module, function_name)(argv)
    return result


#: what a command that lost its reader exits with: the status a shell reports for SIGPIPE (128 + 13).
EXIT_BROKEN_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    """Run one command; a reader that went away (`... | head -3`) ends it quietly, never a traceback.

    The output is flushed here, inside the guard: a pipe closed early otherwise surfaces at
    interpreter exit as "Exception ignored ... BrokenPipeError". After EPIPE, stdout is pointed at
    /dev/null so that exit-time flush has nowhere to fail (the Python docs' recipe, signal docs).
    """
    try:
        status = _run_command(sys.argv[1:] if argv is None else argv)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    return status


def _run_command(args: list[str]) -> int:
    """The one place a command's CliError (`bli_memory.errors`) becomes one stderr line and its status.

    `bli_memory.errors` is not imported here: the hooks run through this function and must not pay
    for it. A CliError can only have been raised by code that imported that module, so when it is
    not loaded, whatever was raised is something else.
    """
    try:
        return _dispatch(args)
    except Exception as exc:
        if "bli_memory.errors" not in sys.modules:
            raise
        from bli_memory.errors import CliError  # already loaded: a lookup, not an import

        if not isinstance(exc, CliError):
            raise
        sys.stderr.write(f"{exc.message}\n")
        return exc.exit_code


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _dispatch(args: list[str]) -> int:
    if not args:
        import importlib.util

        if importlib.util.find_spec("mcp") is None:
            from bli_memory.mcp_sdk import serve_without_sdk

            return serve_without_sdk()
        return _run(*SERVER, [])
    first, rest = args[0], args[1:]
    if first in ("--help", "-h", "help"):
        sys.stdout.write(usage() + "\n")
        return 0
    if first in ("--version", "-V"):
        from bli_memory import __version__

        sys.stdout.write(f"bli-memory-mcp {__version__}\n")
        return 0
    if first == "--print-config" or first.startswith("--print-config="):
        return _run(*PRINT_CONFIG, args)
    if first == "--print-skill":
        return _run(*PRINT_SKILL, rest)
    entry = COMMANDS.get(first)
    if entry is None:
        sys.stderr.write(f"bli-memory-mcp: unknown command {first!r}; see `bli-memory-mcp --help`\n")
        return 2
    module_name, function_name, _ = entry
    return _run(module_name, function_name, rest)


if __name__ == "__main__":
    raise SystemExit(main())

"""`bli-memory-door`: serve the memory API, stop it, pair devices, list, revoke, promote and demote tokens,
reset a team or a space (`door/reset.py`), and move a store's rows into another store (`migrate`).

`main` is the console script; each subcommand lives in its own module: `serve` (the composition
root), `pidfile` (the pid file and `stop`), `devices` (`pair`, `tokens`), `maintenance` (`reset`,
`migrate`), with `parser` (the options) and `stores` (opening the store a command names).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping

from bli_memory.door.cli.devices import pair, tokens
from bli_memory.door.cli.maintenance import migrate, reset
from bli_memory.door.cli.parser import build_parser
from bli_memory.door.cli.pidfile import stop
from bli_memory.door.cli.serve import serve
from bli_memory.errors import CliError, UsageError

#: what `serve`, `pair` and `tokens` import at their start; without them the `door` extra is missing.
DOOR_EXTRA_MODULES = ("fastapi", "uvicorn", "numpy", "snowballstemmer")
DOOR_EXTRA_INSTALL = "pip install 'bli-memory[door]'"


def _missing_door_module() -> str | None:
    """The first module of the `door` extra this interpreter cannot find, or None."""
    import importlib.util

    for name in DOOR_EXTRA_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None


def main(argv: list[str] | None = None) -> int:
    """The console script: parse, check the `door` extra is installed, run one subcommand; a
    `CliError` is one stderr line under the program's name (passwords masked) and its exit status."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:  # a database URL typed wrong may hold its password: masked like any error
        # (the line names the subcommand itself: "bli-memory-door serve: argument --port: …")
        words = [word.split("=", 1)[-1] if word.startswith("--") else word for word in argv]
        sys.stderr.write(f"{_without_passwords(exc.message, words)}\n")
        return exc.exit_code
    handlers: dict[str, Callable[[argparse.Namespace, Mapping[str, str]], int]] = {
        "serve": serve,
        "stop": stop,
        "pair": pair,
        "tokens": tokens,
        "reset": reset,
        "migrate": migrate,
    }
    handler = handlers.get(args.command)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    missing = _missing_door_module()
    if missing is not None:
        sys.stderr.write(
            f"bli-memory-door: the door needs its libraries ({missing} is not installed): "
            f"{DOOR_EXTRA_INSTALL} (with pipx: pipx install --force 'bli-memory[door]')\n"
        )
        return 2
    try:
        return handler(args, os.environ)
    except CliError as exc:
        sys.stderr.write(f"bli-memory-door: {_without_passwords(exc.message, _database_urls(args))}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def _database_urls(args: argparse.Namespace) -> list[str]:
    """The database URLs a parsed command line gives (`--db`, `--from`, `--to`)."""
    return [value for name in ("db", "source", "dest") if isinstance(value := getattr(args, name, None), str)]


def _without_passwords(line: str, urls: list[str]) -> str:
    """`line` with every password of `urls` masked (words that are no URL carry none): the last guard
    before an error line is printed, whatever library worded it."""
    from bli_memory.door.store.urls import scrub

    return scrub(line, *urls)

"""`bli-memory-mcp login` / `logout`: pair this machine with a door, or forget the pairing.

The pairing is the session file ``~/.config/bli-cockpit/session.json`` (mode 0600 in a 0700 folder,
written by ``bli_memory.settings.write_session``). The device token never travels through argv, where
every user of the machine can read it in the process list: it comes from stdin (``--token-stdin``) or
from a no-echo prompt on a terminal.

Before saving, login asks the door's ``/healthz`` whether it answers and then makes one authenticated
call that cannot match anything (``check_door``): ``/healthz`` takes no token, so only that call can
say "this token works". A token the door refuses (401/403) is not saved and login exits 1: the
session file is left as it was, so a mistyped token never replaces a pairing that works. A door that
does not answer is a warning, not a failure (pairing a laptop before the door is up is normal): the
pairing is saved. ``--no-check`` saves without asking.

Exit status: 0 paired; 1 the door refused the token, or the session file could not be written (or
removed) privately; 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import NoReturn

from bli_memory.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, UsageError
from bli_memory.settings import (
    ENV_TOKEN,
    ENV_URL,
    SessionFileError,
    remove_session,
    session_file,
    write_session,
)

#: a device token is a few dozen characters; anything far longer was not meant as one.
TOKEN_MAX_CHARS = 4096
#: login waits this long for /healthz; a door on this machine or the LAN answers in milliseconds.
HEALTH_CHECK_DEADLINE_S = 3.0
#: a job id that cannot exist: looking it up proves the token without touching any memory.

LOGIN_DESCRIPTION = """\
Pair this machine with a memory door: save the door's URL and a device token in the session file
~/.config/bli-cockpit/session.json (mode 0600). Get a token from the door's admin with
`bli-memory-door pair --person NAME` (a door started with `bli-memory-door serve` pairs its own
machine by itself)."""

LOGIN_EPILOG = f"""\
Before saving, login asks the door's /healthz and makes one authenticated call that cannot match
anything: a token the door refuses is not saved (exit 1, an earlier pairing stays as it was). A door
that does not answer is only a warning: the pairing is saved (--no-check skips both).

The token is read from stdin with --token-stdin, or asked for without echo when run in a terminal;
never on the command line, where other users can see it in the process list.

examples:
  bli-memory-door pair --person ada | bli-memory-mcp login --url http://127.0.0.1:8787 --token-stdin
  bli-memory-mcp login --url https://memory.example.com      (prompts for the token)

{ENV_URL} and {ENV_TOKEN} override the session file when set."""

LOGOUT_DESCRIPTION = """\
Forget this machine's pairing: remove the session file ~/.config/bli-cockpit/session.json.
The token stays valid on the door until its admin revokes it (`bli-memory-door tokens`)."""


class OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line on stderr and exit 2 (never a usage block)."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments"):
            # argparse would repeat them, and a token pasted on the command line must not be echoed.
            message = "unrecognized arguments (not repeated: they may hold a secret)"
        raise UsageError(f"{self.prog}: {message}; see `{self.prog} --help`")


def login_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="bli-memory-mcp login",
        description=LOGIN_DESCRIPTION,
        epilog=LOGIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--url", required=True, help="the door, e.g. http://127.0.0.1:8787 (http or https)")
    parser.add_argument(
        "--token-stdin", action="store_true", help="read the device token from stdin (its first line)"
    )
    parser.add_argument(
        "--no-check",
        action="store_true",
        help="save without asking the door (its /healthz and whether it takes the token)",
    )
    parser.add_argument("--json", action="store_true", help="print {paired, url, sessionFile, door} as JSON")
    return parser


def logout_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="bli-memory-mcp logout",
        description=LOGOUT_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--json", action="store_true", help="print {removed, sessionFile} as JSON")
    return parser


def fail(prog: str, message: str, code: int) -> CliError:
    """The error that ends login or logout: `raise fail(prog, message, EXIT_...)`."""
    return CliError(f"{prog}: {message}", code)


def normalise_door_url(url: str) -> str:
    """The door URL as stored: http(s), a host, no user info, query or fragment, no trailing slash.

    Raises ValueError with a message that never repeats the URL (it might carry a credential).
    """
    from bli_memory.wire.http import parse_url

    url = url.strip()
    parse_url(url)  # the same parser the client will use later: scheme, host, port, no user info
    if "?" in url or "#" in url:
        raise ValueError("door URL must not carry a query or a fragment")
    scheme, _, rest = url.partition("://")
    return f"{scheme.lower()}://{rest}".rstrip("/")


def read_token(from_stdin: bool) -> str:
    """The token from stdin's first line, or a no-echo prompt on a terminal; ValueError otherwise."""
    if from_stdin:
        if sys.stdin is None:
            raise ValueError("--token-stdin, but there is no stdin")
        raw = sys.stdin.readline(TOKEN_MAX_CHARS + 2)
    elif sys.stdin is not None and sys.stdin.isatty():
        import getpass

        raw = getpass.getpass("device token (input hidden): ")
    else:
        raise ValueError("no token: pipe it in with --token-stdin (stdin is not a terminal to prompt on)")
    token = raw.strip()
    if not token:
        raise ValueError("no token given")
    if len(token) > TOKEN_MAX_CHARS:
        raise ValueError(f"the token is longer than {TOKEN_MAX_CHARS} characters")
    if any(char.isspace() or not char.isprintable() for char in token):
        raise ValueError("the token must be one word of printable characters")
    return token


def check_door(url: str, token: str) -> dict[str, object]:
    """Ask the door whether it answers and whether it takes this token.

    ``/healthz`` needs no token, so it only proves the door is there; the token is proven by one
    authenticated call that cannot match anything (a job lookup, ``GET /api/memory/jobs/job_probe``):
    404 means the request got past the token check, 401/403 means the door refused the token.
    Returns ``{reachable: True, version, embedder, token: accepted|refused|unchecked (reason)}`` or
    ``{reachable: False, reason}``.
    """
    from bli_memory.door_client import DoorClient
    from bli_memory.wire.reasons import to_log_reason

    deadline = time.monotonic() + HEALTH_CHECK_DEADLINE_S
    client = DoorClient(url, token)
    try:
        try:
            health = client.healthz(deadline=deadline)
        except Exception as exc:
            return {"reachable": False, "reason": to_log_reason(exc)}
        door: dict[str, object] = {
            "reachable": True,
            "version": health.get("version"),
            "embedder": health.get("embedder"),
        }
        verdict = client.check_token(deadline=deadline)
        door["token"] = verdict if verdict in ("accepted", "refused") else f"unchecked ({verdict})"
        return door
    finally:
        client.close()


def login_main(argv: list[str]) -> int:
    parser = login_parser()
    args = parser.parse_args(argv)
    try:
        url = normalise_door_url(args.url)
    except ValueError as exc:
        raise fail(parser.prog, str(exc), EXIT_USAGE) from None
    try:
        token = read_token(args.token_stdin)
    except ValueError as exc:
        raise fail(parser.prog, str(exc), EXIT_USAGE) from None
    except (EOFError, KeyboardInterrupt):
        raise fail(parser.prog, "no token given", EXIT_USAGE) from None
    door = None if args.no_check else check_door(url, token)
    if door is not None and door.get("token") == "refused":
        # checked before writing: a refused token never replaces a pairing that may still work
        if args.json:
            sys.stdout.write(
                json.dumps({"paired": False, "url": url, "sessionFile": None, "door": door}) + "\n"
            )
        raise fail(
            parser.prog,
            f"not paired: the door at {url} refused this device token (unknown or revoked); "
            "nothing saved; get a new one with `bli-memory-door pair --person NAME`",
            EXIT_FAILED,
        )
    try:
        path = write_session(url, token)
    except SessionFileError as exc:
        raise fail(parser.prog, f"not paired: {exc}", EXIT_FAILED) from None
    if args.json:
        sys.stdout.write(json.dumps({"paired": True, "url": url, "sessionFile": path, "door": door}) + "\n")
        return EXIT_OK
    sys.stdout.write(f"paired with {url}; session saved in {path} (mode 0600)\n")
    overridden = [name for name in (ENV_URL, ENV_TOKEN) if os.environ.get(name)]
    if overridden:
        sys.stderr.write(
            f"{parser.prog}: note: {' and '.join(overridden)} set here override the session file\n"
        )
    if door is not None:
        if door["reachable"]:
            sys.stdout.write(
                f"the door answers: version {door['version']}, embedder {door['embedder']}; "
                f"token {door['token']}\n"
            )
        else:
            sys.stderr.write(
                f"{parser.prog}: warning: the door does not answer /healthz ({door['reason']}); "
                "the pairing is saved, check the URL or start the door\n"
            )
    return EXIT_OK


def logout_main(argv: list[str]) -> int:
    parser = logout_parser()
    args = parser.parse_args(argv)
    path = session_file()
    try:
        removed = remove_session()
    except OSError as exc:
        raise fail(parser.prog, f"cannot remove {path}: {exc.strerror}", EXIT_FAILED) from None
    if args.json:
        sys.stdout.write(json.dumps({"removed": removed, "sessionFile": path}) + "\n")
    elif removed:
        sys.stdout.write(f"logged out: removed {path}\n")
    else:
        sys.stdout.write(f"not paired: there was no {path}\n")
    return EXIT_OK

"""`bli-memory-door`: serve the memory API, pair devices, list and revoke tokens."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bli_memory import __version__
from bli_memory.door.server import IDLE_TIMEOUT_S, MAX_CONNECTIONS, MAX_HEAD_BYTES, READ_TIMEOUT_S
from bli_memory.paths import data_home

if TYPE_CHECKING:
    from bli_memory.door.memories import MemoryService
    from bli_memory.door.store.base import Store

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
LISTEN_BACKLOG = 256
#: test hook: cap the database at this many pages, so a test meets a real "database or disk is full".
MAX_PAGES_ENV = "BLI_MEMORY_DOOR_MAX_PAGES"


class CliError(Exception):
    """A one-line error for the person at the terminal; exit status attached."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def default_db_path(env: Mapping[str, str]) -> Path:
    """SQLite under the XDG data folder: `$XDG_DATA_HOME/bli-memory/memory.db`."""
    return Path(data_home(env)) / "bli-memory" / "memory.db"


def open_store(db: str | None, env: Mapping[str, str], *, max_pages: int | None = None) -> Store:
    """The store `--db` names (default: SQLite under the XDG data folder); a CliError if it cannot open."""
    from bli_memory.door.store import StoreOpenError
    from bli_memory.door.store import open_store as open_url

    try:
        return open_url(db if db else default_db_path(env), max_pages=max_pages)
    except StoreOpenError as exc:
        raise CliError(str(exc), 2 if exc.usage else 1) from None


# ---------------------------------------------------------------------------- serve


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must say TCP: asyncio sets TCP_NODELAY on accepted sockets only when it does, and without
    # it Nagle holds each response body behind the client's delayed ACK (40 ms on every call).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(LISTEN_BACKLOG)
    sock.set_inheritable(True)
    return sock


def _autopair(store: Store, url: str, env: Mapping[str, str]) -> None:
    """Pair the local user and write the client session file when there is none, or when the one
    there points at this very door with a token this database does not know (a reset database).

    A session for another door is the user's choice and is left alone."""
    from bli_memory import settings

    path = settings.session_file(env)
    try:
        session = settings.read_session(path)
    except settings.SessionFileError as exc:
        sys.stderr.write(f"bli-memory-door: not pairing the local user: {exc}\n")
        return
    if session:
        token = session.get("device_token", "")
        if session.get("dashboard_url") != url or (token and store.authenticate(token) is not None):
            return
        sys.stderr.write(
            "bli-memory-door: the session file's token is unknown to this database; pairing again\n"
        )
    person = env.get("USER") or getpass.getuser()
    _, token = store.create_device(person=person, team="local", admin=True, label="autopair")
    try:
        settings.write_session(url, token, env)
    except settings.SessionFileError as exc:
        sys.stderr.write(f"bli-memory-door: could not pair the local user: {exc}\n")
        return
    sys.stderr.write(f"bli-memory-door paired local user {person!r}; session written to {path}\n")


def _warm(memories: MemoryService) -> None:
    """Build every space's search indexes in the background, so no first search waits for one."""
    started = time.monotonic()
    try:
        spaces = memories.warm()
    except Exception as exc:  # the door serves on: a search builds what it needs itself
        sys.stderr.write(
            f"bli-memory-door: warming the search indexes failed ({type(exc).__name__}: {exc})\n"
        )
        return
    if spaces:  # a new door has nothing to say here
        sys.stderr.write(f"bli-memory-door indexed {spaces} spaces in {time.monotonic() - started:.1f} s\n")


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)


def serve(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    import uvicorn

    from bli_memory.door.app import create_app, door_hosts
    from bli_memory.door.embed import load_embedder
    from bli_memory.door.memories import MemoryService
    from bli_memory.door.server import ServerLimits, bounded_protocol

    embedder, warning = load_embedder(args.embedder, env=env)
    if warning:
        sys.stderr.write(f"bli-memory-door: {warning}\n")
    max_pages = int(env[MAX_PAGES_ENV]) if env.get(MAX_PAGES_ENV, "").isdigit() else None
    store = open_store(args.db, env, max_pages=max_pages)
    memories = MemoryService(store, embedder)
    sock = _bind(args.host, args.port)
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{host}:{port}"
    worker = None
    if args.worker:
        try:
            from bli_memory.door.jobs import ExtractionWorker
        except ImportError as exc:  # a broken install must not stop the door from serving
            sys.stderr.write(
                f"bli-memory-door: extraction unavailable ({exc}); save with extract answers 400\n"
            )
        else:
            worker = ExtractionWorker(memories, env)
            worker.start()
    if not args.no_autopair:
        _autopair(store, url, env)
    threading.Thread(target=_warm, args=(memories,), name="bli-memory-warm", daemon=True).start()
    limits = ServerLimits(
        max_head_bytes=args.max_header_bytes,
        read_timeout_s=args.read_timeout,
        idle_timeout_s=args.idle_timeout,
        max_connections=args.max_connections,
    )
    app = create_app(
        memories,
        embedder_name=embedder.name,
        extract_enabled=worker is not None,
        on_job_queued=None if worker is None else worker.wake,
        allowed_hosts=door_hosts(args.host, port, args.allowed_host),
        read_timeout_s=limits.read_timeout_s,
    )
    if args.host in ("0.0.0.0", "::") and not args.allowed_host:
        sys.stderr.write(
            "bli-memory-door: listening on every address but answering only to loopback names; give"
            " --allowed-host for each name or address clients use\n"
        )
    config = uvicorn.Config(
        app,
        http=bounded_protocol(limits),
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
    )
    server = uvicorn.Server(config)
    sys.stderr.write(f"bli-memory-door {__version__}: store {store.describe()}, embedder {embedder.name}\n")
    sys.stderr.write(f"bli-memory-door listening on {url}\n")
    sys.stderr.flush()
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal to the handler it
    # found; this one turns that (or a signal before uvicorn took over) into a clean exit 0.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _exit_cleanly)
    try:
        server.run(sockets=[sock])
    finally:
        if worker is not None:
            worker.stop()
        store.close()
    return 0


# ---------------------------------------------------------------------------- pair and tokens


def pair(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    person = args.person.strip()
    team = args.team.strip()
    if not person or not team:
        raise CliError("--person and --team must not be empty", 2)
    store = open_store(args.db, env)
    try:
        device_id, token = store.create_device(person=person, team=team, admin=args.admin, label=args.label)
    finally:
        store.close()
    sys.stderr.write(
        f"bli-memory-door: device {device_id} for {person!r} in team {team!r}"
        f"{' (admin)' if args.admin else ''}; the token below is shown once\n"
    )
    sys.stdout.write(token + "\n")
    return 0


def tokens(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from bli_memory.door.model import iso

    path = Path(args.db).expanduser() if args.db else default_db_path(env)
    if "://" not in str(args.db or "") and not path.exists():
        raise CliError(f"no memory database at {path}")
    store = open_store(args.db, env)
    try:
        if args.tokens_command == "revoke":
            if not store.revoke_device(args.device_id):
                raise CliError(f"no active device {args.device_id!r}", 1)
            sys.stdout.write(f"revoked {args.device_id}\n")
            return 0
        devices = store.list_devices()
    finally:
        store.close()
    rows = [
        {
            "id": device["id"],
            "person": device["person"],
            "team": device["team"],
            "admin": bool(device["admin"]),
            "label": device["label"],
            "createdAt": iso(device["created_at"]),
            "revokedAt": None if device["revoked_at"] is None else iso(device["revoked_at"]),
        }
        for device in devices
    ]
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    if not rows:
        sys.stdout.write("no devices; create one with `bli-memory-door pair --person NAME`\n")
        return 0
    for row in rows:
        state = "revoked " + row["revokedAt"] if row["revokedAt"] else "active"
        admin = " admin" if row["admin"] else ""
        sys.stdout.write(f"{row['id']}  {row['team']}/{row['person']}{admin}  {row['createdAt']}  {state}\n")
    return 0


# ---------------------------------------------------------------------------- argv


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535 (0 picks a free one), not {port}")
    return port


def _positive(kind: type[int] | type[float]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
        return value

    return parse


def _name(text: str) -> str:
    """A person or team name: one printable line."""
    name = text.strip()
    if not name or not name.isprintable():
        raise argparse.ArgumentTypeError("a name must be non-empty printable text on one line")
    return name


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bli-memory-door",
        description="The bli-memory door: an HTTP memory service over SQLite.",
        epilog="Start it with `bli-memory-door serve`; it pairs the local user on first start.",
    )
    parser.add_argument("--version", action="version", version=f"bli-memory-door {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    db_help = "SQLite file (default: $XDG_DATA_HOME/bli-memory/memory.db)"

    serve_parser = commands.add_parser(
        "serve", help="serve the memory API", description="Serve the memory API."
    )
    serve_parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})"
    )
    serve_parser.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help=f"port; 0 picks a free one (default {DEFAULT_PORT})"
    )
    serve_parser.add_argument("--db", help=db_help)
    serve_parser.add_argument(
        "--embedder",
        help="onnx (default; the packaged MiniLM), onnx:/folder, openai, or none; env BLI_MEMORY_EMBEDDER",
    )
    serve_parser.add_argument(
        "--no-autopair",
        action="store_true",
        help="do not pair the local user or write the client session file",
    )
    serve_parser.add_argument(
        "--no-worker", dest="worker", action="store_false", help="do not run extraction jobs in this process"
    )
    serve_parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests whose Host is NAME (any port) or NAME:PORT; repeatable; '*' for any."
        " By default only the listening address, localhost, 127.0.0.1 and [::1] with the port",
    )
    serve_parser.add_argument(
        "--max-connections",
        type=_positive(int),
        default=MAX_CONNECTIONS,
        metavar="N",
        help="open connections at most; past it the longest-idle one is closed,"
        f" or 503 when all are busy (default {MAX_CONNECTIONS})",
    )
    serve_parser.add_argument(
        "--idle-timeout",
        type=_positive(float),
        default=IDLE_TIMEOUT_S,
        metavar="SECONDS",
        help=f"close a connection silent this long, before or between requests (default {IDLE_TIMEOUT_S:g})",
    )
    serve_parser.add_argument(
        "--read-timeout",
        type=_positive(float),
        default=READ_TIMEOUT_S,
        metavar="SECONDS",
        help=f"a request's headers, then its body, must each arrive within this; else 408 (default {READ_TIMEOUT_S:g})",
    )
    serve_parser.add_argument(
        "--max-header-bytes",
        type=_positive(int),
        default=MAX_HEAD_BYTES,
        metavar="BYTES",
        help=f"larger request headers get 431 (default {MAX_HEAD_BYTES})",
    )

    pair_parser = commands.add_parser(
        "pair",
        help="create a device token for a person",
        description="Create a device token; it is printed once.",
    )
    pair_parser.add_argument("--person", required=True, type=_name, help="the person the token belongs to")
    pair_parser.add_argument("--team", default="local", type=_name, help="the team (tenant); default 'local'")
    pair_parser.add_argument("--admin", action="store_true", help="may manage the team's container aliases")
    pair_parser.add_argument("--label", help="a note to recognise the device by")
    pair_parser.add_argument("--db", help=db_help)

    tokens_parser = commands.add_parser("tokens", help="list or revoke device tokens")
    tokens_commands = tokens_parser.add_subparsers(dest="tokens_command", metavar="ACTION", required=True)
    list_parser = tokens_commands.add_parser("list", help="list devices (never their tokens)")
    list_parser.add_argument("--json", action="store_true", help="print JSON")
    list_parser.add_argument("--db", help=db_help)
    revoke_parser = tokens_commands.add_parser("revoke", help="revoke a device's token")
    revoke_parser.add_argument("device_id", metavar="DEVICE_ID", help="the device id from `tokens list`")
    revoke_parser.add_argument("--db", help=db_help)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    handlers = {"serve": serve, "pair": pair, "tokens": tokens}
    handler = handlers.get(args.command)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return handler(args, os.environ)
    except CliError as exc:
        sys.stderr.write(f"bli-memory-door: {exc}\n")
        return exc.status
    except KeyboardInterrupt:
        return 130

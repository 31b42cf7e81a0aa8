"""`bli-memory-door serve`: the composition root. The configuration is read once (`DoorConfig`), then
store → service (`MemoryService`, the extraction worker) → app → server are built from it and run
until SIGTERM or SIGINT; the local user is paired and the search indexes warmed on the way."""

from __future__ import annotations

import argparse
import getpass
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bli_memory import __version__
from bli_memory.door.cli.pidfile import claim_pid_file, release_pid_file, write_pid_file
from bli_memory.door.cli.stores import open_store
from bli_memory.door.config import ENV_RELEVANCE_FILE, DoorConfig, LlmConfig
from bli_memory.errors import EXIT_USAGE, CliError

if TYPE_CHECKING:
    from bli_memory.door.memories import MemoryService
    from bli_memory.door.relevance import Calibration
    from bli_memory.door.rewrite import QuestionRewriter
    from bli_memory.door.store.roles import Store

LISTEN_BACKLOG = 256


def serve(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Serve the memory API until a signal; the configuration is read here, once."""
    config = DoorConfig.from_env(args, env)
    location = config.store.location
    early_check = None
    if not location.is_postgres:  # its budget runs while the libraries and the model load
        from bli_memory.door.store.sqlite.files import EarlyCheck

        early_check = EarlyCheck(location.sqlite_file(), config.store.integrity_budget_s)
    import uvicorn

    from bli_memory.door.api.app import create_app
    from bli_memory.door.api.gate import door_hosts
    from bli_memory.door.api.signin import WebSessions
    from bli_memory.door.embed import EmbedderUnavailable, door_embedder
    from bli_memory.door.memories import MemoryService
    from bli_memory.door.server import ServerLimits, bounded_protocol

    try:
        embedder, warning = door_embedder(config.embedder)
    except EmbedderUnavailable as exc:  # an explicit choice that cannot be honoured: no door at all
        raise CliError(str(exc), EXIT_USAGE) from None
    if warning:
        sys.stderr.write(f"bli-memory-door: {warning}\n")
    if config.relevance_file is not None:
        _check_relevance_file(config.relevance_file.path, config.relevance_file.calibrations, embedder.name)
    store = open_store(config.store, max_pages=config.max_pages, serving=True, early_check=early_check)
    # several doors may serve one PostgreSQL database: only a SQLite file has a pid file (and `stop`);
    # every door keeps big spaces' indexes between runs in its index folder (door/indexes.py)
    db = None if location.is_postgres else location.sqlite_file()
    memories = MemoryService(
        store,
        embedder,
        index_folder=config.index_dir,
        index_limits=config.index_limits,
        own_calibrations=None if config.relevance_file is None else config.relevance_file.calibrations,
    )
    pid_fd = None if db is None else claim_pid_file(db)
    stop_on_signal = _StopOnSignal()  # from here on a `stop` ends in the finally below
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop_on_signal)
    try:
        sock = _bind(config.host, config.port)
    except CliError:
        if pid_fd is not None and db is not None:
            release_pid_file(pid_fd, db)
        store.close()
        raise
    port = sock.getsockname()[1]
    host = f"[{config.host}]" if ":" in config.host else config.host
    url = f"http://{host}:{port}"
    if pid_fd is not None and db is not None:
        write_pid_file(pid_fd, db, url)
    worker = _start_worker(memories, config) if config.run_worker else None
    if config.autopair:
        _autopair(store, url, env)
    threading.Thread(target=_warm, args=(memories,), name="bli-memory-warm", daemon=True).start()
    limits = ServerLimits(
        max_head_bytes=config.max_header_bytes,
        read_timeout_s=config.read_timeout_s,
        idle_timeout_s=config.idle_timeout_s,
        max_connections=config.max_connections,
    )
    app = create_app(
        memories,
        embedder_name=embedder.name,
        extract_enabled=worker is not None,
        on_job_queued=None if worker is None else worker.wake,
        allowed_hosts=door_hosts(config.host, port, config.allowed_hosts),
        read_timeout_s=limits.read_timeout_s,
        rewriter=_question_rewriter(config.llm, enabled=config.rewrite_questions),
        web_sessions=WebSessions(config.login_link_ttl_s, config.web_session_ttl_s),
    )
    if config.host in ("0.0.0.0", "::") and not config.allowed_hosts:
        sys.stderr.write(
            "bli-memory-door: listening on every address but answering only to loopback names; give"
            " --allowed-host for each name or address clients use\n"
        )
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            http=bounded_protocol(limits),
            log_level="warning",
            access_log=False,
            lifespan="off",
            server_header=False,
        )
    )
    sys.stderr.write(f"bli-memory-door {__version__}: store {store.describe()}, embedder {embedder.name}\n")
    sys.stderr.write(f"bli-memory-door listening on {url}\n")
    sys.stderr.flush()
    # uvicorn shuts down gracefully on SIGTERM/SIGINT; a signal before it took over stops it at once.
    stop_on_signal.attach(server)
    try:
        server.run(sockets=[sock])
    finally:
        if worker is not None:
            worker.stop()
        memories.close()  # writes the big spaces' index snapshots, then closes the store
        if pid_fd is not None and db is not None:
            release_pid_file(pid_fd, db)
    return 0


def _start_worker(memories: MemoryService, config: DoorConfig) -> Any:
    """The extraction worker, started; None when extraction cannot run (a broken install, or the
    background check found damage before the door listened): the door serves on without it.

    The worker's child process gets the chat endpoint from `config.llm` (door/extraction.py)."""
    from bli_memory.door.errors import StoreDamaged

    try:
        from bli_memory.door.jobs import ExtractionWorker
    except ImportError as exc:  # a broken install must not stop the door from serving
        sys.stderr.write(f"bli-memory-door: extraction unavailable ({exc}); save with extract answers 400\n")
        return None
    worker = ExtractionWorker(
        memories,
        config.llm,
        exchange_retention_days=config.exchange_retention_days,
        job_cpu_s=config.job_cpu_s,
    )
    try:
        worker.start()
    except StoreDamaged:  # the background check found damage before the door listened
        sys.stderr.write("bli-memory-door: extraction off: the database is damaged\n")
        return None
    return worker


def _question_rewriter(llm: LlmConfig, *, enabled: bool) -> QuestionRewriter | None:
    """The question rewrite of searches (`door.rewrite`), when a chat endpoint is configured; one
    stderr line says it is on (never the endpoint's key)."""
    from bli_memory.door.rewrite import rewriter_for

    rewriter = rewriter_for(llm, enabled=enabled)
    if rewriter is not None:
        sys.stderr.write(
            "bli-memory-door: questions are also searched as statements (chat endpoint rewrite)\n"
        )
    return rewriter


def _check_relevance_file(path: Path, calibrations: Mapping[str, Calibration], embedder: str) -> None:
    """A chosen coefficients file must calibrate the door's embedder: without it every hit would go
    without relevance, and the prompt hook back to its cosine rule, unnoticed."""
    names = sorted(calibrations)
    if embedder not in names:
        raise CliError(
            f"{ENV_RELEVANCE_FILE}: {path} has no calibration for the embedder {embedder} "
            f"(it has {', '.join(names)})",
            EXIT_USAGE,
        )


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
    from bli_memory.door.errors import StoreDamaged

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
    try:
        _, token = store.create_device(person=person, team="local", admin=True, label="autopair")
    except StoreDamaged:  # the background check got there first; its line said so
        sys.stderr.write("bli-memory-door: not pairing the local user: the database is damaged\n")
        return
    try:
        settings.write_session(url, token, env)
    except settings.SessionFileError as exc:
        sys.stderr.write(f"bli-memory-door: could not pair the local user: {exc}\n")
        return
    sys.stderr.write(f"bli-memory-door paired local user {person!r}; session written to {path}\n")


def _warm(memories: MemoryService) -> None:
    """Build every space's search indexes in the background, so no first search waits for one; then
    let a SQLite file's background check for damage begin (both read the disk). The snapshots of big
    spaces built here are written at once (keyword indexes), and again with their graphs once those
    are built, so a door killed later starts from them. "indexed" is said when the graphs are built."""
    started = time.monotonic()
    try:
        spaces = memories.warm(wait_for_graphs=False)
    except Exception as exc:  # the door serves on: a search builds what it needs itself
        sys.stderr.write(
            f"bli-memory-door: warming the search indexes failed ({type(exc).__name__}: {exc})\n"
        )
        return
    finally:
        integrity = memories.operations.integrity
        if integrity is not None:
            integrity.go()
    _write_snapshots("index snapshots", memories.write_built_snapshots)
    _write_snapshots("index snapshots with their graphs", memories.write_built_graphs)
    if spaces:  # a new door has nothing to say here
        sys.stderr.write(f"bli-memory-door indexed {spaces} spaces in {time.monotonic() - started:.1f} s\n")


def _write_snapshots(what: str, write: Callable[[], tuple[int, float]]) -> None:
    """`write_snapshots_saying` on stderr; a failure is one line (the door serves on; the stop
    writes them)."""
    from bli_memory.door.memories import write_snapshots_saying

    try:
        write_snapshots_saying(what, write, sys.stderr)
    except Exception as exc:
        sys.stderr.write(f"bli-memory-door: could not write the {what} ({type(exc).__name__}: {exc})\n")


class _StopOnSignal:
    """SIGTERM/SIGINT handler: ask the server to finish, never raise.

    Raising SystemExit from a handler loses the signal when it lands inside a callback whose
    exceptions Python ignores (seen: a weakref callback during uvicorn's start, and the door ran on);
    a flag is always seen. Before the server exists the flag waits for it; uvicorn re-raises the
    signal here after its own graceful shutdown, which only sets the flag again."""

    def __init__(self) -> None:
        self.requested = False
        self.server: Any = None

    def __call__(self, signum: int, frame: object) -> None:
        self.requested = True
        if self.server is not None:
            self.server.should_exit = True

    def attach(self, server: Any) -> None:
        self.server = server
        if self.requested:
            server.should_exit = True

"""`bli-memory-door`: serve the memory API, stop it, pair devices, list, revoke, promote and demote tokens,
reset a team or a space (`door/reset.py`), and move a store's rows into another store (`migrate`)."""

from __future__ import annotations

import argparse
import getpass
import hashlib
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
from bli_memory.door.exchanges import DEFAULT_RETENTION_DAYS, ENV_RETENTION_DAYS
from bli_memory.door.server import IDLE_TIMEOUT_S, MAX_CONNECTIONS, MAX_HEAD_BYTES, READ_TIMEOUT_S
from bli_memory.door.web import LOGIN_LINK_TTL_S, SESSION_TTL_S
from bli_memory.paths import data_home

if TYPE_CHECKING:
    from bli_memory.door.memories import MemoryService
    from bli_memory.door.store.roles import Store
    from bli_memory.door.store.sqlite.files import EarlyCheck

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
LISTEN_BACKLOG = 256
#: test hook: cap the database at this many pages, so a test meets a real "database or disk is full".
MAX_PAGES_ENV = "BLI_MEMORY_DOOR_MAX_PAGES"
#: how long `stop` waits for the door to finish its requests and exit.
STOP_WAIT_S = 20.0
STOP_POLL_S = 0.05
ENV_MAX_PENDING_JOBS = "BLI_MEMORY_MAX_PENDING_JOBS"
#: seconds a door on PostgreSQL holds a claimed extraction job before another door may take it over.
ENV_JOB_LEASE_S = "BLI_MEMORY_JOB_LEASE_S"


class CliError(Exception):
    """A one-line error for the person at the terminal; exit status attached."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def default_db_path(env: Mapping[str, str]) -> Path:
    """SQLite under the XDG data folder: `$XDG_DATA_HOME/bli-memory/memory.db`."""
    return Path(data_home(env)) / "bli-memory" / "memory.db"


def db_path(db: str | None, env: Mapping[str, str]) -> Path:
    """The database file `--db` names (a file path, never a URL), or the default one; a
    PostgreSQL URL is a usage error (callers that accept one check `_is_postgres` first)."""
    from bli_memory.door.store import StoreOpenError, sqlite_path

    if not db:
        return default_db_path(env)
    try:
        return sqlite_path(db)
    except StoreOpenError as exc:
        raise CliError(str(exc), 2 if exc.usage else 1) from None


#: the environment variable naming the index snapshot folder when --index-dir does not
INDEX_DIR_ENV = "BLI_MEMORY_INDEX_DIR"


def index_folder(args_dir: str | None, db: str | None, env: Mapping[str, str]) -> Path:
    """Where the door keeps big spaces' index snapshots: --index-dir, else BLI_MEMORY_INDEX_DIR,
    else next to a SQLite file (`<file>.indexes/`) or, for PostgreSQL, a folder of the database's
    own under the data folder (`indexes/<host>-<port>-<database>-<digest of the masked URL>`: never
    the password)."""
    chosen = args_dir or env.get(INDEX_DIR_ENV, "").strip()
    if chosen:
        return Path(chosen).expanduser()
    if not _is_postgres(db):
        path = db_path(db, env)
        return path.with_name(path.name + ".indexes")
    from bli_memory.door.store.urls import mask_url

    masked = mask_url(str(db))
    head = masked.partition("://")[2].partition("?")[0].rpartition("@")[2]
    address, _, database = head.partition("/")
    readable = "-".join(part for part in (address.replace(":", "-") or "local", database) if part)
    readable = "".join(c if c.isalnum() or c in "._-" else "_" for c in readable)[:80]
    digest = hashlib.sha256(masked.encode("utf-8")).hexdigest()[:12]
    return Path(data_home(env)) / "bli-memory" / "indexes" / f"{readable}-{digest}"


def _is_postgres(db: str | None) -> bool:
    from bli_memory.door.store.urls import is_postgres_url

    return bool(db) and is_postgres_url(str(db))


def _max_pending_jobs(env: Mapping[str, str]) -> int:
    from bli_memory.door.store.base import MAX_PENDING_JOBS_PER_DEVICE

    raw = env.get(ENV_MAX_PENDING_JOBS, "").strip()
    if not raw:
        return MAX_PENDING_JOBS_PER_DEVICE
    if not raw.isdigit() or int(raw) < 1:
        raise CliError(f"{ENV_MAX_PENDING_JOBS} must be a whole number of at least 1, not {raw!r}", 2)
    return int(raw)


def _job_cpu_s(env: Mapping[str, str]) -> float:
    """The CPU seconds one extraction job may use (`BLI_MEMORY_JOB_CPU_S`); a bad value exits 2."""
    from bli_memory.door.extraction import ENV_JOB_CPU_S, parse_cpu_budget

    try:
        return parse_cpu_budget(env.get(ENV_JOB_CPU_S, ""))
    except ValueError as exc:
        raise CliError(str(exc), 2) from None


def _job_lease_s(env: Mapping[str, str]) -> float | None:
    raw = env.get(ENV_JOB_LEASE_S, "").strip()
    if not raw:
        return None
    try:
        lease = float(raw)
    except ValueError:
        lease = 0.0
    if not 0.5 <= lease <= 86_400:
        raise CliError(f"{ENV_JOB_LEASE_S} must be a number of seconds from 0.5 to 86400, not {raw!r}", 2)
    return lease


def _integrity_budget_s(env: Mapping[str, str]) -> float:
    from bli_memory.door.store.sqlite.files import budget_from_env

    try:
        return budget_from_env(env)
    except ValueError as exc:
        raise CliError(str(exc), 2) from None


#: said once a store opens from a `--db` URL holding a password (the URL itself is never printed).
PASSWORD_IN_ARGV = (
    "--db holds a password, which any local user can read in the process list; give the URL without "
    "it and the password in ~/.pgpass (0600), PGPASSWORD or a libpq service file (docs/door-operations.md)"
)


def open_store(
    db: str | None,
    env: Mapping[str, str],
    *,
    max_pages: int | None = None,
    serving: bool = False,
    early_check: EarlyCheck | None = None,
) -> Store:
    """The store `--db` names (default: SQLite under the XDG data folder); every failure is one
    CliError line, and what the store noticed on the way (a folder it made, a file others can read,
    a check cut short, damage the background check found while `serving`) one line each on stderr."""
    from bli_memory.door.store import StoreOpenError
    from bli_memory.door.store import open_store as open_url
    from bli_memory.door.store.urls import url_secrets

    integrity_budget_s = _integrity_budget_s(env)

    def notice(line: str) -> None:
        sys.stderr.write(f"bli-memory-door: {line}\n")

    try:
        store = open_url(
            db if db else default_db_path(env),
            max_pages=max_pages,
            max_pending_jobs=_max_pending_jobs(env),
            job_lease_s=_job_lease_s(env),
            integrity_budget_s=integrity_budget_s,
            check_in_background=serving,
            early_check=early_check,
            notice=notice,
        )
    except StoreOpenError as exc:
        raise CliError(str(exc), 2 if exc.usage else 1) from None
    if db and _is_postgres(db) and url_secrets(db):
        notice(PASSWORD_IN_ARGV)
    return store


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
        integrity = getattr(memories.store, "integrity", None)
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


# ---------------------------------------------------------------------------- the pid file, stop


def pid_file_path(db: Path) -> Path:
    """`<database>.pid`: the door that serves this database, while it runs."""
    return Path(f"{db}.pid")


def _claim_pid_file(db: Path) -> int:
    """Lock the database's pid file for this door's lifetime; refuse when another door holds it.

    The lock (not the file's existence) says a door runs: a door killed outright leaves the file,
    but the kernel drops its lock, and the next door takes the file over."""
    import fcntl

    path = pid_file_path(db)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise CliError(f"cannot write the pid file {path}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        other = _read_pid_file(fd)
        os.close(fd)
        raise CliError(
            f"another door (pid {other.get('pid', '?')}, {other.get('url') or 'starting'}) already serves "
            f"{db}; stop it with `bli-memory-door stop --db {db}`"
        ) from None
    _write_pid_file(fd, db, "")  # the pid at once: `stop` works before the door listens
    return fd


def _write_pid_file(fd: int, db: Path, url: str) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "url": url, "db": str(db)}).encode() + b"\n", 0)


def _release_pid_file(fd: int, db: Path) -> None:
    """Remove the pid file if it is still this door's, then drop the lock."""
    path = pid_file_path(db)
    try:
        if os.stat(path).st_ino == os.fstat(fd).st_ino:
            path.unlink()
    except OSError:
        pass
    os.close(fd)


def _read_pid_file(fd: int) -> dict[str, Any]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _lock_free(fd: int) -> bool:
    """True when no door holds the pid file's lock."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


def _is_a_door(pid: int) -> bool:
    """Whether process `pid` runs bli-memory-door (by its command line; where there is no /proc,
    the lock it holds on the pid file is the proof)."""
    if not Path("/proc/self/cmdline").exists():
        return True
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return "bli-memory-door" in command or "bli_memory.door" in command


def stop(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """SIGTERM the door that serves this database (by its pid file), and wait for it to exit."""
    if _is_postgres(args.db):
        raise CliError(
            "doors on PostgreSQL keep no pid file (several may serve one database); stop one with SIGTERM"
        )
    path = db_path(args.db, env)
    pid_path = pid_file_path(path)
    try:
        fd = os.open(pid_path, os.O_RDONLY)
    except FileNotFoundError:
        raise CliError(f"no door runs for this data folder ({path})") from None
    except OSError as exc:
        raise CliError(f"cannot read {pid_path}: {exc.strerror}") from None
    try:
        if _lock_free(fd):
            raise CliError(f"no door runs for this data folder ({path}; the last one did not exit cleanly)")
        info = _read_pid_file(fd)
        pid = info.get("pid")
        if not isinstance(pid, int) or pid <= 1:
            raise CliError(f"{pid_path} names no process; not stopping anything")
        if not _is_a_door(pid):
            raise CliError(f"{pid_path} names pid {pid}, which is not a bli-memory door; not stopping it")
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass  # it exited meanwhile
        except PermissionError:
            raise CliError(f"the door (pid {pid}) belongs to another user; not stopping it") from None
        deadline = time.monotonic() + STOP_WAIT_S
        while not _lock_free(fd):
            if time.monotonic() > deadline:
                raise CliError(f"the door (pid {pid}) did not stop within {STOP_WAIT_S:.0f} s")
            time.sleep(STOP_POLL_S)
    finally:
        os.close(fd)
    sys.stdout.write(f"stopped door (pid {pid}) on {info.get('url') or 'no address yet'}\n")
    return 0


def serve(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    early_check = None
    if not _is_postgres(args.db):  # its budget runs while the libraries and the model load
        from bli_memory.door.store.sqlite.files import EarlyCheck

        early_check = EarlyCheck(db_path(args.db, env), _integrity_budget_s(env))
    import uvicorn

    from bli_memory.door.app import create_app, door_hosts
    from bli_memory.door.embed import EmbedderUnavailable, door_embedder
    from bli_memory.door.errors import StoreDamaged
    from bli_memory.door.indexes import IndexLimits
    from bli_memory.door.memories import MemoryService
    from bli_memory.door.server import ServerLimits, bounded_protocol
    from bli_memory.door.web import WebSessions

    if args.exchange_retention_days is None:
        args.exchange_retention_days = _retention_days_from_env(env)
    job_cpu_s = _job_cpu_s(env)
    try:
        embedder, warning = door_embedder(args.embedder, env=env)
    except EmbedderUnavailable as exc:  # an explicit choice that cannot be honoured: no door at all
        raise CliError(str(exc), 2) from None
    if warning:
        sys.stderr.write(f"bli-memory-door: {warning}\n")
    max_pages = int(env[MAX_PAGES_ENV]) if env.get(MAX_PAGES_ENV, "").isdigit() else None
    store = open_store(args.db, env, max_pages=max_pages, serving=True, early_check=early_check)
    # several doors may serve one PostgreSQL database: only a SQLite file has a pid file (and `stop`);
    # every door keeps big spaces' indexes between runs in its index folder (door/indexes.py)
    db = None if _is_postgres(args.db) else db_path(args.db, env)
    memories = MemoryService(
        store,
        embedder,
        index_folder=index_folder(args.index_dir, args.db, env),
        index_limits=IndexLimits.from_env(env),
    )
    pid_fd = None if db is None else _claim_pid_file(db)
    stop_on_signal = _StopOnSignal()  # from here on a `stop` ends in the finally below
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop_on_signal)
    try:
        sock = _bind(args.host, args.port)
    except CliError:
        if pid_fd is not None and db is not None:
            _release_pid_file(pid_fd, db)
        store.close()
        raise
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{host}:{port}"
    if pid_fd is not None and db is not None:
        _write_pid_file(pid_fd, db, url)
    worker = None
    if args.worker:
        try:
            from bli_memory.door.jobs import ExtractionWorker
        except ImportError as exc:  # a broken install must not stop the door from serving
            sys.stderr.write(
                f"bli-memory-door: extraction unavailable ({exc}); save with extract answers 400\n"
            )
        else:
            worker = ExtractionWorker(
                memories, env, exchange_retention_days=args.exchange_retention_days, job_cpu_s=job_cpu_s
            )
            try:
                worker.start()
            except StoreDamaged:  # the background check found damage before the door listened
                sys.stderr.write("bli-memory-door: extraction off: the database is damaged\n")
                worker = None
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
        rewriter=_question_rewriter(env),
        web_sessions=WebSessions(args.login_link_ttl, args.web_session_ttl),
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
    # uvicorn shuts down gracefully on SIGTERM/SIGINT; a signal before it took over stops it at once.
    stop_on_signal.attach(server)
    try:
        server.run(sockets=[sock])
    finally:
        if worker is not None:
            worker.stop()
        memories.close()  # writes the big spaces' index snapshots, then closes the store
        if pid_fd is not None and db is not None:
            _release_pid_file(pid_fd, db)
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

    if not _is_postgres(args.db) and not (path := db_path(args.db, env)).exists():
        raise CliError(f"no memory database at {path}")
    store = open_store(args.db, env)
    try:
        if args.tokens_command == "revoke":
            cancelled = store.revoke_device(args.device_id)
            if cancelled is None:
                raise CliError(f"no active device {args.device_id!r}", 1)
            jobs = f"; cancelled its {cancelled} waiting extract job(s)" if cancelled else ""
            sys.stdout.write(f"revoked {args.device_id}{jobs}\n")
            return 0
        if args.tokens_command in ("promote", "demote"):
            admin = args.tokens_command == "promote"
            if not store.set_device_admin(args.device_id, admin):
                raise CliError(f"no active device {args.device_id!r}", 1)
            sys.stdout.write(f"{args.device_id} is {'now' if admin else 'no longer'} an admin device\n")
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


# ---------------------------------------------------------------------------- reset (door/reset.py)


def _refuse_while_served(db: Path) -> None:
    """CliError naming the door that serves `db`, if one does (its pid file is locked)."""
    serving = serving_door(db)
    if serving is not None:
        raise CliError(
            f"reset refused: {serving}; stop it first with `bli-memory-door stop --db {db}`; nothing was removed"
        )


def reset(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Remove a team's memories (or one space's) for good, behind a typed name and a backup; only
    while no door serves the database (its pid-file lock is held throughout, so none starts)."""
    from bli_memory.door import reset as resetting
    from bli_memory.door.store.urls import mask_url

    if _is_postgres(args.db):  # no file to back up, nor a pid file saying which doors serve it
        raise CliError(
            f"reset refused: it works on a SQLite file only (it backs the file up first), and --db names the "
            f"PostgreSQL database {mask_url(str(args.db))}; nothing was removed",
            2,
        )
    path = db_path(args.db, env)
    if not path.exists():
        raise CliError(f"no memory database at {path}")
    _refuse_while_served(path)
    try:
        pid_fd = _claim_pid_file(path)  # held to the end: no door starts on the file meanwhile
    except CliError as exc:  # a door started since the check above
        raise CliError(f"reset refused: {exc}") from None
    try:
        store = open_store(args.db, env)
        try:
            return resetting.reset(store, path, team=args.team, space=args.space, confirm=args.confirm)
        except resetting.ResetRefused as refused:
            raise CliError(f"reset refused: {refused}", refused.status) from None
        finally:
            store.close()
    finally:
        _release_pid_file(pid_fd, path)


# ---------------------------------------------------------------------------- migrate


def serving_door(db: Path) -> str | None:
    """A line naming the door that serves the SQLite file `db` (it holds the pid file), or None."""
    try:
        fd = os.open(pid_file_path(db), os.O_RDONLY)
    except OSError:
        return None
    try:
        if _lock_free(fd):
            return None
        info = _read_pid_file(fd)
    finally:
        os.close(fd)
    return f"a door (pid {info.get('pid', '?')}, {info.get('url') or 'starting'}) serves {db}"


def _hold_for_migration(db: Path) -> int:
    """Hold the pid file of a migration's SQLite destination as a door would: no door starts on it
    meanwhile (theirs says `migrating`), and `stop --db` interrupts the migration cleanly."""
    fd = _claim_pid_file(db)
    _write_pid_file(fd, db, "migrating")
    return fd


def migrate(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Copy every row of one store into another, resumably, then verify (door/migrate.py)."""
    from bli_memory.door import migrate as migration

    locks = migration.DoorLocks(serving=serving_door, hold=_hold_for_migration, release=_release_pid_file)
    try:
        return migration.run(
            args.source, args.dest, batch=args.batch, env=env, out=sys.stdout, err=sys.stderr, locks=locks
        )
    except migration.MigrateError as exc:
        raise CliError(str(exc), exc.status) from None


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


def _retention_days_from_env(env: Mapping[str, str]) -> float:
    """The stored exchanges' retention from the environment, or the default; a bad value is exit 2."""
    raw = env.get(ENV_RETENTION_DAYS, "").strip()
    if not raw:
        return DEFAULT_RETENTION_DAYS
    try:
        return float(_positive(float)(raw))
    except argparse.ArgumentTypeError as exc:
        raise CliError(f"{ENV_RETENTION_DAYS}: {exc}", 2) from None


def _name(text: str) -> str:
    """A person or team name: one printable line."""
    name = text.strip()
    if not name or not name.isprintable():
        raise argparse.ArgumentTypeError("a name must be non-empty printable text on one line")
    return name


#: `serve --help`'s epilog: every environment variable the door reads, and its start lines' words.
SERVE_EPILOG = """\
embedder (search by meaning):
  --embedder onnx (the default) runs all-MiniLM-L6-v2 locally; `none` serves keyword + recency only.
  When nothing chooses one (no --embedder, BLI_MEMORY_EMBEDDER or BLI_MEMORY_MODEL_DIR) and the
  default model cannot load, the door says so in one line and serves keyword + recency; an embedder
  you chose that cannot load stops it (exit 2).
  BLI_MEMORY_EMBEDDER                the embedder when --embedder is not given
  BLI_MEMORY_MODEL_DIR               onnx: a folder with model.onnx (or onnx/model.onnx) and tokenizer.json,
                                     used instead of the packaged MiniLM (like --embedder onnx:FOLDER)
  BLI_MEMORY_EMBED_THREADS           onnx: onnxruntime's thread count (default: its own choice)
  BLI_MEMORY_EMBED_QUERY_PREFIX      onnx: text put before each query (e5 folders: "query: ")
  BLI_MEMORY_EMBED_PASSAGE_PREFIX    onnx: text put before each memory (e5 folders: "passage: ")
  BLI_MEMORY_EMBED_URL               openai: base URL of an OpenAI-compatible /v1/embeddings (required)
  BLI_MEMORY_EMBED_MODEL             openai: the model to ask for (required unless --embedder openai:MODEL)
  BLI_MEMORY_EMBED_KEY               openai: bearer key (optional; never logged)
  BLI_MEMORY_EMBED_INPUT_TYPE_FIELD  openai: a request field set to "query" or "passage", for servers
                                     that embed the two differently (optional; e.g. input_type)

librarian (facts from what the Stop hook saves):
  The start line `librarian: deterministic` means facts are distilled by rules, no model: sentences
  that carry a decision, convention, command, path, version, preference or fix are kept, filler and
  logs dropped; the same exchange always gives the same facts. With both variables below set it says
  `librarian: LLM extractor (MODEL) with deterministic fallback`: an OpenAI-compatible
  /v1/chat/completions distils them, and the rules take over whenever it fails.
  BLI_MEMORY_LLM_URL                 base URL of the chat endpoint
  BLI_MEMORY_LLM_MODEL               the model to ask for
  BLI_MEMORY_LLM_KEY                 bearer key (optional; never logged)

stored exchanges (what the Stop hook sent, kept beside its facts):
  Each exchange the librarian distils is also kept as a document, so nothing it said is lost when no
  fact caught it. Documents older than the retention are tombstoned by the extraction worker (at start,
  then hourly; never with --no-worker); the facts distilled from them stay.
  BLI_MEMORY_EXCHANGE_RETENTION_DAYS days to keep them when --exchange-retention-days is not given
                                     (default 90)

search, big spaces and several doors:
  BLI_MEMORY_QUERY_REWRITE           0: never search a question also as a statement (with an LLM endpoint
                                     set, a question is rewritten once, within a deadline)
  BLI_MEMORY_ANN_MIN_VECTORS         a space of this many vectors or more is searched through an
                                     approximate graph (default 50000); smaller ones exactly
  BLI_MEMORY_SNAPSHOT_MIN_MEMORIES   the indexes of spaces this big are kept in the index folder between
                                     runs (default 20000)
  BLI_MEMORY_INDEX_DIR               the index folder when --index-dir is not given (default: DB.indexes/
                                     for SQLite; for PostgreSQL $XDG_DATA_HOME/bli-memory/indexes/HOST-
                                     PORT-DATABASE-DIGEST, never the password); 0700, files 0600
  BLI_MEMORY_MAX_PENDING_JOBS        extraction jobs one device may have waiting (default 200; then 429)
  BLI_MEMORY_JOB_LEASE_S             PostgreSQL: how long a door's claim on a job lasts unless renewed
                                     (default 60); another door takes over a job whose lease ran out
  BLI_MEMORY_JOB_CPU_S               CPU seconds one job's extraction may use (default 5); past it the
                                     job fails ("used more than N s of CPU") and the queue goes on

the database file (SQLite):
  An existing file is checked for damage (PRAGMA quick_check) before anything writes to it; a damaged
  file is refused (exit 1). A file too big to check within the budget (a million memories is 2.3 GB)
  is served at once and checked whole in the background: /healthz says integrityCheck "running",
  then "whole"; damage found then is one log line, every write answers 503 store_damaged, reads go on
  and /healthz says "damaged".
  BLI_MEMORY_INTEGRITY_CHECK_BUDGET_S seconds of that check before the door opens (default 1; 0 checks
                                     all of it in the background)
"""


#: how `--from` and `--to` name a store.
STORE_FORMS = "a SQLite file (PATH or sqlite:PATH) or postgresql://USER@HOST:PORT/DATABASE"
#: rows read and written per batch of `migrate` (one destination transaction each) unless --batch says.
MIGRATE_BATCH_ROWS = 1000
MIGRATE_DESCRIPTION = """\
Copy every row of one store into another: teams, people, devices (their token hashes, so every
token keeps working, and revoked devices stay revoked), container aliases, every memory version and
tombstone with its vector and the model that made it, extraction jobs (queued, done, failed,
cancelled), experience rows and the devices' hourly hook figures, keeping their ids and the
memories' save order. SQLite to PostgreSQL, PostgreSQL to SQLite, or SQLite to SQLite."""
MIGRATE_EPILOG = """\
before anything is written:
  Both stores are opened, which brings each to the current schema. The migration is refused, with
  one line and nothing written, when --from and --to name the same store, when a door serves either
  SQLite file (stop it: bli-memory-door stop --db FILE), or when the destination holds any row that
  is not the source's row unchanged (a store another door has used; migrate into an empty one).
  Rows an earlier, interrupted run of this migration copied are not a conflict.

copying:
  Table by table, in batches of --batch rows, one destination transaction each; progress on stderr
  (rows done / total and rate; a plain line every few seconds when stderr is not a terminal).
  Ctrl-C, SIGTERM, SIGKILL or a crash at any point loses nothing: run the same command again and it
  copies only what is missing. A run after a complete one copies nothing ("0 rows copied; verified").
  While it runs, the SQLite destination's pid file is held, so no door starts serving it.

verifying:
  Each table is counted and checksummed on both sides over a canonical form of its rows (the same
  rows give the same checksum in either store); the table goes to stdout. A difference exits 1
  naming the table.

exit status: 0 copied and verified; 1 refused, failed or not verified; 2 a wrong argument (an
unknown URL scheme, the same store twice); 130 interrupted.

passwords:
  Give PostgreSQL's password in ~/.pgpass (mode 0600), PGPASSWORD or a libpq service file
  (postgresql://?service=NAME), which PostgreSQL's client library reads itself: a password inside
  the URL works too, but every local user can read a command line. A password in a URL is never
  printed (postgresql://memory:***@db.internal/memory), nor in the messages quoting it.

example:
  bli-memory-door stop
  bli-memory-door migrate --from ~/.local/share/bli-memory/memory.db \\
      --to postgresql://memory@db.internal:5432/memory
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bli-memory-door",
        description="The bli-memory door: an HTTP memory service over SQLite.",
        epilog="Start it with `bli-memory-door serve` (it pairs the local user on first start); stop it "
        "with `bli-memory-door stop`. The database folder is private (0700, files 0600). "
        "`bli-memory-door serve --help` lists the environment variables (embedder, librarian).",
    )
    parser.add_argument("-V", "--version", action="version", version=f"bli-memory-door {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    db_help = "SQLite file (default: $XDG_DATA_HOME/bli-memory/memory.db)"
    store_help = (
        f"{db_help}, or postgresql://USER@HOST:PORT/DATABASE: its password in ~/.pgpass, PGPASSWORD or "
        "a libpq service file (postgresql://?service=NAME), not in the URL, where ps shows it"
    )

    serve_parser = commands.add_parser(
        "serve",
        help="serve the memory API",
        description="Serve the memory API.",
        epilog=SERVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve_parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})"
    )
    serve_parser.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help=f"port; 0 picks a free one (default {DEFAULT_PORT})"
    )
    serve_parser.add_argument("--db", help=store_help)
    serve_parser.add_argument(
        "--index-dir",
        metavar="DIR",
        help="where big spaces' search indexes are kept between runs (default: DB.indexes/ next to a "
        f"SQLite file, a folder per database under the data folder for PostgreSQL); env {INDEX_DIR_ENV}",
    )
    serve_parser.add_argument(
        "--embedder",
        help="onnx (default; the packaged MiniLM), onnx:/folder, openai, openai:MODEL, or none; "
        "env BLI_MEMORY_EMBEDDER. A choice that cannot load is an error (exit 2)",
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
        "--exchange-retention-days",
        type=_positive(float),
        default=None,
        metavar="DAYS",
        help="tombstone stored exchanges (documents of what the Stop hook sent) older than this; their"
        f" facts stay (default {DEFAULT_RETENTION_DAYS:g}, or env {ENV_RETENTION_DAYS})",
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
        "--login-link-ttl",
        type=_positive(float),
        default=LOGIN_LINK_TTL_S,
        metavar="SECONDS",
        help="how long a memory page sign-in link (`bli-memory-mcp open`) stays usable, once"
        f" (default {LOGIN_LINK_TTL_S:g})",
    )
    serve_parser.add_argument(
        "--web-session-ttl",
        type=_positive(float),
        default=SESSION_TTL_S,
        metavar="SECONDS",
        help=f"how long a memory page session lasts from sign-in (default {SESSION_TTL_S:g})",
    )
    serve_parser.add_argument(
        "--max-header-bytes",
        type=_positive(int),
        default=MAX_HEAD_BYTES,
        metavar="BYTES",
        help=f"larger request headers get 431 (default {MAX_HEAD_BYTES})",
    )

    stop_parser = commands.add_parser(
        "stop",
        help="stop the door that serves this database",
        description="Stop the door that serves this database: SIGTERM to the pid in its pid file "
        "(<database>.pid, written by `serve`) once that process is seen to be a bli-memory door, then "
        f"wait up to {STOP_WAIT_S:.0f} s for it to finish its requests. Doors of other databases "
        "and other users are never touched. Exit 0 when it stopped; 1 when no door serves this "
        "database, or it did not stop in time.",
    )
    stop_parser.add_argument("--db", help=db_help)

    pair_parser = commands.add_parser(
        "pair",
        help="create a device token for a person",
        description="Create a device token; it is printed once. Admin belongs to this one device: "
        "the person's other devices keep what they have (`tokens promote|demote` changes it).",
    )
    pair_parser.add_argument("--person", required=True, type=_name, help="the person the token belongs to")
    pair_parser.add_argument("--team", default="local", type=_name, help="the team (tenant); default 'local'")
    pair_parser.add_argument(
        "--admin", action="store_true", help="this device may manage the team's container aliases"
    )
    pair_parser.add_argument("--label", help="a note to recognise the device by")
    pair_parser.add_argument("--db", help=store_help)

    tokens_parser = commands.add_parser("tokens", help="list, revoke, promote or demote device tokens")
    tokens_commands = tokens_parser.add_subparsers(dest="tokens_command", metavar="ACTION", required=True)
    list_parser = tokens_commands.add_parser("list", help="list devices (never their tokens)")
    list_parser.add_argument("--json", action="store_true", help="print JSON")
    list_parser.add_argument("--db", help=store_help)
    revoke_parser = tokens_commands.add_parser(
        "revoke", help="revoke a device's token and cancel its waiting extract jobs"
    )
    revoke_parser.add_argument("device_id", metavar="DEVICE_ID", help="the device id from `tokens list`")
    revoke_parser.add_argument("--db", help=store_help)
    for action, what in (("promote", "make a device an admin"), ("demote", "take admin from a device")):
        admin_parser = tokens_commands.add_parser(action, help=what)
        admin_parser.add_argument("device_id", metavar="DEVICE_ID", help="the device id from `tokens list`")
        admin_parser.add_argument("--db", help=store_help)
    reset_parser = commands.add_parser(
        "reset",
        help="remove a team's memories, or one space's, for good (operator only, with a backup)",
        description="Remove for good the memories (every version and tombstone) and the extraction jobs "
        "of a team, or of one space of it with --space. Run on the door's machine while no door serves "
        "the database (stop it first; none can start meanwhile). Says what would go, asks you to type "
        "the team name (or the space tag) on stdin, writes a backup of the whole database beside it "
        "(SQLite's online backup, mode 0600, path printed), then removes. Devices, aliases and the "
        "experience log stay. To undo: stop the door and copy the backup over the database file. A SQLite "
        "file only: a postgresql:// URL is refused.",
    )
    reset_parser.add_argument("--team", required=True, type=_name, help="the team whose memories go")
    reset_parser.add_argument(
        "--space", type=_name, metavar="TAG", help="only this space of the team (its tag and its aliases)"
    )
    reset_parser.add_argument(
        "--confirm",
        type=_name,
        metavar="NAME",
        help="for scripts: the team name (or, with --space, the space tag) instead of typing it",
    )
    reset_parser.add_argument("--db", help=db_help)

    migrate_parser = commands.add_parser(
        "migrate",
        help="copy every row of one store into another (SQLite, PostgreSQL), resumably, and verify",
        description=MIGRATE_DESCRIPTION,
        epilog=MIGRATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    migrate_parser.add_argument(
        "--from", dest="source", required=True, metavar="STORE", help="the store to copy: " + STORE_FORMS
    )
    migrate_parser.add_argument(
        "--to", dest="dest", required=True, metavar="STORE", help="the store to copy into: " + STORE_FORMS
    )
    migrate_parser.add_argument(
        "--batch",
        type=_positive(int),
        default=MIGRATE_BATCH_ROWS,
        metavar="ROWS",
        help=f"rows read and written at a time, one destination transaction each (default {MIGRATE_BATCH_ROWS})",
    )
    return parser


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
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    handlers = {
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
        sys.stderr.write(f"bli-memory-door: {_without_passwords(str(exc), args)}\n")
        return exc.status
    except KeyboardInterrupt:
        return 130


def _without_passwords(line: str, args: argparse.Namespace) -> str:
    """`line` with every password of the database URLs given (`--db`, `--from`, `--to`) masked: the
    last guard before an error line is printed, whatever library worded it."""
    from bli_memory.door.store.urls import scrub

    urls = [value for name in ("db", "source", "dest") if isinstance(value := getattr(args, name, None), str)]
    return scrub(line, *urls)


def _question_rewriter(env: Mapping[str, str]) -> Any:
    """The question rewrite of searches (`door.rewrite`), when a chat endpoint is configured; one
    stderr line says it is on (never the endpoint's key)."""
    from bli_memory.door.rewrite import rewriter_from_env

    rewriter = rewriter_from_env(env)
    if rewriter is not None:
        sys.stderr.write(
            "bli-memory-door: questions are also searched as statements (chat endpoint rewrite)\n"
        )
    return rewriter

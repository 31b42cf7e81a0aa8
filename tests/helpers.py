"""Helpers shared by test modules of every folder: where the repository and the test fixtures are, the
real door as a subprocess (`DoorProcess`, started by the fixtures of tests/conftest.py) over a SQLite
file or a PostgreSQL database (`PostgresServer`), and readers of a module's import statements.
Standard library only at import (psycopg and pgserver are imported where a PostgreSQL test needs them)."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

#: the tests/ folder, the repository that holds it, and the data files tests read
TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
TRANSCRIPTS = FIXTURES / "transcripts"
REDACTION = FIXTURES / "redaction"

#: names a PostgreSQL server (a URL with the right to create databases) the tests use instead of
#: starting their own with pgserver.
POSTGRES_URL_ENV = "BLI_MEMORY_TEST_POSTGRES_URL"
DOOR_START_TIMEOUT_S = 60.0
LISTENING = "bli-memory-door listening on "
BIN = Path(sys.executable).parent


class PostgresServer:
    """One PostgreSQL server with pgvector for the test session: the one POSTGRES_URL_ENV names, or
    a server the `pgserver` wheel runs from a temporary folder (as root it runs as its own user).
    Each test asks for a database of its own by name (`database`)."""

    def __init__(self) -> None:
        self._folder: str | None = None
        self._server: Any = None
        named = os.environ.get(POSTGRES_URL_ENV, "").strip()
        if named:
            self.url = named
        else:
            import pgserver

            self._folder = tempfile.mkdtemp(prefix="bli-tests-pg-")
            self._server = pgserver.get_server(self._folder, cleanup_mode="delete")
            self.url = self._server.get_uri()
            # a throwaway server: no flush to disk at each commit, nor of each test's database at the end
            for setting in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
                self.execute(f"ALTER SYSTEM SET {setting}")
            self.execute("SELECT pg_reload_conf()")

    @property
    def folder(self) -> str | None:
        """The data folder of the tests' own server (None for the one POSTGRES_URL_ENV names)."""
        return self._folder

    def database(self, name: str) -> str:
        """The URL of database `name`, created empty the first time it is asked for."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
                conn.execute(f'CREATE DATABASE "{name}"')
        return database_url(self.url, name)

    def database_for(self, folder: Path) -> str:
        """A database of one test folder's own (the same folder, the same database)."""
        return self.database("t_" + hashlib.sha256(str(folder).encode()).hexdigest()[:24])

    def execute(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """One statement as the server's administrator (rows, or [] for a statement without)."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            cursor = conn.execute(query, params)
            return list(cursor.fetchall()) if cursor.description else []

    def restart(self) -> None:
        """Restart the server (fast shutdown: every session is cut), as an operator would; only the
        tests' own server can be."""
        if self._server is None:
            raise RuntimeError(
                f"restarting needs the tests' own server, not the one {POSTGRES_URL_ENV} names"
            )
        from pgserver._commands import pg_ctl

        pgdata = self._server.pgdata
        pg_ctl(
            ["-w", "-m", "fast", "-l", str(pgdata / "log"), "restart"],
            pgdata=pgdata,
            user=self._server.system_user,
            timeout=60,
        )

    def stop(self) -> None:
        """Stop the tests' own server now (fast: sessions are cut) and remove its folder.

        pg_ctl is asked first, whatever pgserver remembers: after `restart` pgserver still holds the
        first postmaster, which a normal init has reaped, so its cleanup thinks the server stopped and
        only deletes the folder, and the new postmaster lived on until it noticed (about a minute)."""
        if self._server is not None:
            from pgserver._commands import pg_ctl

            pgdata = self._server.pgdata
            if (pgdata / "postmaster.pid").exists():
                with suppress(subprocess.SubprocessError):
                    pg_ctl(
                        ["-w", "-m", "fast", "stop"], pgdata=pgdata, user=self._server.system_user, timeout=60
                    )
            self._server.cleanup()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)


def database_url(url: str, name: str) -> str:
    """`url` (postgresql://...) naming database `name` instead of its own."""
    scheme, _, rest = url.partition("://")
    head, question, query = rest.partition("?")
    authority = head.split("/", 1)[0]
    return f"{scheme}://{authority}/{name}{question}{query}"


class DoorProcess:
    """A running `bli-memory-door serve`; its stderr is drained into `lines` so it never blocks.
    `db` is a SQLite file or a postgresql:// URL."""

    def __init__(
        self, db: Path | str, home: Path, extra_args: list[str], env: dict[str, str] | None = None
    ) -> None:
        self.db = db
        self.home = home
        self.extra_args = extra_args
        self.extra_env = env or {}
        self.lines: list[str] = []
        self.url = ""
        self.token = ""
        self.process: subprocess.Popen[str] | None = None
        self.start()

    def env(self) -> dict[str, str]:
        env = {**os.environ, "HOME": str(self.home), "XDG_DATA_HOME": str(self.home / "share")}
        env.pop("BLI_MEMORY_EMBEDDER", None)
        env.update(self.extra_env)
        return env

    def start(self) -> None:
        """Start (or restart, on the same file) and wait for the listening line."""
        command = [
            str(BIN / "bli-memory-door"),
            "serve",
            "--port",
            "0",
            "--db",
            str(self.db),
            "--no-autopair",
        ]
        self.process = subprocess.Popen(
            command + self.extra_args,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=self.env(),
        )
        ready = threading.Event()
        process = self.process

        def drain() -> None:
            assert process.stderr is not None
            for line in process.stderr:
                self.lines.append(line.rstrip("\n"))
                if line.startswith(LISTENING):
                    self.url = line[len(LISTENING) :].strip()
                    ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(DOOR_START_TIMEOUT_S) or not self.url or process.poll() is not None:
            self.kill()
            raise RuntimeError("the door did not start:\n" + "\n".join(self.lines[-20:]))
        if not self.token:
            self.token = self.pair("tester", team="local", admin=True)

    @property
    def on_postgres(self) -> bool:
        return str(self.db).startswith("postgresql://")

    def rows(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """A read of the door's database behind its back (`?` marks parameters on either store)."""
        if self.on_postgres:
            import psycopg

            with psycopg.connect(str(self.db), autocommit=True) as conn:
                return list(conn.execute(query.replace("?", "%s"), params).fetchall())  # type: ignore[arg-type]
        import sqlite3

        with sqlite3.connect(self.db) as conn:
            return list(conn.execute(query, params).fetchall())

    def dump(self) -> str:
        """Every row of every table of the door's database, as text."""
        if not self.on_postgres:
            import sqlite3

            return "\n".join(sqlite3.connect(self.db).iterdump())
        from bli_memory.door.store.base import COPY_TABLES

        return "\n".join(repr(row) for table in COPY_TABLES for row in self.rows(f"SELECT * FROM {table}"))

    def pair(self, person: str, team: str | None = None, admin: bool = False) -> str:
        """A new device token (through the real CLI) for `person` in `team`."""
        command = [str(BIN / "bli-memory-door"), "pair", "--person", person, "--db", str(self.db)]
        if team:
            command += ["--team", team]
        if admin:
            command.append("--admin")
        done = subprocess.run(command, capture_output=True, text=True, env=self.env(), timeout=60, check=True)
        return done.stdout.strip()

    def request(
        self, method: str, path: str, body: Any = None, token: str | None = None, raw: bytes | None = None
    ) -> tuple[int, Any]:
        """One HTTP call (urllib; tests are not the hook path). Returns (status, decoded JSON or text)."""
        import urllib.error
        import urllib.request

        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        chosen = self.token if token is None else token
        if chosen:
            request.add_header("Authorization", f"Bearer {chosen}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, payload = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, payload = error.code, error.read()
        try:
            return status, json.loads(payload)
        except ValueError:
            return status, payload.decode(errors="replace")

    def post(self, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
        return self.request("POST", path, body, token)

    def get(self, path: str, token: str | None = None) -> tuple[int, Any]:
        return self.request("GET", path, None, token)

    def stop(self) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def wait_job(self, job_id: str, timeout_s: float = 60.0) -> dict[str, Any]:
        """The extraction job once it is `done` or `failed` (polled over the API)."""
        deadline = time.monotonic() + timeout_s
        job: Any = None
        while time.monotonic() < deadline:
            status, job = self.get(f"/api/memory/jobs/{job_id}")
            assert status == 200, job
            if job["status"] in ("done", "failed"):
                return dict(job)
            time.sleep(0.05)
        raise AssertionError(f"job {job_id} did not finish in {timeout_s} s: {job}")

    def wait_for_log(self, needle: str, timeout_s: float = 30.0, *, at_start: bool = False) -> str:
        """The first stderr line holding `needle` (`at_start`: starting with it), waited for."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if line.startswith(needle) if at_start else needle in line:
                    return line
            time.sleep(0.05)
        raise AssertionError(f"no log line with {needle!r}; last lines:\n" + "\n".join(self.lines[-20:]))


def export_row(tag: str, memory_id: str, content: str, **fields: Any) -> dict[str, Any]:
    """One row of an export as `POST /api/memory/export` and `export` write it (every field): a current
    first version of `memory_id` in `tag`, dated 2025-01-01; `fields` replace any of them."""
    return {
        "id": memory_id,
        "rootId": memory_id,
        "previousVersionId": None,
        "version": 1,
        "status": "current",
        "kind": "memory",
        "containerTag": tag,
        "content": content,
        "customId": None,
        "metadata": None,
        "createdAt": "2025-01-01T00:00:00.000000Z",
        "updatedAt": "2025-01-01T00:00:00.000000Z",
        "supersededAt": None,
        **fields,
    }


def imports_of(module: Path) -> set[str]:
    """Every module `module` imports, at any depth of its code (function-level imports included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
    return names


def sibling_imports(package: Path, dotted: str) -> dict[str, set[str]]:
    """For each module of `package` (dotted name `dotted`) but its __init__, the siblings it imports."""
    graph: dict[str, set[str]] = {}
    for module in sorted(package.glob("*.py")):
        if module.name != "__init__.py":
            inside = {name for name in imports_of(module) if name == dotted or name.startswith(dotted + ".")}
            graph[module.stem] = {name.removeprefix(dotted).lstrip(".") or "__init__" for name in inside}
    return graph


@contextmanager
def served_locally(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A stand-in HTTP peer on a loopback port, served from a thread; yields its base URL and shuts
    it down (joined within 5 s) when the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class RecordingRelay:
    """A loopback TCP relay in front of a real door that keeps every byte a client sent through it, so
    a test can prove what left the client (the door itself keeps no request bodies). Each accepted
    connection is piped both ways to `target` by two threads; `sent()` is what clients wrote."""

    def __init__(self, target_url: str) -> None:
        import socket
        from urllib.parse import urlsplit

        parts = urlsplit(target_url)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self._lock = threading.Lock()
        self._sent = bytearray()
        self._stop = threading.Event()
        self._sockets: list[Any] = []
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        import socket

        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            upstream = socket.create_connection(self._target, timeout=10)
            self._sockets += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, source: Any, sink: Any, record: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if record:
                    with self._lock:
                        self._sent += chunk
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with suppress(OSError):
                    sock.shutdown(2)

    def sent(self) -> bytes:
        with self._lock:
            return bytes(self._sent)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()
        for sock in self._sockets:
            sock.close()


@contextmanager
def recording_relay(target_url: str) -> Iterator[RecordingRelay]:
    relay = RecordingRelay(target_url)
    try:
        yield relay
    finally:
        relay.close()


#: the character sets of the redaction fixtures' templates (tests/fixtures/redaction/README.md)
REDACTION_CHARSETS = {
    "alnum": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "hex": "0123456789abcdef",
    "b64": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    "upper": "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "lower": "abcdefghijklmnopqrstuvwxyz",
    "digits": "0123456789",
    "pw": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-+^?!~._",
    "urlsafe": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
}


def fill_redaction_template(template: str, rng: Any) -> tuple[str, str]:
    """Fill a positive redaction template with `rng` (a `random.Random`); return (text, secret) where
    the secret is the part inside [[...]]. The repository stores no secret-shaped strings."""
    import re
    import string

    def field(m: re.Match[str]) -> str:
        kind, n = m.group(1), int(m.group(2))
        chars = [rng.choice(REDACTION_CHARSETS[kind]) for _ in range(n)]
        if kind in ("pw", "alnum", "b64", "upper") and n >= 4:
            chars[0] = rng.choice(string.ascii_letters if kind != "upper" else string.ascii_uppercase)
            chars[1] = rng.choice(string.digits)
        return "".join(chars)

    filled = re.sub(r"\{(alnum|hex|b64|upper|lower|digits|pw|urlsafe):(\d+)\}", field, template)
    start, end = filled.index("[["), filled.index("]]")
    secret = filled[start + 2 : end]
    return filled.replace("[[", "", 1).replace("]]", "", 1), secret


def redaction_rows(name: str) -> list[dict[str, Any]]:
    """The rows of one redaction fixture file (`positives.json` or `negatives.json`)."""
    rows: list[dict[str, Any]] = json.loads((REDACTION / name).read_text(encoding="utf-8"))
    return rows

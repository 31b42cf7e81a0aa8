"""Helpers shared by the client's tests: for the HTTP tests (tests/client/test_wire_http.py and
test_door_client.py) a loopback stand-in for a door that misbehaves on demand, and the deadlines the
tests hold it to; for the command tests, `run_cli` (the CLI as a subprocess with a HOME of its own) and
`mcp_session` (the MCP server driven by the SDK's client over stdio)."""

from __future__ import annotations

import gzip
import json
import os
import socket
import sqlite3
import ssl
import subprocess
import sys
import threading
import zipfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bli_memory.settings import write_session
from tests.helpers import REPO

#: the `bli-memory-mcp` of this venv, and one run's budget (an import embeds each record: seconds)
CLI_BIN = Path(sys.executable).parent / "bli-memory-mcp"
CLI_RUN_TIMEOUT_S = 120.0

#: slack for a loaded 2-core machine: a deadline must hold within this much.
DEADLINE_MARGIN_S = 0.5
SHORT_DEADLINE_S = 0.4
Handler = Callable[[socket.socket, int, "StandIn"], None]


class StandIn:
    """A TCP listener on 127.0.0.1; each accepted connection runs `handler(conn, index, self)` in a thread."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None, backlog: int = 16) -> None:
        self.handler = handler
        self.tls = tls
        self.stop = threading.Event()
        self.connections = 0
        self.requests: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=backlog)
        self.port = self.listener.getsockname()[1]
        self.scheme = "https" if tls else "http"
        self.url = f"{self.scheme}://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn, self.connections - 1), daemon=True).start()

    def _serve(self, conn: socket.socket, index: int) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            self.handler(conn, index, self)
        except OSError:
            pass
        finally:
            conn.close()

    def read_request(self, conn: socket.socket) -> bytes:
        """One whole request (head + Content-Length body), or b"" if the client closed."""
        data = b""
        while b"\r\n\r\n" not in data:
            piece = conn.recv(65536)
            if not piece:
                return b""
            data += piece
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            body += conn.recv(65536)
        self.requests.append(head + b"\r\n\r\n" + body)
        return head

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


# ---------------------------------------------------------------------------- the client as a subprocess
# Used by the browsing, selftest and eval tests: `bli-memory-mcp` run with a HOME of its own, and the
# MCP server driven by the SDK's client over stdio.

BIN_DIR = Path(sys.executable).parent
RUN_TIMEOUT_S = 60.0
#: `run_in_home`: install, uninstall and status read and write a few small files
IN_HOME_TIMEOUT_S = 30.0


def run_cli(
    home: str, cwd: str, *args: str, env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """`bli-memory-mcp ARGS` with HOME set to `home` (never the person's), the daemon off."""
    full_env = {"HOME": home, "PATH": os.environ["PATH"], "BLI_MEMORY_DAEMON": "0", **(env or {})}
    return subprocess.run(
        [str(BIN_DIR / "bli-memory-mcp"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=RUN_TIMEOUT_S,
    )


def run_in_home(
    home: Path, *args: str, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m bli_memory ARGS` run by this interpreter in `home`, with HOME set to it (and neither
    host's config folder overridden): `install`, `uninstall` and `status` as a person runs them."""
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    env["HOME"] = str(home)
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "bli_memory", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(home),
        timeout=IN_HOME_TIMEOUT_S,
    )


def mcp_session(
    home: str, cwd: str, url: str, token: str, steps: Callable[[Any], Awaitable[object]]
) -> object:
    """Spawn the MCP server (paired through its environment), initialise the SDK's client session and
    run `await steps(session)`, all within RUN_TIMEOUT_S; returns what `steps` returned."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {
        "HOME": home,
        "PATH": os.environ["PATH"],
        "BLI_MEMORY_DASHBOARD_URL": url,
        "BLI_MEMORY_DEVICE_TOKEN": token,
        "BLI_MEMORY_DAEMON": "0",
    }

    async def run() -> object:
        params = StdioServerParameters(command=str(BIN_DIR / "bli-memory-mcp"), args=[], env=env, cwd=cwd)
        with anyio.fail_after(RUN_TIMEOUT_S), open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await steps(session)

    return anyio.run(run)


# -- import fixtures: files in other tools' formats that tests build from tests/fixtures/import --------

IMPORT_FIXTURES = REPO / "tests" / "fixtures" / "import"


def openmemory_zip(folder: Path) -> Path:
    """OpenMemory's export zip as its backup router writes it: memories.json and memories.jsonl.gz."""
    path = folder / "memories_export_ana.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("memories.json", (IMPORT_FIXTURES / "openmemory" / "memories.json").read_text())
        archive.writestr(
            "memories.jsonl.gz",
            gzip.compress((IMPORT_FIXTURES / "openmemory" / "memories.jsonl").read_bytes()),
        )
    return path


def claude_mem_database(folder: Path) -> Path:
    """claude-mem's SQLite database, made from its schema and a few rows."""
    path = folder / "claude-mem.db"
    db = sqlite3.connect(path)
    db.executescript((IMPORT_FIXTURES / "claude_mem_schema.sql").read_text())
    db.commit()
    db.close()
    return path


class Cli:
    """`bli-memory-mcp` with a HOME of its own, paired (or not) with a door."""

    def __init__(self, home: Path, cwd: Path, tag: str) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.home = home
        self.cwd = cwd
        self.env = {
            "HOME": str(home),
            "PATH": os.environ["PATH"],
            "BLI_MEMORY_DAEMON": "0",
            "BLI_MEMORY_CONTAINER_TAG": tag,
        }

    def pair(self, url: str, token: str) -> Cli:
        write_session(url, token, env={"HOME": str(self.home)})
        return self

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CLI_BIN), *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.cwd,
            timeout=CLI_RUN_TIMEOUT_S,
        )

    def imported(self, *args: str) -> dict[str, Any]:
        done = self("import", *args, "--json")
        answer: dict[str, Any] = json.loads(done.stdout)
        answer["exit"] = done.returncode
        answer["stderr"] = done.stderr
        return answer

    def rows(self, *args: str) -> list[dict[str, Any]]:
        """The exported rows (the header line left out)."""
        done = self("export", *args)
        assert done.returncode == 0, done.stderr
        header, *lines = done.stdout.splitlines()
        assert json.loads(header)["format"] == "bli-memory"
        return [json.loads(line) for line in lines]

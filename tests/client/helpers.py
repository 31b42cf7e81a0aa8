"""Helpers shared by the client's tests: for the HTTP tests (tests/client/test_wire_http.py and
test_door_client.py) a loopback stand-in for a door that misbehaves on demand, and the deadlines the
tests hold it to; for the command tests, `run_cli` (the CLI as a subprocess with a HOME of its own) and
`mcp_session` (the MCP server driven by the SDK's client over stdio)."""

from __future__ import annotations

import gzip
import http.server
import json
import os
import queue
import shlex
import socket
import sqlite3
import ssl
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bli_memory.hooks import stats
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


# --------------------------------------------------------------------------- the real Codex CLI
#
# `codex exec` offline against a loopback stand-in for the model API that refuses every request (so a
# run fires SessionStart and UserPromptSubmit, then ends), and `codex app-server`, the JSON-RPC
# interface Codex's own `/hooks` review uses to list hooks and record their trust.

CODEX_CLI_ENV = "BLI_MEMORY_CODEX_CLI"
DEFAULT_CODEX_CLI = REPO / ".venv" / "codex-cli" / "node_modules" / ".bin" / "codex"
CODEX_EXEC_TIMEOUT_S = 60.0
APP_SERVER_ANSWER_S = 30.0
PROMPT = "what do we know about the retry policy?"


def codex_cli() -> str:
    """The Codex CLI scripts/test installs; a missing one fails the test (it is never skipped)."""
    path = os.environ.get(CODEX_CLI_ENV) or str(DEFAULT_CODEX_CLI)
    if not os.access(path, os.X_OK):
        pytest.fail(
            f"no Codex CLI at {path}: run scripts/test (it installs @openai/codex from npm) "
            f"or set {CODEX_CLI_ENV} to a codex executable"
        )
    return path


class RefusingModelApi:
    """A loopback stand-in for the model API: counts requests, answers each with 400, so the turn ends."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.requests.append(self.path)
                body = b'{"error": {"message": "offline test"}}'
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def codex_env(home: Path, codex_home: Path | None = None) -> dict[str, str]:
    """Only what Codex and our hooks need; any other network use goes to a closed loopback port.
    `codex_home` sets $CODEX_HOME (Codex's folder elsewhere than ~/.codex)."""
    nowhere = "http://127.0.0.1:9"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "BLI_MEMORY_DAEMON": "0",
        "HTTP_PROXY": nowhere,
        "HTTPS_PROXY": nowhere,
        "ALL_PROXY": nowhere,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    if codex_home is not None:
        env["CODEX_HOME"] = str(codex_home)
    return env


def codex_exec(home: Path, api: RefusingModelApi, *flags: str) -> subprocess.CompletedProcess[str]:
    provider = (
        f'model_providers.offline={{name="offline", base_url="{api.url}", wire_api="responses", '
        "request_max_retries=0, stream_max_retries=0}"
    )
    work = home / "work"
    work.mkdir(exist_ok=True)
    return subprocess.run(
        [
            codex_cli(),
            "exec",
            "-c",
            provider,
            "-c",
            "model_provider=offline",
            "--skip-git-repo-check",
            *flags,
            PROMPT,
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=codex_env(home),
        cwd=str(work),
        timeout=CODEX_EXEC_TIMEOUT_S,
    )


def hook_runs(home: Path) -> dict[str, int]:
    """How many times each of our hooks ran, from their hourly counters (every hour file)."""
    runs: dict[str, int] = {}
    folder = Path(stats.stats_dir({"HOME": str(home)}))
    for path in folder.glob("*.json") if folder.is_dir() else []:
        for hook, row in json.loads(path.read_text()).get("hooks", {}).items():
            runs[hook] = runs.get(hook, 0) + row.get("runs", 0)
    return runs


class AppServer:
    """`codex app-server` over stdio (JSON lines), the interface Codex's own `/hooks` review uses."""

    def __init__(self, home: Path, codex_home: Path | None = None) -> None:
        self.process = subprocess.Popen(
            [codex_cli(), "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=codex_env(home, codex_home),
            cwd=str(home),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0
        self.call("initialize", {"clientInfo": {"name": "bli-memory-tests", "version": "1"}})
        self._send({"method": "initialized"})

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self._send({"id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + APP_SERVER_ANSWER_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = json.loads(self.lines.get(timeout=left))
            except queue.Empty:
                break
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                return message["result"]
        raise AssertionError(f"codex app-server did not answer {method} within {APP_SERVER_ANSWER_S} s")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def codex_hooks(home: Path) -> list[dict[str, Any]]:
    server = AppServer(home)
    try:
        (entry,) = server.call("hooks/list", {"cwds": [str(home)]})["data"]
        return list(entry["hooks"])
    finally:
        server.close()


def trust_like_codex(home: Path, hooks: list[dict[str, Any]]) -> None:
    """The write Codex's `/hooks` review makes: `hooks.state."<key>".trusted_hash = <currentHash>`."""
    server = AppServer(home)
    try:
        edits = [
            {
                "keyPath": "hooks.state." + json.dumps(hook["key"]) + ".trusted_hash",
                "value": hook["currentHash"],
                "mergeStrategy": "replace",
            }
            for hook in hooks
        ]
        assert server.call("config/batchWrite", {"edits": edits, "reloadUserConfig": True})["status"] == "ok"
    finally:
        server.close()


def codex_run(home: Path, *args: str, codex_home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """One `codex` command (`plugin marketplace add`, `plugin add`, `plugin list`, …) in `home`."""
    return subprocess.run(
        [codex_cli(), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=codex_env(home, codex_home),
        cwd=str(home),
        timeout=CODEX_EXEC_TIMEOUT_S,
    )


#: what the plugin's launcher does, for this checkout: `bin/bli-memory ARGS` runs `bli-memory-mcp
#: ARGS` with this venv's python and this checkout's package (the tests hold the plugin's files, not
#: the launcher's search for a python).
STAND_IN_LAUNCHER = """#!/bin/sh
PYTHONPATH={repo}
export PYTHONPATH
exec {python} -m bli_memory "$@"
"""


def plugin_marketplace(folder: Path, version: str | None = None) -> Path:
    """A copy of this repository's marketplace (`.agents/plugins/marketplace.json`, `.claude-plugin/`
    when present, and `plugins/bli-memory/`) in `folder`, with the stand-in launcher as
    `bin/bli-memory`; `version` rewrites the plugin's version in both manifests (an upgrade)."""
    import shutil

    for name in (".agents", ".claude-plugin"):
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, folder / name, dirs_exist_ok=True)
    plugin = folder / "plugins" / "bli-memory"
    shutil.copytree(REPO / "plugins" / "bli-memory", plugin, dirs_exist_ok=True)
    launcher = plugin / "bin" / "bli-memory"
    launcher.parent.mkdir(exist_ok=True)
    launcher.write_text(
        STAND_IN_LAUNCHER.format(repo=shlex.quote(str(REPO)), python=shlex.quote(sys.executable))
    )
    launcher.chmod(0o755)
    for manifest in (plugin / ".codex-plugin" / "plugin.json", plugin / ".claude-plugin" / "plugin.json"):
        if version is not None and manifest.is_file():
            data = json.loads(manifest.read_text())
            data["version"] = version
            manifest.write_text(json.dumps(data, indent=2) + "\n")
    return folder

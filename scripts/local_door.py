"""A throwaway `bli-memory-door serve` for the scripts: on a free loopback port over a given SQLite
file (or PostgreSQL database), no autopair; its URL read from its start line, its stderr drained so
it never blocks.

The benchmarks of the door alone want no extraction worker (the default); the scripts that run the
hooks or save exchanges in extract mode (`bench_daemon`, `bench_hooks`, `door_api_examples`,
`eval_capture`) keep it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Mapping, MutableSequence
from pathlib import Path

BIN = Path(sys.executable).parent
LISTENING = "bli-memory-door listening on "
START_TIMEOUT_S = 120.0


class DoorDidNotStart(SystemExit):
    """The door did not print its start line in time (or exited first); `last` is the last line it
    wrote to stderr, or "no output"."""

    def __init__(self, message: str, last: str) -> None:
        super().__init__(message)
        self.last = last


def start_door(
    db: Path | str,
    home: Path | None,
    embedder: str | None,
    who: str,
    timeout_s: float = START_TIMEOUT_S,
    *,
    worker: bool = False,
    env: Mapping[str, str] | None = None,
    program: str | None = None,
    lines: list[str] | None = None,
) -> tuple[subprocess.Popen[str], str]:
    """The door's process and URL; `who` (the calling script) names it when it does not start.
    `db` is a SQLite file or a PostgreSQL URL, as `serve --db` takes it.

    `home` None keeps the environment's HOME; `embedder` None lets the door choose as it does by
    default; `env` is the environment to start from (this process's by default); `program` the
    `bli-memory-door` to run (the one beside this python by default); `lines`, when given, gets every
    line the door writes to stderr."""
    environment = {**(os.environ if env is None else env)}
    if home is not None:
        environment["HOME"] = str(home)
    command = [
        program or str(BIN / "bli-memory-door"),
        "serve",
        "--port",
        "0",
        "--db",
        str(db),
        "--no-autopair",
    ]
    if embedder is not None:
        command += ["--embedder", embedder]
    if not worker:
        command.append("--no-worker")
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=environment,
    )
    said: MutableSequence[str] = deque(maxlen=1) if lines is None else lines  # the last line at least
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            said.append(line.rstrip("\n"))
            if line.startswith(LISTENING):
                found.append(line[len(LISTENING) :].strip())
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(timeout_s) or not found or process.poll() is not None:
        process.kill()
        process.wait()
        chosen = "" if embedder is None else f" ({embedder})"
        raise DoorDidNotStart(f"{who}: the door{chosen} did not start", said[-1] if said else "no output")
    return process, found[0]


def stop_door(process: subprocess.Popen[str], timeout_s: float = 15.0) -> None:
    """SIGTERM, then SIGKILL when it has not exited within `timeout_s`."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout_s)


def memory_mib(process: subprocess.Popen[str]) -> tuple[float, float]:
    """(resident, peak resident) MiB of a door process, from /proc (Linux)."""
    status = Path(f"/proc/{process.pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024

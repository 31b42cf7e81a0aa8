"""A throwaway `bli-memory-door serve` for the benchmark scripts: on a free loopback port over a
given SQLite file, no autopair, no extraction worker; its URL read from its start line."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

BIN = Path(sys.executable).parent
LISTENING = "bli-memory-door listening on "
START_TIMEOUT_S = 120.0


def start_door(
    db: Path, home: Path, embedder: str, who: str, timeout_s: float = START_TIMEOUT_S
) -> tuple[subprocess.Popen[str], str]:
    """The door's process and URL; `who` (the calling script) names it when it does not start."""
    env = {**os.environ, "HOME": str(home)}
    process = subprocess.Popen(
        [
            *(str(BIN / "bli-memory-door"), "serve", "--port", "0", "--db", str(db), "--no-autopair"),
            *("--embedder", embedder, "--no-worker"),
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            if line.startswith(LISTENING):
                found.append(line[len(LISTENING) :].strip())
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(timeout_s) or not found:
        process.kill()
        raise SystemExit(f"{who}: the door ({embedder}) did not start")
    return process, found[0]

"""The database file itself: created private, and checked for damage before anything writes to it.

- A new database gets its folder 0700 and its file 0600; SQLite then gives `-wal` and `-shm` the
  file's mode, whatever the umask, so no other local user can read a memory.
- An existing file is checked with `PRAGMA quick_check` through a read-only connection (which never
  writes the file nor checkpoints its WAL), within a time budget: a damaged file is refused whole,
  never half-served and never written to.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

FILE_MODE = 0o600
FOLDER_MODE = 0o700
#: the start-up check for damage reads the whole file, linear in its size (100 000 memories, 230 MB:
#: 0.2-0.3 s on an idle machine, 1-2 s on a loaded one); a file too big to finish in this time is
#: served after it, with a line saying the check was partial.
INTEGRITY_CHECK_BUDGET_S = 5.0


class DamagedDatabase(Exception):
    """The file fails SQLite's own check for damage; nothing was written to it."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path} is damaged ({detail})")
        self.path = path
        self.detail = detail


#: SQLite steps between two calls of the budget's progress handler: every step cost 2 s of a 5 s
#: check at 1 000 000 memories (7.5 million Python calls); the timer's interrupt ends the check anyway.
PROGRESS_EVERY_STEPS = 1000


def check_integrity(path: str | Path, budget_s: float = INTEGRITY_CHECK_BUDGET_S) -> bool:
    """Raise DamagedDatabase when `PRAGMA quick_check` finds damage in an existing file.

    Returns True when the whole file was checked, False when `budget_s` ran out first (a file of
    millions of memories; what was read was sound). `quick_check` reads every page once but skips
    the index-against-table comparison of `integrity_check` (about half its cost).
    """
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    db = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30, check_same_thread=False)
    deadline = time.monotonic() + budget_s
    over_budget = threading.Event()

    def interrupt() -> None:  # the check runs inside one SQLite step: only an interrupt stops it
        over_budget.set()
        db.interrupt()

    def progress() -> int:  # between steps, for a budget that ran out before the check began
        if time.monotonic() >= deadline:
            over_budget.set()
            return 1
        return 0

    timer = threading.Timer(budget_s, interrupt)
    timer.daemon = True
    try:
        db.execute("PRAGMA busy_timeout = 30000")
        db.set_progress_handler(progress, PROGRESS_EVERY_STEPS)
        timer.start()
        try:
            rows = db.execute("PRAGMA quick_check(1)").fetchall()
        except sqlite3.OperationalError as exc:
            if over_budget.is_set():
                return False
            raise _damage_or(exc, str(path)) from None
        except sqlite3.DatabaseError as exc:
            raise _damage_or(exc, str(path)) from None
    finally:
        timer.cancel()
        timer.join()
        db.close()
    verdict = str(rows[0][0]) if rows else "no answer"
    if verdict != "ok":
        first_line = verdict.partition("\n")[0]
        raise DamagedDatabase(str(path), f"quick_check: {first_line[:200]}")
    return True


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite found the file malformed (not: locked, busy, not a database at all)."""
    text = str(exc)
    return isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "corrupt" in text)


def _damage_or(exc: sqlite3.DatabaseError, path: str) -> Exception:
    """A malformed file is damage; anything else (not a database at all, locked) stays itself."""
    return DamagedDatabase(path, str(exc)) if is_damage(exc) else exc


def create_private(path: Path) -> None:
    """Create the folder (0700, if missing) and an empty file (0600) for a new database."""
    path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)


def shared_files(path: Path) -> list[str]:
    """The database file and its `-wal`/`-shm` that other local users can read, with their modes."""
    exposed = []
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            mode = file.stat().st_mode
        except OSError:
            continue
        if mode & 0o077:
            exposed.append(f"{file} ({oct(mode & 0o777)[2:]})")
    return exposed

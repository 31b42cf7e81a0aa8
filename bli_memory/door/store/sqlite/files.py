"""The database file itself: created private, and checked for damage before anything writes to it.

- A new database gets its folder 0700 and its file 0600; SQLite then gives `-wal` and `-shm` the
  file's mode, whatever the umask, so no other local user can read a memory.
- An existing file is checked with `PRAGMA quick_check` through a read-only connection (which never
  writes the file nor checkpoints its WAL), first within a short time budget: a damaged file that
  the budget covers (up to a few hundred thousand memories) is refused whole, never half-served and
  never written to.
- A file too big for that budget is served at once and checked whole in the background
  (`IntegrityCheck`): a thread of its own, at the lowest CPU priority, that never holds the GIL.
  Damage found there stops every write for good (the store refuses them, see `StoreDamaged`);
  reads go on.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

FILE_MODE = 0o600
FOLDER_MODE = 0o700
#: the start-up check for damage reads the whole file, linear in its size (100 000 memories, 230 MB:
#: 0.2-0.5 s from the page cache; 1 000 000, 2.3 GB: 1.9 s on an idle machine, past 5 s on a loaded
#: one or from a cold disk); a file too big to finish in this time is served after it while the rest
#: is checked in the background. One second keeps a million memories' start under five.
INTEGRITY_CHECK_BUDGET_S = 1.0
#: the environment variable that sets that budget (seconds; 0 checks everything in the background).
INTEGRITY_BUDGET_ENV = "BLI_MEMORY_INTEGRITY_CHECK_BUDGET_S"
#: how long closing the store waits for a background check it interrupted to end.
CLOSE_WAIT_S = 5.0
#: a door's background check waits for its search indexes to be loaded (both read the disk; the
#: indexes are what makes the door ready) but never longer than this.
BACKGROUND_START_WAIT_S = 30.0
#: the niceness of the background check's thread (Linux: per thread; elsewhere left as it is).
BACKGROUND_NICENESS = 19

#: what `IntegrityCheck.state` says.
CHECKED_WHOLE = "whole"
CHECK_RUNNING = "running"
CHECK_DAMAGED = "damaged"
#: the budget ran out and nothing checks the rest (a short-lived command such as `pair`).
CHECK_PARTIAL = "partial"
#: the background check stopped on an error that is not damage (the file vanished, a read failed).
CHECK_UNFINISHED = "unfinished"


class DamagedDatabase(Exception):
    """The file fails SQLite's own check for damage; nothing was written to it."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path} is damaged ({detail})")
        self.path = path
        self.detail = detail


#: SQLite steps between two calls of the start-up check's progress handler. SQLite 3.40 walks the
#: b-trees in one step (only an interrupt, from a timer, stops that part) and then checks each row's
#: constraints step by step, where the handler is called; a call every step cost 2 s of a 5 s check
#: at a million memories, every thousandth nothing measurable.
PROGRESS_EVERY_STEPS = 1000


def _read_only(path: str | Path) -> sqlite3.Connection:
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    db = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30, check_same_thread=False)
    db.execute("PRAGMA busy_timeout = 30000")
    return db


def _quick_check(db: sqlite3.Connection, path: str) -> None:
    """Run `PRAGMA quick_check` on `db`; raise DamagedDatabase on damage. An interrupt (the budget,
    a stop) comes out as sqlite3.OperationalError "interrupted" for the caller to tell apart."""
    try:
        rows = db.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc):
            raise
        raise _damage_or(exc, path) from None
    except sqlite3.DatabaseError as exc:
        raise _damage_or(exc, path) from None
    verdict = str(rows[0][0]) if rows else "no answer"
    if verdict != "ok":
        first_line = verdict.partition("\n")[0]
        raise DamagedDatabase(path, f"quick_check: {first_line[:200]}")


def check_integrity(path: str | Path, budget_s: float = INTEGRITY_CHECK_BUDGET_S) -> bool:
    """Raise DamagedDatabase when `PRAGMA quick_check` finds damage in an existing file.

    Returns True when the whole file was checked, False when `budget_s` ran out first (a file of
    hundreds of thousands of memories or more; what was read was sound). `quick_check` reads every
    page once but skips the index-against-table comparison of `integrity_check` (about half its cost).
    A budget of 0 checks nothing here (False): the caller checks it all in the background.
    """
    if budget_s <= 0:
        return False
    db = _read_only(path)
    deadline = time.monotonic() + budget_s
    over_budget = threading.Event()

    def interrupt() -> None:  # the walk over the b-trees is one SQLite step: only an interrupt stops it
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
        db.set_progress_handler(progress, PROGRESS_EVERY_STEPS)
        timer.start()
        try:
            _quick_check(db, str(path))
        except sqlite3.OperationalError:
            if over_budget.is_set():
                return False
            raise
    finally:
        timer.cancel()
        timer.join()
        db.close()
    return True


class EarlyCheck:
    """The start-up check (`check_integrity`) begun on a thread of its own, so that its budget runs
    while the door loads its libraries and its model instead of after them; `result` waits for it.
    Nothing may open the file for writing before `result` has returned."""

    def __init__(self, path: str | Path, budget_s: float = INTEGRITY_CHECK_BUDGET_S) -> None:
        file = Path(path)
        #: the file existed (and was not empty) when the check began: only then does it say anything.
        self.covers = file.exists() and file.stat().st_size > 0
        self.path = file
        #: `shared_files` before the check's own connection made a `-wal` and `-shm` of the file's mode.
        self.exposed = shared_files(file)
        self._outcome: bool | BaseException = True
        self._thread = threading.Thread(
            target=self._run, args=(budget_s,), name="bli-memory-start-check", daemon=True
        )
        if self.covers:
            self._thread.start()

    def _run(self, budget_s: float) -> None:
        try:
            self._outcome = check_integrity(self.path, budget_s)
        except BaseException as exc:  # handed to the caller of result()
            self._outcome = exc

    def result(self) -> bool:
        """`check_integrity`'s answer: True (whole), False (budget ran out); raises what it raised."""
        if self.covers:
            self._thread.join()
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        return self._outcome


class IntegrityCheck:
    """The state of a file's check for damage: `whole`, `partial` (the start-up budget ran out),
    `running` (in the background), `damaged` (`detail` says what SQLite found) or `unfinished` (the
    background check met another error).

    `start_background` checks the whole file on a read-only connection of its own, without a budget,
    and says how it ended in one line to `notice`. On damage it keeps that connection open until
    `close`: a connection still open on the file keeps the writer's close from checkpointing its WAL
    into it.
    """

    def __init__(self, path: str, state: str = CHECKED_WHOLE) -> None:
        self.path = path
        self.state = state
        self.detail = ""
        self._stop = threading.Event()
        self._go = threading.Event()
        self._thread: threading.Thread | None = None
        self._db: sqlite3.Connection | None = None
        self._held: sqlite3.Connection | None = None

    @property
    def damaged(self) -> bool:
        return self.state == CHECK_DAMAGED

    def start_background(self, notice: Callable[[str], None], wait_s: float = 0.0) -> None:
        """Check the whole file on a thread; it begins at `go()` or after `wait_s`, whichever is first."""
        self.state = CHECK_RUNNING
        self._db = _read_only(self.path)
        self._thread = threading.Thread(
            target=self._run, args=(notice, wait_s), name="bli-memory-integrity-check", daemon=True
        )
        self._thread.start()

    def go(self) -> None:
        """Let a background check that waits begin now."""
        self._go.set()

    def wait(self, timeout_s: float) -> bool:
        """Wait for the background check to end; True when it did (or never ran)."""
        if self._thread is not None:
            self._thread.join(timeout_s)
            return not self._thread.is_alive()
        return True

    def mark_damaged(self, detail: str) -> None:
        self.detail = detail
        self.state = CHECK_DAMAGED

    def close(self) -> None:
        """Stop a running check; close the connection kept after damage (call after the writer's)."""
        self._stop.set()
        self._go.set()
        running = self._db
        if running is not None:
            with contextlib.suppress(sqlite3.ProgrammingError):  # it ended and closed it meanwhile
                running.interrupt()
        self.wait(CLOSE_WAIT_S)
        if self._held is not None:
            self._held.close()
            self._held = None

    def _run(self, notice: Callable[[str], None], wait_s: float) -> None:
        db = self._db
        assert db is not None
        if wait_s > 0:
            self._go.wait(wait_s)
        if self._stop.is_set():  # closed before it began
            db.close()
            self._db = None
            return
        # No progress handler: a callback into Python takes the GIL, and a thread this low in
        # priority that asks for it (or is preempted holding it) on a busy machine makes the request
        # threads wait for it. Without one the check never takes the GIL until it ends; `close`
        # stops it with an interrupt.
        _lower_priority()
        keep = False
        started = time.monotonic()
        try:
            _quick_check(db, self.path)
            if self.damaged:  # a request met damage meanwhile: that stands
                return
            self.state = CHECKED_WHOLE
            notice(f"{self.path} checked whole for damage in {time.monotonic() - started:.1f} s: sound")
        except DamagedDatabase as exc:
            self.mark_damaged(exc.detail)
            keep = True
            notice(
                f"{self.path} is damaged ({exc.detail}), found by the background check: the door "
                f"refuses every write from now on (503 store_damaged) and still serves reads. Stop it "
                f"and see 'A damaged database' in docs/door-operations.md to recover"
            )
        except sqlite3.Error as exc:
            if not self._stop.is_set():
                self.state = CHECK_UNFINISHED
                self.detail = str(exc).partition("\n")[0][:200]
                notice(f"the background check of {self.path} for damage stopped: {self.detail}")
        finally:
            if keep and not self._stop.is_set():
                self._held = db
            else:
                db.close()
            self._db = None


def _lower_priority() -> None:
    """Give the calling thread the lowest CPU priority (Linux sets niceness per thread)."""
    with contextlib.suppress(AttributeError, OSError):  # no setpriority (Windows), or not allowed
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICENESS)


def budget_from_env(env: Mapping[str, str]) -> float:
    """The start-up check's budget from `INTEGRITY_BUDGET_ENV`, else the default. Raises ValueError
    with one sentence for a value that is not a number of seconds from 0 to 3600."""
    raw = env.get(INTEGRITY_BUDGET_ENV, "").strip()
    if not raw:
        return INTEGRITY_CHECK_BUDGET_S
    try:
        budget_s = float(raw)
    except ValueError:
        budget_s = -1.0
    if not 0 <= budget_s <= 3600:
        raise ValueError(f"{INTEGRITY_BUDGET_ENV} must be a number of seconds from 0 to 3600, not {raw!r}")
    return budget_s


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

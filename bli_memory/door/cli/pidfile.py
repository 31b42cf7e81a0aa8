"""The pid file a SQLite door holds while it serves (`<database>.pid`), and `bli-memory-door stop`.

The lock on the file, not its existence, says a door runs: `serve` holds it for its lifetime,
`reset` and `migrate` hold it so no door starts meanwhile, and `stop` signals the process it names
once that process is seen to be a door. Doors on PostgreSQL keep none (several may serve one database).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bli_memory.door.config import DbLocation
from bli_memory.errors import CliError

#: how long `stop` waits for the door to finish its requests and exit.
STOP_WAIT_S = 20.0
STOP_POLL_S = 0.05


def pid_file_path(db: Path) -> Path:
    """`<database>.pid`: the door that serves this database, while it runs."""
    return Path(f"{db}.pid")


def claim_pid_file(db: Path) -> int:
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
    write_pid_file(fd, db, "")  # the pid at once: `stop` works before the door listens
    return fd


def write_pid_file(fd: int, db: Path, url: str) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "url": url, "db": str(db)}).encode() + b"\n", 0)


def release_pid_file(fd: int, db: Path) -> None:
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


def stop(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """SIGTERM the door that serves this database (by its pid file), and wait for it to exit."""
    location = DbLocation.from_env(args.db, env)
    if location.is_postgres:
        raise CliError(
            "doors on PostgreSQL keep no pid file (several may serve one database); stop one with SIGTERM"
        )
    path = location.sqlite_file()
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

"""`bli-memory-door reset`: an operator removes a team's memories, or one space's, for good.

Only on the door's machine, on the database file (like `tokens`); no HTTP route and no agent tool
can do this. The steps, each of which stops the reset when it fails:

1. Hold the database's pid-file lock for the whole reset: a door serving the file refuses the reset
   (stop it first), and a door started meanwhile refuses to start. A running door keeps search
   indexes in memory, so resetting under it is refused rather than made safe.
2. Count what would go (`Store.purge(..., dry_run=True)`) and say it.
3. The person types the team name (or the space tag) on stdin, or passes it as `--confirm NAME`; any
   other answer removes nothing.
4. Write a backup of the whole file next to it with SQLite's online backup API (mode 0600, checked
   with `PRAGMA quick_check`), and print its path.
5. Delete the memory rows (every version and tombstone) and the extraction jobs of that team or
   space in one transaction (`Store.purge`). Devices, people, aliases and the experience log stay.

Restoring is copying the backup over the database file while no door runs.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bli_memory.door.store.base import PurgeCount
from bli_memory.door.store.roles import Store

BACKUP_MODE = 0o600
#: SQLite's backup copies this many pages per step (-1 would hold the source's lock for the whole copy).
BACKUP_PAGES_PER_STEP = 1024


class ResetRefused(Exception):
    """The reset did not happen; the text says why in one line. `status` is the exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Target:
    """What a reset removes: a team, or the tags of one space of it; `name` is what the person types."""

    team: str
    team_id: int
    tags: list[str] | None
    name: str

    def describe(self) -> str:
        if self.tags is None:
            return f"team {self.team!r}"
        return f"space {self.name!r} of team {self.team!r} (tags {', '.join(self.tags)})"


def find_target(store: Store, team: str, space: str | None) -> Target:
    team_id = store.team_named(team)
    if team_id is None:
        raise ResetRefused(f"no team {team!r} in this database; nothing was removed")
    if space is None:
        return Target(team, team_id, None, team)
    canonical = store.canonical_tag(team_id, space)
    tags = sorted({canonical, space, *store.aliases_of(team_id, canonical)})
    return Target(team, team_id, tags, space)


def confirmed(target: Target, given: str | None, stdin: TextIO, prompt: Callable[[str], None]) -> bool:
    """Whether the person named the target: `given` (from --confirm), else one line typed on stdin."""
    kind = "team name" if target.tags is None else "space tag"
    if given is None:
        prompt(f"Type the {kind} ({target.name}) to confirm: ")
        given = stdin.readline()
        if not stdin.isatty():  # nothing echoed the answer's newline
            prompt("\n")
    return given.strip() == target.name


def backup_path(db: Path, now: float) -> Path:
    """`<db>.reset-<UTC time>.bak` beside the database (its folder is private), never an existing file."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    candidate = db.with_name(f"{db.name}.reset-{stamp}.bak")
    number = 1
    while candidate.exists():
        number += 1
        candidate = db.with_name(f"{db.name}.reset-{stamp}-{number}.bak")
    return candidate


def write_backup(db: Path, target: Path) -> None:
    """Copy the whole database to `target` (created 0600, never overwritten) with SQLite's online
    backup API, then check the copy; ResetRefused when anything fails (the partial copy is removed)."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, BACKUP_MODE)
    except OSError as exc:
        raise ResetRefused(
            f"cannot create the backup {target}: {exc.strerror}; nothing was removed"
        ) from None
    os.close(fd)
    os.chmod(target, BACKUP_MODE)
    try:
        source = sqlite3.connect(db)
        copy = sqlite3.connect(target)
        try:
            source.backup(copy, pages=BACKUP_PAGES_PER_STEP)
            verdict = copy.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            copy.close()
            source.close()
        if verdict != "ok":
            raise ResetRefused(f"the backup {target} failed its check ({verdict}); nothing was removed")
    except ResetRefused:
        target.unlink(missing_ok=True)
        raise
    except (sqlite3.Error, OSError) as exc:
        target.unlink(missing_ok=True)
        raise ResetRefused(f"writing the backup {target} failed ({exc}); nothing was removed") from None


def counted(count: PurgeCount) -> str:
    history = count.memories - count.current
    return (
        f"{count.current} current memories (and {history} older versions and tombstones) "
        f"and {count.jobs} extraction jobs"
    )


def reset(
    store: Store,
    db: Path,
    *,
    team: str,
    space: str | None,
    confirm: str | None,
    stdin: TextIO = sys.stdin,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Steps 2-5 of the module docstring, on an open store whose pid-file lock the caller holds."""
    target = find_target(store, team, space)
    preview = store.purge(target.team_id, target.tags, dry_run=True)
    if preview.memories == 0 and preview.jobs == 0:
        out.write(f"{target.describe()} holds no memories and no jobs; nothing to reset\n")
        return 0
    err.write(
        f"This removes for good {counted(preview)} of {target.describe()} from {db}.\n"
        "A backup of the whole database is written first.\n"
    )

    def prompt(text: str) -> None:
        err.write(text)
        err.flush()

    if not confirmed(target, confirm, stdin, prompt):
        raise ResetRefused(f"the name given is not {target.name!r}; nothing was removed")
    backup = backup_path(db, time.time())
    write_backup(db, backup)
    out.write(f"backup written to {backup} (mode 0600)\n")
    out.flush()
    removed = store.purge(target.team_id, target.tags)
    out.write(
        f"removed {counted(removed)} of {target.describe()}; to undo, stop any door of this "
        f"database and copy {backup} over {db}\n"
    )
    return 0

"""`bli-memory-door reset` and `migrate`: operator work on a whole store, while no door serves it
(each holds the SQLite file's pid file throughout: door/cli/pidfile.py). The work itself is in
`door/reset.py` and `door/migrate.py`; this is their command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from bli_memory.door.cli.pidfile import claim_pid_file, release_pid_file, serving_door, write_pid_file
from bli_memory.door.cli.stores import open_store
from bli_memory.door.config import DbLocation, StoreConfig, migrate_pause_s
from bli_memory.errors import EXIT_USAGE, CliError


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

    location = DbLocation.from_env(args.db, env)
    if location.is_postgres:  # no file to back up, nor a pid file saying which doors serve it
        raise CliError(
            f"reset refused: it works on a SQLite file only (it backs the file up first), and --db names the "
            f"PostgreSQL database {mask_url(str(args.db))}; nothing was removed",
            EXIT_USAGE,
        )
    path = location.sqlite_file()
    if not path.exists():
        raise CliError(f"no memory database at {path}")
    _refuse_while_served(path)
    try:
        pid_fd = claim_pid_file(path)  # held to the end: no door starts on the file meanwhile
    except CliError as exc:  # a door started since the check above
        raise CliError(f"reset refused: {exc}") from None
    try:
        store = open_store(StoreConfig.from_env(location, env))
        try:
            return resetting.reset(store, path, team=args.team, space=args.space, confirm=args.confirm)
        except resetting.ResetRefused as refused:
            raise CliError(f"reset refused: {refused}", refused.status) from None
        finally:
            store.close()
    finally:
        release_pid_file(pid_fd, path)


def _hold_for_migration(db: Path) -> int:
    """Hold the pid file of a migration's SQLite destination as a door would: no door starts on it
    meanwhile (theirs says `migrating`), and `stop --db` interrupts the migration cleanly."""
    fd = claim_pid_file(db)
    write_pid_file(fd, db, "migrating")
    return fd


def migrate(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Copy every row of one store into another, resumably, then verify (door/migrate.py)."""
    from bli_memory.door import migrate as migration

    locks = migration.DoorLocks(serving=serving_door, hold=_hold_for_migration, release=release_pid_file)
    try:
        return migration.run(
            args.source,
            args.dest,
            batch=args.batch,
            pause_s=migrate_pause_s(env),
            out=sys.stdout,
            err=sys.stderr,
            locks=locks,
        )
    except migration.MigrateError as exc:
        raise CliError(str(exc), exc.status) from None

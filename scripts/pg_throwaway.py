"""PostgreSQL for the measurement scripts: a throwaway server from the `pgserver` wheel, and a fresh
database of a run's own on any server (dropped when the run ends).

`--db pgserver` in a script means: start PostgreSQL 16 with pgvector from the wheel (the dev and
postgres extras bring it) in a temporary folder, with no flush to disk at each commit (a throwaway
server, as the tests run theirs), and delete it at the end. `--db postgresql://…` names a server the
person runs (a URL with the right to create databases): the script makes a database of its own there
and drops it afterwards, never writing into an existing one.

For a measurement that outlives one script (a million rows loaded once, measured by several runs):

    .venv/bin/python scripts/pg_throwaway.py start FOLDER [--shared-buffers 4GB]   # prints its URL
    .venv/bin/python scripts/pg_throwaway.py stop FOLDER

starts a server from the wheel with its data in FOLDER (THROWAWAY_SETTINGS, KEPT_SETTINGS and `shared_buffers`),
left running until `stop`; `stop` stops it and leaves FOLDER for the person to remove.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: the word a script's `--db` takes for a throwaway server from the wheel
PGSERVER = "pgserver"
#: settings of a throwaway server: nothing it holds outlives the run, so nothing waits for the disk
THROWAWAY_SETTINGS = ("fsync = off", "synchronous_commit = off", "full_page_writes = off")
#: and of a kept one that a million rows are loaded into: fewer checkpoints during a load and an index build
KEPT_SETTINGS = ("max_wal_size = '8GB'",)


def is_postgres(spec: str) -> bool:
    return spec == PGSERVER or spec.startswith(("postgresql://", "postgres://"))


@contextlib.contextmanager
def server(spec: str) -> Iterator[str]:
    """The URL of the server `spec` names: `pgserver` (a throwaway one, stopped and deleted at the end)
    or a postgresql:// URL (used as it is)."""
    if spec != PGSERVER:
        yield spec
        return
    import pgserver
    import psycopg

    folder = tempfile.mkdtemp(prefix="bli-bench-pg-")
    try:
        running = pgserver.get_server(folder, cleanup_mode="delete")
        try:
            url = running.get_uri()
            with psycopg.connect(url, autocommit=True) as conn:
                for setting in THROWAWAY_SETTINGS:
                    conn.execute(f"ALTER SYSTEM SET {setting}")
                conn.execute("SELECT pg_reload_conf()")
            yield url
        finally:
            running.cleanup()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def database_url(url: str, name: str) -> str:
    """`url` (postgresql://…) naming database `name` instead of its own."""
    scheme, _, rest = url.partition("://")
    head, question, query = rest.partition("?")
    return f"{scheme}://{head.split('/', 1)[0]}/{name}{question}{query}"


@contextlib.contextmanager
def database(server_url: str, purpose: str) -> Iterator[str]:
    """A new empty database on the server at `server_url`, named after `purpose` and this process;
    its URL. Dropped at the end (its sessions cut)."""
    import psycopg

    name = f"{purpose}_{os.getpid()}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(server_url, name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def start_kept(folder: Path, shared_buffers: str) -> str:
    """Start (or find running) a server from the wheel with its data in `folder`, THROWAWAY_SETTINGS,
    KEPT_SETTINGS and `shared_buffers` applied (restarted once to take them); its URL. It runs until `stop_kept`."""
    import pgserver
    import psycopg
    from pgserver._commands import pg_ctl

    running = pgserver.get_server(folder, cleanup_mode=None)
    url = running.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        for setting in (*THROWAWAY_SETTINGS, *KEPT_SETTINGS, f"shared_buffers = '{shared_buffers}'"):
            conn.execute(f"ALTER SYSTEM SET {setting}")
        conn.execute("SELECT pg_reload_conf()")  # all but shared_buffers, which needs a restart
        current = conn.execute("SHOW shared_buffers").fetchone()
    if current is None or current[0] != shared_buffers:
        pg_ctl(["-w", "stop"], pgdata=folder, user=running.system_user)
        running = pgserver.get_server(folder, cleanup_mode=None)
    return running.get_uri()


def stop_kept(folder: Path) -> None:
    """Stop the server whose data is in `folder` (started by `start_kept`)."""
    import pgserver

    running = pgserver.get_server(folder, cleanup_mode="stop")
    running.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(
        description="a PostgreSQL server from the pgserver wheel, kept between runs"
    )
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("folder", type=Path, help="its data folder")
    parser.add_argument(
        "--shared-buffers", default="4GB", help="start: PostgreSQL's shared_buffers (default 4GB)"
    )
    args = parser.parse_args()
    if args.action == "start":
        args.folder.mkdir(parents=True, exist_ok=True)
        print(start_kept(args.folder.resolve(), args.shared_buffers))
    else:
        if not (args.folder / "PG_VERSION").exists():
            sys.stderr.write(f"pg_throwaway: no PostgreSQL data in {args.folder}\n")
            return 1
        stop_kept(args.folder.resolve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`bli-memory-door migrate`: copy every row of one store into another, resumably, and verify the copy.

A run has three steps:

1. Check, before anything is written. Both stores are opened (which brings each to the current
   schema) and the destination's rows are read: every one must be the source's row with the same key,
   unchanged, i.e. a row an earlier run of this migration copied. A row the source lacks, or one that
   differs, refuses the whole migration in one line. A door serving either SQLite file, or the two
   naming the same store, refuses it too.
2. Copy. Table by table, a row's references first (`COPY_TABLES`), the source is read in key order in
   batches and the rows the destination lacks are inserted, one transaction per batch, keeping their
   keys (ids, memory save order, token hashes). A run killed at any instant leaves whole batches; the
   next run's check finds them and copies only the rest. A run after a complete one copies nothing.
3. Verify. Each table is counted and checksummed on both sides. A row's checksum is taken over a
   canonical form of its columns (JSON text parsed, a whole float written as an integer, a vector by
   its digest),
   so the same rows give the same checksum in any store; a table's checksum is the sum of its rows'
   (modulo 2**128), which does not depend on the order a store returns them in. A difference exits 1
   naming the table.

Progress goes to stderr (a live line on a terminal, a plain line every few seconds otherwise); the
verification table and the summary to stdout. A password in a URL is never printed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlsplit

from bli_memory.door.store.base import COPY_COLUMNS, COPY_TABLES, JSON_COLUMNS, PRIMARY_KEYS, key_of

if TYPE_CHECKING:
    from bli_memory.door.store.roles import Store

#: when stderr is not a terminal, one progress line per table at most this often (and at its end).
PROGRESS_LINE_INTERVAL_S = 5.0
#: on a terminal, the live progress line is redrawn at most this often.
PROGRESS_REDRAW_S = 0.1
#: a table's checksum is the sum of its rows' digests modulo 2**(8 * this).
DIGEST_BYTES = 16
POSTGRES_SCHEMES = ("postgres", "postgresql")
POSTGRES_DEFAULT_PORT = 5432
#: how a masked password reads.
MASK = "***"


# ---------------------------------------------------------------------------- naming the stores


class MigrateError(Exception):
    """A one-line error for the person at the terminal; `status` 2 marks a wrong argument."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class DoorLocks:
    """How a SQLite file's door is found and kept out: the pid file `serve` holds (door/cli/pidfile.py)."""

    #: a line naming the door that serves a file, or None.
    serving: Callable[[Path], str | None]
    #: hold a file's pid file for this process (raising when a door holds it); its descriptor.
    hold: Callable[[Path], int]
    #: let it go again.
    release: Callable[[int, Path], None]


#: `scheme://user:password@` (the password may hold `@`: the host follows the last one before `/`).
#: (a scheme is read from the start of its token: from each `\b` of `v1.v1.…` the run was read again)
_URL_PASSWORD = re.compile(r"((?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*):[^/\s?#]*@")
#: a `password=...` parameter of a URL's query or of a libpq connection string.
_PASSWORD_PARAMETER = re.compile(r"(\bpassword\s*=\s*)(?:'[^']*'|[^&\s]+)", re.IGNORECASE)


def mask_url(text: str) -> str:
    """`text` (a URL, or a message quoting one) with every URL's password replaced by `***`:
    `postgresql://ana:***@db/memory`; a `password=` parameter is masked too."""
    text = _URL_PASSWORD.sub(rf"\1:{MASK}@", text)
    return _PASSWORD_PARAMETER.sub(rf"\1{MASK}", text)


@dataclass(frozen=True)
class Endpoint:
    """One side of a migration. `url` may hold a password: it only ever goes to `open_store`."""

    url: str
    #: how the store is named to a person (never a password).
    label: str
    #: the SQLite file, or None for a database server.
    path: Path | None


def endpoint(text: str, flag: str) -> Endpoint:
    """The store `--from`/`--to` names: a file path, `sqlite:PATH` or a `postgresql://` URL. Anything
    else is a usage error (exit 2)."""
    from bli_memory.door.store import StoreOpenError, sqlite_path

    text = text.strip()
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme in POSTGRES_SCHEMES:
        return Endpoint(text, mask_url(text), None)
    if scheme and not text.lower().startswith("sqlite:"):
        raise MigrateError(
            f"{flag} must be a SQLite file (PATH or sqlite:PATH) or a postgresql:// URL, not a {scheme}:// URL",
            2,
        )
    try:
        path = sqlite_path(text)
    except StoreOpenError as exc:
        raise MigrateError(f"{flag}: {exc}", 2) from None
    if not str(path) or str(path) == ".":
        raise MigrateError(f"{flag} names no file", 2)
    return Endpoint(text, f"sqlite:{path}", path)


def _server_identity(url: str) -> tuple[str, int, str]:
    parts = urlsplit(url)
    try:
        port = parts.port or POSTGRES_DEFAULT_PORT
    except ValueError:
        port = POSTGRES_DEFAULT_PORT
    return ((parts.hostname or "localhost").lower(), port, parts.path.strip("/") or (parts.username or ""))


def same_store(one: Endpoint, other: Endpoint) -> bool:
    """Whether two endpoints name one store: the same file (through any path), or the same server
    and database."""
    if one.path is not None and other.path is not None:
        if one.path.exists() and other.path.exists():
            return os.path.samefile(one.path, other.path)
        return one.path.resolve() == other.path.resolve()
    if one.path is None and other.path is None:
        return _server_identity(one.url) == _server_identity(other.url)
    return False


# ---------------------------------------------------------------------------- rows and checksums


def _canonical_value(table: str, column: str, value: Any) -> Any:
    if value is None:
        return None
    if column in JSON_COLUMNS.get(table, ()):
        if isinstance(value, str):
            try:
                return {"json": json.loads(value)}
            except ValueError:
                return {"text": value}
        return {"json": value}
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, (bytes, bytearray, memoryview)):  # a vector: its digest stands for it
        return {"bytes": hashlib.blake2b(value, digest_size=DIGEST_BYTES).hexdigest(), "length": len(value)}
    return value


def canonical_row(table: str, row: Mapping[str, Any]) -> bytes:
    """One row of `table` in a form that does not depend on the store that gave it."""
    values = [_canonical_value(table, column, row.get(column)) for column in COPY_COLUMNS[table]]
    return json.dumps(values, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def row_digest(table: str, row: Mapping[str, Any]) -> bytes:
    return hashlib.blake2b(canonical_row(table, row), digest_size=DIGEST_BYTES).digest()


@dataclass
class TableSum:
    """A table's row count and checksum, built one row at a time in any order."""

    rows: int = 0
    total: int = 0

    def add(self, digest: bytes) -> None:
        self.rows += 1
        self.total = (self.total + int.from_bytes(digest, "big")) % (1 << (8 * DIGEST_BYTES))

    @property
    def checksum(self) -> str:
        return f"{self.total:0{2 * DIGEST_BYTES}x}"


def pages(store: Store, table: str, batch: int) -> Iterator[list[dict[str, Any]]]:
    """Every row of `table`, `batch` rows at a time, in the store's key order."""
    after: tuple[Any, ...] | None = None
    while True:
        rows = store.dump_rows(table, after, batch)
        if rows:
            yield rows
        if len(rows) < batch:
            return
        after = key_of(table, rows[-1])


def key_text(table: str, key: tuple[Any, ...]) -> str:
    return ", ".join(f"{column}={value!r}" for column, value in zip(PRIMARY_KEYS[table], key, strict=True))


def count_rows(store: Store, table: str, batch: int) -> int:
    """How many rows `table` holds: the store's own count when it has one, else by reading them."""
    counter: Callable[[str], int] | None = getattr(store, "count_rows", None)
    if counter is not None:
        return counter(table)
    return sum(len(page) for page in pages(store, table, batch))


# ---------------------------------------------------------------------------- progress


@dataclass
class Progress:
    """Rows done of a table, its total and the rate, on `stream`: one line redrawn in place on a
    terminal, else a plain line every `line_interval_s` and one when the table is done."""

    stream: TextIO
    tty: bool
    clock: Callable[[], float] = time.monotonic
    line_interval_s: float = PROGRESS_LINE_INTERVAL_S
    phase: str = ""
    table: str = ""
    total: int = 0
    done: int = 0
    started: float = 0.0
    last_shown: float = 0.0
    #: said instead of the rate (rows not read but found there already).
    note: str = ""

    def start(self, phase: str, table: str, total: int) -> None:
        self.phase, self.table, self.total, self.done, self.note = phase, table, total, 0, ""
        self.started = self.last_shown = self.clock()
        if self.tty:
            self._show()

    def advance(self, rows: int, note: str = "") -> None:
        self.done += rows
        self.note = note
        now = self.clock()
        if now - self.last_shown >= (PROGRESS_REDRAW_S if self.tty else self.line_interval_s):
            self.last_shown = now
            self._show()

    def finish(self) -> None:
        self._show()
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def abandon(self, show: bool = False) -> None:
        """End the table's progress before its end (an error line follows); `show`: off a terminal,
        say where it stopped."""
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
        elif show and self.table:
            self._show()

    def line(self) -> str:
        elapsed = max(self.clock() - self.started, 1e-9)
        share = 100.0 if self.total == 0 else min(100.0, 100.0 * self.done / self.total)
        rate = self.done / elapsed if self.done else 0.0
        return (
            f"{self.phase:<6} {self.table:<19} {self.done:>11,} / {self.total:,} rows  {share:3.0f}%  "
            f"{self.note or f'{rate:,.0f} rows/s'}"
        )

    def _show(self) -> None:
        if self.tty:
            self.stream.write(f"\r{self.line()}\x1b[K")
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()


# ---------------------------------------------------------------------------- the three steps


class Refused(MigrateError):
    """The destination holds data this migration did not copy; nothing was written."""


@dataclass
class Held:
    """What the destination holds of one table before the copy: its keys (each the source's row
    unchanged), and whether that is every row the source has."""

    keys: set[Any] = field(default_factory=set)
    complete: bool = False


def check_destination(source: Store, dest: Store, batch: int, progress: Progress) -> dict[str, Held]:
    """What each destination table already holds, every row the source's unchanged. Raises Refused at
    the first row the source lacks or holds differently. Reads nothing of the source for a table the
    destination holds nothing of."""
    held: dict[str, Held] = {}
    for table in COPY_TABLES:
        present = count_rows(dest, table, batch)
        held[table] = Held()
        if not present:
            continue
        progress.start("check", table, 2 * present)  # each destination row, then its source row
        digests: dict[tuple[Any, ...], bytes] = {}
        for page in pages(dest, table, batch):
            for row in page:
                digests[key_of(table, row)] = row_digest(table, row)
            progress.advance(len(page))
        held[table].keys = set(digests)
        source_rows = 0
        for page in pages(source, table, batch):
            matched = 0
            for row in page:
                key = key_of(table, row)
                digest = digests.pop(key, None)
                if digest is None:
                    continue
                matched += 1
                if digest != row_digest(table, row):
                    progress.abandon()
                    raise Refused(
                        f"the destination already holds different data: its {table} row ({key_text(table, key)}) "
                        "differs from the source's; nothing was written. Migrate into an empty store"
                    )
            source_rows += len(page)
            progress.advance(matched)
        progress.finish()
        if digests:
            first = key_text(table, min(digests, key=repr))
            raise Refused(
                f"the destination already holds different data: {len(digests)} {table} row(s) the source "
                f"does not have (such as {first}); nothing was written. Migrate into an empty store"
            )
        held[table].complete = source_rows == len(held[table].keys)
    return held


@dataclass
class Tally:
    """Rows inserted into the destination so far."""

    copied: int = 0


def copy_table(
    source: Store,
    dest: Store,
    table: str,
    held: Held,
    batch: int,
    progress: Progress,
    tally: Tally,
    pause_s: float = 0.0,
) -> None:
    """Insert the source's rows of `table` that the destination lacks, counting them in `tally` batch
    by batch (so an interruption says how many landed). A table the check found whole is not read
    again."""
    if held.complete:
        progress.advance(len(held.keys), note="all there already")
        return
    for page in pages(source, table, batch):
        missing = [row for row in page if key_of(table, row) not in held.keys]
        if missing:
            tally.copied += dest.load_rows(table, missing)
        progress.advance(len(page))
        if pause_s and missing:
            time.sleep(pause_s)


def table_sum(store: Store, table: str, batch: int, progress: Progress) -> TableSum:
    summed = TableSum()
    for page in pages(store, table, batch):
        for row in page:
            summed.add(row_digest(table, row))
        progress.advance(len(page))
    return summed


@dataclass(frozen=True)
class Verdict:
    table: str
    source: TableSum
    dest: TableSum

    @property
    def equal(self) -> bool:
        return self.source.rows == self.dest.rows and self.source.total == self.dest.total


def verify(source: Store, dest: Store, batch: int, progress: Progress) -> list[Verdict]:
    """Each table counted and checksummed on both sides (progress: the rows of both)."""
    verdicts = []
    for table in COPY_TABLES:
        progress.start("verify", table, count_rows(source, table, batch) + count_rows(dest, table, batch))
        summed = [table_sum(store, table, batch, progress) for store in (source, dest)]
        progress.finish()
        verdicts.append(Verdict(table, summed[0], summed[1]))
    return verdicts


def verdict_table(verdicts: list[Verdict]) -> list[str]:
    lines = [f"{'table':<20} {'source':>10} {'destination':>12}  checksum"]
    for verdict in verdicts:
        if verdict.equal:
            checksum = f"{verdict.source.checksum[:16]}  equal"
        else:
            checksum = (
                f"source {verdict.source.checksum[:16]}, destination {verdict.dest.checksum[:16]}  DIFFERENT"
            )
        lines.append(f"{verdict.table:<20} {verdict.source.rows:>10,} {verdict.dest.rows:>12,}  {checksum}")
    return lines


# ---------------------------------------------------------------------------- the command


def _open(side: Endpoint, flag: str, err: TextIO) -> Store:
    """The store `side` names, brought to the current schema; one MigrateError line when it cannot
    be opened."""
    from bli_memory.door.store import StoreOpenError, open_store

    def notice(line: str) -> None:
        err.write(f"bli-memory-door: {mask_url(line)}\n")

    try:
        return open_store(side.url, notice=notice)
    except StoreOpenError as exc:
        raise MigrateError(f"{flag} {side.label}: {mask_url(str(exc))}", 2 if exc.usage else 1) from None
    except Exception as exc:  # a server that cannot be reached, refused logins: one line, no traceback
        raise MigrateError(
            f"cannot open {flag} {side.label}: {mask_url(str(exc)) or type(exc).__name__}"
        ) from None


def _schema_problem(store: Store, label: str) -> str | None:
    """Why `store` is not at the schema this code writes, or None (opening a store migrates it, so
    this says another program changed it meanwhile)."""
    read: Callable[[], int] | None = getattr(store, "schema_version", None)
    current = getattr(store, "SCHEMA_VERSION", None)
    if read is None or current is None:
        return None
    version = read()
    if version == current:
        return None
    return f"{label} is at schema version {version}, not {current}; open it with this version's door first"


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _refuse_early(source: Endpoint, dest: Endpoint, locks: DoorLocks) -> None:
    """Refusals that need no store opened: the same store twice, a missing or served source file."""
    if same_store(source, dest):
        raise MigrateError(f"--from and --to name the same store ({source.label})", 2)
    if source.path is None:
        return
    if not source.path.is_file():
        raise MigrateError(f"no memory database at {source.path} (--from)")
    serving = locks.serving(source.path)
    if serving:
        raise MigrateError(f"{serving}; stop it first: bli-memory-door stop --db {source.path}")


def _copy_all(
    source: Store,
    dest: Store,
    held: dict[str, Held],
    batch: int,
    progress: Progress,
    tally: Tally,
    pause_s: float,
) -> None:
    """Every table in order; a failure is one MigrateError line (what was copied stays)."""
    table = ""
    try:
        for table in COPY_TABLES:
            progress.start("copy", table, count_rows(source, table, batch))
            copy_table(source, dest, table, held[table], batch, progress, tally, pause_s)
            progress.finish()
    except Exception as exc:
        progress.abandon()
        raise MigrateError(
            f"copying {table} failed after {tally.copied:,} rows ({mask_url(str(exc)) or type(exc).__name__}); "
            "what was copied is kept: run the same command again to go on"
        ) from None


def _report(verdicts: list[Verdict], tally: Tally, out: TextIO) -> int:
    """The verification table and the last line; a table that differs is a MigrateError."""
    for line in verdict_table(verdicts):
        out.write(line + "\n")
    different = [verdict.table for verdict in verdicts if not verdict.equal]
    if different:
        raise MigrateError(
            f"verification failed: {', '.join(different)} differ between the source and the destination "
            f"({tally.copied:,} rows copied). Did something write to either store during the migration?"
        )
    out.write(f"{tally.copied:,} rows copied; verified\n")
    return 0


def run(
    source_text: str,
    dest_text: str,
    *,
    batch: int,
    pause_s: float,
    out: TextIO,
    err: TextIO,
    locks: DoorLocks,
) -> int:
    """The whole command: check, copy, verify, sleeping `pause_s` after each copied batch (a test
    hook, `BLI_MEMORY_MIGRATE_PAUSE_S`). One-line errors are MigrateError (status 2 for a wrong
    argument, else 1); an interruption returns 130."""
    source_side, dest_side = endpoint(source_text, "--from"), endpoint(dest_text, "--to")
    _refuse_early(source_side, dest_side, locks)
    dest_lock: int | None = None
    if dest_side.path is not None and dest_side.path.parent.is_dir():
        dest_lock = locks.hold(dest_side.path)  # refuses a served destination
    stores: list[Store] = []
    previous_term = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    tally = Tally()
    progress = Progress(err, tty=err.isatty())
    try:
        source = _open(source_side, "--from", err)
        stores.append(source)
        dest = _open(dest_side, "--to", err)
        stores.append(dest)
        if dest_side.path is not None and dest_lock is None:  # its folder was just made
            dest_lock = locks.hold(dest_side.path)
        for store, label in ((source, source_side.label), (dest, dest_side.label)):
            problem = _schema_problem(store, label)
            if problem:
                raise MigrateError(problem)
        err.write(
            f"bli-memory-door: migrating {source_side.label} -> {dest_side.label} ({batch:,} rows a batch)\n"
        )
        held = check_destination(source, dest, batch, progress)
        _copy_all(source, dest, held, batch, progress, tally, pause_s)
        verdicts = verify(source, dest, batch, progress)
    except KeyboardInterrupt:
        progress.abandon(show=True)
        err.write(
            f"bli-memory-door: interrupted after {tally.copied:,} rows copied; run the same command again to go on\n"
        )
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        for store in stores:
            store.close()
        if dest_lock is not None and dest_side.path is not None:
            locks.release(dest_lock, dest_side.path)
    return _report(verdicts, tally, out)

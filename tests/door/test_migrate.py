"""`bli-memory-door migrate`: every row copied, resumable after SIGKILL, verified, refusing what it must.

The command runs as a real subprocess. Source and destination stores come from `STORE_URLS` (a store
kind -> a fresh store's URL in a folder); every test of a copy runs for each (source, destination)
pair, so a new store kind is one entry there.
"""

from __future__ import annotations

import io
import itertools
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bli_memory.door.config import ENV_MIGRATE_PAUSE_S as PAUSE_ENV
from bli_memory.door.hook_stats import hour_name
from bli_memory.door.migrate import Progress, TableSum, canonical_row, mask_url, row_digest
from bli_memory.door.model import hash_text, now_s
from bli_memory.door.store import open_store
from bli_memory.door.store.base import COPY_TABLES, NewVersion, key_of
from bli_memory.door.store.roles import Store
from tests.helpers import BIN, DoorProcess, PostgresServer


def _sqlite_url(folder: Path, name: str, request: pytest.FixtureRequest) -> str:
    return f"sqlite:{folder / name / 'memory.db'}"


def _postgresql_url(folder: Path, name: str, request: pytest.FixtureRequest) -> str:
    """A database of its own on the session's server (the `postgres` fixture, started when first asked)."""
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.database_for(folder / name)


#: each store kind: (folder, name, the test's request) -> the URL of a fresh, empty store of that kind.
STORE_URLS: dict[str, Callable[[Path, str, pytest.FixtureRequest], str]] = {
    "sqlite": _sqlite_url,
    "postgresql": _postgresql_url,
}
PAIRS = [
    pytest.param(source, dest, id=f"{source}-to-{dest}")
    for source, dest in itertools.product(STORE_URLS, STORE_URLS)
]
RUN_TIMEOUT_S = 120.0
#: how long a test waits for an interrupted run to have copied part of a table.
PARTIAL_WAIT_S = 60.0


@pytest.fixture
def store_url(tmp_path: Path, request: pytest.FixtureRequest) -> Callable[[str, str], str]:
    """(store kind, name) -> the URL of a fresh, empty store of that kind for this test."""
    return lambda kind, name: STORE_URLS[kind](tmp_path, name, request)


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "share")}
    env.pop(PAUSE_ENV, None)
    env.update(extra)
    return env


def _migrate(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "bli-memory-door"), "migrate", *args],
        capture_output=True,
        text=True,
        env=_env(home, **env),
        timeout=RUN_TIMEOUT_S,
    )


def _sqlite_file(url: str) -> Path:
    assert url.startswith("sqlite:")
    return Path(url.removeprefix("sqlite:"))


# ---------------------------------------------------------------------------- a store with every kind of row


def _version(store: Store, who: Any, content: str, **fields: Any) -> str:
    previous = fields.pop("previous", None)
    moment = now_s()
    vector = fields.pop("vector", None)
    return store.insert_version(
        NewVersion(
            team_id=who.team_id,
            container_tag=fields.pop("tag", "proj"),
            content=content,
            content_hash=hash_text(content),
            kind=fields.pop("kind", "memory"),
            custom_id=fields.pop("custom_id", None),
            metadata=fields.pop("metadata", None),
            person_id=who.person_id,
            device_id=who.device_id,
            created_at=moment if previous is None else previous.created_at,
            updated_at=moment,
            vector=vector,
            vector_model=fields.pop("model", None),
            previous=previous,
        )
    )


def fill(url: str, memories: int = 12) -> dict[str, Any]:
    """A store holding every kind of row: several teams, a revoked device, aliases, versions,
    tombstones, vectors of two models, queued/done/failed/cancelled jobs, experience rows, hourly hook
    figures of two teams. Returns the
    tokens (`ana`, `bo`, `cy`, `revoked`), a memory with two versions and the jobs by state."""
    store = open_store(url)
    try:
        tokens = {}
        for person, team, admin in (("ana", "acme", True), ("bo", "acme", False), ("cy", "zeta", False)):
            _, tokens[person] = store.create_device(person=person, team=team, admin=admin, label=person)
        revoked_id, tokens["revoked"] = store.create_device(person="bo", team="acme", label="old laptop")
        ana, bo, cy = (store.authenticate(tokens[name]) for name in ("ana", "bo", "cy"))
        assert ana is not None and bo is not None and cy is not None
        store.put_alias(ana.team_id, "proj-old", "proj")
        store.put_alias(cy.team_id, "z-old", "z")
        rng = np.random.default_rng(7)
        for index in range(memories):
            vector = rng.standard_normal(8).astype(np.float32)
            _version(
                store,
                ana if index % 2 else bo,
                f"note {index}: the build uses make target {index}",
                vector=vector if index % 3 else None,
                model="model-a" if index % 2 else "model-b",
                metadata={"pinned": True, "order": [index, 1.5]} if index == 1 else None,
            )
        first = store.get(ana.team_id, _version(store, ana, "deploys run on Fridays", vector=np.ones(8)))
        assert first is not None
        second = _version(store, ana, "deploys run on Thursdays", previous=first, vector=np.ones(8) / 2)
        store.retire(first.id, "superseded")
        forgotten = _version(store, cy, "a secret to forget", tag="z", custom_id="doc-1", kind="document")
        store.retire(forgotten, "forgotten")
        jobs: dict[str, str] = {}
        jobs["done"] = store.enqueue_job(bo, "proj", "an exchange that was distilled", {"via": "stop"})
        jobs["failed"] = store.enqueue_job(bo, "proj", "an exchange that failed", None)
        for outcome in ("done", "failed"):  # the only device with jobs waiting: its oldest first
            claimed = store.claim_job()
            assert claimed is not None and claimed.id == jobs[outcome]
            if outcome == "done":
                store.finish_job(claimed.id, {"saved": [second]})
            else:
                store.fail_job(claimed.id, "the model was down", retry=False)
        jobs["queued"] = store.enqueue_job(cy, "z", "an exchange still waiting", None)
        revoked = store.authenticate(tokens["revoked"])
        assert revoked is not None
        jobs["cancelled"] = store.enqueue_job(revoked, "proj", "from the laptop that was lost", None)
        assert store.revoke_device(revoked_id) == 1
        for who, verdict in ((ana, "win"), (bo, "loss"), (cy, "win")):
            store.record_experience(
                who, entry_id=f"exp-{who.person}", store="bli", verdict=verdict, reason="r", created_at=None
            )
        hours = [hour_name(now_s() - hours_ago * 3600) for hours_ago in (2, 1)]
        store.put_hook_stats(ana, [(hours[0], '{"prompt":{"runs":3,"ok":3}}'), (hours[1], "{}")])
        store.put_hook_stats(cy, [(hours[0], '{"stop":{"runs":1,"failed":1}}')])
        return {"tokens": tokens, "root": first.root_id, "jobs": jobs, "team": ana.team_id}
    finally:
        store.close()


def dump(url: str) -> dict[str, list[bytes]]:
    """Every row of every copied table, in canonical form, in key order."""
    store = open_store(url)
    try:
        rows: dict[str, list[bytes]] = {}
        for table in COPY_TABLES:
            dumped = store.dump_rows(table, None, 100_000)
            rows[table] = [
                canonical_row(table, row) for row in sorted(dumped, key=lambda r: key_of(table, r))
            ]
        return rows
    finally:
        store.close()


def _total(rows: dict[str, list[bytes]]) -> int:
    return sum(len(table) for table in rows.values())


# ---------------------------------------------------------------------------- a whole copy


@pytest.mark.parametrize(("source_kind", "dest_kind"), PAIRS)
def test_every_row_is_copied_verified_and_a_second_run_copies_nothing(
    tmp_path: Path, store_url: Callable[[str, str], str], source_kind: str, dest_kind: str
) -> None:
    source, dest = store_url(source_kind, "from"), store_url(dest_kind, "to")
    fill(source)
    before = dump(source)
    assert all(before[table] for table in COPY_TABLES)
    assert len(before["hook_stats"]) == 3  # the devices' hourly hook figures are copied too
    done = _migrate(tmp_path, "--from", source, "--to", dest)
    assert done.returncode == 0, done.stderr
    assert dump(dest) == before  # row for row
    assert dump(source) == before
    assert done.stdout.splitlines()[-1] == f"{_total(before):,} rows copied; verified"
    for table in COPY_TABLES:
        [line] = [line for line in done.stdout.splitlines() if line.startswith(table + " ")]
        assert line.endswith("equal") and f" {len(before[table]):,} " in line
    progress = done.stderr.splitlines()
    assert any(line.startswith("copy") and "memories" in line and "rows/s" in line for line in progress)
    assert "Traceback" not in done.stderr

    again = _migrate(tmp_path, "--from", source, "--to", dest)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == "0 rows copied; verified"
    assert dump(dest) == before


@pytest.mark.parametrize(("source_kind", "dest_kind"), PAIRS)
def test_source_tokens_and_memories_work_on_a_door_over_the_copy(
    tmp_path: Path, store_url: Callable[[str, str], str], source_kind: str, dest_kind: str
) -> None:
    source, dest = store_url(source_kind, "from"), store_url(dest_kind, "to")
    made = fill(source)
    done = _migrate(tmp_path, "--from", source, "--to", dest)
    assert done.returncode == 0, done.stderr
    served: Any = _sqlite_file(dest) if dest.startswith("sqlite:") else dest  # what `serve --db` takes
    door = DoorProcess(served, tmp_path, ["--no-worker", "--embedder", "none"])
    try:
        tokens = made["tokens"]
        status, found = door.request(
            "POST", "/api/memory/search", {"containerTag": "proj-old", "q": "deploys"}, token=tokens["ana"]
        )
        assert status == 200, found
        assert [hit["content"] for hit in found["results"]][:1] == ["deploys run on Thursdays"]
        status, history = door.request("GET", f"/api/memory/{made['root']}/history", token=tokens["bo"])
        assert status == 200 and len(history["versions"]) == 2, history
        status, job = door.request("GET", f"/api/memory/jobs/{made['jobs']['done']}", token=tokens["bo"])
        assert status == 200 and job["status"] == "done", job
        status, other_team = door.request("GET", f"/api/memory/{made['root']}/history", token=tokens["cy"])
        assert status == 404, other_team  # teams stay apart
        status, _ = door.request(
            "POST", "/api/memory/search", {"containerTag": "proj", "q": "x"}, token=tokens["revoked"]
        )
        assert status == 401  # a revoked device stays revoked
        status, figures = door.request("GET", "/api/ops/hook-stats?days=7", token=tokens["bo"])
        assert status == 200 and figures["hooks"]["prompt"]["ok"] == 3 and figures["devices"] == 1, figures
    finally:
        door.stop()


def test_sqlite_to_postgresql_and_back_gives_the_same_rows(
    tmp_path: Path, store_url: Callable[[str, str], str]
) -> None:
    """A move to the server and back again (a trial of PostgreSQL given up) loses and changes nothing:
    keys, save order, vectors, JSON and times come back as they were."""
    start, server, back = (
        store_url("sqlite", "start"),
        store_url("postgresql", "server"),
        store_url("sqlite", "back"),
    )
    fill(start)
    before = dump(start)
    for source, dest in ((start, server), (server, back)):
        done = _migrate(tmp_path, "--from", source, "--to", dest)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == f"{_total(before):,} rows copied; verified"
    assert dump(back) == before
    assert _sqlite_file(back).read_bytes()[:16] == b"SQLite format 3\x00"


# ---------------------------------------------------------------------------- interrupted, resumed


def _count_rows(url: str, table: str) -> int:
    """Rows of `table` in a store while a migration writes to it: a SQLite file read-only (never
    waiting on the writer: WAL), another store through its own dump_rows."""
    if not url.startswith("sqlite:"):
        store = open_store(url)
        try:
            return len(store.dump_rows(table, None, 1_000_000))
        finally:
            store.close()
    db = _sqlite_file(url)
    if not db.exists():
        return 0
    connection = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        return int(connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0
    finally:
        connection.close()


def _start_slow(home: Path, source: str, dest: str) -> subprocess.Popen[str]:
    """A migration that sleeps after each batch of 2 rows (the test hook), its stderr in a file.

    Its SIGINT is set back to the default first: a suite started in the background by a shell
    (`cmd &`) inherits SIGINT ignored, and Python then installs no Ctrl-C handler, so the migration
    would run to its end instead of stopping as a person's Ctrl-C stops it."""
    return subprocess.Popen(
        [str(BIN / "bli-memory-door"), "migrate", "--from", source, "--to", dest, "--batch", "2"],
        stdout=subprocess.PIPE,
        stderr=(home / "slow.err").open("w"),
        text=True,
        env=_env(home, **{PAUSE_ENV: "0.2"}),
        preexec_fn=_interruptible,
    )


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_part_of_the_memories(dest: str, total: int, process: subprocess.Popen[str]) -> int:
    deadline = time.monotonic() + PARTIAL_WAIT_S
    while time.monotonic() < deadline:
        copied = _count_rows(dest, "memories")
        if 0 < copied <= total // 2:  # well before the end, however slow the machine
            return copied
        assert process.poll() is None, "the migration ended before it was interrupted"
        time.sleep(0.05)
    raise AssertionError("the migration never copied part of the memories")


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT])
@pytest.mark.parametrize(("source_kind", "dest_kind"), PAIRS)
def test_an_interrupted_run_resumes_where_it_stopped(
    tmp_path: Path,
    store_url: Callable[[str, str], str],
    how: signal.Signals,
    source_kind: str,
    dest_kind: str,
) -> None:
    source, dest = store_url(source_kind, "from"), store_url(dest_kind, "to")
    fill(source, memories=30)
    before = dump(source)
    process = _start_slow(tmp_path, source, dest)
    try:
        _wait_for_part_of_the_memories(dest, len(before["memories"]), process)
        process.send_signal(how)
        process.wait(timeout=RUN_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    partial = dump(dest)
    kept = _total(partial)
    if how == signal.SIGINT:
        assert process.returncode == 130
        lines = (tmp_path / "slow.err").read_text().splitlines()
        assert (
            lines[-1]
            == f"bli-memory-door: interrupted after {kept:,} rows copied; run the same command again to go on"
        )
        assert lines[-2].startswith("copy   memories") and "rows/s" in lines[-2]  # where it stopped
    assert 0 < len(partial["memories"]) < len(before["memories"])
    assert partial["memories"] == before["memories"][: len(partial["memories"])]  # whole rows, in order
    assert not partial["experience"]

    resumed = _migrate(tmp_path, "--from", source, "--to", dest)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines()[-1] == f"{_total(before) - kept:,} rows copied; verified"
    assert dump(dest) == before


# ---------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("source_kind", "dest_kind"), PAIRS)
def test_a_destination_holding_other_data_is_refused_with_nothing_written(
    tmp_path: Path, store_url: Callable[[str, str], str], source_kind: str, dest_kind: str
) -> None:
    source, dest = store_url(source_kind, "from"), store_url(dest_kind, "to")
    fill(source)
    other = open_store(dest)
    try:
        other.create_device(person="zed", team="elsewhere")  # a door already used: team 1 is another team
    finally:
        other.close()
    before = dump(dest)
    done = _migrate(tmp_path, "--from", source, "--to", dest)
    assert done.returncode == 1
    [line] = done.stderr.splitlines()[1:]  # after the "migrating A -> B" line
    assert "already holds different data" in line and "teams" in line and "nothing was written" in line
    assert dump(dest) == before


@pytest.mark.parametrize(("source_kind", "dest_kind"), PAIRS)
def test_a_destination_holding_rows_the_source_lacks_is_refused(
    tmp_path: Path, store_url: Callable[[str, str], str], source_kind: str, dest_kind: str
) -> None:
    source, dest = store_url(source_kind, "from"), store_url(dest_kind, "to")
    fill(source)
    assert _migrate(tmp_path, "--from", source, "--to", dest).returncode == 0
    copy = open_store(dest)
    try:  # the copy was served and saved to meanwhile
        _, token = copy.create_device(person="ana", team="acme")
        principal = copy.authenticate(token)
        assert principal is not None
        _version(copy, principal, "saved on the new store")
    finally:
        copy.close()
    before = dump(dest)
    done = _migrate(tmp_path, "--from", source, "--to", dest)
    assert done.returncode == 1
    assert "the source does not have" in done.stderr and "devices" in done.stderr
    assert dump(dest) == before


def test_a_served_store_is_refused_with_nothing_written(
    tmp_path: Path, store_url: Callable[[str, str], str]
) -> None:
    source, dest = store_url("sqlite", "from"), store_url("sqlite", "to")
    fill(source)
    open_store(dest).close()
    door = DoorProcess(_sqlite_file(dest), tmp_path, ["--no-worker", "--embedder", "none"])
    try:
        before = dump(dest)
        done = _migrate(tmp_path, "--from", source, "--to", dest)
        assert done.returncode == 1
        [line] = done.stderr.splitlines()
        assert "already serves" in line and str(_sqlite_file(dest)) in line
        assert dump(dest) == before
    finally:
        door.stop()
    served_source = DoorProcess(_sqlite_file(source), tmp_path, ["--no-worker", "--embedder", "none"])
    try:
        done = _migrate(tmp_path, "--from", source, "--to", store_url("sqlite", "third"))
        assert done.returncode == 1
        [line] = done.stderr.splitlines()
        assert "serves" in line and "stop it first" in line
        assert not (tmp_path / "third").exists()
    finally:
        served_source.stop()


def test_a_door_cannot_start_on_the_destination_while_the_migration_runs(
    tmp_path: Path, store_url: Callable[[str, str], str]
) -> None:
    source, dest = store_url("sqlite", "from"), store_url("sqlite", "to")
    fill(source, memories=30)
    process = _start_slow(tmp_path, source, dest)
    try:
        _wait_for_part_of_the_memories(dest, 32, process)
        serve = subprocess.run(
            [
                *(str(BIN / "bli-memory-door"), "serve", "--port", "0", "--no-autopair"),
                *("--embedder", "none", "--db", str(_sqlite_file(dest))),
            ],
            capture_output=True,
            text=True,
            env=_env(tmp_path),
            timeout=RUN_TIMEOUT_S,
        )
        assert serve.returncode == 1 and "migrating" in serve.stderr
        stop = subprocess.run(  # `stop` on the destination interrupts the migration cleanly
            [str(BIN / "bli-memory-door"), "stop", "--db", str(_sqlite_file(dest))],
            capture_output=True,
            text=True,
            env=_env(tmp_path),
            timeout=RUN_TIMEOUT_S,
        )
        assert stop.returncode == 0, stop.stderr
        assert process.wait(timeout=RUN_TIMEOUT_S) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "run the same command again" in (tmp_path / "slow.err").read_text()
    assert not Path(f"{_sqlite_file(dest)}.pid").exists()  # let go of
    resumed = _migrate(tmp_path, "--from", source, "--to", dest)
    assert resumed.returncode == 0 and resumed.stdout.endswith("rows copied; verified\n"), resumed.stderr


@pytest.mark.parametrize(
    ("make_args", "status", "words"),
    [
        (lambda t: ["--from", "mysql://u@h/db", "--to", str(t / "b.db")], 2, "not a mysql:// URL"),
        (lambda t: ["--from", str(t / "missing.db"), "--to", str(t / "b.db")], 1, "no memory database"),
        (lambda t: ["--from", str(t / "a.db"), "--to", f"sqlite:{t}/./a.db"], 2, "the same store"),
        (
            lambda t: ["--from", str(t / "a.db"), "--to", "postgresql://ana:s3cret@127.0.0.1:1/memory"],
            None,
            "***",
        ),
        (lambda t: ["--from", str(t / "a.db"), "--to", str(t / "a.db"), "--batch", "0"], 2, "--batch"),
    ],
    ids=["unknown-scheme", "missing-source", "same-store", "unreachable-server", "bad-batch"],
)
def test_bad_input_is_one_line_with_nothing_written(
    tmp_path: Path, make_args: Callable[[Path], list[str]], status: int | None, words: str
) -> None:
    source = f"sqlite:{tmp_path / 'a.db'}"
    fill(source, memories=2)
    before = dump(source)
    listing = sorted(os.listdir(tmp_path))
    done = _migrate(tmp_path, *make_args(tmp_path))
    assert done.returncode == status if status is not None else done.returncode in (1, 2)
    assert words in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 or "usage:" in done.stderr
    assert "s3cret" not in done.stderr + done.stdout
    assert sorted(os.listdir(tmp_path)) == listing  # no destination file, no pid file
    assert dump(source) == before


@pytest.mark.parametrize("dest_kind", list(STORE_URLS))
def test_a_store_newer_than_this_version_is_refused(
    tmp_path: Path, store_url: Callable[[str, str], str], dest_kind: str
) -> None:
    source, dest = store_url("sqlite", "from"), store_url(dest_kind, "to")
    fill(source, memories=2)
    open_store(dest).close()
    import psycopg

    if dest_kind == "sqlite":
        with sqlite3.connect(_sqlite_file(dest)) as connection:
            connection.execute("PRAGMA user_version = 99")
    else:
        with psycopg.connect(dest, autocommit=True) as server:
            server.execute("INSERT INTO bli_schema (version) VALUES (99)")
    done = _migrate(tmp_path, "--from", source, "--to", dest)
    assert done.returncode == 1
    assert "newer than this door" in done.stderr and "Traceback" not in done.stderr
    if dest_kind == "sqlite":
        assert _count_rows(dest, "teams") == 0
    else:  # the store itself refuses to open it: read it as it is
        with psycopg.connect(dest, autocommit=True) as server:
            assert server.execute("SELECT count(*) FROM teams").fetchone() == (0,)


def test_an_older_sqlite_file_is_brought_to_the_current_schema_and_copied(
    tmp_path: Path, store_url: Callable[[str, str], str]
) -> None:
    from bli_memory.door.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION

    old = tmp_path / "old.db"
    with sqlite3.connect(old) as connection:  # a file from before devices had their own admin flag
        for step in range(1, 4):
            for statement in MIGRATIONS[step]:
                connection.execute(statement)
        connection.execute("PRAGMA user_version = 3")
        connection.execute("INSERT INTO teams (id, name, created_at) VALUES (1, 'local', 1.0)")
        connection.execute(
            "INSERT INTO people (id, team_id, name, admin, created_at) VALUES (1, 1, 'ana', 1, 1.0)"
        )
        connection.execute(
            "INSERT INTO devices (id, person_id, token_hash, created_at) VALUES ('dev_1', 1, ?, 1.0)",
            (hash_text("old-token"),),
        )
    connection.close()
    dest = store_url("sqlite", "to")
    done = _migrate(tmp_path, "--from", str(old), "--to", dest)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "3 rows copied; verified"
    with sqlite3.connect(old) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    connection.close()
    copy = open_store(dest)
    try:
        principal = copy.authenticate("old-token")
        assert principal is not None and principal.admin  # the person's admin became the device's
    finally:
        copy.close()


# ---------------------------------------------------------------------------- verification


@pytest.mark.parametrize(("source_kind", "dest_kind"), PAIRS)
def test_the_checksum_catches_a_row_changed_during_the_copy(
    tmp_path: Path, store_url: Callable[[str, str], str], source_kind: str, dest_kind: str
) -> None:
    source, dest = store_url(source_kind, "from"), store_url(dest_kind, "to")
    made = fill(source, memories=30)
    process = _start_slow(tmp_path, source, dest)
    try:
        _wait_for_part_of_the_memories(dest, 32, process)
        store = open_store(source)
        try:  # the first memory is copied already; forgetting it now changes its source row
            [first] = store.dump_rows("memories", None, 1)
            assert store.retire(str(first["id"]), "forgotten")
        finally:
            store.close()
        stdout, _ = process.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 1
    stderr = (tmp_path / "slow.err").read_text()
    assert "verification failed: memories differ" in stderr
    [line] = [line for line in stdout.splitlines() if line.startswith("memories ")]
    assert line.endswith("DIFFERENT")
    assert [line for line in stdout.splitlines() if line.endswith("equal")]  # the other tables
    assert made["tokens"]["ana"] not in stdout + stderr


def test_the_checksum_is_the_same_for_the_same_rows_in_any_form_and_order() -> None:
    row = {
        "rowid": 3,
        "id": "mem_1",
        "metadata": '{"pinned": true, "n": [1, 2.5]}',
        "pinned": 1,
        "created_at": 5.0,
        "embedding": np.arange(3, dtype=np.float32).tobytes(),
    }
    other_form = row | {
        "metadata": {"n": [1, 2.5], "pinned": True},  # parsed JSON, keys in another order
        "pinned": True,  # a boolean where SQLite keeps 1
        "created_at": 5,  # a whole number without its ".0"
        "embedding": memoryview(bytearray(row["embedding"])),
    }
    assert canonical_row("memories", row) == canonical_row("memories", other_form)
    for changed in ({"created_at": 5.000001}, {"metadata": '{"pinned": false, "n": [1, 2.5]}'}, {"rowid": 4}):
        assert row_digest("memories", row) != row_digest("memories", row | changed)
    rows = [row | {"rowid": index, "id": f"mem_{index}"} for index in range(5)]
    forward, backward = TableSum(), TableSum()
    for one in rows:
        forward.add(row_digest("memories", one))
    for one in reversed(rows):
        backward.add(row_digest("memories", one))
    assert (forward.rows, forward.checksum) == (backward.rows, backward.checksum) == (5, forward.checksum)
    dropped = TableSum()
    for one in rows[1:]:
        dropped.add(row_digest("memories", one))
    assert dropped.checksum != forward.checksum


# ---------------------------------------------------------------------------- progress, help, masking


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_is_a_plain_line_every_few_seconds_off_a_terminal() -> None:
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(stream, tty=False, clock=clock, line_interval_s=5.0)
    progress.start("copy", "memories", 1000)
    for _ in range(10):
        clock.now += 1.0
        progress.advance(50)
    progress.finish()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3  # at 5 s, at 10 s, and at the end
    assert "250 / 1,000 rows" in lines[0] and "25%" in lines[0] and "50 rows/s" in lines[0]
    assert "500 / 1,000 rows" in lines[-1] and "\r" not in stream.getvalue()


def test_progress_redraws_one_line_on_a_terminal() -> None:
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(stream, tty=True, clock=clock)
    progress.start("copy", "teams", 3)
    clock.now += 1.0
    progress.advance(3)
    progress.finish()
    text = stream.getvalue()
    assert text.count("\r") == 3 and text.endswith("\n") and text.count("\n") == 1
    assert "3 / 3 rows  100%" in text


def test_passwords_are_masked() -> None:
    assert (
        mask_url("postgresql://ana:s3cret@db.internal:5432/memory")
        == "postgresql://ana:***@db.internal:5432/memory"
    )
    assert (
        mask_url("postgresql://ana:p@ss@db/memory?sslmode=require")
        == "postgresql://ana:***@db/memory?sslmode=require"
    )
    assert (
        mask_url("postgresql://db/memory?user=ana&password=s3cret")
        == "postgresql://db/memory?user=ana&password=***"
    )
    assert mask_url("postgresql://ana@db/memory") == "postgresql://ana@db/memory"
    assert mask_url("/var/lib/memory.db") == "/var/lib/memory.db"
    assert mask_url("cannot open postgresql://a:x1@h/db nor postgres://b:x2@h2:5/db2 (password = 'x3')") == (
        "cannot open postgresql://a:***@h/db nor postgres://b:***@h2:5/db2 (password = ***)"
    )


def test_help_explains_the_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN / "bli-memory-door"), "migrate", "--help"],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    for words in (
        "--from",
        "--to",
        "--batch",
        "postgresql://",
        "run the same command again",
        "checksum",
        "0 rows copied; verified",
        "token",
        "stop --db",
        "never printed",
        "~/.pgpass",
    ):
        assert words in text, words

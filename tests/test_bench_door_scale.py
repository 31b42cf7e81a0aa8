"""scripts/bench_door.py --scale on PostgreSQL, small: 300 memories bulk-loaded by COPY into a
database of the size's own on the tests' server, then the real door searched and saved over HTTP.
The loaded rows are the rows the door's own saves write (the same columns, flags and model), the
store's HNSW index is there and valid after the load, and the printed recall@10 is the server
index's against exact search."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import REPO

SCRIPT = REPO / "scripts" / "bench_door.py"
RUN_TIMEOUT_S = 180.0
SIZE = 300
#: the bench's saves over HTTP into the space after the load (its SCALE_SAVES)
SAVES = 50
#: what one row says about itself: everything but its text, ids and times
ROW_SHAPE = """SELECT kind, status, version, pinned, custom_id IS NULL, metadata IS NULL,
    previous_version_id IS NULL, superseded_at IS NULL, root_id = id, id LIKE 'mem\\_%%',
    content_hash = encode(sha256(convert_to(content, 'UTF8')), 'hex'), created_at = updated_at,
    vector_dims(embedding), embedding_model, person_id, device_id, count(*)
    FROM memories WHERE container_tag = 'repo_scale' AND content {} LIKE '%% fresh'
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16"""


def test_scale_mode_bulk_loads_postgresql_rows_as_the_door_writes_them(tmp_path: Path, postgres: Any) -> None:
    name = f"bli_scale_{SIZE}"
    postgres.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    try:
        pool = ["--pool", str(tmp_path / "pool.npy"), "--pool-size", "64"]
        done = subprocess.run(
            [
                sys.executable,
                str(SCRIPT),
                "--scale",
                "--sizes",
                str(SIZE),
                "--db",
                postgres.url,
                *pool,
                "--queries",
                "5",
            ],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert re.search(rf"^\| {SIZE} \| [\d,]+ \| – \| – \| [\d.]+ \|", done.stdout, re.M), done.stdout
        stated = re.search(r"recall@10 of \d+ queries: ([\d.]+) as a search asks", done.stdout)
        assert stated is not None, done.stdout
        assert float(stated.group(1)) >= 0.95
        assert "HNSW build" in done.stdout

        db = postgres.database(name)
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            loaded = conn.execute(ROW_SHAPE.format("NOT")).fetchall()
            saved = conn.execute(ROW_SHAPE.format("")).fetchall()
            index = conn.execute(
                """SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i
                   JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE 'memories\\_vec\\_%'"""
            ).fetchall()
        assert len(loaded) == 1 and loaded[0][-1] == SIZE, loaded
        assert len(saved) == 1 and saved[0][-1] == SAVES, saved
        assert loaded[0][:-1] == saved[0][:-1]  # the same shape, device and model as the door's saves
        assert loaded[0][:4] == ("memory", "current", 1, 0) and loaded[0][12] == 384
        assert len(index) == 1 and index[0][0] is True and "USING hnsw" in index[0][1], index
    finally:
        postgres.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

"""Import is robust and honest about loss: a damaged file or record costs that record alone, and is
named in one line, never a traceback.

Every case runs the real `bli-memory-mcp import` against the real door (`door` fixture), with a
temporary HOME, as tests/client/test_import_export.py does.
"""

from __future__ import annotations

import io
import json
import sqlite3
import zipfile
from pathlib import Path

import pytest

from tests.client.helpers import Cli, claude_mem_database
from tests.helpers import DoorProcess, export_row

MANIFEST = {
    "memories": [
        {"id": "m1", "content": "Likes dark mode in every editor", "state": "active"},
        {"id": "m2", "content": "Deploys go out on Tuesdays only", "state": "active"},
    ]
}


@pytest.fixture
def cli(tmp_path: Path, door: DoorProcess, tag: str) -> Cli:
    return Cli(tmp_path / "home", tmp_path, tag).pair(door.url, door.token)


def _zip_bytes() -> bytearray:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("memories.json", json.dumps(MANIFEST))
    return bytearray(buffer.getvalue())


def _damaged_zip(kind: str) -> bytes:
    """An OpenMemory zip damaged one way: its manifest encrypted, compressed by a method Python cannot
    read, its bytes changed under the CRC, or cut short."""
    data = _zip_bytes()
    central = data.find(b"PK\x01\x02")
    if kind == "encrypted":  # the general-purpose flag's bit 0, in the local and the central header
        data[6] |= 1
        data[central + 8] |= 1
    elif kind == "unsupported":  # compression method 99 (AES), in both headers
        data[8:10] = (99).to_bytes(2, "little")
        data[central + 10 : central + 12] = (99).to_bytes(2, "little")
    elif kind == "bad-crc":
        at = data.find(b"dark mode")
        data[at] ^= 0x20
    else:  # cut short: the local header and a few bytes, no central directory
        return bytes(data[:40])
    return bytes(data)


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("encrypted", "memories.json is encrypted"),
        ("unsupported", "compressed by a method"),
        ("bad-crc", "memories.json is damaged"),
        ("truncated", "not a readable zip file"),
    ],
)
def test_a_damaged_or_unsupported_zip_is_one_line(cli: Cli, tmp_path: Path, kind: str, says: str) -> None:
    path = tmp_path / f"{kind}.zip"
    path.write_bytes(_damaged_zip(kind))
    done = cli("import", "mem0", str(path))
    assert done.returncode == 1, done
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert says in done.stderr
    assert cli.rows() == []


def test_a_lone_surrogate_costs_its_record_alone(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "mem0.json"
    records = [
        {"id": "a", "memory": "The staging door listens on port 8788"},
        {"id": "b", "memory": "A broken \ud800 text"},
        {"id": "c", "memory": "Release notes are written in CHANGELOG.md"},
    ]
    path.write_text(json.dumps(records))  # ASCII JSON: the surrogate is written as \ud800
    answer = cli.imported("mem0", str(path))
    assert "Traceback" not in answer["stderr"], answer["stderr"]
    assert (answer["exit"], answer["imported"]) == (1, 2), answer
    assert [entry["where"] for entry in answer["failed"]] == ["record 2 (line 1)"]
    assert "not valid Unicode" in answer["failed"][0]["reason"]
    assert sorted(row["content"] for row in cli.rows()) == [records[2]["memory"], records[0]["memory"]]


def test_a_lone_surrogate_in_a_jsonl_row_costs_that_row_alone(cli: Cli, tmp_path: Path, tag: str) -> None:
    rows = [
        _row(tag, 1, "First fact of the batch"),
        _row(tag, 2, "Bad \ud800 fact"),
        _row(tag, 3, "Third fact"),
    ]
    path = tmp_path / "export.jsonl"
    header = {"format": "bli-memory", "version": 1, "spaces": [tag]}
    path.write_text("\n".join(json.dumps(line) for line in [header, *rows]) + "\n")
    answer = cli.imported("jsonl", str(path))
    assert "Traceback" not in answer["stderr"], answer["stderr"]
    assert (answer["exit"], answer["imported"]) == (1, 2), answer
    assert [entry["where"] for entry in answer["failed"]] == ["line 3"]
    assert sorted(row["content"] for row in cli.rows()) == ["First fact of the batch", "Third fact"]


def _row(tag: str, number: int, content: str, **changes: object) -> dict[str, object]:
    """Row `number` of an export of `tag`."""
    return export_row(
        tag,
        f"mem_{tag[-12:]}{number:012d}",
        content,
        createdAt="2026-01-02T03:04:05.000006Z",
        updatedAt="2026-01-02T03:04:05.000006Z",
        **changes,
    )


def _nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


def test_a_jsonl_batch_with_one_row_the_door_refuses_keeps_the_good_rows(
    cli: Cli, tmp_path: Path, tag: str
) -> None:
    rows = [
        _row(tag, 1, "The first good row"),
        # metadata nested deeper than the door takes: the door refuses the whole request it is in
        _row(tag, 2, "A row the door refuses", metadata=_nested(40)),
        _row(tag, 3, "The last good row"),
    ]
    path = tmp_path / "export.jsonl"
    header = {"format": "bli-memory", "version": 1, "spaces": [tag]}
    path.write_text("\n".join(json.dumps(line) for line in [header, *rows]) + "\n")
    answer = cli.imported("jsonl", str(path))
    assert (answer["exit"], answer["imported"]) == (1, 2), answer
    assert [entry["where"] for entry in answer["failed"]] == ["line 3"]
    assert sorted(row["content"] for row in cli.rows()) == ["The first good row", "The last good row"]


def test_a_claude_mem_database_with_one_value_not_utf8_keeps_the_other_rows(cli: Cli, tmp_path: Path) -> None:
    path = claude_mem_database(tmp_path)
    db = sqlite3.connect(path)
    (first,) = db.execute("SELECT min(id) FROM observations").fetchone()
    db.execute(
        "UPDATE observations SET narrative = CAST(? AS TEXT) WHERE id = ?", (b"caf\xe9 au lait", first)
    )
    db.commit()
    db.close()
    answer = cli.imported("claude-mem", str(path))
    assert "Traceback" not in answer["stderr"], answer["stderr"]
    assert answer["exit"] == 1 and answer["imported"] == 2, answer
    (failed,) = answer["failed"]
    assert failed["where"] == f"observations row id {first}" and "not UTF-8" in failed["reason"]


def test_a_claude_mem_generated_column_is_not_read(cli: Cli, tmp_path: Path) -> None:
    """A generated column made an 8 KB file take 6.4 GB: it is named and never computed."""
    path = tmp_path / "claude-mem.db"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE observations (id INTEGER PRIMARY KEY, title TEXT, size INTEGER,"
        " narrative TEXT GENERATED ALWAYS AS (hex(zeroblob(size))) VIRTUAL)"
    )
    rows = [(number, f"Observation {number} of the blown database", 200_000_000) for number in (1, 2, 3)]
    db.executemany("INSERT INTO observations (id, title, size) VALUES (?, ?, ?)", rows)
    db.commit()
    db.close()
    assert path.stat().st_size < 64 * 1024
    answer = cli.imported("claude-mem", str(path), "--dry-run")
    assert (answer["exit"], answer["read"]) == (1, 3), answer
    assert answer["failed"] == [
        {
            "where": "observations",
            "reason": "`narrative` computed by SQLite (a generated column), not stored: not read",
        }
    ]


def test_a_claude_mem_value_past_the_cap_costs_its_row_alone(cli: Cli, tmp_path: Path) -> None:
    from bli_memory.importers.claude_mem import MAX_VALUE_BYTES

    path = claude_mem_database(tmp_path)
    db = sqlite3.connect(path)
    (first,) = db.execute("SELECT min(id) FROM observations").fetchone()
    db.execute("UPDATE observations SET narrative = ? WHERE id = ?", ("y" * (MAX_VALUE_BYTES + 1), first))
    db.commit()
    db.close()
    answer = cli.imported("claude-mem", str(path), "--dry-run")
    assert (answer["exit"], answer["read"]) == (1, 2), answer
    (cut,) = answer["failed"]
    assert cut == {
        "where": f"observations row id {first}",
        "reason": f"a value is longer than {MAX_VALUE_BYTES} bytes; the row is left out",
    }


INSTRUCTIONS = """# Rules

- Never edit files under `vendor/`: they are generated
  by `tools/vendor.sh`.
1. Constants carry their unit in their name.

A paragraph before a fence that is never closed:
```bash
make lint

- A bullet after the broken block
"""


def test_an_unclosed_fence_loses_only_its_own_block_and_bullets_lose_their_marker(
    cli: Cli, tmp_path: Path
) -> None:
    """Session start shows each memory as a bullet: a bullet imported with its own marker read
    `- - Never edit …`. A fence never closed swallowed the rest of the file into its block."""
    path = tmp_path / "CLAUDE.md"
    path.write_text(INSTRUCTIONS)
    answer = cli.imported("instructions", str(path))
    assert (answer["exit"], answer["imported"]) == (1, 3), answer
    assert answer["failed"] == [
        {"where": "line 7", "reason": "a code fence opened on line 8 is never closed; its block is left out"}
    ]
    assert sorted(row["content"] for row in cli.rows()) == [
        "A bullet after the broken block",
        "Constants carry their unit in their name.",
        "Never edit files under `vendor/`: they are generated\n  by `tools/vendor.sh`.",
    ]


def test_a_bullet_keeps_the_key_it_had_with_its_marker() -> None:
    """The key is the block as written, so a file imported before (marker in the text) finds its
    memories again: the same customId, now `updated` to the text without the marker."""
    from bli_memory.importers import instructions
    from bli_memory.importers.records import content_key

    (record,) = instructions.parse(b"- Use pnpm, never npm\n", "AGENTS.md").records
    assert record.content == "Use pnpm, never npm"
    assert record.original_id == content_key("AGENTS.md\x00- Use pnpm, never npm")


def test_a_lone_surrogate_in_a_knowledge_graph_line_costs_that_line_alone() -> None:
    from bli_memory.importers import mcp_memory

    lines = [
        {
            "type": "entity",
            "name": "Ana",
            "entityType": "person",
            "observations": ["Maintains the release scripts"],
        },
        {"type": "entity", "name": "Bo\ud800", "entityType": "person", "observations": ["Reviews every PR"]},
        {"type": "relation", "from": "Ana", "to": "bli-door", "relationType": "maintains"},
    ]
    parsed = mcp_memory.parse("\n".join(json.dumps(line) for line in lines).encode())
    assert [record.content for record in parsed.records] == [
        "Ana: Maintains the release scripts",
        "Ana maintains bli-door",
    ]
    assert [(problem.where, problem.reason) for problem in parsed.problems] == [
        ("line 2", "not valid Unicode: a lone surrogate (\\ud800)")
    ]

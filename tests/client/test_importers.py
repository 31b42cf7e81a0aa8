"""The importers (`bli_memory.importers`): each format's fixture, read without a door.

The fixtures under tests/fixtures/import/ are written in each tool's own format (docs/import.md names
the source of every field).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from bli_memory.importers import (
    FormatError,
    claude_mem,
    instructions,
    jsonl,
    mcp_memory,
    mem0,
    read,
    supermemory,
)
from bli_memory.importers.records import array_items, custom_id, top_array
from tests.client.helpers import claude_mem_database, openmemory_zip
from tests.helpers import REPO

FIXTURES = REPO / "tests" / "fixtures" / "import"


def test_mem0_get_all_results_keep_text_time_owner_and_vendor_metadata() -> None:
    parsed = read("mem0", str(FIXTURES / "mem0_get_all.json"))
    assert parsed.problems == []
    first, second, third = parsed.records
    assert first.content == "Prefers pnpm over npm for every JavaScript project"
    assert first.original_id == "f38b689d-6b24-45b7-bced-17fbb4d8bac7"
    assert first.created_at == "2025-02-25T23:57:00.108347-07:00"
    assert first.metadata == {"user_id": "alex", "vendorMetadata": {"category": "preferences"}}
    assert second.metadata == {"user_id": "alex", "agent_id": "coder"}
    assert third.content.startswith("Runs the test suite")


def test_mem0_v1_list_is_read_like_results() -> None:
    (record,) = read("mem0", str(FIXTURES / "mem0_v1_list.json")).records
    assert (record.content, record.original_id) == (
        "travelling to Paris",
        "f38b689d-6b24-45b7-bced-17fbb4d8bac7",
    )


def test_mem0_broken_records_in_the_middle_are_named_by_line_and_the_rest_read() -> None:
    parsed = read("mem0", str(FIXTURES / "mem0_broken_middle.json"))
    assert [record.original_id[:8] for record in parsed.records] == ["11111111", "33333333", "55555555"]
    broken, empty = parsed.problems
    assert broken.where == "record 2 (line 11)"
    assert broken.reason == "not valid JSON at line 13 column 54: invalid control character"
    assert (empty.where, empty.reason) == ("record 4 (line 26)", "no `memory` text")
    assert broken.malformed and empty.malformed


def test_openmemory_zip_reads_memories_json_with_category_names_and_leaves_deleted_out(
    tmp_path: Path,
) -> None:
    parsed = mem0.parse(openmemory_zip(tmp_path).read_bytes())
    active, archived = parsed.records
    assert active.content == "Likes dark mode in every editor"
    assert active.metadata == {"categories": ["preferences"]}
    assert active.created_at == "2025-05-02T09:30:00+00:00"
    assert archived.metadata == {"state": "archived"}
    (deleted,) = parsed.problems
    assert deleted.reason == "deleted in OpenMemory" and not deleted.malformed


def test_a_zip_without_memories_json_is_not_an_openmemory_export(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("other.txt", "x")
    with pytest.raises(FormatError, match=r"holds no memories\.json"):
        mem0.parse(buffer.getvalue())


def test_supermemory_documents_list_keeps_container_tags_for_aliases() -> None:
    parsed = read("supermemory", str(FIXTURES / "supermemory_documents_list.json"))
    adr, notes = parsed.records
    assert adr.content.startswith("We keep one SQLite file per door")
    assert adr.vendor_tags == ("user_123", "repo_web")
    assert adr.metadata["customId"] == "adr-0007" and adr.metadata["vendorMetadata"] == {"source": "slack"}
    assert adr.created_at == "2024-01-15T10:30:00Z"
    assert notes.content == "The team agreed to ship the importer before the web page."  # its summary
    (empty,) = parsed.problems
    assert empty.where == "record 3 (line 26)"


def test_supermemory_documents_with_memories_take_the_latest_unforgotten_entries() -> None:
    parsed = supermemory.parse((FIXTURES / "supermemory_documents.json").read_bytes())
    assert [record.content for record in parsed.records] == [
        "The new contributor prefers reviews in the morning",
        "The new contributor uses Helix",
    ]
    assert all(record.vendor_tags == ("user_123",) for record in parsed.records)
    assert [problem.reason for problem in parsed.problems] == [
        "an older version (isLatest false)",
        "forgotten in Supermemory",
    ]


def test_claude_mem_export_and_database_give_the_same_memories(tmp_path: Path) -> None:
    exported = read("claude-mem", str(FIXTURES / "claude_mem_export.json"))
    database = read("claude-mem", str(claude_mem_database(tmp_path)))
    assert [record.content for record in exported.records] == [record.content for record in database.records]
    observation = exported.records[0]
    assert observation.content == (
        "Windows paths broke the worker start\nBackslashes in CLAUDE_PLUGIN_ROOT\n"
        "The worker failed to start on Windows because the plugin root held backslashes; quoting the path fixed it.\n"
        "- The worker quotes its script path on Windows\n- Paths are normalised with path.resolve"
    )
    assert observation.original_id == "observation:41"
    assert observation.created_at == "2025-11-02T14:21:09.512Z"
    assert observation.metadata == {
        "record": "observation",
        "project": "claude-mem",
        "type": "bugfix",
        "sessionId": "sdk-7f3a",
    }
    summary = exported.records[2]
    assert summary.content.splitlines()[0] == "Request: Fix the worker start on Windows"
    assert [problem.where for problem in database.problems] == ["observations row id 43", "prompts"]


def test_claude_mem_epoch_in_milliseconds_dates_a_row_without_created_at() -> None:
    parsed = claude_mem.Parsed()
    claude_mem.observation("x", {"id": 1, "title": "t", "created_at_epoch": 1762093269512}, parsed)
    assert parsed.records[0].created_at == "2025-11-02T14:21:09.512000+00:00"


def test_mcp_memory_observations_and_relations_become_memories() -> None:
    parsed = read("mcp-memory", str(FIXTURES / "mcp_memory.jsonl"))
    assert [record.content for record in parsed.records] == [
        "Ana_Lima: Maintains the release scripts",
        "Ana_Lima: Prefers squash merges",
        "bli-door: Listens on 127.0.0.1:8787 by default",
        "Ana_Lima maintains bli-door",
    ]
    assert parsed.records[0].metadata == {"entity": "Ana_Lima", "entityType": "person"}
    assert parsed.records[3].created_at is None  # the format keeps no times


def test_mcp_memory_broken_lines_are_named_and_skipped() -> None:
    parsed = mcp_memory.parse((FIXTURES / "mcp_memory_broken_middle.jsonl").read_bytes())
    assert len(parsed.records) == 2
    assert [problem.where for problem in parsed.problems] == ["line 2", "line 3"]


def test_instruction_files_give_one_memory_per_bullet_or_paragraph_verbatim() -> None:
    parsed = instructions.parse((FIXTURES / "instructions" / "CLAUDE.md").read_bytes(), "CLAUDE.md")
    contents = [record.content for record in parsed.records]
    assert contents == [
        "Run `make test` before every commit; it runs ruff, mypy and pytest.",
        "Never edit files under `vendor/`: they are generated\n  by `tools/vendor.sh` and overwritten on every run.",
        "The door listens on 127.0.0.1:8787. Tests start their own door on an\n"
        "ephemeral port, so two test runs never share one.",
        "Constants carry their unit in their name (`TIMEOUT_S`).",
        "Small typed functions.",
        "```bash\n# a fenced block stays in one memory\n\nmake lint\n```",
    ]
    assert parsed.records[0].metadata == {"file": "CLAUDE.md", "section": "Build"}
    assert parsed.records[3].metadata["section"] == "Style"


@pytest.mark.parametrize(("name", "count"), [("AGENTS.md", 4), (".cursorrules", 3), ("MEMORY.md", 2)])
def test_every_kind_of_instruction_file_is_read(name: str, count: int) -> None:
    parsed = read("instructions", str(FIXTURES / "instructions" / name))
    assert len(parsed.records) == count
    assert all(record.metadata["file"] == name for record in parsed.records)


def test_front_matter_is_left_out() -> None:
    parsed = instructions.parse(b"---\nname: x\n---\n\n- the only rule\n", "MEMORY.md")
    assert [record.content for record in parsed.records] == ["the only rule"]


def test_the_same_key_gives_the_same_custom_id_and_formats_apart() -> None:
    assert custom_id("mem0", "a") == custom_id("mem0", "a")
    assert custom_id("mem0", "a") != custom_id("supermemory", "a")
    assert custom_id("mem0", "a").startswith("import:mem0:") and len(custom_id("mem0", "a")) < 200


def test_our_jsonl_rows_are_checked_for_shape_and_a_foreign_header_is_refused() -> None:
    row = {
        "id": "mem_1",
        "rootId": "mem_1",
        "previousVersionId": None,
        "version": 1,
        "status": "current",
        "kind": "memory",
        "containerTag": "t",
        "content": "x",
        "customId": None,
        "metadata": None,
        "createdAt": "2025-01-01T00:00:00.000000Z",
        "updatedAt": "2025-01-01T00:00:00.000000Z",
        "supersededAt": None,
    }
    lines = [
        json.dumps({"format": "bli-memory", "version": 1}),
        json.dumps(row),
        "{not json",
        json.dumps({**row, "status": "lost"}),
        json.dumps({**row, "version": True}),
    ]
    parsed = jsonl.parse("\n".join(lines).encode())
    assert [where for where, _ in parsed.rows] == ["line 2"]
    assert [(problem.where, problem.reason) for problem in parsed.problems] == [
        ("line 3", "not valid JSON at column 2: expecting property name enclosed in double quotes"),
        ("line 4", "`status` must be one of current, superseded, forgotten"),
        ("line 5", "`version` has the wrong type"),
    ]
    with pytest.raises(FormatError, match="names format 'other'"):
        jsonl.parse(json.dumps({"format": "other"}).encode())


def test_array_scanning_recovers_after_a_broken_element_on_one_line() -> None:
    text = '[{"a": 1}, {"b": }, {"c": 3}]'
    items = array_items(text, top_array(text) or 0)
    assert [item.value for item in items] == [{"a": 1}, None, {"c": 3}]
    assert items[1].error is not None


def test_a_file_in_no_known_shape_is_one_error() -> None:
    with pytest.raises(FormatError, match="not mem0 get_all JSON"):
        mem0.parse(b'{"memories": []}')
    with pytest.raises(FormatError, match="not UTF-8"):
        mem0.parse(b"\xff\xfe[")


def test_a_record_nested_too_deep_is_named_and_deep_vendor_metadata_left_behind() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    text = f'[\n  {deep},\n  {{"id": "a", "memory": "kept", "metadata": {json.dumps({"x": [[[[[[[[[[1]]]]]]]]]]})}}}\n]'
    parsed = mem0.parse(text.encode())
    assert [record.content for record in parsed.records] == ["kept"]
    assert parsed.records[0].metadata == {}  # nine levels of vendor metadata are not kept
    (problem,) = parsed.problems
    assert problem.where == "record 1 (line 2)" and problem.reason.startswith("not")

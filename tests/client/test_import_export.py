"""`bli-memory-mcp import` and `export` as subprocesses against a real door, every format's fixture.

Each run gets a temporary HOME paired through the real session file; `BLI_MEMORY_CONTAINER_TAG`
names the test's own space.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from bli_memory.commands.importing import PROGRESS_MIN_RECORDS, Progress
from tests.client.helpers import Cli, claude_mem_database, openmemory_zip
from tests.helpers import REPO, DoorProcess, served_locally

BIN = Path(sys.executable).parent / "bli-memory-mcp"
FIXTURES = REPO / "tests" / "fixtures" / "import"


@pytest.fixture
def cli(tmp_path: Path, door: DoorProcess, tag: str) -> Cli:
    return Cli(tmp_path / "home", tmp_path, tag).pair(door.url, door.token)


#: (format, the file (a fixture, or built from one), memories it holds, records left out on purpose)
CASES: list[tuple[str, Callable[[Path], Path], int, int]] = [
    ("mem0", lambda _: FIXTURES / "mem0_get_all.json", 3, 0),
    ("mem0", lambda _: FIXTURES / "mem0_v1_list.json", 1, 0),
    ("mem0", openmemory_zip, 2, 1),
    ("supermemory", lambda _: FIXTURES / "supermemory_documents.json", 2, 2),
    ("claude-mem", lambda _: FIXTURES / "claude_mem_export.json", 3, 1),
    ("claude-mem", claude_mem_database, 3, 2),
    ("mcp-memory", lambda _: FIXTURES / "mcp_memory.jsonl", 4, 0),
    ("instructions", lambda _: FIXTURES / "instructions" / "CLAUDE.md", 6, 0),
    ("instructions", lambda _: FIXTURES / "instructions" / "AGENTS.md", 4, 0),
    ("instructions", lambda _: FIXTURES / "instructions" / ".cursorrules", 3, 0),
    ("instructions", lambda _: FIXTURES / "instructions" / "MEMORY.md", 2, 0),
]


@pytest.mark.parametrize(
    ("fmt", "make", "count", "left_out"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_every_format_imports_once_keeps_its_source_and_a_rerun_adds_nothing(
    cli: Cli, tmp_path: Path, tag: str, fmt: str, make: Callable[[Path], Path], count: int, left_out: int
) -> None:
    path = make(tmp_path)
    first = cli.imported(fmt, str(path))
    assert first["exit"] == 0, first
    assert (first["imported"], first["unchanged"], len(first["skipped"]), first["failed"]) == (
        count,
        0,
        left_out,
        [],
    )
    rows = cli.rows()
    assert len(rows) == count and all(row["status"] == "current" for row in rows)
    for row in rows:
        assert row["metadata"]["source"] == f"import:{fmt}"
        assert row["metadata"]["originalId"]
        assert row["customId"].startswith(f"import:{fmt}:")
        assert row["containerTag"] == tag
    again = cli.imported(fmt, str(path))
    assert (again["imported"], again["updated"], again["unchanged"]) == (0, 0, count)
    assert cli.rows() == rows


def test_original_times_are_kept_and_secrets_masked(cli: Cli) -> None:
    answer = cli.imported("mem0", str(FIXTURES / "mem0_get_all.json"))
    assert answer["masked"] == {"count": 1, "kinds": {"github_token": 1}}
    rows = {row["metadata"]["originalId"]: row for row in cli.rows()}
    pnpm = rows["f38b689d-6b24-45b7-bced-17fbb4d8bac7"]
    assert pnpm["createdAt"] == "2025-02-26T06:57:00.108347Z"  # -07:00 in the file
    assert pnpm["metadata"] == {
        "source": "import:mem0",
        "originalId": "f38b689d-6b24-45b7-bced-17fbb4d8bac7",
        "user_id": "alex",
        "vendorMetadata": {"category": "preferences"},
    }
    token = rows["0a5b3c1e-7d2f-4e8a-9b6c-1d2e3f4a5b6c"]["content"]
    assert "ghp_aB3dE5gH7" not in token and "[REDACTED:github_token]" in token


def test_a_time_the_door_cannot_take_is_kept_in_metadata_and_the_memory_imported(cli: Cli) -> None:
    path = cli.cwd / "mem0.json"
    records = [
        {"id": "a1", "memory": "Dated in words", "created_at": "last tuesday"},
        {"id": "a2", "memory": "Dated in the future", "created_at": "2999-01-01T00:00:00Z"},
        {"id": "a3", "memory": "Dated without a zone", "created_at": "2024-06-01 08:30:00"},
    ]
    path.write_text(json.dumps(records))
    answer = cli.imported("mem0", str(path))
    assert (answer["exit"], answer["imported"]) == (0, 3)
    rows = {row["content"]: row for row in cli.rows()}
    assert rows["Dated in words"]["metadata"]["originalCreatedAt"] == "last tuesday"
    assert rows["Dated in the future"]["metadata"]["originalCreatedAt"] == "2999-01-01T00:00:00Z"
    assert rows["Dated in words"]["createdAt"].startswith("20") and not rows["Dated in words"][
        "createdAt"
    ].startswith("2999")
    assert rows["Dated without a zone"]["createdAt"] == "2024-06-01T08:30:00.000000Z"  # taken as UTC
    assert "originalCreatedAt" not in rows["Dated without a zone"]["metadata"]
    again = cli.imported("mem0", str(path))
    assert again["unchanged"] == 3


def test_a_broken_record_in_the_middle_is_named_and_the_rest_imported(cli: Cli) -> None:
    done = cli("import", "mem0", str(FIXTURES / "mem0_broken_middle.json"))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].endswith(": 3 imported, 0 updated, 0 unchanged, 2 skipped.")
    assert any(line.startswith("  not imported: record 2 (line 11): not valid JSON") for line in lines)
    assert "  not imported: record 4 (line 26): no `memory` text" in lines
    assert len(cli.rows()) == 3
    jsonl = cli.imported("mcp-memory", str(FIXTURES / "mcp_memory_broken_middle.jsonl"))
    assert jsonl["exit"] == 1 and jsonl["imported"] == 2
    assert [entry["where"] for entry in jsonl["failed"]] == ["line 2", "line 3"]


def test_dry_run_writes_nothing_and_needs_no_pairing(cli: Cli, tmp_path: Path, tag: str) -> None:
    done = cli("import", "mem0", str(FIXTURES / "mem0_get_all.json"), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Dry run: would import 3 from mem0 (mem0_get_all.json) into space {tag}")
    assert "1 secret would be masked (github_token ×1)." in done.stdout
    assert cli.rows() == []
    unpaired = Cli(tmp_path / "other-home", tmp_path, tag)
    assert (
        unpaired(
            "import", "instructions", str(FIXTURES / "instructions" / "CLAUDE.md"), "--dry-run"
        ).returncode
        == 0
    )
    refused = unpaired("import", "instructions", str(FIXTURES / "instructions" / "CLAUDE.md"))
    assert refused.returncode == 1 and "not paired" in refused.stderr


def test_supermemory_container_tags_become_aliases_of_the_space(
    cli: Cli, door: DoorProcess, tag: str
) -> None:
    vendor = f"user_{tag[-8:]}"
    path = cli.cwd / "supermemory.json"
    path.write_text((FIXTURES / "supermemory_documents_list.json").read_text().replace("user_123", vendor))
    answer = cli.imported("supermemory", str(path))
    assert answer["imported"] == 2 and answer["aliases"] == [vendor, "repo_web"]
    status, found = door.post("/api/memory/search", {"q": "SQLite file per door", "containerTag": vendor})
    assert status == 200 and found["searched"][0] == tag
    assert [hit["content"][:27] for hit in found["results"]] == ["We keep one SQLite file per"]


def test_without_an_admin_token_aliases_are_reported_not_set(
    tmp_path: Path, door: DoorProcess, tag: str
) -> None:
    member = Cli(tmp_path / "member", tmp_path, tag).pair(door.url, door.pair("bo", team="local"))
    done = member("import", "supermemory", str(FIXTURES / "supermemory_documents_list.json"))
    assert done.returncode == 0, done.stdout
    assert (
        "Aliases: setting aliases needs an admin token (pair a device with --admin); not set: user_123, repo_web."
        in done.stdout
    )


def test_long_imports_show_progress_lines_when_stderr_is_not_a_terminal(cli: Cli) -> None:
    path = cli.cwd / "AGENTS.md"
    path.write_text("".join(f"- rule number {index}\n" for index in range(60)))
    done = cli("import", "instructions", str(path))
    assert done.returncode == 0, done.stderr
    progress = [line for line in done.stderr.splitlines() if line.startswith("import instructions: ")]
    assert (
        progress[0] == "import instructions: 6/60 records"
        and progress[-1] == "import instructions: 60/60 records"
    )
    assert len(progress) == 10


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_one_redrawn_bar_and_short_imports_no_progress() -> None:
    stream = Terminal()
    progress = Progress(60, "import mem0", stream)
    for done in range(1, 61):
        progress.update(done)
    drawn = stream.getvalue()
    assert drawn.startswith("\rimport mem0 [") and drawn.endswith("] 60/60\n")
    assert drawn.count("\n") == 1  # redrawn in place, one line at the end
    assert "[" + "#" * 30 + "]" in drawn
    stopped = Terminal()
    halfway = Progress(60, "import mem0", stopped)
    halfway.update(30)
    halfway.close()  # an import that stopped: the summary starts on its own line
    assert stopped.getvalue().endswith("30/60\n")
    quiet = Terminal()
    short = Progress(PROGRESS_MIN_RECORDS - 1, "import mem0", quiet)
    short.update(PROGRESS_MIN_RECORDS - 1)
    assert quiet.getvalue() == ""


def test_export_then_import_into_an_empty_door_gives_identical_rows(
    cli: Cli, door: DoorProcess, tag: str, tmp_path: Path, start_door: Callable[..., DoorProcess]
) -> None:
    cli("save", "--custom-id", "owner", "Ana owns releases")
    cli("save", "--custom-id", "owner", "Bo owns releases")  # a second version
    cli("save", "The old runner is ci-7")
    cli("forget", "--content", "The old runner is ci-7")  # a tombstone
    cli("import", "mem0", str(FIXTURES / "mem0_get_all.json"))
    backup = tmp_path / "backup.jsonl"
    done = cli("export", "--output", str(backup))
    assert done.returncode == 0, done.stderr
    assert (
        f"Exported 6 rows of space {tag} to {backup}: 4 current, 1 earlier versions, 1 forgotten."
        in done.stderr
    )
    assert oct(backup.stat().st_mode & 0o777) == "0o600"
    fresh = start_door()
    other = Cli(tmp_path / "fresh-home", tmp_path, "unused_space").pair(fresh.url, fresh.token)
    answer = other.imported("jsonl", str(backup))
    assert answer["exit"] == 0, answer
    assert (answer["imported"], answer["unchanged"], answer["space"]) == (6, 0, None)
    original = backup.read_text().splitlines()[1:]
    assert [json.dumps(row, ensure_ascii=False) for row in other.rows("--space", tag)] == original
    again = other.imported("jsonl", str(backup))
    assert (again["imported"], again["unchanged"]) == (0, 6)
    statuses = [json.loads(line)["status"] for line in original]
    assert statuses.count("superseded") == 1 and statuses.count("forgotten") == 1


def test_export_all_and_markdown(cli: Cli, door: DoorProcess, tag: str) -> None:
    cli("save", "--custom-id", "owner", "Ana owns releases")
    cli("save", "--custom-id", "owner", "Bo owns releases")
    everything = cli.rows("--all")
    assert {row["containerTag"] for row in everything} >= {tag}
    done = cli("export", "--format", "markdown")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith("# bli-memory export\n")
    assert f"## Space `{tag}`" in text
    assert "> Bo owns releases" in text and "  > Ana owns releases" in text
    assert "customId `owner`" in text


def test_an_export_the_door_fails_leaves_no_file(
    tmp_path: Path, tag: str, start_door: Callable[..., DoorProcess]
) -> None:
    gone = start_door()
    cli = Cli(tmp_path / "home", tmp_path, tag).pair(gone.url, gone.token)
    gone.kill()
    folder = tmp_path / "out"
    folder.mkdir()
    done = cli("export", "--output", str(folder / "backup.jsonl"))
    assert done.returncode == 1 and "the door failed after 0 rows" in done.stderr
    assert done.stderr.count("\n") == 1
    assert list(folder.iterdir()) == []  # no file, no temporary left


class FailsOnSecondPage(BaseHTTPRequestHandler):
    """A door that answers the first export page and then fails (a real door cannot be made to fail
    between two pages on demand)."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "after" in body:
            status, answer = 503, {"error": "storage_full", "message": "the store is full"}
        else:
            row = {"id": "mem_1", "rootId": "mem_1", "version": 1, "status": "current", "content": "x"}
            status, answer = 200, {"rows": [row], "next": "mem_1", "searched": ["t"]}
        payload = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


def test_an_export_cut_short_between_pages_replaces_nothing(tmp_path: Path, tag: str) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "backup.jsonl").write_text("the previous backup\n")
    with served_locally(FailsOnSecondPage) as url:
        cli = Cli(tmp_path / "home", tmp_path, tag).pair(url, "bli_standin")
        done = cli("export", "--output", str(folder / "backup.jsonl"))
    assert (
        done.returncode == 1
        and "the door failed after 1 rows" in done.stderr
        and "storage_full" in done.stderr
    )
    assert [path.name for path in folder.iterdir()] == ["backup.jsonl"]  # no temporary left
    assert (folder / "backup.jsonl").read_text() == "the previous backup\n"


class HangsOnSecondPage(BaseHTTPRequestHandler):
    """A door that answers the first export page and holds the second until `release` is set (a real
    door cannot be made to stall between two pages on demand); then it answers the last page."""

    release = threading.Event()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        row = {"id": "mem_1", "rootId": "mem_1", "version": 1, "status": "current", "content": "x"}
        answer: dict[str, Any] = {"rows": [row], "next": "mem_1", "searched": ["t"]}
        if "after" in body:
            self.release.wait(30)
            answer = {"rows": [], "next": None, "searched": ["t"]}
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


def _export_until_its_temporary(cli: Cli, output: Path) -> tuple[subprocess.Popen[str], Path]:
    """Start `export --output OUTPUT` and wait until it has its temporary file open."""
    exporting = subprocess.Popen(
        [str(BIN), "export", "--output", str(output)],
        env=cli.env,
        cwd=cli.cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    temporary = output.parent / f".{output.name}.{exporting.pid}.tmp"
    deadline = time.monotonic() + 30
    while not temporary.exists():
        assert exporting.poll() is None and time.monotonic() < deadline, exporting.communicate()
        time.sleep(0.02)
    return exporting, temporary


def test_a_killed_export_leaves_no_temporary(tmp_path: Path, tag: str) -> None:
    """SIGTERM or Ctrl-C cleans up on the way out; after a SIGKILL (no way out) the next export to the
    same file removes the temporary of the dead process, and leaves a live one's alone."""
    folder = tmp_path / "out"
    folder.mkdir()
    output = folder / "backup.jsonl"
    output.write_text("the previous backup\n")
    HangsOnSecondPage.release.clear()
    with served_locally(HangsOnSecondPage) as url:
        cli = Cli(tmp_path / "home", tmp_path, tag).pair(url, "bli_standin")
        for ending in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            exporting, _ = _export_until_its_temporary(cli, output)
            exporting.send_signal(ending)
            _, stderr = exporting.communicate(timeout=30)
            assert exporting.returncode == 128 + ending, stderr
            assert stderr == f"bli-memory-mcp export: stopped by {ending.name}; {output} is left as it was\n"
            assert sorted(path.name for path in folder.iterdir()) == ["backup.jsonl"], ending
        killed, left = _export_until_its_temporary(cli, output)
        killed.kill()
        killed.wait(30)
        assert left.exists()
        alive = folder / f".{output.name}.{os.getpid()}.tmp"  # a live process's: not ours to remove
        alive.write_text("in progress\n")
        HangsOnSecondPage.release.set()
        done = cli("export", "--output", str(output))
    assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in folder.iterdir()) == [alive.name, "backup.jsonl"]
    assert output.read_text().count("\n") == 2  # the header and the one row


def test_bad_input_is_one_line(cli: Cli, tmp_path: Path) -> None:
    missing = cli("import", "mem0", str(tmp_path / "nothing.json"))
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "cannot read" in missing.stderr
    (tmp_path / "notes.json").write_text('{"memories": []}')
    wrong = cli("import", "mem0", str(tmp_path / "notes.json"))
    assert (
        wrong.returncode == 1 and "not mem0 get_all JSON" in wrong.stderr and "Traceback" not in wrong.stderr
    )
    unknown = cli("import", "evernote", "x")
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1
    both = cli("export", "--all", "--space", "x")
    assert both.returncode == 2 and "not both" in both.stderr


def test_scope_global_imports_into_the_persons_own_global_space(
    tmp_path: Path, door: DoorProcess, tag: str
) -> None:
    """--scope global puts the records in the importer's global space (searched beside every
    project, readable by nobody else), not in the repository's space; it refuses --space and jsonl.
    The importer is a person of the test's own: the shared door's token has a global space that every
    other test's session start reads."""
    token = door.pair(f"global-importer-{tag}")
    cli = Cli(tmp_path / "importer-home", tmp_path, tag).pair(door.url, token)
    answer = cli.imported("instructions", str(FIXTURES / "instructions" / "MEMORY.md"), "--scope", "global")
    assert answer["exit"] == 0 and answer["imported"] == 2 and answer["scope"] == "global", answer
    status, own = door.post("/api/memory/list", {"containerTag": tag, "scope": "global", "limit": 50}, token)
    assert status == 200 and len(own["memories"]) == 2
    assert all(row["scope"] == "global" for row in own["memories"])
    status, theirs = door.post("/api/memory/list", {"containerTag": tag, "scope": "global", "limit": 50})
    assert status == 200 and theirs["memories"] == []  # the shared token's person sees none of it
    status, project = door.post("/api/memory/list", {"containerTag": tag, "limit": 50}, token)
    assert status == 200 and project["memories"] == []
    again = cli("import", "instructions", str(FIXTURES / "instructions" / "MEMORY.md"), "--scope", "global")
    assert again.returncode == 0 and "into your global space: 0 imported" in again.stdout, again.stdout
    for refused in (("--space", "elsewhere"), ()):
        fmt, path = (
            ("jsonl", str(FIXTURES / "mcp_memory.jsonl"))
            if not refused
            else (
                "instructions",
                str(FIXTURES / "instructions" / "MEMORY.md"),
            )
        )
        done = cli("import", fmt, path, "--scope", "global", *refused)
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done
        assert "--scope global does not go with" in done.stderr

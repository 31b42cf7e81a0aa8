"""The destructive tools check a memory id before any request: in-process against the schema, and as
`bli-memory-mcp forget --id` against a stand-in door that records every request it gets."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from bli_memory.settings import write_session
from bli_memory.tools import TOOLS_BY_NAME, check_arguments
from tests.client.helpers import run_cli
from tests.helpers import served_locally

BAD_IDS = [
    "x",
    "../../api/memory/forget",
    "mem_*",
    "mem_12ab/history",
    " mem_0123456789ab",
    "MEM_0123456789AB",
    "mem_",
]


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize("tool", ["update_memory", "forget_memory"])
def test_a_malformed_id_never_passes_the_schema(tool: str, bad: str) -> None:
    arguments = {"id": bad, "content": "new text"} if tool == "update_memory" else {"id": bad}
    problem = check_arguments(TOOLS_BY_NAME[tool], arguments)
    assert problem is not None and "is not a memory id" in problem


def test_an_id_the_door_gives_passes() -> None:
    assert check_arguments(TOOLS_BY_NAME["forget_memory"], {"id": "mem_" + "0a" * 12}) is None
    assert check_arguments(TOOLS_BY_NAME["update_memory"], {"id": "mem_" + "f" * 24, "content": "x"}) is None


def test_forget_with_a_malformed_id_sends_no_request(tmp_path: Path) -> None:
    seen: list[str] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.path)
            body = json.dumps({"forgotten": {"id": "mem_0", "content": "gone"}, "match": "id"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    home = tmp_path / "home"
    home.mkdir()
    with served_locally(Recorder) as url:
        write_session(url, "bli_stand_in_token", env={"HOME": str(home)})
        env = {"BLI_MEMORY_CONTAINER_TAG": "repo_ids"}
        refused = run_cli(str(home), str(tmp_path), "forget", "--id", "mem_*", env=env)
        accepted = run_cli(str(home), str(tmp_path), "forget", "--id", "mem_" + "1" * 24, env=env)
    assert refused.returncode == 2 and "is not a memory id" in refused.stderr, refused
    assert len(refused.stderr.splitlines()) == 1
    assert accepted.returncode == 0, accepted.stderr
    assert seen == ["/api/memory/forget"]  # the well-formed one only


def test_no_tool_can_wipe_anything() -> None:
    """Only forget_memory is destructive, and it takes one memory; nothing lists, resets or deletes
    in bulk."""
    from bli_memory.tools import TOOLS

    destructive = [tool.name for tool in TOOLS if tool.annotations.get("destructiveHint") is not False]
    assert destructive == ["forget_memory"]
    words = ("reset", "wipe", "clear", "purge", "delete", "drop")
    assert not [tool.name for tool in TOOLS if any(word in tool.name for word in words)]
    assert not [
        tool.name
        for tool in TOOLS
        if tool.annotations.get("readOnlyHint") is not True and "list" in tool.name
    ]

"""The MCP server over stdio, driven by the SDK's own client against a real door.

Each test spawns `bli-memory-mcp` (no arguments) as a subprocess with a temporary HOME, pairs it
through the environment, and talks JSON-RPC to it: the same path Claude Code and Codex take.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bli_memory.settings import UNPAIRED_MESSAGE

T = TypeVar("T")

BIN = Path(sys.executable).parent / "bli-memory-mcp"
SESSION_TIMEOUT_S = 60.0
TOOL_NAMES = {
    "search_memory",
    "save_memory",
    "update_memory",
    "forget_memory",
    "list_memories",
    "recent_memories",
    "memory_experience",
}
#: the pin tools (docs/scopes-and-pins.md; their own tests: tests/client/test_scopes_pins.py)
TOOL_NAMES |= {"pin_memory", "list_pins", "unpin_memory"}


def server_env(home: Path, url: str, token: str, tag: str | None) -> dict[str, str]:
    env = {
        "HOME": str(home),
        "BLI_MEMORY_DASHBOARD_URL": url,
        "BLI_MEMORY_DEVICE_TOKEN": token,
        "BLI_MEMORY_DAEMON": "0",
    }
    if tag is not None:
        env["BLI_MEMORY_CONTAINER_TAG"] = tag
    return env


class McpClient:
    """A spawned server and the SDK's client session (protocol 2025-11-25), usable from sync tests.

    The session lives in a blocking portal's event loop, so several tests can share one spawn
    (each passes its own `containerTag`) and a test reads as plain calls.
    """

    def __init__(self, tmp: Path, url: str, token: str, tag: str | None, cwd: Path | None = None) -> None:
        self.home = tmp / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.env = server_env(self.home, url, token, tag)
        self.cwd = cwd or tmp
        self.errlog = tmp / "server-stderr.log"
        self._stack = contextlib.ExitStack()
        self.portal = self._stack.enter_context(anyio.from_thread.start_blocking_portal())
        self.session: ClientSession = self._stack.enter_context(
            self.portal.wrap_async_context_manager(self._session())
        )

    @contextlib.asynccontextmanager
    async def _session(self) -> AsyncIterator[ClientSession]:
        with open(self.errlog, "w", encoding="utf-8") as err:
            params = StdioServerParameters(command=str(BIN), args=[], env=self.env, cwd=self.cwd)
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                with anyio.fail_after(SESSION_TIMEOUT_S):
                    init = await session.initialize()
                assert init.server_info.name == "bli-memory"
                assert init.protocol_version == "2025-11-25"
                yield session

    def list_tools(self) -> Any:
        return self.portal.call(self._bounded, self.session.list_tools())

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        return self.portal.call(self._bounded, self.session.call_tool(name, arguments))

    async def _bounded(self, awaitable: Awaitable[T]) -> T:
        with anyio.fail_after(SESSION_TIMEOUT_S):
            return await awaitable

    def close(self) -> None:
        self._stack.close()


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, door: Any) -> Iterator[McpClient]:
    """One server on the shared door, run in a git project of its own (no space forced).

    Tests that need a space of their own pass `containerTag`; the default-space test does not.
    """
    tmp = tmp_path_factory.mktemp("mcp")
    project = tmp / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    remote = f"git@github.com:acme/mcp-{uuid.uuid4().hex[:8]}.git"
    subprocess.run(["git", "-C", str(project), "remote", "add", "origin", remote], check=True)
    mcp = McpClient(tmp, door.url, door.token, None, cwd=project)
    yield mcp
    mcp.close()


@pytest.fixture(scope="module")
def client_onnx(tmp_path_factory: pytest.TempPathFactory, door_onnx: Any) -> Iterator[McpClient]:
    mcp = McpClient(
        tmp_path_factory.mktemp("mcp_onnx"), door_onnx.url, door_onnx.token, "repo_default_space__0"
    )
    yield mcp
    mcp.close()


def one_off(tmp_path: Path, url: str, token: str, tag: str, *steps: tuple[str, dict[str, Any]]) -> list[Any]:
    """A server of the test's own (another door or token) for a few calls."""
    mcp = McpClient(tmp_path, url, token, tag)
    try:
        return [mcp.call(name, arguments) for name, arguments in steps]
    finally:
        mcp.close()


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_lists_the_four_tools_with_their_names_schemas_and_annotations(client: McpClient) -> None:
    tools = {tool.name: tool for tool in client.list_tools().tools}
    assert set(tools) == TOOL_NAMES
    schema = {name: tool.input_schema for name, tool in tools.items()}
    assert set(schema["search_memory"]["properties"]) == {"query", "containerTag", "limit", "scope"}
    assert schema["search_memory"]["required"] == ["query"]
    assert set(schema["save_memory"]["properties"]) == {
        "content",
        "containerTag",
        "customId",
        "extract",
        "scope",
    }
    assert schema["save_memory"]["required"] == ["content"]
    assert set(schema["update_memory"]["properties"]) == {"id", "content"}
    assert set(schema["update_memory"]["required"]) == {"id", "content"}
    assert set(schema["forget_memory"]["properties"]) == {"id", "content", "query", "containerTag", "scope"}
    search = tools["search_memory"].annotations
    save = tools["save_memory"].annotations
    update = tools["update_memory"].annotations
    forget = tools["forget_memory"].annotations
    assert search.read_only_hint is True and search.idempotent_hint is True
    assert save.read_only_hint is False and save.destructive_hint is False
    assert update.read_only_hint is False and update.destructive_hint is False
    assert forget.read_only_hint is False and forget.destructive_hint is True
    assert all(tool.annotations.open_world_hint is False for tool in tools.values())
    assert all(tool.description and len(tool.description) < 2048 for tool in tools.values())
    assert all(tool.output_schema["type"] == "object" for tool in tools.values())


def test_save_search_update_search_forget_round_trip(client: McpClient, tag: str) -> None:
    word = f"zebrafish{uuid.uuid4().hex[:6]}"
    saved = client.call("save_memory", {"content": f"The {word} build runs on Tuesdays", "containerTag": tag})
    assert not saved.is_error, text_of(saved)
    memory_id = saved.structured_content["id"]
    assert text_of(saved) == f"Saved memory {memory_id} in space {tag} (status: created)."
    assert saved.structured_content["containerTag"] == tag

    found = client.call("search_memory", {"query": word, "containerTag": tag})
    text = text_of(found)
    assert "Remembered facts:" in text and f"[id {memory_id} · <1h · scope project · source {tag}]" in text
    assert f"   The {word} build runs on Tuesdays" in text
    assert "similarity" not in text  # embedder none: no cosine was measured, so none is shown
    assert found.structured_content["memories"][0]["content"] == f"The {word} build runs on Tuesdays"

    updated = client.call("update_memory", {"id": memory_id, "content": f"The {word} build runs on Fridays"})
    assert not updated.is_error, text_of(updated)
    current_id = updated.structured_content["id"]
    assert "the previous text is kept as history" in text_of(updated)
    assert f"It said before:\n   The {word} build runs on Tuesdays" in text_of(updated)
    assert [v["content"] for v in updated.structured_content["versions"]] == [
        f"The {word} build runs on Tuesdays",
        f"The {word} build runs on Fridays",
    ]

    after = client.call("search_memory", {"query": word, "containerTag": tag})
    assert f"The {word} build runs on Fridays" in text_of(after) and "Tuesdays" not in text_of(after)
    assert [m["id"] for m in after.structured_content["memories"]] == [current_id]

    forgot = client.call("forget_memory", {"id": current_id, "containerTag": tag})
    assert text_of(forgot).startswith(f"Forgot memory {current_id} in space {tag} (by id)")
    silent = client.call("search_memory", {"query": word, "containerTag": tag})
    assert not silent.is_error and silent.structured_content["silent"] is True
    assert text_of(silent).startswith(f"The record is silent on “{word}” in space {tag}")


def test_forget_by_exact_text_and_upsert_by_custom_id(client: McpClient, tag: str) -> None:
    word = f"okapi{uuid.uuid4().hex[:6]}"
    first = client.call(
        "save_memory", {"content": f"{word} owner is Ana", "customId": word, "containerTag": tag}
    )
    again = client.call(
        "save_memory", {"content": f"{word} owner is Bo", "customId": word, "containerTag": tag}
    )
    assert first.structured_content["status"] == "created"
    assert again.structured_content["status"] == "updated"
    found = client.call("search_memory", {"query": word, "containerTag": tag})
    assert [m["content"] for m in found.structured_content["memories"]] == [f"{word} owner is Bo"]

    exact = client.call("forget_memory", {"content": f"{word} owner is Bo", "containerTag": tag})
    assert not exact.is_error and exact.structured_content["match"] == "exact"
    assert text_of(exact).endswith(f"It said:\n   {word} owner is Bo")
    missing = client.call("forget_memory", {"content": f"{word} owner is Bo", "containerTag": tag})
    assert not missing.is_error and missing.structured_content["forgotten"] is None
    assert text_of(missing).startswith(f"Nothing forgotten in space {tag}")


def test_save_with_extract_is_answered_as_queued(client: McpClient, tag: str) -> None:
    queued = client.call(
        "save_memory",
        {
            "content": "We decided to ship the zipapp. The CI runs on two cores.",
            "extract": True,
            "containerTag": tag,
        },
    )
    if queued.is_error:  # a door without a librarian says so, by its reason
        assert "reason: http_400" in text_of(queued)
        return
    assert queued.structured_content["queued"] is True and queued.structured_content["jobId"]
    assert text_of(queued).startswith(f"Queued for extraction in space {tag} as job ")


def test_bad_arguments_are_an_error_the_model_can_correct(client: McpClient) -> None:
    two = client.call("forget_memory", {"id": "mem_" + "0" * 24, "query": "y"})
    empty = client.call("search_memory", {"query": "   "})
    unknown = client.call("save_memory", {"content": "x", "colour": "blue"})
    limit = client.call("search_memory", {"query": "x", "limit": 0})
    assert all(r.is_error for r in (two, empty, unknown, limit))
    assert "exactly one of `id`, `content` or `query`" in text_of(two)
    assert "`query` must not be empty" in text_of(empty)
    assert "unknown argument `colour`" in text_of(unknown)
    assert "between 1 and 100" in text_of(limit)
    assert all("reason: invalid_arguments" in text_of(r) for r in (two, empty, unknown, limit))


def test_a_door_error_on_a_valid_call_is_an_error_with_the_doors_reason(client: McpClient) -> None:
    result = client.call("update_memory", {"id": "mem_" + "0" * 24, "content": "x"})
    assert result.is_error
    assert "reason: http_404" in text_of(result)


def test_forget_by_closest_match_uses_meaning(client_onnx: McpClient, tag: str) -> None:
    saved = client_onnx.call(
        "save_memory", {"content": "The release train leaves every Tuesday at noon.", "containerTag": tag}
    )
    far = client_onnx.call(
        "forget_memory", {"query": "Favourite pizza toppings of the design team", "containerTag": tag}
    )
    assert not far.is_error and far.structured_content["forgotten"] is None
    assert "cosine similarity ≥ 0.85" in text_of(far)
    closest = client_onnx.call(
        "forget_memory", {"query": "The release train leaves every Tuesday at noon", "containerTag": tag}
    )
    assert not closest.is_error, text_of(closest)
    assert closest.structured_content["match"] == "closest"
    assert closest.structured_content["forgotten"]["id"] == saved.structured_content["id"]
    assert "as the closest match, cosine similarity" in text_of(closest)


def test_search_by_meaning_labels_cosine_similarity(client_onnx: McpClient, tag: str) -> None:
    client_onnx.call(
        "save_memory", {"content": "Deployments to production need two approvals.", "containerTag": tag}
    )
    found = client_onnx.call(
        "search_memory", {"query": "how many approvals does a production deploy need", "containerTag": tag}
    )
    assert "cosine similarity 0." in text_of(found)
    assert isinstance(found.structured_content["memories"][0]["similarity"], float)


def test_a_door_that_is_down_is_an_error_naming_dashboard_unreachable(tmp_path: Path, tag: str) -> None:
    (result,) = one_off(
        tmp_path,
        f"http://127.0.0.1:{closed_port()}",
        "bli_unused",
        tag,
        ("search_memory", {"query": "anything"}),
    )
    assert result.is_error
    assert "reason: dashboard_unreachable" in text_of(result)
    assert result.structured_content is None  # the text is what the model sees


def test_a_revoked_token_is_an_error_naming_http_401(tmp_path: Path, door: Any, tag: str) -> None:
    person = f"revoked-{uuid.uuid4().hex[:8]}"
    token = door.pair(person)
    listed = subprocess.run(
        [str(BIN.parent / "bli-memory-door"), "tokens", "list", "--json", "--db", str(door.db)],
        capture_output=True,
        text=True,
        env=door.env(),
        check=True,
    )
    (device,) = [row for row in json.loads(listed.stdout) if row["person"] == person]
    subprocess.run(
        [str(BIN.parent / "bli-memory-door"), "tokens", "revoke", device["id"], "--db", str(door.db)],
        capture_output=True,
        env=door.env(),
        check=True,
    )
    (result,) = one_off(tmp_path, door.url, token, tag, ("save_memory", {"content": "never lands"}))
    assert result.is_error
    text = text_of(result)
    assert "reason: http_401" in text and "device token" in text
    assert token not in text and token not in Path(tmp_path / "server-stderr.log").read_text()


def test_the_default_space_is_the_project_folders(client: McpClient) -> None:
    from bli_memory.space import container_tag

    saved = client.call("save_memory", {"content": "space from the folder"})
    assert not saved.is_error, text_of(saved)
    assert saved.structured_content["containerTag"] == container_tag(str(client.cwd))
    assert container_tag(str(client.cwd)).startswith("repo_mcp_")


def raw_exchange(env: dict[str, str], cwd: Path, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Talk JSON-RPC lines as an older host would: wait for each request's answer before the next.

    Every stdout line must be one JSON-RPC message (json.loads fails the test otherwise).
    """
    process = subprocess.Popen(
        [str(BIN)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**env, "PATH": os.environ["PATH"]},
        cwd=cwd,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdin is not None and process.stdout is not None
    stdout = process.stdout

    def pump() -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    answers = []
    try:
        for message in messages:
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
            while "id" in message:
                answer = json.loads(lines.get(timeout=SESSION_TIMEOUT_S))
                answers.append(answer)
                if answer.get("id") == message["id"]:
                    break
    finally:
        process.stdin.close()
        assert process.wait(SESSION_TIMEOUT_S) == 0
    return answers


def test_a_2025_06_18_handshake_as_codex_sends_it(tmp_path: Path, door: Any, tag: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    answers = raw_exchange(
        server_env(home, door.url, door.token, tag),
        tmp_path,
        [
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"elicitation": {}},
                    "clientInfo": {"name": "codex-mcp-client", "version": "0.150.0"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {"progressToken": 1}}},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "search_memory", "arguments": {"query": "nothing here yet"}},
            },
        ],
    )
    by_id = {a["id"]: a for a in answers}  # every stdout line is JSON-RPC, or json.loads failed above
    assert by_id[0]["result"]["protocolVersion"] == "2025-06-18"
    assert by_id[0]["result"]["capabilities"]["tools"] is not None
    assert {t["name"] for t in by_id[1]["result"]["tools"]} == TOOL_NAMES
    call = by_id[2]["result"]
    assert call.get("isError") in (False, None)
    assert call["structuredContent"]["silent"] is True
    assert call["content"][0]["text"].startswith("The record is silent on")


def test_unpaired_it_says_one_sentence_on_stderr_and_exits_1(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN)],
        input="",
        capture_output=True,
        text=True,
        env={"HOME": str(tmp_path), "PATH": os.environ["PATH"]},
        timeout=SESSION_TIMEOUT_S,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == UNPAIRED_MESSAGE + "\n"


def test_arguments_are_refused_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from bli_memory.mcp_server import main; raise SystemExit(main(['--bogus']))"],
        capture_output=True,
        text=True,
        env={"HOME": str(tmp_path), "PATH": os.environ["PATH"]},
        timeout=SESSION_TIMEOUT_S,
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize("command", ["search", "save", "forget"])
def test_the_memory_commands_run_the_tools_without_the_server_module(
    tmp_path: Path, door: Any, tag: str, command: str
) -> None:
    """The CLI and the server share `bli_memory.tools`; a command never loads the server's module."""
    args = {"search": ["nothing here"], "save": ["The CLI saved this."], "forget": ["--content", "absent"]}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "bli_memory", command, *args[command]],
        capture_output=True,
        text=True,
        env={**server_env(tmp_path, door.url, door.token, tag), "PATH": os.environ["PATH"]},
        timeout=SESSION_TIMEOUT_S,
    )
    modules = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert done.returncode == (1 if command == "forget" else 0), done.stderr  # forget: nothing matched
    assert "bli_memory.tools" in modules and "bli_memory.door_client" in modules
    assert "bli_memory.mcp_server" not in modules


FIVE_MEMORIES = (
    "Production deploys need two approvals from the platform team.",
    "We pinned numpy below 2.0 because onnxruntime wheels broke.",
    "The staging database is reset every Monday at 6am.",
    "Use ruff format with line length 110 for this repo.",
    "Alice owns the billing service and its on-call rotation.",
)


def test_search_by_meaning_is_silent_on_a_question_nothing_answers(client_onnx: McpClient, tag: str) -> None:
    for content in FIVE_MEMORIES:
        client_onnx.call("save_memory", {"content": content, "containerTag": tag})
    noise = client_onnx.call("search_memory", {"query": "zebra quantum flux", "containerTag": tag})
    assert not noise.is_error
    assert noise.structured_content["silent"] is True, text_of(noise)
    assert text_of(noise).startswith("The record is silent on “zebra quantum flux”")
    found = client_onnx.call("search_memory", {"query": "why is numpy pinned", "containerTag": tag})
    memories = found.structured_content["memories"]
    assert memories[0]["content"] == FIVE_MEMORIES[1]
    assert all(m["similarity"] is None or m["similarity"] >= 0.25 for m in memories)
    assert len(memories) < len(FIVE_MEMORIES), "the unrelated memories are not listed as matches"


def test_search_without_an_embedder_keeps_keyword_matches(client: McpClient, tag: str) -> None:
    word = f"quokka{uuid.uuid4().hex[:6]}"
    client.call("save_memory", {"content": f"The {word} build flag is off.", "containerTag": tag})
    found = client.call("search_memory", {"query": word, "containerTag": tag})
    (memory,) = found.structured_content["memories"]
    assert memory["similarity"] is None and word in memory["content"]


def test_save_and_update_mask_secrets_before_they_leave(client: McpClient, tag: str) -> None:
    """A key pasted into save_memory or update_memory is masked on this machine, as the Stop hook
    masks a turn, and the answer says so: the door never stores it."""
    word = f"narwhal{uuid.uuid4().hex[:6]}"
    token = "ghp_" + "Zq7Xk2Lm9Pw4Rt8Vb3Nc6Hy1Js5Df0Ga2Ke7"
    saved = client.call(
        "save_memory", {"content": f"The {word} deploy token is {token}", "containerTag": tag}
    )
    assert not saved.is_error, text_of(saved)
    assert "Masked 1 secret before saving (github_token ×1)." in text_of(saved)
    assert saved.structured_content["masked"] == {"count": 1, "kinds": {"github_token": 1}}
    found = client.call("search_memory", {"query": word, "containerTag": tag})
    stored = found.structured_content["memories"][0]["content"]
    assert token not in stored and token[4:12] not in stored
    assert stored == f"The {word} deploy token is ghp_[REDACTED:github_token]"

    updated = client.call(
        "update_memory",
        {"id": saved.structured_content["id"], "content": f"The {word} deploy password='hunter2hunter2'"},
    )
    assert not updated.is_error, text_of(updated)
    assert "hunter2hunter2" not in text_of(updated) and "Masked 1 secret" in text_of(updated)
    plain = client.call("save_memory", {"content": f"The {word} build runs nightly", "containerTag": tag})
    assert "Masked" not in text_of(plain) and "masked" not in plain.structured_content


# -- memory_experience: the experience log's tool, recorded by the code `log` runs -----------------------


def experience_receipts(home: Path) -> list[str]:
    log = home / ".codex" / "AGENT-EXPERIENCE.md"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def experience_sidecars(home: Path) -> list[dict[str, Any]]:
    folder = home / ".codex" / "agent-experience-outbox"
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))]


def test_memory_experience_is_listed_with_its_closed_choices(client: McpClient) -> None:
    tools = {tool.name: tool for tool in client.list_tools().tools}
    schema = tools["memory_experience"].input_schema
    assert set(schema["required"]) == {"store", "verdict", "reason"}
    assert schema["properties"]["store"]["enum"] == ["bli", "supermemory", "both"]
    assert schema["properties"]["verdict"]["enum"] == ["win", "loss", "noise"]
    assert tools["memory_experience"].annotations.destructive_hint is False


def test_memory_experience_refuses_what_log_refuses_and_writes_nothing(
    tmp_path: Path, door: Any, tag: str
) -> None:
    results = one_off(
        tmp_path,
        door.url,
        door.token,
        tag,
        ("memory_experience", {"store": "bli", "verdict": "meh", "reason": "x"}),
        ("memory_experience", {"store": "chroma", "verdict": "win", "reason": "x"}),
        ("memory_experience", {"store": "bli", "verdict": "win", "reason": "two\nlines"}),
        ("memory_experience", {"store": "bli", "verdict": "win", "reason": "x" * 501}),
        ("memory_experience", {"store": "bli", "verdict": "win", "reason": "token ghp_" + "a1B2c3D4e5" * 4}),
        ("memory_experience", {"store": "bli", "verdict": "win"}),
    )
    needles = [
        "`verdict` must be one of: win, loss, noise",  # the schema's closed choices, checked first
        "`store` must be one of: bli, supermemory, both",
        "the reason must be one line",
        "at most 500",
        "looks like it holds a secret",
        "`reason` is required",
    ]
    for result, needle in zip(results, needles, strict=True):
        assert result.is_error, needle
        assert "reason: invalid_arguments" in text_of(result) and needle in text_of(result)
    assert not (tmp_path / "home" / ".codex").exists()  # nothing recorded, nothing queued


def test_memory_experience_writes_the_receipt_and_sidecar_and_ships_it(
    tmp_path: Path, door: Any, tag: str
) -> None:
    reason = f"The dated decision answered the question directly {uuid.uuid4().hex[:6]}"
    (result,) = one_off(
        tmp_path,
        door.url,
        door.token,
        tag,
        ("memory_experience", {"store": "both", "verdict": "win", "reason": reason}),
    )
    assert not result.is_error, text_of(result)
    answer = result.structured_content
    assert answer["shipped"] is True and answer["reason"] is None
    (line,) = experience_receipts(tmp_path / "home")
    assert line == answer["receipt"] and line.endswith(f"· both [bli]+◪ · win: {reason}")
    assert " ICT · unknown · " in line  # no host variable in this environment: the agent is unknown
    (entry,) = experience_sidecars(tmp_path / "home")
    assert entry["id"] == answer["id"] and entry["shipped"] is True and entry["receipt"] == line
    assert "shipped to the door" in text_of(result)
    status, usage = door.get("/api/ops/memory-usage")
    assert status == 200 and reason in json.dumps(usage)


def test_memory_experience_queues_for_sync_when_the_door_is_down(tmp_path: Path, door: Any, tag: str) -> None:
    (result,) = one_off(
        tmp_path,
        f"http://127.0.0.1:{closed_port()}",
        "bli_unused",
        tag,
        (
            "memory_experience",
            {"store": "supermemory", "verdict": "noise", "reason": "Recall repeated the prompt"},
        ),
    )
    assert not result.is_error, text_of(result)  # the opinion is recorded whatever the door does
    answer = result.structured_content
    assert answer["shipped"] is False and answer["reason"] == "dashboard_unreachable"
    (entry,) = experience_sidecars(tmp_path / "home")
    assert entry["shipped"] is False and entry["last_error"] == "dashboard_unreachable"
    # the CLI's sync ships what the tool queued, under the same id
    env = {**os.environ, **server_env(tmp_path / "home", door.url, door.token, tag)}
    synced = subprocess.run(
        [str(BIN), "sync", "--json"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert synced.returncode == 0, synced.stderr
    assert json.loads(synced.stdout)["shipped"] == 1
    (entry,) = experience_sidecars(tmp_path / "home")
    assert entry["id"] == answer["id"] and entry["shipped"] is True

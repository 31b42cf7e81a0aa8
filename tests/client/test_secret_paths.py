"""No path that sends text to the door lets a secret through: each carries every kind of secret.

The carriers are every positive of the redaction corpus (tests/fixtures/redaction, filled with a seed)
and a device token the door itself minted (`bli_…`). Each path sends them through a loopback relay in
front of the real door that keeps every byte the client wrote (`tests.helpers.recording_relay`); no
16-character piece of any secret may be among those bytes, as sent, JSON-unescaped or URL-decoded.

- the MCP server, driven by the SDK's client: `pin_memory`, `save_memory` (content, `customId`,
  `containerTag`), `update_memory` (id, content), `search_memory`, `forget_memory` (id, content,
  query), `list_memories`, `recent_memories`, `list_pins` (`containerTag`);
- the CLI: `pin`, `save --custom-id --container-tag`, `eval` (its queries and `--container-tag`),
  `export --space`, and a space named by BLI_MEMORY_CONTAINER_TAG;
- `import`: Supermemory (`containerTags`, which become aliases, and metadata keys), mem0 (metadata
  keys), and our own jsonl (`customId`, `containerTag`, metadata keys).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from bli_memory.door.model import new_token
from tests.client.helpers import mcp_session, run_cli
from tests.helpers import export_row, fill_redaction_template, recording_relay, redaction_rows

WINDOW_CHARS = 16
SEED = 11
TAG_CHUNK_CHARS = 190  # a containerTag or customId holds at most 200 characters
CONTENT_CHUNK_CHARS = 1900  # a pin holds at most 2 000
UNKNOWN_ID = "mem_" + "0" * 24  # a well-formed id the door does not know: the update is sent, then refused
#: the door behind a relay is asked under the relay's port: it must answer 127.0.0.1 on any port
RELAYED_DOOR_ARGS = ("--embedder", "none", "--allowed-host", "127.0.0.1")


class Carrier:
    """One text that holds one secret, and the vendor prefix its mask may keep."""

    def __init__(self, name: str, text: str, secret: str, prefix: str) -> None:
        self.name = name
        self.text = text
        self.secret = secret
        self.prefix = prefix

    def pieces(self) -> list[str]:
        material = self.secret[len(self.prefix) :] if self.secret.startswith(self.prefix) else self.secret
        lines = [line for line in material.splitlines() if line]
        return [
            line[i : i + WINDOW_CHARS] for line in lines for i in range(max(1, len(line) - WINDOW_CHARS + 1))
        ]


def _carriers() -> list[Carrier]:
    rng = random.Random(SEED)
    carriers = []
    for row in redaction_rows("positives.json"):
        text, secret = fill_redaction_template(row["template"], rng)
        carriers.append(Carrier(row["id"], text, secret, row["prefix"]))
    token = new_token()
    carriers.append(Carrier("bli_token", f"the laptop pairs with {token} from now on", token, "bli_"))
    return carriers


CARRIERS = _carriers()


def _chunks(limit: int) -> list[str]:
    """The carriers' texts joined by line breaks into chunks of at most `limit` characters (a longer
    text is a chunk of its own)."""
    chunks: list[str] = []
    for carrier in CARRIERS:
        if chunks and len(chunks[-1]) + 1 + len(carrier.text) <= limit:
            chunks[-1] += "\n" + carrier.text
        else:
            chunks.append(carrier.text)
    return chunks


def _readings(sent: bytes) -> list[str]:
    text = sent.decode("utf-8", "replace")
    unescaped = text.replace("\\n", "\n").replace('\\"', '"').replace("\\/", "/").replace("\\\\", "\\")
    return [text, unescaped, unquote(text), unquote(text.replace("+", " "))]


def assert_no_secret_sent(sent: bytes, *also: str) -> None:
    readings = _readings(sent) + list(also)
    leaked = [c.name for c in CARRIERS if any(p in r for p in c.pieces() for r in readings)]
    assert not leaked, f"pieces of these secrets reached the door: {leaked}"


def test_every_carrier_holds_a_secret_the_redactor_masks() -> None:
    """The corpus guard: without masking, every carrier would be caught by `assert_no_secret_sent`."""
    for carrier in CARRIERS:
        with pytest.raises(AssertionError):
            assert_no_secret_sent(carrier.text.encode())


@pytest.fixture
def relayed(tmp_path: Path, start_door: Callable[..., Any]) -> Any:
    door = start_door(*RELAYED_DOOR_ARGS)
    with recording_relay(door.url) as relay:
        yield door, relay


def _env(relay: Any, door: Any, tag: str) -> dict[str, str]:
    return {
        "BLI_MEMORY_DASHBOARD_URL": relay.url,
        "BLI_MEMORY_DEVICE_TOKEN": door.token,
        "BLI_MEMORY_CONTAINER_TAG": tag,
    }


def test_the_mcp_tools_send_no_secret(tmp_path: Path, relayed: Any) -> None:
    door, relay = relayed
    calls: list[tuple[str, dict[str, Any]]] = []
    for chunk in _chunks(TAG_CHUNK_CHARS):
        calls += [
            (
                "save_memory",
                {"content": "the staging deploy runs at noon", "customId": chunk, "containerTag": chunk},
            ),
            ("search_memory", {"query": chunk, "containerTag": chunk}),
            ("list_pins", {"containerTag": chunk}),
        ]
    for chunk in _chunks(CONTENT_CHUNK_CHARS):
        calls += [
            ("pin_memory", {"content": chunk}),
            ("save_memory", {"content": chunk}),
            ("update_memory", {"id": UNKNOWN_ID, "content": chunk}),
            ("update_memory", {"id": chunk, "content": "refused before it is sent"}),
            ("forget_memory", {"id": chunk}),
            ("forget_memory", {"content": chunk}),
            ("forget_memory", {"query": chunk}),
            ("list_memories", {"containerTag": chunk}),
            ("recent_memories", {"containerTag": chunk}),
        ]

    async def steps(session: Any) -> list[str]:
        answers = []
        for name, arguments in calls:
            result = await session.call_tool(name, arguments)
            answers.append(" ".join(getattr(block, "text", "") for block in result.content))
        return answers

    answers: Any = mcp_session(str(tmp_path), str(tmp_path), relay.url, door.token, steps)
    sent = relay.sent()
    for path in ("/api/memory/save", "/api/memory/search", "/api/memory/pin", "/api/memory/forget"):
        assert path.encode() in sent, path
    assert b"[REDACTED:" in sent
    assert any("Pinned" in answer and "Masked" in answer for answer in answers)
    assert_no_secret_sent(sent, *answers)


def test_the_cli_sends_no_secret(tmp_path: Path, relayed: Any, tag: str) -> None:
    door, relay = relayed
    env = _env(relay, door, tag)
    home, cwd = str(tmp_path), str(tmp_path)
    outputs = []
    for chunk in _chunks(CONTENT_CHUNK_CHARS):
        outputs.append(run_cli(home, cwd, "pin", chunk, env=env))
    for chunk in _chunks(CONTENT_CHUNK_CHARS):  # tags and ids this long are refused, after they are sent
        saved = run_cli(
            home, cwd, "save", "--custom-id", chunk, "--container-tag", chunk, "a deploy note", env=env
        )
        outputs.append(saved)
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"query": c.text, "expect": "deploy"}) + "\n" for c in CARRIERS))
    outputs.append(
        run_cli(home, cwd, "eval", str(cases), "--container-tag", _chunks(TAG_CHUNK_CHARS)[0], env=env)
    )
    for done in outputs:
        assert done.returncode in (0, 1), done.stderr  # 1: a tag the door refuses (too long), never a crash
        assert "Traceback" not in done.stderr
    assert outputs[0].returncode == 0 and outputs[-1].returncode == 0, outputs[-1].stderr
    sent = relay.sent()
    assert b"/api/memory/pin" in sent and b"/api/memory/search" in sent
    assert_no_secret_sent(sent, *(done.stdout + done.stderr for done in outputs))


def test_a_space_named_by_hand_or_by_the_environment_sends_no_secret(
    tmp_path: Path, relayed: Any, tag: str
) -> None:
    """`export --space TAG` and a BLI_MEMORY_CONTAINER_TAG that holds a secret: the tag is masked before
    it names the space of a call (here `search` and `export`)."""
    door, relay = relayed
    home, cwd = str(tmp_path), str(tmp_path)
    outputs = []
    for chunk in _chunks(TAG_CHUNK_CHARS):
        outputs.append(run_cli(home, cwd, "export", "--space", chunk, env=_env(relay, door, tag)))
        outputs.append(run_cli(home, cwd, "search", "deploy", env=_env(relay, door, chunk)))
    for done in outputs:
        assert done.returncode in (0, 1), done.stderr
        assert "Traceback" not in done.stderr
    sent = relay.sent()
    assert b"/api/memory/export" in sent and b"/api/memory/search" in sent
    assert_no_secret_sent(sent, *(done.stdout + done.stderr for done in outputs))


def _supermemory_file(folder: Path) -> Path:
    documents = [
        {
            "id": f"doc_{number}",
            "content": f"deploy note {number}",
            "containerTags": [carrier.text],
            "customId": carrier.text,
            "metadata": {carrier.text: "seen"},
            "createdAt": "2024-03-01T10:00:00Z",
        }
        for number, carrier in enumerate(CARRIERS)
    ]
    path = folder / "supermemory.json"
    path.write_text(json.dumps({"memories": documents}))
    return path


def _mem0_file(folder: Path) -> Path:
    results = [
        {
            "id": f"m{number}",
            "memory": f"deploy fact {number}",
            "metadata": {carrier.text: 1},
            "user_id": "ana",
        }
        for number, carrier in enumerate(CARRIERS)
    ]
    path = folder / "mem0.json"
    path.write_text(json.dumps({"results": results}))
    return path


def _jsonl_file(folder: Path) -> Path:
    lines = [{"format": "bli-memory", "version": 1}]
    for number, carrier in enumerate(CARRIERS):
        memory_id = f"mem_{number:024x}"
        lines.append(
            export_row(
                carrier.text,
                memory_id,
                f"deploy fact {number}",
                customId=carrier.text,
                metadata={carrier.text: "seen"},
                createdAt="2024-03-01T10:00:00Z",
                updatedAt="2024-03-01T10:00:00Z",
            )
        )
    path = folder / "export.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize(
    ("fmt", "make"), [("supermemory", _supermemory_file), ("mem0", _mem0_file), ("jsonl", _jsonl_file)]
)
def test_import_sends_no_secret(
    tmp_path: Path, relayed: Any, tag: str, fmt: str, make: Callable[[Path], Path]
) -> None:
    door, relay = relayed
    done = run_cli(
        str(tmp_path), str(tmp_path), "import", fmt, str(make(tmp_path)), "--json", env=_env(relay, door, tag)
    )
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    summary = json.loads(done.stdout)
    assert summary["masked"]["count"] >= len(CARRIERS), summary
    sent = relay.sent()
    assert b"/api/memory/" in sent
    assert_no_secret_sent(sent, done.stdout, done.stderr)

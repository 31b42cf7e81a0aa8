"""scripts/eval_reach.py: the real Claude Code and the real Codex, with the client installed, against a
loopback stand-in for the model API (scripts/messages_standin.py), on an invented set of three exchanges.

Claude Code and Codex are the pinned npm builds scripts/test installs into .venv/claude-code and
.venv/codex-cli (or $BLI_MEMORY_CLAUDE_CLI, $BLI_MEMORY_CODEX_CLI); a missing one fails the test, it is
never skipped. The door is the real
`bli-memory-door serve` the script starts; the hooks are the ones `bli-memory-mcp install` registers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import REPO

sys.path.insert(0, str(REPO / "scripts"))
from messages_standin import MessagesStandIn

SCRIPT = REPO / "scripts" / "eval_reach.py"
FIXTURES = REPO / "tests" / "fixtures" / "reach"
HOST_PROGRAMS = {
    "claude": ("BLI_MEMORY_CLAUDE_CLI", REPO / ".venv" / "claude-code" / "node_modules" / ".bin" / "claude"),
    "codex": ("BLI_MEMORY_CODEX_CLI", REPO / ".venv" / "codex-cli" / "node_modules" / ".bin" / "codex"),
}
RUN_TIMEOUT_S = 120.0
ROOT_CAUSE_QUERY = "why were refunds posted twice by the nightly job?"
#: its answer is the space's best hit, well above the door's recall floor: the prompt hook shows it
PIN_QUERY = "which version of the ORM library do we pin?"


def host_cli(host: str) -> str:
    """The host's program scripts/test installs; a missing one fails the test (it is never skipped)."""
    variable, default = HOST_PROGRAMS[host]
    path = os.environ.get(variable) or str(default)
    if not os.access(path, os.X_OK):
        pytest.fail(
            f"no {host} program at {path}: run scripts/test (it installs it from npm) or set {variable}"
        )
    return path


def post(url: str, body: object) -> tuple[str, bytes]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("x-api-key", "secret-never-kept")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read()


def test_the_standin_streams_the_scripted_reply_and_records_the_request() -> None:
    standin = MessagesStandIn()
    try:
        standin.reply("The lock is 7301.")
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "which lock?"}]}
        kind, stream = post(standin.url + "/v1/messages?beta=true", body)
        events = [
            line[len("event: ") :] for line in stream.decode().splitlines() if line.startswith("event: ")
        ]
        assert kind == "text/event-stream"
        assert events == [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
        assert '"text": "The lock is 7301."' in stream.decode()
        _, whole = post(standin.url + "/v1/messages", {**body, "stream": False})
        assert json.loads(whole)["content"] == [{"type": "text", "text": "The lock is 7301."}]
        recorded = standin.requests[0]
        assert recorded.is_turn("which lock?") and not recorded.is_turn("another prompt")
        assert "x-api-key" not in recorded.headers and "secret-never-kept" not in json.dumps(recorded.headers)
    finally:
        standin.close()


def test_the_standin_answers_codex_with_a_responses_stream() -> None:
    standin = MessagesStandIn()
    try:
        standin.reply("Pinned.")
        body = {
            "model": "m",
            "stream": True,
            "input": [{"role": "user", "content": [{"text": "which pin?"}]}],
        }
        kind, stream = post(standin.url + "/v1/responses", body)
        data = [json.loads(line[6:]) for line in stream.decode().splitlines() if line.startswith("data: ")]
        assert kind == "text/event-stream"
        assert [d["type"] for d in data] == [
            "response.created",
            "response.output_item.done",
            "response.completed",
        ]
        assert data[1]["item"]["content"] == [{"type": "output_text", "text": "Pinned."}]
        assert standin.requests[0].is_turn("which pin?")
    finally:
        standin.close()


def test_the_standin_records_and_refuses_a_tunnel_beyond_loopback() -> None:
    """HTTPS_PROXY names the stand-in in the script, so any host beyond loopback shows as a CONNECT."""
    standin = MessagesStandIn()
    try:
        port = int(standin.url.rsplit(":", 1)[1])
        import http.client

        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("CONNECT", "api.anthropic.com:443")
        assert connection.getresponse().status == 403
        connection.close()
        assert [(r.method, r.path) for r in standin.requests] == [("CONNECT", "api.anthropic.com:443")]
    finally:
        standin.close()


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_three_turns_in_the_real_host_reach_the_models_request(tmp_path: Path, host: str) -> None:
    kept = tmp_path / "requests"
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(FIXTURES / "exchanges.jsonl"),
            "--unanswered",
            str(FIXTURES / "unanswered.json"),
            "--host",
            host,
            "--program",
            host_cli(host),
            "--keep-requests",
            str(kept),
        ],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    table = dict(
        (line[:45].strip(), line[45:].strip()) for line in done.stdout.splitlines()[2:] if line.strip()
    )
    assert table["turns played"] == "3"
    assert table["extraction jobs done / failed or unfinished"] == "3 / 0"
    assert table["facts shown in the model's request"] == "1.00 (2/2)"
    assert table["lasting facts at session start"] == "1.00 (1/1)"
    assert table["questions whose request was not recorded"] == "0"
    assert table["requests beyond the stand-in"] == "0"
    # each question's request holds both blocks; the pin question's recall block holds its answer, and
    # the root cause (found at rank 3, under the door's recall floor) reaches the model by session start
    questions = [json.loads(p.read_text()) for p in sorted((kept / "exchanges").glob("*.json"))]
    by_prompt = {question["prompt"]: json.dumps(question["request"]) for question in questions}
    root_cause, pin = by_prompt[ROOT_CAUSE_QUERY], by_prompt[PIN_QUERY]
    for request in (root_cause, pin):
        assert "<bli-memory-recall>" in request and "<bli-memory-context>" in request
    assert (
        "with_backoff" in root_cause.split("<bli-memory-context>", 1)[1].split("</bli-memory-context>", 1)[0]
    )
    recall = pin.split("<bli-memory-recall>", 1)[1].split("</bli-memory-recall>", 1)[0]
    assert "quill-orm" in recall and "3.8.2" in recall


def test_a_lasting_fact_a_later_exchange_corrects_is_not_counted_at_session_start() -> None:
    """As eval_capture.py counts: the block must not show a value a later exchange retired, so such a
    fact is neither a miss nor a hit of the lasting share (the superseded count judges it)."""
    from capture_data import Fact
    from eval_reach import Asked, Reach, rows_of

    reach = Reach("set")
    kept = Fact("who owns billing?", ("Dana",), lasting=True)
    retired = Fact("which broker?", ("redis://",), lasting=True)
    reach.asked = [
        Asked(kept, "p", in_recall=False, in_request=True, in_context=True, found=True),
        Asked(retired, "p", in_recall=False, in_request=False, in_context=False, found=True, in_force=False),
    ]
    assert dict(rows_of(reach))["lasting facts at session start"] == "1.00 (1/1)"


def test_a_fact_a_later_exchange_corrects_is_counted_apart_from_the_facts_in_force() -> None:
    """Asked at the end, a corrected fact's old value is no longer the answer: the shares count the
    facts in force, and the row beside says how often the request still shows an old value."""
    from capture_data import Fact
    from eval_reach import Asked, Reach, rows_of

    reach = Reach("set")
    port = Fact("which port?", ("8443",))
    old = Fact("which broker?", ("redis://",))
    new = Fact("which broker?", ("amqp://",))
    reach.asked = [
        Asked(port, "p", in_recall=True, in_request=True, in_context=False, found=True),
        Asked(old, "p", in_recall=True, in_request=True, in_context=False, found=True, in_force=False),
        Asked(new, "p", in_recall=False, in_request=False, in_context=False, found=False),
    ]
    rows = dict(rows_of(reach))
    assert rows["facts shown in the recall block"] == "0.50 (1/2)"
    assert rows["facts shown in the model's request"] == "0.50 (1/2)"
    assert rows["corrected facts whose old value the request shows"] == "1.00 (1/1)"
    assert rows["questions whose request was not recorded"] == "1"


def test_the_verbose_list_names_the_rows_shown_for_questions_with_nothing_stored() -> None:
    from eval_reach import Reach, details

    reach = Reach("set")
    reach.unanswered_shown = [("p", "who designed the audit log?", ["User: who owns billing? " + "x " * 200])]
    text = details(reach)
    assert "set: questions with nothing stored that got rows\n  [p] who designed the audit log?\n" in text
    row = next(line for line in text.splitlines() if line.startswith("    row: "))
    assert row.startswith("    row: User: who owns billing? x x") and row.endswith("…") and len(row) < 200

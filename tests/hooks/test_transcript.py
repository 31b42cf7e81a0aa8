"""Transcript tail-reading (`hooks/transcript.py`): the last exchange of a Claude Code session or a Codex
rollout, paired with the payload's reply, bounded in size and cost."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from bli_memory.hooks import transcript
from tests.helpers import TRANSCRIPTS
from tests.hooks.helpers import unblock_fifo_reader


def test_the_last_exchange_skips_tool_results_sidechains_meta_and_summaries() -> None:
    lines = (TRANSCRIPTS / "claude_session.jsonl").read_bytes().splitlines()
    exchange = transcript.exchange_from_lines(reversed(lines))
    assert exchange.user == "Why does the prompt hook time out on big repos?"
    assert exchange.assistant == (
        "Let me look at the space resolver.\nIt spawned git on every run; I now read the git files directly."
    )


def test_a_codex_rollout_gives_its_last_exchange() -> None:
    lines = (TRANSCRIPTS / "codex_rollout.jsonl").read_bytes().splitlines()
    exchange = transcript.exchange_from_lines(reversed(lines))
    assert exchange.user == "Rename the flag to --probe everywhere."
    assert exchange.assistant == "Renamed it in run.py and the README."


LAST_REPLY = "It spawned git on every run; I now read the git files directly."


def test_a_lagging_transcript_never_pairs_its_prompt_with_the_payload_reply() -> None:
    """Transcript: prompt A + reply A; payload: reply B. Never "User: A … Assistant: B"."""
    path = str(TRANSCRIPTS / "claude_session.jsonl")
    exchange = transcript.last_exchange(path, "Reply B, which the transcript does not hold yet.")
    assert (exchange.user, exchange.assistant) == ("", "Reply B, which the transcript does not hold yet.")
    remembered = transcript.last_exchange(path, "Reply B.", "Prompt B, as the prompt hook saw it")
    assert (remembered.user, remembered.assistant) == ("Prompt B, as the prompt hook saw it", "Reply B.")
    # no payload reply (an older host) and a transcript still on turn A: A's reply is not B's
    older = transcript.last_exchange(path, None, "Prompt B")
    assert (older.user, older.assistant) == ("Prompt B", "")


def test_a_transcript_that_holds_the_payload_reply_gives_its_prompt() -> None:
    path = str(TRANSCRIPTS / "claude_session.jsonl")
    exchange = transcript.last_exchange(path, "  " + LAST_REPLY.replace(" ", "\n", 2))
    assert exchange.user == "Why does the prompt hook time out on big repos?"
    assert exchange.assistant.endswith("read the git files directly.")
    same = transcript.last_exchange(path, None, "Why does the prompt hook   time out on big repos?")
    assert same.user.startswith("Why does") and same.assistant.endswith(LAST_REPLY)


def test_a_missing_transcript_is_an_empty_exchange() -> None:
    exchange = transcript.last_exchange("/nonexistent/x.jsonl", None)
    assert (exchange.user, exchange.assistant) == ("", "")
    assert transcript.compose(exchange) == ""


def test_the_composed_exchange_is_at_most_12_kb_and_keeps_the_reply_tail() -> None:
    exchange = transcript.Exchange("q" * 10_000, "head " + "é" * 20_000 + " the conclusion")
    text = transcript.compose(exchange)
    assert len(text.encode("utf-8")) <= transcript.EXCHANGE_MAX_BYTES
    assert text.startswith("User: qqq") and text.endswith("the conclusion")
    assert "Assistant: head" in text


def test_a_40_mb_transcript_costs_what_a_small_one_does(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    filler = json.dumps(
        {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "tool_result", "content": "z" * 4000}]},
        }
    ).encode()
    tail = (TRANSCRIPTS / "claude_session.jsonl").read_bytes()
    with open(big, "wb") as handle:
        for _ in range(40 * 1024 * 1024 // (len(filler) + 1)):
            handle.write(filler + b"\n")
        handle.write(tail)
    assert big.stat().st_size > 40 * 1024 * 1024
    started = time.perf_counter()
    exchange = transcript.last_exchange(str(big), None)
    elapsed = time.perf_counter() - started
    assert exchange.user == "Why does the prompt hook time out on big repos?"
    assert elapsed < 0.5  # one block from the end, not 40 MB


def test_a_prompt_beyond_the_search_window_is_given_up_within_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    reply = json.dumps(
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "r" * 1000}]},
        }
    )
    path.write_text(
        json.dumps({"type": "user", "message": {"role": "user", "content": "the question far back"}})
        + "\n"
        + (reply + "\n") * 6000
    )
    exchange = transcript.last_exchange(str(path), None)
    assert exchange.user == ""  # further back than SEARCH_MAX_BYTES
    assert exchange.assistant.startswith("r")


def test_a_fifo_as_transcript_is_refused_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "transcript.jsonl"
    os.mkfifo(fifo)
    outcome: list[object] = []

    def read() -> None:
        try:
            outcome.append(list(transcript.lines_backwards(str(fifo))))
        except OSError as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    started = time.monotonic()
    reader.start()
    reader.join(timeout=2.0)
    elapsed_s = time.monotonic() - started
    while reader.is_alive():  # a reader stuck in open(): let it go so the test ends
        unblock_fifo_reader(fifo)
        reader.join(timeout=0.1)
    assert elapsed_s < 1.0
    assert len(outcome) == 1 and isinstance(outcome[0], OSError)


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "directory"])
def test_a_device_or_a_directory_as_transcript_is_refused(path: str, tmp_path: Path) -> None:
    target = str(tmp_path) if path == "directory" else path
    with pytest.raises(OSError):
        list(transcript.lines_backwards(target))
    assert transcript.last_exchange(target, "The reply.").assistant == "The reply."


def test_a_symlink_to_a_regular_transcript_is_still_read(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_text('{"type": "user", "message": {"role": "user", "content": "Where is the door?"}}\n')
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert transcript.last_exchange(str(link), None).user == "Where is the door?"

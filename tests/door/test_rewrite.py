"""The question rewrite of searches: the pure parts, then a real door whose chat endpoint is a loopback
stand-in answering recorded completions (good, malformed, slow, an HTTP error, not a statement): no
model runs here, and a real endpoint cannot be made slow or broken on demand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from bli_memory.door.librarian.llm import LibrarianError
from bli_memory.door.model import Hit, Memory
from bli_memory.door.rewrite import (
    REWRITE_DEADLINE_S,
    QuestionRewriter,
    fuse_hits,
    is_question,
    statement_of,
)
from bli_memory.settings import write_session
from tests.helpers import served_locally

MEMORY = "The batch exporter writes CSV files to s3://acme-exports/daily/."
QUESTION = "Where does the nightly job put its output?"
STATEMENT = "The nightly batch exporter writes its output files to s3."
#: how long the slow stand-in takes: far past the rewrite's deadline
SLOW_ENDPOINT_S = 6.0
#: a loaded 2-core machine: a deadline must hold within this much
MARGIN_S = 1.0


def completion(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()


# -- the pure parts -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (QUESTION, True),
        ("how do we deploy the preview", True),
        ("is the cache warm?", True),
        ("nightly job output location", False),
        ("Do not edit the generated folder", False),
        ("howto deploy", False),
    ],
)
def test_a_question_ends_with_a_question_mark_or_opens_with_a_question_word(
    query: str, expected: bool
) -> None:
    assert is_question(query) is expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (f"  {STATEMENT}\n", STATEMENT),
        (f'"{STATEMENT}"', STATEMENT),
        ("", None),
        ("The exporter.\nIt writes files.", None),
        ("Where is the output?", None),
        ("Where does the nightly job put its output.", None),  # the question again
        ("x" * 301, None),
    ],
)
def test_only_one_plain_sentence_is_a_statement(content: str, expected: str | None) -> None:
    assert statement_of(completion(content), QUESTION) == expected


def test_an_answer_that_is_not_a_completion_is_a_failure() -> None:
    for raw in (b"not json", b"{}", b'{"choices": []}', json.dumps({"choices": [{"message": {}}]}).encode()):
        with pytest.raises(LibrarianError):
            statement_of(raw, QUESTION)


def memory(memory_id: str) -> Memory:
    return Memory(
        id=memory_id,
        container_tag="t",
        content=memory_id,
        kind="memory",
        status="current",
        version=1,
        root_id=memory_id,
        previous_version_id=None,
        custom_id=None,
        metadata=None,
        created_at=0.0,
        updated_at=0.0,
        superseded_at=None,
    )


def test_fused_hits_hold_each_memory_once_at_its_better_score() -> None:
    first = [Hit(memory("a"), 0.2, 0.5, ("keyword",)), Hit(memory("b"), None, 0.4, ("keyword",))]
    second = [Hit(memory("c"), 0.6, 0.9, ("vector",)), Hit(memory("a"), 0.7, 0.8, ("vector",))]
    fused = fuse_hits(first, second, limit=3)
    assert [(hit.memory.id, hit.score) for hit in fused] == [("c", 0.9), ("a", 0.8), ("b", 0.4)]
    assert fused[1].matched_by == ("keyword", "vector") and fused[1].similarity == 0.7
    assert [hit.memory.id for hit in fuse_hits(first, [], limit=5)] == ["a", "b"]


def test_a_fused_hit_keeps_the_higher_relevance_of_its_two_searches() -> None:
    first = [
        Hit(memory("a"), 0.2, 0.5, ("keyword",), relevance=0.7),
        Hit(memory("b"), None, 0.4, ("keyword",)),
    ]
    second = [Hit(memory("a"), 0.7, 0.8, ("vector",), relevance=0.3)]
    fused = fuse_hits(first, second, limit=3)
    assert [(hit.memory.id, hit.score, hit.relevance) for hit in fused] == [("a", 0.8, 0.7), ("b", 0.4, None)]


def test_the_rewriter_caches_cools_down_and_keeps_to_its_budget() -> None:
    calls: list[float] = []
    answers: list[bytes | Exception] = [completion(STATEMENT), LibrarianError("down"), completion(STATEMENT)]
    now = [100.0]

    def post(url: str, body: dict[str, Any], key: str | None, timeout_s: float) -> bytes:
        calls.append(timeout_s)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    rewriter = QuestionRewriter("http://chat.invalid", "m", post=post, clock=lambda: now[0])
    assert rewriter.rewrite("nightly job output") is None and calls == []  # not a question
    assert rewriter.rewrite(QUESTION, budget_s=0.1) is None and calls == []  # no budget for a call
    assert rewriter.rewrite(QUESTION, budget_s=0.5) == STATEMENT and calls == [0.5]
    assert rewriter.rewrite("  where does the NIGHTLY job put its output? ", budget_s=0.0) == STATEMENT
    assert rewriter.rewrite("who owns the exporter?") is None  # the endpoint failed
    assert calls == [0.5, REWRITE_DEADLINE_S]
    assert rewriter.rewrite("who owns the exporter?") is None and len(calls) == 2  # cooling down
    now[0] += 31
    assert rewriter.rewrite("who owns the exporter?") == STATEMENT and len(calls) == 3
    assert rewriter.counts == {"no_budget": 1, "rewritten": 2, "cached": 1, "failed": 1, "cooling_down": 1}


# -- a real door, a stand-in chat endpoint -------------------------------------------------------------


class ChatStandIn:
    """What the stand-in answers (`mode`) and the questions it was asked."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.asked: list[str] = []
        self.lock = threading.Lock()


@contextmanager
def chat_endpoint(mode: str) -> Iterator[tuple[str, ChatStandIn]]:
    seen = ChatStandIn(mode)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            with seen.lock:
                seen.asked.append(body["messages"][-1]["content"])
            status, data = 200, completion(STATEMENT)
            if seen.mode == "malformed":
                data = b'{"choices": "not a list"'
            elif seen.mode == "http_500":
                status, data = 500, b'{"error": "overloaded"}'
            elif seen.mode == "not_a_statement":
                data = completion("Where is the output?")
            elif seen.mode == "slow":
                time.sleep(SLOW_ENDPOINT_S)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the door gave up first, as it should

    with served_locally(Handler) as url:
        yield url, seen


def llm_env(url: str, **extra: str) -> dict[str, str]:
    return {"BLI_MEMORY_LLM_URL": url, "BLI_MEMORY_LLM_MODEL": "stand-in", **extra}


def search(door: Any, tag: str, q: str, **extra: Any) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    status, answer = door.post("/api/memory/search", {"q": q, "containerTag": tag, "limit": 5, **extra})
    assert status == 200, answer
    return answer, time.monotonic() - started


def contents(answer: dict[str, Any]) -> list[str]:
    return [hit["content"] for hit in answer["results"]]


def test_a_question_is_also_searched_as_the_statement_that_answers_it(
    start_door: Callable[..., Any], tag: str
) -> None:
    with chat_endpoint("good") as (url, chat):
        door = start_door("--embedder", "none", env=llm_env(url))
        assert door.post("/api/memory/save", {"content": MEMORY, "containerTag": tag})[0] == 201
        plain, _ = search(door, tag, "nightly job output location")  # not a question: no rewrite
        assert contents(plain) == [] and "rewrittenAs" not in plain and chat.asked == []
        answer, _ = search(door, tag, QUESTION)
        assert contents(answer) == [MEMORY] and answer["rewrittenAs"] == STATEMENT
        assert chat.asked == [QUESTION]
        # a new question with no budget for a call is searched as it is
        other, _ = search(door, tag, "Where do the nightly job's files go?", rewriteBudgetMs=100)
        assert "rewrittenAs" not in other and chat.asked == [QUESTION]
        # a cached rewrite costs no call, whatever the budget
        again, _ = search(door, tag, QUESTION, rewriteBudgetMs=0)
        assert contents(again) == [MEMORY] and chat.asked == [QUESTION]


def test_without_the_rewrite_the_question_finds_nothing(start_door: Callable[..., Any], tag: str) -> None:
    with chat_endpoint("good") as (url, chat):
        door = start_door("--embedder", "none", env=llm_env(url, BLI_MEMORY_QUERY_REWRITE="0"))
        door.post("/api/memory/save", {"content": MEMORY, "containerTag": tag})
        answer, _ = search(door, tag, QUESTION)
        assert contents(answer) == [] and "rewrittenAs" not in answer and chat.asked == []


@pytest.mark.parametrize("mode", ["malformed", "http_500", "slow", "not_a_statement"])
def test_a_failing_endpoint_leaves_the_plain_search_and_is_not_asked_again_at_once(
    start_door: Callable[..., Any], tag: str, mode: str
) -> None:
    with chat_endpoint(mode) as (url, chat):
        door = start_door("--embedder", "none", env=llm_env(url))
        door.post("/api/memory/save", {"content": "The nightly job is owned by Dana.", "containerTag": tag})
        answer, elapsed_s = search(door, tag, "Who owns the nightly job?")
        assert contents(answer) == ["The nightly job is owned by Dana."] and "rewrittenAs" not in answer
        assert elapsed_s < REWRITE_DEADLINE_S + MARGIN_S
        second, elapsed_s = search(door, tag, "Who is on call for the nightly job?")
        assert "rewrittenAs" not in second
        if mode == "not_a_statement":  # a usable endpoint with an unusable answer: asked again
            assert len(chat.asked) == 2
        else:  # a failed endpoint is left alone for a while: the second search does not wait on it
            assert len(chat.asked) == 1 and elapsed_s < 0.5 + MARGIN_S


def test_a_slow_rewrite_never_fails_the_prompt_hook(start_door: Callable[..., Any], tmp_path: Path) -> None:
    with chat_endpoint("slow") as (url, chat):
        door = start_door("--embedder", "none", env=llm_env(url))
        tag = "repo_rewrite_hook__0000000000000000"
        door.post("/api/memory/save", {"content": "The nightly job is owned by Dana.", "containerTag": tag})
        home = tmp_path / "home"
        home.mkdir()
        write_session(door.url, door.token, env={"HOME": str(home)})
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "BLI_MEMORY_DAEMON": "0",
            "BLI_MEMORY_CONTAINER_TAG": tag,
        }
        started = time.monotonic()
        done = subprocess.run(
            [str(Path(sys.executable).parent / "bli-memory-mcp"), "hook", "prompt"],
            input=json.dumps({"session_id": "s", "prompt": "Who owns the nightly job?"}).encode(),
            capture_output=True,
            env=env,
            timeout=30,
        )
        elapsed_s = time.monotonic() - started
    assert done.returncode == 0
    assert "[bli-memory] prompt ok" in done.stderr.decode()  # answered, not failed by the rewrite
    assert chat.asked == ["Who owns the nightly job?"]  # the budget left room for one try, not more
    assert elapsed_s < 2.0 + MARGIN_S

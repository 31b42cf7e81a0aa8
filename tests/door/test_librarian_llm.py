"""The LLM extractor's contract (`door/librarian/llm.py`) against a local stand-in endpoint with recorded
answers: its prompt states the deterministic librarian's contract, its facts pass the same rules
afterwards, a malformed answer falls back to the deterministic extractor, and so does an answer whose
every fact breaks the contract — in-process and through a real door."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from bli_memory.door.config import LlmConfig
from bli_memory.door.librarian import LibrarianError, LlmExtractor, extract_facts, extractor_for
from bli_memory.door.librarian.llm import LLM_SYSTEM_PROMPT
from tests.helpers import DoorProcess, served_locally

EXCHANGE = (
    "User: We decided to stop using Celery beat for the nightly settlement reconciliation. Can you move "
    "the schedule into the worker with APScheduler instead?\n\n"
    "Assistant: Done. `payments/scheduling.py` (new): an `AsyncIOScheduler` with one cron job at 02:30 UTC. "
    "Added `apscheduler==3.10.4` to `requirements.in`. `pytest tests/scheduling -q`: 6 passed."
)
GOOD_FACTS = [
    "We stopped using Celery beat for the nightly settlement reconciliation; APScheduler in the worker runs it.",
    "`payments/scheduling.py` holds an `AsyncIOScheduler` with one cron job at 02:30 UTC.",
    "`apscheduler==3.10.4` is pinned in `requirements.in`.",
]
BROKEN_FACTS = [
    "I added `apscheduler==3.10.4` to `requirements.in`.",
    "Can you move the schedule into the worker?",
    "`pytest tests/scheduling -q`: 6 passed.",
    "It runs at 02:30 UTC.",
]


def completion(content: str) -> bytes:
    """An OpenAI-compatible chat completion answer carrying `content`, as such endpoints send it."""
    return json.dumps(
        {
            "id": "chatcmpl-recorded",
            "object": "chat.completion",
            "model": "stand-in",
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
            ],
        }
    ).encode()


#: recorded answers, byte for byte what the stand-in sends.
RECORDED: dict[str, bytes] = {
    "good": completion(json.dumps({"facts": GOOD_FACTS})),
    "good-with-broken": completion(
        json.dumps({"facts": [BROKEN_FACTS[0], GOOD_FACTS[2], *BROKEN_FACTS[1:]]})
    ),
    "all-broken": completion(json.dumps({"facts": BROKEN_FACTS})),
    "body-not-json": b"<html><body>502 Bad Gateway</body></html>",
    "content-not-json": completion("Here are the facts: APScheduler replaced Celery beat."),
    "wrong-shape": completion(json.dumps({"memories": GOOD_FACTS})),
    "facts-not-strings": completion(json.dumps({"facts": [{"text": GOOD_FACTS[0]}]})),
    "truncated": completion(json.dumps({"facts": GOOD_FACTS})[:70]),
    "body-truncated": completion(json.dumps({"facts": GOOD_FACTS}))[:90],
}


@dataclass
class StandIn:
    """A local chat endpoint: answers the recorded answer named `answer`, keeps what it was sent."""

    url: str = ""
    answer: str = "good"
    requests: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    state = StandIn()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            state.requests.append({"path": self.path, "body": json.loads(self.rfile.read(length))})
            body = RECORDED[state.answer]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with served_locally(Handler) as url:
        state.url = url
        yield state


def llm_env(stand_in: StandIn) -> dict[str, str]:
    return {"BLI_MEMORY_LLM_URL": stand_in.url, "BLI_MEMORY_LLM_MODEL": "stand-in"}


@pytest.mark.parametrize(
    "rule",
    [
        'never "I", "me" or "my"',
        "leave that sentence out rather than guess",
        "byte for byte",
        "a decision stated inside a request is still a decision",
        "questions (never restate the user's question as a fact)",
        "test runs and their counts",
        "greetings and thanks",
        "general knowledge",
    ],
)
def test_the_prompt_states_the_deterministic_contract(stand_in: StandIn, rule: str) -> None:
    LlmExtractor(stand_in.url, "stand-in").extract(EXCHANGE)
    system = stand_in.requests[0]["body"]["messages"][0]
    assert system == {"role": "system", "content": LLM_SYSTEM_PROMPT}
    assert rule in " ".join(system["content"].split())


def test_a_good_answer_is_kept_as_the_model_wrote_it(stand_in: StandIn) -> None:
    assert LlmExtractor(stand_in.url, "stand-in").extract(EXCHANGE) == GOOD_FACTS


def test_facts_that_break_the_contract_are_dropped_and_the_good_ones_kept(stand_in: StandIn) -> None:
    stand_in.answer = "good-with-broken"
    assert LlmExtractor(stand_in.url, "stand-in").extract(EXCHANGE) == [GOOD_FACTS[2]]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("all-broken", "broke the contract (first person, question, test run, leans on context)"),
        ("body-not-json", "malformed JSON"),
        ("content-not-json", "not JSON"),
        ("wrong-shape", '{"facts": [...]}'),
        ("facts-not-strings", "not a string"),
        ("truncated", "not JSON"),
        ("body-truncated", "malformed JSON"),
    ],
)
def test_a_malformed_or_contract_breaking_answer_is_an_error(
    stand_in: StandIn, answer: str, message: str
) -> None:
    stand_in.answer = answer
    with pytest.raises(LibrarianError) as caught:
        LlmExtractor(stand_in.url, "stand-in", timeout_s=2.0).extract(EXCHANGE)
    assert message in str(caught.value)


@pytest.mark.parametrize("answer", ["all-broken", "truncated", "body-not-json", "wrong-shape"])
def test_the_door_falls_back_to_the_deterministic_extractor(stand_in: StandIn, answer: str) -> None:
    stand_in.answer = answer
    reasons: list[str] = []
    facts, which = extractor_for(LlmConfig.from_env(llm_env(stand_in)), on_fallback=reasons.append)(EXCHANGE)
    assert (facts, which) == (extract_facts(EXCHANGE), "deterministic")
    assert len(reasons) == 1 and reasons[0].endswith("used the deterministic extractor")


def _facts(door: DoorProcess, tag: str) -> list[str]:
    status, answer = door.post("/api/memory/v4/profile", {"containerTag": tag})
    assert status == 200, answer
    return [row["content"] for row in answer["recent"]]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [("good-with-broken", [GOOD_FACTS[2]]), ("all-broken", extract_facts(EXCHANGE))],
    ids=["filtered", "fallback"],
)
def test_a_real_door_stores_only_facts_that_keep_the_contract(
    start_door: Callable[..., DoorProcess], stand_in: StandIn, tag: str, answer: str, expected: list[str]
) -> None:
    stand_in.answer = answer
    door = start_door("--embedder", "none", env=llm_env(stand_in))
    status, body = door.post("/api/memory/save", {"content": EXCHANGE, "containerTag": tag, "extract": True})
    assert status == 202, body
    assert door.wait_job(str(body["jobId"]), 30)["status"] == "done"
    assert stand_in.requests, "the door never asked the endpoint"
    stored = _facts(door, tag)
    assert stored and set(stored) <= set(expected)
    assert not set(BROKEN_FACTS) & set(stored)

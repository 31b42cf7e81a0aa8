"""The librarian: deterministic extraction, reconciliation verdicts, and the LLM extractor's fallback.

The LLM extractor talks to a stand-in OpenAI-compatible server on 127.0.0.1 (the one peer we cannot
run here and must make misbehave on demand: garbage, a hang, a 500).
"""

from __future__ import annotations

import ast
import graphlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bli_memory.door import librarian
from bli_memory.door.config import LlmConfig
from bli_memory.door.librarian import (
    MAX_FACT_CHARS,
    MAX_FACTS_PER_TEXT,
    Decision,
    LibrarianError,
    LlmExtractor,
    Neighbour,
    decide,
    extract_facts,
    extractor_for,
)
from tests.helpers import imports_of, served_locally, sibling_imports

# --- extraction ------------------------------------------------------------------------------------

EXCHANGES: list[tuple[str, str, list[str]]] = [
    (
        "decision and preference",
        "User: We decided to use Postgres 16 instead of MySQL. Please always use pnpm, not npm.\n\n"
        "Assistant: Got it. I'll remember that.",
        ["We decided to use Postgres 16 instead of MySQL.", "Always use pnpm, not npm."],
    ),
    (
        "question answered with a pronoun: no guessed subject, the pronoun's sentence is dropped",
        "User: Hi! How do I run the tests?\n\nAssistant: Sure! Let me check the Makefile.\n\n"
        "Run them with `make test`. The integration tests need Docker running.",
        ["The integration tests need Docker running."],
    ),
    (
        "an answer opening with it joins the question it answers, in its own words",
        "User: what does the `sync` job do?\n\nAssistant: It copies rows from prod to staging every "
        "night at 02:00 UTC. It is defined in `jobs/sync.py`.",
        [
            "What does the `sync` job do? It copies rows from prod to staging every night at 02:00 UTC; "
            "it is defined in `jobs/sync.py`.",
        ],
    ),
    (
        "a fix survives, a traceback and a code dump do not",
        "User: the build is failing\n\nAssistant: Let me look at the error.\n\n```\n"
        'Traceback (most recent call last):\n  File "x.py", line 3\n'
        "ModuleNotFoundError: No module named 'numpy'\n```\n\n"
        "The fix was to pin numpy<2 in requirements.txt because onnxruntime 1.17 does not support "
        "numpy 2. I've updated `requirements.txt` accordingly.\n\nHere's the full file:\n\n"
        "```python\nimport numpy\nimport onnxruntime\n\ndef main():\n    pass\n```\n\nAll tests pass now.",
        ["The fix was to pin numpy<2 in requirements.txt because onnxruntime 1.17 does not support numpy 2."],
    ),
    (
        "a short command block is folded into its lead-in; a pronoun with nothing durable to join is dropped",
        "User: To start the dev server, run this:\n\n```bash\n$ pnpm dev --port 3000\n```\n\n"
        "The auth middleware checks the JWT on every request. It reads the secret from `JWT_SECRET`.",
        ["To start the dev server, run `pnpm dev --port 3000`."],
    ),
    (
        "tool noise and headings are dropped, a demonstrative joins its sentence; bullets are kept",
        "Assistant: ⏺ Bash(pytest -q)\n  ⎿  ===== 3 passed in 0.2s =====\nI see the problem. The "
        "session cache in `src/cache.ts` never expired entries, which caused the memory leak. This "
        "needs a TTL.\n## Summary\n- Moved config to `config/settings.toml`\n- The default port is now "
        "8080\n- Use `ruff format` before committing\n",
        [
            "The session cache in `src/cache.ts` never expired entries, which caused the memory leak; this "
            "needs a TTL.",
            "Moved config to `config/settings.toml`.",
            "The default port is now 8080.",
            "Use `ruff format` before committing.",
        ],
    ),
    (
        "a diagnosis in a Claude Code turn with tool lines and a change list",
        "User: why does `test_door_api.py` hang on CI?\n\nAssistant: I'll investigate.\n\n"
        "⏺ Read(tests/test_door_api.py)\n  ⎿  Read 120 lines\n\n"
        "The hang comes from uvicorn waiting for keep-alive connections on shutdown. I changed the fixture "
        "to pass `timeout_graceful_shutdown=1` to `uvicorn.Config`, which fixes it. Going forward, every "
        "door fixture should set a graceful shutdown timeout.\n\n**Changes:**\n"
        "1. `tests/conftest.py`: added `timeout_graceful_shutdown=1`\n2. Bumped pytest-timeout to 2.4\n\n"
        "Would you like me to run the full suite?",
        [
            "Why does `test_door_api.py` hang on CI? The hang comes from uvicorn waiting for keep-alive "
            "connections on shutdown.",
            "Changed the fixture to pass `timeout_graceful_shutdown=1` to `uvicorn.Config`, which fixes it.",
            "Going forward, every door fixture should set a graceful shutdown timeout.",
            "`tests/conftest.py`: added `timeout_graceful_shutdown=1`.",
            "Bumped pytest-timeout to 2.4.",
        ],
    ),
    (
        "greetings and thanks only",
        "User: Thanks, that's all!\n\nAssistant: You're welcome! Let me know if you need anything else.",
        [],
    ),
    (
        "questions only",
        "User: Where is the config loaded? Is it cached? How often?\n\nAssistant: Let me check.",
        [],
    ),
    (
        "a one-off task request is not a fact, a standing order is",
        "User: Can you fix the login bug in `auth.py`? Please add a test for it too. "
        "From now on, never commit directly to main.\n\nAssistant: Sure, I'll start with the test.",
        ["From now on, never commit directly to main."],
    ),
    (
        "a sentence leaning on an unnamed 'this' is dropped, and so is the one after it",
        "User: The config of this is loaded from `app.toml`. This is cached for 60 seconds.",
        [],
    ),
    (
        "unresolvable pronouns are dropped rather than guessed",
        "User: We moved it to `lib/`. That broke the imports.\n\nAssistant: Those paths are stale.",
        [],
    ),
    (
        "injected recall blocks are never re-extracted",
        "User: <bli-memory-recall>\n[bli] We use Postgres 15.\n[bli] The default port is 8080.\n"
        "</bli-memory-recall>\nWhich database do we use?\n\nAssistant: Let me check the docs.",
        [],
    ),
    (
        "key = value settings, versions and paths",
        "User: Set `MAX_POOL_SIZE=20` in `.env` for production. We run Node 20 in CI.\n\n"
        "Assistant: Done. The CI workflow lives in `.github/workflows/ci.yml`.",
        [
            "Set `MAX_POOL_SIZE=20` in `.env` for production.",
            "We run Node 20 in CI.",
            "The CI workflow lives in `.github/workflows/ci.yml`.",
        ],
    ),
    (
        "a plain note without speaker labels",
        "Deploys go through `make deploy ENV=staging`; production needs a second approver.\n"
        "The API base URL is https://api.example.com/v2 (see e.g. the README).",
        [
            "Deploys go through `make deploy ENV=staging`; production needs a second approver.",
            "The API base URL is https://api.example.com/v2 (see e.g. the README).",
        ],
    ),
    (
        "wrapped lines are joined back into one sentence",
        "User: We agreed that every migration\nmust be reversible and reviewed by the DBA.",
        ["We agreed that every migration must be reversible and reviewed by the DBA."],
    ),
    (
        "an indented code block and a log line are noise",
        "Assistant: The worker uses `SKIP LOCKED` to claim jobs.\n\n    for job in jobs:\n"
        "        run(job)\n\n2024-05-01 12:00:03 INFO claimed job 42\n",
        ["The worker uses `SKIP LOCKED` to claim jobs."],
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), [(t, e) for _n, t, e in EXCHANGES], ids=[n for n, _t, _e in EXCHANGES]
)
def test_extract_facts_keeps_durable_sentences_and_drops_the_rest(text: str, expected: list[str]) -> None:
    assert extract_facts(text) == expected


def test_a_second_identical_exchange_yields_identical_facts() -> None:
    for _name, text, _expected in EXCHANGES:
        assert extract_facts(text) == extract_facts(text)


def test_an_empty_or_whitespace_text_yields_nothing() -> None:
    assert extract_facts("") == []
    assert extract_facts("  \n\n\t ") == []


def test_repeated_facts_are_deduplicated_ignoring_case_and_markup() -> None:
    text = "User: We use `pnpm` for installs.\n\nAssistant: we use pnpm for installs. **We use pnpm for installs!**"
    assert extract_facts(text) == ["We use `pnpm` for installs."]


def test_at_most_the_cap_of_facts_and_the_strongest_win_in_text_order() -> None:
    weak = [f"We should keep module {chr(97 + i)} small." for i in range(MAX_FACTS_PER_TEXT)]
    strong = "The config lives in `config/app.toml` since version 2.3."
    facts = extract_facts("User: " + " ".join([*weak[:6], strong, *weak[6:]]))
    assert len(facts) == MAX_FACTS_PER_TEXT
    assert strong in facts
    assert facts.index(strong) == 6


def test_a_fact_longer_than_the_limit_is_dropped_not_cut() -> None:
    long_sentence = "We use Postgres 16 for " + " and ".join(f"service{i}" for i in range(120)) + "."
    assert len(long_sentence) > MAX_FACT_CHARS
    assert extract_facts(f"User: {long_sentence} We use Redis 7 for caching.") == [
        "We use Redis 7 for caching."
    ]


def test_a_long_fenced_block_after_a_lead_in_is_dropped_with_it() -> None:
    text = "Assistant: Run these:\n```bash\nmake a\nmake b\nmake c\nmake d\n```\nThe port is 8080 by default."
    assert extract_facts(text) == ["The port is 8080 by default."]


def test_every_fact_is_trimmed_and_within_the_limit() -> None:
    for _name, text, _expected in EXCHANGES:
        for fact in extract_facts(text):
            assert fact == fact.strip() and 0 < len(fact) <= MAX_FACT_CHARS


# --- reconciliation --------------------------------------------------------------------------------

DECISIONS: list[tuple[str, str, list[Neighbour], str, str | None]] = [
    ("no neighbours", "We use Postgres 16.", [], "add", None),
    ("same text", "We use pnpm.", [Neighbour("a", "we use `pnpm`", None)], "unchanged", "a"),
    (
        "high similarity, same numbers",
        "The API rate limit is 100 requests per minute.",
        [Neighbour("a", "The API allows 100 requests per minute.", 0.95)],
        "unchanged",
        "a",
    ),
    (
        "high word overlap without a similarity",
        "Always run ruff before every commit in this repo.",
        [Neighbour("a", "Always run ruff before each commit in this repo.", None)],
        "unchanged",
        "a",
    ),
    (
        "contained in a richer stored fact",
        "We use Postgres",
        [Neighbour("a", "We use Postgres 16 in production", 0.9)],
        "unchanged",
        "a",
    ),
    (
        "adds detail to a stored fact",
        "We use Postgres 16 in production.",
        [Neighbour("a", "We use Postgres 16", 0.9)],
        "update",
        "a",
    ),
    ("version changed", "We use Postgres 16.", [Neighbour("a", "We use Postgres 15.", 0.97)], "update", "a"),
    (
        "value changed after 'is'",
        "The default port is 9090.",
        [Neighbour("a", "The default port is 8080.", None)],
        "update",
        "a",
    ),
    ("key = value", "MAX_POOL_SIZE = 20", [Neighbour("a", "MAX_POOL_SIZE = 10", 0.8)], "update", "a"),
    ("key: value", "timeout_s: 30", [Neighbour("a", "timeout_s: 15", 0.8)], "update", "a"),
    (
        "non-numeric value after 'is'",
        "The package manager is yarn.",
        [Neighbour("a", "The package manager is pnpm.", 0.8)],
        "update",
        "a",
    ),
    (
        "command changed after 'with'",
        "Deploy with `make deploy`.",
        [Neighbour("a", "Deploy with `make ship`.", 0.95)],
        "update",
        "a",
    ),
    ("two tools can both be used", "We use pnpm.", [Neighbour("a", "We use Docker.", 0.5)], "add", None),
    ("negation", "We do not use Redis.", [Neighbour("a", "We use Redis.", 0.9)], "conflict", "a"),
    ("contracted negation", "We use Redis.", [Neighbour("a", "We don't use Redis", 0.9)], "conflict", "a"),
    (
        "negation across verb forms",
        "The cache lives in Redis.",
        [Neighbour("a", "The cache does not live in Redis.", 0.95)],
        "conflict",
        "a",
    ),
    (
        "opposite polarity of a different statement is not a duplicate",
        "The cache lives in Redis.",
        [Neighbour("a", "The session store does not live in Redis.", 0.93)],
        "add",
        None,
    ),
    (
        "always versus never",
        "Never run migrations by hand.",
        [Neighbour("a", "Always run migrations by hand.", 0.9)],
        "conflict",
        "a",
    ),
    (
        "similar words, a new number for the same subject: the older memory is updated",
        "Retries back off for 30 seconds between attempts on the queue.",
        [Neighbour("a", "Between attempts on the queue, retries back off for 5 seconds.", 0.95)],
        "update",
        "a",
    ),
    (
        "unrelated",
        "The cache lives in Redis.",
        [Neighbour("a", "Deploys go through ArgoCD.", 0.2)],
        "add",
        None,
    ),
    (
        "a duplicate wins over a conflict",
        "The cache lives in Redis.",
        [
            Neighbour("b", "The cache does not live in Redis.", 0.95),
            Neighbour("a", "The cache lives in Redis.", 0.9),
        ],
        "unchanged",
        "a",
    ),
    (
        "the most similar of two updates wins",
        "The default port is 9090.",
        [
            Neighbour("b", "The default port is 7070.", 0.80),
            Neighbour("a", "The default port is 8080.", 0.90),
        ],
        "update",
        "a",
    ),
]


@pytest.mark.parametrize(
    ("fact", "neighbours", "action", "target"),
    [(f, n, a, t) for _d, f, n, a, t in DECISIONS],
    ids=[d for d, *_rest in DECISIONS],
)
def test_decide(fact: str, neighbours: list[Neighbour], action: str, target: str | None) -> None:
    decision = decide(fact, neighbours)
    assert (decision.action, decision.target_id) == (action, target)
    assert decision.reason


def test_decide_reason_names_the_old_and_new_value() -> None:
    decision = decide("We use Postgres 16.", [Neighbour("a", "We use Postgres 15.", None)])
    assert decision == Decision("update", "a", "'we use postgres': '15' -> '16'", values=("15", "16"))


# --- the LLM extractor against a stand-in endpoint ---------------------------------------------------

EXCHANGE = "User: We decided to use Postgres 16.\n\nAssistant: Got it."


@dataclass
class StandIn:
    """What the stand-in answers next, and what it saw."""

    url: str
    mode: str = "good"
    content: str = json.dumps(
        {"facts": ["We use Postgres 16.", "  We use Postgres 16. ", "Deploys need approval."]}
    )
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    state = StandIn(url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            state.requests.append(
                {
                    "path": self.path,
                    "authorization": self.headers.get("Authorization"),
                    "body": json.loads(self.rfile.read(length)),
                }
            )
            if state.mode == "hang":
                state.release.wait(10)
                return
            if state.mode == "trickle":  # every byte well within a per-read timeout, the whole never
                self.send_response(200)
                self.send_header("Content-Length", "1000")
                self.end_headers()
                for _ in range(100):
                    if state.release.wait(0.1):
                        return
                    self.wfile.write(b" ")
                    self.wfile.flush()
                return
            if state.mode == "huge":
                self._send(200, b" " * (2 * 1024 * 1024))
                return
            if state.mode == "500":
                self._send(500, b'{"error": "boom"}')
                return
            if state.mode == "garbage":
                self._send(200, b"<html>not json</html>")
                return
            body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": state.content}}]}
            self._send(200, json.dumps(body).encode())

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with served_locally(Handler) as url:
        state.url = url
        try:
            yield state
        finally:
            state.release.set()  # a handler still holding its answer lets go before the shutdown


def test_llm_extractor_sends_the_contract_and_returns_validated_facts(stand_in: StandIn) -> None:
    facts = LlmExtractor(stand_in.url, "tiny-model", api_key="sk-secret").extract(EXCHANGE)
    assert facts == ["We use Postgres 16.", "Deploys need approval."]
    (seen,) = stand_in.requests
    assert seen["path"] == "/v1/chat/completions"
    assert seen["authorization"] == "Bearer sk-secret"
    assert seen["body"]["model"] == "tiny-model"
    assert seen["body"]["messages"][-1] == {"role": "user", "content": EXCHANGE}
    assert '{"facts"' in seen["body"]["messages"][0]["content"]


def test_llm_extractor_accepts_a_base_url_ending_in_v1_and_a_fenced_answer(stand_in: StandIn) -> None:
    stand_in.content = '```json\n{"facts": ["The port is 8080."]}\n```'
    assert LlmExtractor(stand_in.url + "/v1/", "m").extract(EXCHANGE) == ["The port is 8080."]
    assert stand_in.requests[0]["path"] == "/v1/chat/completions"


@pytest.mark.parametrize(
    ("mode", "content", "message"),
    [
        ("garbage", "", "malformed JSON"),
        ("good", "Sure! Here are the facts: We use Postgres 16.", "not JSON"),
        ("good", '{"memories": ["We use Postgres 16."]}', '{"facts": [...]}'),
        ("good", '{"facts": [16]}', "not a string"),
        ("500", "", "HTTP 500"),
        ("hang", "", "no answer within 0.5s"),
        ("trickle", "", "no answer within 0.5s"),
        ("huge", "", "answered badly: response body over"),
    ],
    ids=[
        "not-json-body",
        "prose-content",
        "wrong-key",
        "non-string-fact",
        "http-500",
        "timeout",
        "trickle",
        "huge",
    ],
)
def test_llm_extractor_raises_librarian_error_without_leaking_the_key(
    stand_in: StandIn, mode: str, content: str, message: str
) -> None:
    stand_in.mode, stand_in.content = mode, content
    started = time.monotonic()
    with pytest.raises(LibrarianError) as caught:
        LlmExtractor(stand_in.url, "m", api_key="sk-secret", timeout_s=0.5).extract(EXCHANGE)
    assert time.monotonic() - started < 3.0  # one deadline for the whole exchange
    assert message in str(caught.value)
    assert "sk-secret" not in str(caught.value)


def test_llm_extractor_reports_an_unreachable_endpoint() -> None:
    with pytest.raises(LibrarianError, match="unreachable"):
        LlmExtractor("http://127.0.0.1:9", "m", timeout_s=0.5).extract(EXCHANGE)


def test_extractor_from_env_is_deterministic_without_llm_settings() -> None:
    extract = extractor_for(LlmConfig.from_env({"BLI_MEMORY_LLM_URL": "http://127.0.0.1:9"}))
    assert extract(EXCHANGE) == (["We decided to use Postgres 16."], "deterministic")


def test_extractor_from_env_uses_the_llm_when_configured(stand_in: StandIn) -> None:
    env = {"BLI_MEMORY_LLM_URL": stand_in.url, "BLI_MEMORY_LLM_MODEL": "m", "BLI_MEMORY_LLM_KEY": "sk-k"}
    assert extractor_for(LlmConfig.from_env(env))(EXCHANGE) == (
        ["We use Postgres 16.", "Deploys need approval."],
        "llm",
    )
    assert stand_in.requests[0]["authorization"] == "Bearer sk-k"


@pytest.mark.parametrize("mode", ["garbage", "500"])
def test_extractor_from_env_falls_back_to_deterministic_on_failure(stand_in: StandIn, mode: str) -> None:
    stand_in.mode = mode
    reasons: list[str] = []
    env = {"BLI_MEMORY_LLM_URL": stand_in.url, "BLI_MEMORY_LLM_MODEL": "m", "BLI_MEMORY_LLM_KEY": "sk-k"}
    facts, which = extractor_for(LlmConfig.from_env(env), on_fallback=reasons.append)(EXCHANGE)
    assert (facts, which) == (["We decided to use Postgres 16."], "deterministic")
    assert len(reasons) == 1 and "deterministic" in reasons[0] and "sk-k" not in reasons[0]


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=400))
def test_extract_facts_never_raises_and_honours_its_limits(text: str) -> None:
    facts = extract_facts(text)
    assert len(facts) <= MAX_FACTS_PER_TEXT
    assert all(0 < len(f) <= MAX_FACT_CHARS and f == f.strip() for f in facts)
    assert facts == extract_facts(text)


def test_a_large_exchange_is_extracted_quickly() -> None:
    text = "\n\n".join(text for _name, text, _expected in EXCHANGES) * 40
    started = time.perf_counter()
    facts = extract_facts(text)
    assert time.perf_counter() - started < 2.0
    assert len(facts) == MAX_FACTS_PER_TEXT


def test_control_characters_in_the_text_do_not_hang_or_leak_into_facts() -> None:
    text = "User: We use Postgres\x00 16.\x1b[0m The port is \x000\x00 8080 by default."
    assert extract_facts(text) == ["We use Postgres 16.", "The port is 0 8080 by default."]


def test_saving_the_same_exchange_twice_reconciles_to_unchanged() -> None:
    for _name, text, _expected in EXCHANGES:
        stored = [Neighbour(f"m{i}", fact, None) for i, fact in enumerate(extract_facts(text))]
        for fact in extract_facts(text):
            assert decide(fact, stored).action == "unchanged"


def test_the_librarian_package_is_pure_except_for_its_llm_client() -> None:
    """Extraction and reconciliation do no I/O; only the LLM client talks to the network."""
    package = Path(librarian.__file__).resolve().parent
    graph = sibling_imports(package, "bli_memory.door.librarian")
    assert set(graph) == {
        "extract",
        "prose",
        "signals",
        "voice",
        "reconcile",
        "lasting",
        "llm",
        "words",
        "tables",
        "corrections",
        "roles",
        "values",
        "moves",
        "schedules",
        "retiring",
        "nearest",
        "anchors",
        "diffs",
        "slots",
    }
    assert all("__init__" not in siblings for siblings in graph.values())
    list(graphlib.TopologicalSorter(graph).static_order())  # raises CycleError on a cycle
    pure = {"__future__", "functools", "re", "collections.abc", "dataclasses", "typing", "itertools"}
    for name in (
        "extract",
        "prose",
        "signals",
        "voice",
        "reconcile",
        "corrections",
        "roles",
        "lasting",
        "words",
        "tables",
        "values",
        "moves",
        "schedules",
        "retiring",
        "nearest",
        "anchors",
        "slots",
    ):
        outside = {
            m for m in imports_of(package / f"{name}.py") if not m.startswith("bli_memory.door.librarian")
        }
        assert outside <= pure, (name, outside - pure)
    assert "bli_memory.wire.http" in imports_of(package / "llm.py")
    for module in package.glob("*.py"):
        doc = ast.get_docstring(ast.parse(module.read_text()))
        assert doc and doc.splitlines()[0].endswith("."), module.name

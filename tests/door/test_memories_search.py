"""Hybrid search through the real SQLite memories with the real packaged MiniLM model.

Each test makes its own memories in tmp_path; the model is loaded once for the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from bli_memory.door.embed import Embedder, NoneEmbedder, load_embedder
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Principal, now_s
from bli_memory.door.ranking import SECONDS_PER_DAY
from tests.door.helpers import device_principal, open_memories

TAG = "repo-a"
DISTRACTORS = [
    "My cat likes tuna on Sundays",
    "The office plants need water twice a week",
    "Lunch is served at noon in the cafeteria",
    "We celebrate birthdays with cake on Fridays",
    "The quarterly report is due at the end of March",
]


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    embedder, reason = load_embedder("onnx", env={})
    assert reason is None, reason
    return embedder


def _open(path: Path, embedder: Embedder | None) -> tuple[MemoryService, Principal]:
    memories = open_memories(path / "memory.db", embedder)
    return memories, device_principal(memories)


@pytest.fixture
def space(tmp_path: Path, minilm: Embedder) -> Iterator[tuple[MemoryService, Principal]]:
    memories, principal = _open(tmp_path, minilm)
    yield memories, principal
    memories.close()


def _save_all(
    memories: MemoryService, principal: Principal, texts: list[str], *, age_days: float = 1.0
) -> None:
    for text in texts:
        memories.save(principal, TAG, text, created_at=now_s() - age_days * SECONDS_PER_DAY)


def test_paraphrase_with_no_shared_keyword_is_found(space: tuple[MemoryService, Principal]) -> None:
    memories, principal = space
    target = "To bring the API back up, run systemctl restart gunicorn"
    _save_all(memories, principal, [target, *DISTRACTORS])
    query = "how do I reboot the backend service"
    # no word of the query (after stemming) is in the memory: the same file read without vectors
    # finds nothing, so only the meaning channel can find it
    keyword_only = open_memories(memories.store.path, NoneEmbedder())
    assert target not in [h.memory.content for h in keyword_only.search(principal, TAG, query, limit=10)]
    keyword_only.close()
    hits = memories.search(principal, TAG, query, limit=3)
    assert hits[0].memory.content == target
    assert hits[0].similarity is not None and hits[0].similarity > 0.3


@pytest.mark.parametrize(
    ("identifier", "memory", "lookalikes"),
    [
        (
            "MAX_POOL_SIZE",
            "Config notes from Tuesday: MAX_POOL_SIZE=40 on staging, retries back off two seconds, "
            "logs rotate at midnight and the cache TTL is ten minutes",
            ["maximum pool size", "pool max size setting", "the size of the max connection pool"],
        ),
        (
            "useAuthStore",
            "Frontend notes: the login flow reads the session from useAuthStore; the navbar and settings "
            "page were restyled and dark mode follows the OS",
            ["use auth memories", "auth memories usage", "the auth memories we use"],
        ),
        (
            "BLI-1234",
            "Sprint review: BLI-1234 was closed after the upload retry fix, the demo went well, and next "
            "week we start on billing exports",
            ["BLI-1233 is a duplicate of the login bug", "BLI-1243 and BLI-2234", "1234 BLI"],
        ),
    ],
)
def test_identifier_query_finds_its_memory_when_vectors_disagree(
    space: tuple[MemoryService, Principal],
    minilm: Embedder,
    identifier: str,
    memory: str,
    lookalikes: list[str],
) -> None:
    memories, principal = space
    _save_all(memories, principal, [memory, *lookalikes, *DISTRACTORS])
    # precondition: the meaning channel alone prefers a lookalike
    query = minilm.embed([identifier], kind="query")[0]
    vectors = minilm.embed([memory, *lookalikes], kind="passage")
    assert int(np.argmax(vectors @ query)) != 0
    hits = memories.search(principal, TAG, identifier, limit=5)
    assert hits[0].memory.content == memory


def test_threshold_filters_on_similarity(space: tuple[MemoryService, Principal]) -> None:
    memories, principal = space
    _save_all(memories, principal, ["Deploys need a signed tag from the release manager", *DISTRACTORS])
    query = "who signs the tag for a production deploy"
    everything = memories.search(principal, TAG, query, limit=10)
    assert len(everything) == len(DISTRACTORS) + 1
    assert all(hit.similarity is not None for hit in everything)
    cut = 0.3
    kept = memories.search(principal, TAG, query, limit=10, threshold=cut)
    assert kept and all(hit.similarity is not None and hit.similarity >= cut for hit in kept)
    assert {h.memory.id for h in kept} == {h.memory.id for h in everything if (h.similarity or 0) >= cut}
    assert len(kept) < len(everything)
    assert memories.search(principal, TAG, query, limit=10, threshold=0.99) == []


def test_newer_outranks_older_equally_relevant_fact(tmp_path: Path, minilm: Embedder) -> None:
    old = "The billing service uses Postgres 14 for its database"
    new = "The billing service uses Postgres 16 for its database"
    # both insertion orders: whichever lands first in BM25 or vector order, the fresh fact wins
    for order, folder in (((old, new), "a"), ((new, old), "b")):
        (tmp_path / folder).mkdir()
        memories, principal = _open(tmp_path / folder, minilm)
        for text in order:
            age = 200.0 if text == old else 0.0
            memories.save(principal, TAG, text, created_at=now_s() - age * SECONDS_PER_DAY)
        _save_all(memories, principal, DISTRACTORS)
        hits = memories.search(principal, TAG, "which Postgres version does billing use", limit=2)
        assert [h.memory.content for h in hits] == [new, old]
        memories.close()


def test_strong_old_match_is_not_hidden_by_fresh_rows(space: tuple[MemoryService, Principal]) -> None:
    memories, principal = space
    target = "Deploys to production need a signed tag from the release manager"
    memories.save(principal, TAG, target, created_at=now_s() - 3 * 365 * SECONDS_PER_DAY)
    _save_all(memories, principal, DISTRACTORS, age_days=0.0)
    hits = memories.search(principal, TAG, "who signs the production deploy tag", limit=3)
    assert hits[0].memory.content == target


def test_score_orders_hits_and_similarity_is_the_cosine(
    space: tuple[MemoryService, Principal], minilm: Embedder
) -> None:
    memories, principal = space
    _save_all(memories, principal, DISTRACTORS)
    hits = memories.search(principal, TAG, "when is lunch", limit=5)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    query = minilm.embed(["when is lunch"], kind="query")[0]
    for hit in hits:
        expected = float(minilm.embed([hit.memory.content], kind="passage")[0] @ query)
        assert hit.similarity == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("query", ['"', "*", "NEAR(", "a:b", "content : x", "space:x", "OR", "-", '""""'])
def test_query_syntax_never_fails_the_search(space: tuple[MemoryService, Principal], query: str) -> None:
    memories, principal = space
    _save_all(memories, principal, ["a:b is a label in the config", *DISTRACTORS])
    hits = memories.search(principal, TAG, query, limit=3)
    assert isinstance(hits, list)


def test_none_embedder_serves_keyword_and_recency(tmp_path: Path) -> None:
    memories, principal = _open(tmp_path, NoneEmbedder())
    memories.save(
        principal, TAG, "MAX_POOL_SIZE is 30 on staging", created_at=now_s() - 300 * SECONDS_PER_DAY
    )
    memories.save(principal, TAG, "MAX_POOL_SIZE is 40 on staging", created_at=now_s())
    _save_all(memories, principal, DISTRACTORS)
    hits = memories.search(principal, TAG, "MAX_POOL_SIZE", limit=5)
    assert [h.memory.content for h in hits] == [
        "MAX_POOL_SIZE is 40 on staging",
        "MAX_POOL_SIZE is 30 on staging",
    ]
    assert all(h.similarity is None for h in hits)
    # a threshold cannot filter rows the vector channel never scored
    assert len(memories.search(principal, TAG, "MAX_POOL_SIZE", limit=5, threshold=0.9)) == 2
    assert memories.search(principal, TAG, "reboot the backend", limit=5) == []
    memories.close()


def test_a_hit_holding_the_questions_rare_word_holds_more_of_its_worth(
    space: tuple[MemoryService, Principal],
) -> None:
    memories, principal = space
    rare = "The dispatch app runs on Elixir 1.17"
    common = [f"The dispatch app's {part} was reviewed" for part in ("router", "schema", "worker", "socket")]
    _save_all(memories, principal, [rare, *common])
    hits = {
        hit.memory.content: hit
        for hit in memories.search(principal, TAG, "which Elixir does the dispatch app run")
    }
    assert rare in hits and common[0] in hits
    rare_signals, common_signals = hits[rare].signals, hits[common[0]].signals
    assert rare_signals is not None and common_signals is not None
    # both hold "dispatch" and "app"; only one holds the word no other memory holds
    assert rare_signals.query_worth_held > common_signals.query_worth_held > 0
    assert rare_signals.query_worth_held > rare_signals.query_terms_held * 0.99

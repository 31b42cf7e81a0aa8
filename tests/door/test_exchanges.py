"""Stored exchanges in-process: the pure helpers of `door/exchanges.py`, the store's query for expired
exchanges, and the retention sweep's bounded batches."""

from __future__ import annotations

from pathlib import Path

from bli_memory.door import exchanges
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Principal, now_s
from bli_memory.door.store.sqlite import SqliteStore

DAY_S = 86_400.0
SENTENCE = "The connection pool is capped by MAX_POOL_SIZE=20 in config/database.yml."


def test_the_same_text_has_the_same_key_and_another_text_another() -> None:
    key = exchanges.exchange_key("User: hi\n\nAssistant: We use uv.")
    assert key == exchanges.exchange_key("User: hi\n\nAssistant: We use uv.")
    assert key != exchanges.exchange_key("User: hi\n\nAssistant: We use pip.")
    assert key.startswith("exchange:") and len(key) == len("exchange:") + exchanges.EXCHANGE_KEY_HEX_CHARS


def test_a_fact_is_cut_out_whatever_its_case_spacing_and_closing_stop() -> None:
    document = "User: and the pool?\n\nAssistant: Sure.  the connection   pool is capped by\nMAX_POOL_SIZE=20 in config/database.yml. Done."
    assert exchanges.cut_fact(document, SENTENCE) == "User: and the pool?\n\nAssistant: Sure. Done."
    twice = f"{SENTENCE} Then: {SENTENCE}"
    assert exchanges.cut_fact(twice, SENTENCE) == "Then:"


def test_a_reworded_fact_is_not_found_so_the_caller_tombstones_the_exchange() -> None:
    assert exchanges.cut_fact("Assistant: It is capped at 20.", "The pool is capped at 20.") is None
    assert exchanges.cut_fact("anything", "  .  ") is None
    assert exchanges.cut_fact(SENTENCE, SENTENCE.lower()) == "" and not exchanges.has_words("")


def test_a_stored_exchange_inherits_the_jobs_metadata_but_never_its_pin_or_links() -> None:
    job = {"source": "stop_hook", "pinned": True, "branch": "main", "exchange": "exchange:x", "facts": ["y"]}
    assert exchanges.document_metadata(job, "job_1", ["mem_a"]) == {
        "branch": "main",
        "source": "exchange",
        "jobId": "job_1",
        "facts": ["mem_a"],
    }
    fact = exchanges.fact_metadata({"source": "stop_hook"}, "exchange:k")
    assert exchanges.exchange_of(fact) == "exchange:k"
    assert exchanges.exchange_of({"exchange": "not a key"}) is None


def _service(tmp_path: Path) -> tuple[MemoryService, Principal]:
    store = SqliteStore(tmp_path / "memory.db")
    token = store.create_device(person="ana")[1]
    principal = store.authenticate(token)
    assert principal is not None
    return MemoryService(store), principal


def test_the_store_finds_only_old_current_exchanges_oldest_first(tmp_path: Path) -> None:
    memories, principal = _service(tmp_path)
    old = now_s() - 10 * DAY_S
    with memories.transaction():
        ids = [
            memories.save_exchange(
                principal,
                "repo_a",
                f"User: question {n}",
                metadata={"source": "exchange"},
                created_at=old + n,
            )[0]
            for n in range(3)
        ]
    fresh = memories.save_exchange(
        principal, "repo_a", "User: new", metadata={"source": "exchange"}, created_at=now_s()
    )
    own = memories.save(principal, "repo_a", "Runbook", kind="document", created_at=old)
    fact = memories.save(principal, "repo_a", "exchange-looking fact", created_at=old)
    memories.forget(principal, "repo_a", memory_id=ids[1])

    found = memories.store.expired_documents("exchange:", now_s() - DAY_S, 10)

    assert [memory.id for _, memory in found] == [ids[0], ids[2]]
    assert all(team == principal.team_id for team, _ in found)
    assert {fresh[0], own.id, fact.id}.isdisjoint(memory.id for _, memory in found)
    assert [m.id for _, m in memories.store.expired_documents("exchange:", now_s() - DAY_S, 1)] == [ids[0]]


def test_the_sweep_tombstones_in_bounded_batches_and_search_no_longer_finds_them(tmp_path: Path) -> None:
    memories, principal = _service(tmp_path)
    for n in range(5):
        memories.save_exchange(
            principal,
            "repo_b",
            f"User: zebra question {n}",
            metadata={"source": "exchange"},
            created_at=now_s() - 5 * DAY_S,
        )
    assert len(memories.search(principal, "repo_b", "zebra", limit=10)) == 5
    before = now_s() - DAY_S
    assert [memories.expire_exchanges(before, batch=2) for _ in range(4)] == [2, 2, 1, 0]
    assert memories.search(principal, "repo_b", "zebra", limit=10) == []


def test_an_exchange_its_job_distilled_nothing_from_is_known_and_search_says_so(tmp_path: Path) -> None:
    memories, principal = _service(tmp_path)
    barren = "User: run the tests again\n\nAssistant: All 203 pass; the tree is unchanged."
    fruitful = "User: which port does the gateway listen on\n\nAssistant: The gateway listens on 8443."
    fact = memories.save(principal, "repo_a", "The gateway listens on 8443.")
    for text, facts in ((barren, []), (fruitful, [fact.id])):
        memories.save_exchange(
            principal,
            "repo_a",
            text,
            metadata=exchanges.document_metadata({"source": "stop_hook"}, "job_1", facts),
            created_at=now_s(),
        )
    kept = memories.save_exchange(  # kept without a job: nothing is known of its facts
        principal,
        "repo_a",
        "User: the tests again\n\nAssistant: pass",
        metadata={"source": "import"},
        created_at=now_s(),
    )
    hits = {
        hit.memory.content: hit
        for hit in memories.search(principal, "repo_a", "tests gateway pass", limit=10)
    }
    judged = {text: hits[text].signals.exchange_without_facts for text in (barren, fruitful)}  # type: ignore[union-attr]
    assert judged == {barren: True, fruitful: False}
    assert not exchanges.gave_no_facts(hits["The gateway listens on 8443."].memory)
    stored = memories.store.current_by_ids(principal.team_id, [kept[0]])[kept[0]]
    assert not exchanges.gave_no_facts(stored)

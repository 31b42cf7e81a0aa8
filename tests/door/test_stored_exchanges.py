"""Stored exchanges against the real door: an extract save keeps the exchange as a document linked both
ways with the facts distilled from it; search labels the two kinds; forgetting a fact takes its
sentence out of its exchange, and so does superseding it (an update, or a later correcting
exchange) unless the exchange also says the new text; retention tombstones old exchanges but not their facts; the session
profile leaves exchanges out; and the prompt hook (a real subprocess, paired to the real door)
prefers a fact to the exchange it came from."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from bli_memory.settings import write_session
from tests.helpers import DoorProcess

MCP = str(Path(sys.executable).parent / "bli-memory-mcp")
DOOR = str(Path(sys.executable).parent / "bli-memory-door")
POOL_FACT = "The connection pool is capped by MAX_POOL_SIZE=20 in config/database.yml."
EXCHANGE = (
    "User: flaky_retry_hook keeps failing on the nightly run, can you look into it?\n\n"
    "Assistant: We run PostgreSQL 16 in production. " + POOL_FACT + " Run migrations with `make migrate` "
    "before deploying. Thanks for waiting, the weather in quokka_valley was lovely."
)
DAY_S = 86_400.0


def save(door: DoorProcess, tag: str, content: str, **extra: Any) -> dict[str, Any]:
    status, body = door.post("/api/memory/save", {"content": content, "containerTag": tag, **extra})
    assert status in (201, 202), body
    return dict(body)


def search(door: DoorProcess, tag: str, q: str, limit: int = 20) -> list[dict[str, Any]]:
    status, body = door.post("/api/memory/search", {"q": q, "containerTag": tag, "limit": limit})
    assert status == 200, body
    return list(body["results"])


def extract(door: DoorProcess, tag: str, content: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """Save `content` with extract: true and wait for its job to finish."""
    job_id = save(door, tag, content, extract=True, metadata={"source": "stop_hook"})["jobId"]
    job = door.wait_job(job_id, timeout_s)
    assert job["status"] == "done", job
    return job


def rows_of(db: Path, tag: str) -> list[dict[str, Any]]:
    """Every row of a space, every version and tombstone, read from the door's file."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as connection:
        connection.row_factory = sqlite3.Row
        rows = connection.execute(
            "SELECT id, kind, status, content, custom_id, root_id, metadata FROM memories "
            "WHERE container_tag = ? ORDER BY rowid",
            (tag,),
        ).fetchall()
    return [{**dict(row), "metadata": json.loads(row["metadata"] or "null")} for row in rows]


def the_document(door: DoorProcess, tag: str) -> dict[str, Any]:
    documents = [
        row for row in search(door, tag, "flaky_retry_hook quokka_valley") if row["kind"] == "document"
    ]
    assert len(documents) == 1, documents
    return documents[0]


def test_an_extract_save_keeps_one_document_linked_both_ways_with_its_facts(
    door: DoorProcess, tag: str
) -> None:
    job = extract(door, tag, EXCHANGE)
    assert job["outcome"]["added"] == 3  # the document is not a fact: it is not counted as one

    found = search(door, tag, "MAX_POOL_SIZE flaky_retry_hook PostgreSQL migrate")
    facts = [row for row in found if row["kind"] == "memory"]
    documents = [row for row in found if row["kind"] == "document"]
    assert len(facts) == 3 and len(documents) == 1, found  # search returns both kinds, labelled
    document = documents[0]
    assert document["content"] == EXCHANGE
    assert document["customId"].startswith("exchange:")
    assert document["metadata"]["source"] == "exchange" and document["metadata"]["jobId"] == job["id"]
    assert sorted(document["metadata"]["facts"]) == sorted(row["id"] for row in facts)
    assert all(row["metadata"]["exchange"] == document["customId"] for row in facts)
    assert all(row["metadata"]["source"] == "stop_hook" for row in facts)

    again = extract(door, tag, EXCHANGE)  # the same exchange saved twice stays one document
    assert again["outcome"]["added"] == 0 and again["outcome"]["unchanged"] == 3
    current = [row for row in rows_of(door.db, tag) if row["status"] == "current"]
    assert [row["kind"] for row in current].count("document") == 1 and len(current) == 4


def test_search_lists_a_fact_before_the_exchange_it_came_from(door: DoorProcess, tag: str) -> None:
    extract(door, tag, EXCHANGE)
    # the exchange holds both words, the fact one: by score alone the exchange comes first
    found = search(door, tag, "flaky_retry_hook MAX_POOL_SIZE", limit=5)
    assert [(row["kind"], row["content"][:20]) for row in found] == [
        ("memory", POOL_FACT[:20]),
        ("document", EXCHANGE[:20]),
    ]
    assert found[0]["score"] >= found[1]["score"]
    alone = search(door, tag, "flaky_retry_hook", limit=5)  # no fact of it matches: it keeps its place
    assert [row["kind"] for row in alone] == ["document"]


def test_a_fact_an_exchange_changes_is_updated_and_the_old_exchange_no_longer_says_the_old_value(
    door: DoorProcess, tag: str
) -> None:
    old, new = (
        "Assistant: We use PostgreSQL 15 in production.",
        "Assistant: We use PostgreSQL 16 in production.",
    )
    extract(door, tag, old)
    job = extract(door, tag, new)
    assert job["outcome"]["updated"] == 1 and job["outcome"]["added"] == 0
    found = search(door, tag, "which PostgreSQL version do we use")
    assert [row["content"] for row in found if row["kind"] == "memory"] == [
        "We use PostgreSQL 16 in production."
    ]
    assert [row["content"] for row in found if row["kind"] == "document"] == [new]
    fact = next(row for row in found if row["kind"] == "memory")
    second = next(row for row in found if row["content"] == new)
    assert fact["metadata"]["exchange"] == second["customId"]  # the new text came from the new exchange
    assert root_of(door, fact["id"]) in second["metadata"]["facts"]
    first = next(row for row in rows_of(door.db, tag) if row["content"] == old)
    assert first["status"] == "superseded"  # the old exchange's text is history


STAGING_EXCHANGE = (
    "User: flaky_retry_hook failed again on the nightly run.\n\n"
    "Assistant: The staging host is `db-2.stg.acme.dev`. Run migrations with `make migrate` before deploying. "
    "Thanks for waiting, the weather in quokka_valley was lovely."
)
OLD_HOST, NEW_HOST = "db-2.stg.acme.dev", "db-3.stg.acme.dev"


def root_of(door: DoorProcess, memory_id: str) -> str:
    """A memory's root id: the id of its first version."""
    status, history = door.get(f"/api/memory/{memory_id}/history")
    assert status == 200, history
    return str(history["versions"][0]["id"])


def holding(door: DoorProcess, tag: str, q: str, text: str) -> list[dict[str, Any]]:
    """The current memories and documents a search for `q` returns whose text holds `text`."""
    return [row for row in search(door, tag, q) if text in row["content"]]


def assert_only_the_new_host_is_found(door: DoorProcess, tag: str) -> dict[str, Any]:
    """No current memory or document says the old host; a fact says the new one; the exchange the old
    one came from keeps its other sentences (cut as a forget cuts: a new version, the old as history).
    Returns that exchange."""
    for q in (OLD_HOST, "staging host db-2", "where is staging"):
        assert holding(door, tag, q, OLD_HOST) == [], q
    assert [row["kind"] for row in holding(door, tag, "staging host", NEW_HOST)][:1] == ["memory"]
    exchange = the_document(door, tag)
    assert "Run migrations with `make migrate` before deploying." in exchange["content"]
    assert "flaky_retry_hook" in exchange["content"] and OLD_HOST not in exchange["content"]
    assert exchange["version"] == 2
    status, history = door.get(f"/api/memory/{exchange['id']}/history")
    assert status == 200 and [v["status"] for v in history["versions"]] == ["superseded", "current"]
    assert history["versions"][0]["content"] == STAGING_EXCHANGE
    return exchange


def test_updating_a_fact_cuts_its_old_sentence_out_of_its_exchange(door: DoorProcess, tag: str) -> None:
    extract(door, tag, STAGING_EXCHANGE)
    fact = next(row for row in search(door, tag, "staging host") if row["kind"] == "memory")
    assert OLD_HOST in fact["content"]

    status, body = door.post(
        "/api/memory/update", {"id": fact["id"], "content": f"The staging host is `{NEW_HOST}`."}
    )
    assert status == 200, body

    exchange = assert_only_the_new_host_is_found(door, tag)
    assert fact["id"] not in exchange["metadata"]["facts"] and len(exchange["metadata"]["facts"]) == 1
    updated = next(row for row in search(door, tag, "staging host") if row["kind"] == "memory")
    assert updated["id"] == body["id"] and "exchange" not in updated["metadata"]  # no longer its source


def test_updating_a_fact_cuts_its_old_sentence_out_of_an_exchange_that_repeated_it(
    door: DoorProcess, tag: str
) -> None:
    extract(door, tag, STAGING_EXCHANGE)
    repeated = "User: where was staging again, for the otter_creek run?\n\nAssistant: The staging host is `db-2.stg.acme.dev`."
    extract(door, tag, repeated)
    fact = next(row for row in search(door, tag, "staging host") if row["kind"] == "memory")
    status, _ = door.post(
        "/api/memory/update", {"id": fact["id"], "content": f"The staging host is `{NEW_HOST}`."}
    )
    assert status == 200
    assert_only_the_new_host_is_found(door, tag)
    again = [row for row in search(door, tag, "otter_creek") if row["kind"] == "document"]
    assert len(again) == 1 and again[0]["version"] == 2 and "otter_creek" in again[0]["content"]


def test_a_correcting_exchange_cuts_the_old_sentence_out_of_the_first_exchange(
    door: DoorProcess, tag: str
) -> None:
    extract(door, tag, STAGING_EXCHANGE)
    correction = "User: the deploy could not reach staging.\n\nAssistant: Actually, staging moved to `db-3.stg.acme.dev`."
    job = extract(door, tag, correction)
    assert job["outcome"]["updated"] == 1, job

    first = assert_only_the_new_host_is_found(door, tag)
    fact = next(row for row in holding(door, tag, "staging host", NEW_HOST) if row["kind"] == "memory")
    assert root_of(door, fact["id"]) not in first["metadata"]["facts"]
    second = next(
        row for row in search(door, tag, "deploy could not reach staging") if row["kind"] == "document"
    )
    assert second["content"] == correction and fact["metadata"]["exchange"] == second["customId"]


def test_with_an_embedder_an_updated_fact_s_exchange_is_found_by_meaning_at_once(
    door_onnx: DoorProcess, tag: str
) -> None:
    extract(door_onnx, tag, STAGING_EXCHANGE)
    fact = next(row for row in search(door_onnx, tag, "staging host") if row["kind"] == "memory")
    status, _ = door_onnx.post(
        "/api/memory/update", {"id": fact["id"], "content": f"The staging host is `{NEW_HOST}`."}
    )
    assert status == 200
    # the cut exchange was embedded with the new text, before the update answered: no wait for the backfill
    exchange = the_document(door_onnx, tag)
    assert OLD_HOST not in exchange["content"] and exchange["version"] == 2
    assert vector_model_of(door_onnx.db, exchange["id"]) is not None and exchange["similarity"] is not None


def test_an_update_its_exchange_also_says_leaves_the_exchange_as_it_was(door: DoorProcess, tag: str) -> None:
    said = "Assistant: The staging host is `db-2.stg.acme.dev`. The build cache lives in `/var/cache/ci`."
    extract(door, tag, said)
    fact = next(row for row in search(door, tag, "staging host") if row["kind"] == "memory")
    status, _ = door.post(  # the new text is in the exchange: it still says what is true
        "/api/memory/update", {"id": fact["id"], "content": "The build cache lives in `/var/cache/ci`."}
    )
    assert status == 200
    documents = [row for row in search(door, tag, "staging host build cache") if row["kind"] == "document"]
    assert [(row["content"], row["version"]) for row in documents] == [(said, 1)]


def test_a_stored_exchange_is_never_a_neighbour_that_swallows_a_new_fact(door: DoorProcess, tag: str) -> None:
    asked = (
        "User: should we run migrations with `make migrate` before deploying?\n\nAssistant: Yes, good idea."
    )
    assert extract(door, tag, asked)["outcome"]["added"] == 0  # a question: no fact, the exchange is kept
    job = extract(door, tag, "Assistant: Run migrations with `make migrate` before deploying.")
    # the first exchange holds every word of the new fact: compared with it, the fact was "already known"
    assert job["outcome"]["added"] == 1 and job["outcome"]["unchanged"] == 0
    facts = [row for row in search(door, tag, "make migrate") if row["kind"] == "memory"]
    assert [row["content"] for row in facts] == ["Run migrations with `make migrate` before deploying."]


def test_forgetting_a_fact_takes_its_sentence_out_of_its_exchange(door: DoorProcess, tag: str) -> None:
    extract(door, tag, EXCHANGE)
    before = the_document(door, tag)
    fact = next(row for row in search(door, tag, "MAX_POOL_SIZE") if row["kind"] == "memory")
    assert fact["content"] == POOL_FACT

    status, body = door.post("/api/memory/forget", {"containerTag": tag, "id": fact["id"]})
    assert status == 200 and body["forgotten"]["id"] == fact["id"]

    assert not any("MAX_POOL_SIZE" in row["content"] for row in search(door, tag, "MAX_POOL_SIZE pool size"))
    after = the_document(door, tag)  # the rest of the exchange is still found
    assert after["id"] != before["id"] and after["customId"] == before["customId"] and after["version"] == 2
    assert "MAX_POOL_SIZE" not in after["content"] and "flaky_retry_hook" in after["content"]
    assert "We run PostgreSQL 16 in production. Run migrations" in after["content"]
    assert fact["id"] not in after["metadata"]["facts"] and len(after["metadata"]["facts"]) == 2
    status, history = door.get(f"/api/memory/{after['id']}/history")  # the old text is history
    assert status == 200 and [v["status"] for v in history["versions"]] == ["superseded", "current"]


def test_forgetting_a_fact_takes_its_sentence_out_of_every_exchange_that_said_it_word_for_word(
    door: DoorProcess, tag: str
) -> None:
    extract(door, tag, EXCHANGE)
    repeated = (
        "User: remind me what caps the connection pool in vole_harbour?\n\n"
        f"Assistant: {POOL_FACT} Nothing about it changed since the vole_harbour move."
    )
    extract(door, tag, repeated)
    # a third exchange only shares words with it: the record of something else, left as it is
    nearby = "User: is MAX_POOL_SIZE still read from config/database.yml in ferret_bay?\n\nAssistant: Yes."
    extract(door, tag, nearby)
    fact = next(row for row in search(door, tag, "MAX_POOL_SIZE") if row["kind"] == "memory")
    assert fact["content"] == POOL_FACT

    status, _ = door.post("/api/memory/forget", {"containerTag": tag, "id": fact["id"]})
    assert status == 200

    found = search(door, tag, "MAX_POOL_SIZE connection pool capped config/database.yml")
    assert not any(POOL_FACT.rstrip(".") in row["content"] for row in found)
    again = [row for row in search(door, tag, "vole_harbour") if row["kind"] == "document"]
    assert len(again) == 1 and "Nothing about it changed" in again[0]["content"]  # the rest of it stays
    assert again[0]["version"] == 2 and "MAX_POOL_SIZE" not in again[0]["content"]
    other = [row for row in search(door, tag, "ferret_bay") if row["kind"] == "document"]
    assert len(other) == 1 and other[0]["version"] == 1 and "MAX_POOL_SIZE" in other[0]["content"]


def vector_model_of(db: Path, memory_id: str) -> str | None:
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as connection:
        row = connection.execute("SELECT embedding_model FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return None if row is None else row[0]


def test_with_an_embedder_an_exchange_is_found_by_meaning_and_so_is_its_rewrite(
    door_onnx: DoorProcess, tag: str
) -> None:
    extract(door_onnx, tag, EXCHANGE)
    document = the_document(door_onnx, tag)
    # embedded before the job's transaction: it has its vector as soon as the job is done
    assert vector_model_of(door_onnx.db, document["id"]) is not None and document["similarity"] is not None
    fact = next(row for row in search(door_onnx, tag, "MAX_POOL_SIZE") if row["kind"] == "memory")
    status, _ = door_onnx.post("/api/memory/forget", {"containerTag": tag, "id": fact["id"]})
    assert status == 200
    rewritten = the_document(door_onnx, tag)
    deadline = time.monotonic() + 30  # the rewrite is embedded by the worker's backfill (it polls every 5 s)
    while vector_model_of(door_onnx.db, rewritten["id"]) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert vector_model_of(door_onnx.db, rewritten["id"]) is not None
    assert the_document(door_onnx, tag)["similarity"] is not None


def test_forgetting_a_fact_its_exchange_does_not_hold_word_for_word_tombstones_the_exchange(
    door: DoorProcess, tag: str
) -> None:
    extract(door, tag, EXCHANGE)
    document = the_document(door, tag)
    reworded = save(
        door,
        tag,
        "The nightly run of flaky_retry_hook fails on quokka_valley weather.",
        metadata={"exchange": document["customId"]},
    )
    status, _ = door.post("/api/memory/forget", {"containerTag": tag, "id": reworded["id"]})
    assert status == 200
    assert not any(row["kind"] == "document" for row in search(door, tag, "flaky_retry_hook quokka_valley"))
    statuses = {row["id"]: row["status"] for row in rows_of(door.db, tag)}
    assert statuses[document["id"]] == "forgotten"
    assert [row["kind"] for row in search(door, tag, "MAX_POOL_SIZE")] == ["memory"]  # its facts stay


def test_correcting_a_fact_its_exchange_does_not_hold_word_for_word_leaves_the_exchange_whole(
    door: DoorProcess, tag: str
) -> None:
    """Unlike a forget: the exchange is the record of what was said, and one reworded value must not
    take every other thing it holds out of search."""
    extract(door, tag, EXCHANGE)
    document = the_document(door, tag)
    reworded = save(
        door,
        tag,
        "The nightly run of flaky_retry_hook fails on quokka_valley weather.",
        metadata={"exchange": document["customId"]},
    )
    status, _ = door.post(
        "/api/memory/update",
        {"id": reworded["id"], "content": "The nightly run of flaky_retry_hook passes since the retry fix."},
    )
    assert status == 200
    statuses = {row["id"]: row["status"] for row in rows_of(door.db, tag)}
    assert statuses[document["id"]] == "current"
    assert [row["version"] for row in search(door, tag, "flaky_retry_hook") if row["kind"] == "document"] == [
        1
    ]


def test_retention_tombstones_an_old_exchange_but_not_its_facts(
    start_door: Callable[..., DoorProcess],
) -> None:
    door = start_door("--embedder", "none", "--exchange-retention-days", "1")
    tag = "repo_retention"
    extract(door, tag, EXCHANGE)
    past = (datetime.now(timezone.utc) - timedelta(days=3)).isoformat()
    own_document = save(
        door, tag, "Runbook: restart quokka_valley with `make bounce`.", kind="document", createdAt=past
    )
    old_fact = save(door, tag, "The quokka_valley cluster was set up by Ana.", createdAt=past)
    with closing(sqlite3.connect(door.db, timeout=30)) as connection, connection:
        connection.execute(
            "UPDATE memories SET created_at = created_at - ? WHERE kind = 'document' AND custom_id LIKE 'exchange:%'",
            (2 * DAY_S,),
        )
    door.stop()
    door.start()  # the worker sweeps at start, then hourly
    door.wait_for_log('[bli-memory] exchange retention {"tombstoned": 1, "days": 1.0}')

    rows = rows_of(door.db, tag)
    exchange = next(row for row in rows if (row["custom_id"] or "").startswith("exchange:"))
    assert exchange["status"] == "forgotten"
    current = {row["id"] for row in rows if row["status"] == "current"}
    assert {own_document["id"], old_fact["id"]} <= current  # a person's document and facts are not exchanges
    assert all(root in current for root in exchange["metadata"]["facts"])
    assert not any(row["id"] == exchange["id"] for row in search(door, tag, "flaky_retry_hook quokka_valley"))


def test_the_retention_setting_is_checked_and_documented(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "BLI_MEMORY_EXCHANGE_RETENTION_DAYS": "soon"}
    done = subprocess.run(
        [DOOR, "serve", "--port", "0", "--db", str(tmp_path / "m.db"), "--no-autopair"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith("BLI_MEMORY_EXCHANGE_RETENTION_DAYS: not a number: 'soon'")
    )
    bad = subprocess.run(
        [DOOR, "serve", "--exchange-retention-days", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2 and "must be more than 0" in bad.stderr and "Traceback" not in bad.stderr
    usage = subprocess.run([DOOR, "serve", "--help"], capture_output=True, text=True, timeout=60, check=True)
    assert "--exchange-retention-days DAYS" in usage.stdout and "(default 90)" in usage.stdout


def test_the_session_profile_leaves_stored_exchanges_out(door: DoorProcess, tag: str) -> None:
    extract(door, tag, EXCHANGE)
    for q, dynamic in ((None, 3), ("flaky_retry_hook MAX_POOL_SIZE", 1)):
        status, body = door.post("/api/memory/v4/profile", {"containerTag": tag, **({"q": q} if q else {})})
        assert status == 200
        assert [row["kind"] for row in body["recent"]] == ["memory"] * 3
        assert EXCHANGE not in body["profile"]["dynamic"] and len(body["profile"]["dynamic"]) == dynamic
    assert body["profile"]["dynamic"] == [POOL_FACT]  # the exchange matched the query too, and is left out


# ------------------------------------------------------------------------ the prompt hook


def prompt_hook(door: DoorProcess, tag: str, home: Path, prompt: str) -> str:
    """Run `bli-memory-mcp hook prompt` paired to the real door; its stdout."""
    write_session(door.url, door.token, env={"HOME": str(home)})
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "BLI_MEMORY_DAEMON": "0",
        "LANG": "C.UTF-8",
        "BLI_MEMORY_CONTAINER_TAG": tag,
    }
    payload = {
        "session_id": f"s{uuid.uuid4().hex[:6]}",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    done = subprocess.run(
        [MCP, "hook", "prompt"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=str(home),
        timeout=40,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_prompt_hook_shows_a_fact_and_not_the_exchange_it_came_from(
    door: DoorProcess, tag: str, tmp_path: Path
) -> None:
    extract(door, tag, EXCHANGE)
    document = the_document(door, tag)
    fact = next(row for row in search(door, tag, "MAX_POOL_SIZE") if row["kind"] == "memory")
    assert any(row["id"] == document["id"] for row in search(door, tag, "how big is MAX_POOL_SIZE?", limit=5))

    shown = prompt_hook(door, tag, tmp_path, "how big is MAX_POOL_SIZE?")

    assert f"id {fact['id']}" in shown and POOL_FACT in shown
    assert document["id"] not in shown and "flaky_retry_hook" not in shown


def test_the_prompt_hook_shows_the_exchange_when_no_fact_of_it_matched(
    door: DoorProcess, tag: str, tmp_path: Path
) -> None:
    extract(door, tag, EXCHANGE)
    document = the_document(door, tag)

    shown = prompt_hook(door, tag, tmp_path, "why does flaky_retry_hook fail?")

    assert f"document · id {document['id']}" in shown
    assert "flaky_retry_hook keeps failing on the nightly run" in shown


# ------------------------------------------------------------------------ what search_memory shows


def test_search_memory_text_lists_facts_and_stored_exchanges_apart() -> None:
    from bli_memory.render import render_search

    now = datetime(2026, 12, 1, tzinfo=timezone.utc)
    answer = {
        "results": [
            {
                "id": "m1",
                "kind": "memory",
                "content": POOL_FACT,
                "createdAt": "2026-11-30T00:00:00Z",
                "metadata": {"exchange": "exchange:ab"},
            },
            {
                "id": "d1",
                "kind": "document",
                "content": EXCHANGE,
                "createdAt": "2026-11-30T00:00:00Z",
                "customId": "exchange:ab",
                "metadata": {"source": "exchange", "facts": ["m1"]},
            },
            {
                "id": "d2",
                "kind": "document",
                "content": "Runbook: restart quokka_valley.",
                "createdAt": "2026-11-30T00:00:00Z",
            },
        ],
        "searched": ["repo_x"],
    }
    text, structured = render_search("pool size", "repo_x", answer, now)
    facts, documents = text.split("\nDocuments:\n")
    assert text.startswith("1 remembered fact and 2 documents for “pool size” in space repo_x.")
    assert "1. [id m1 · 1d]" in facts and POOL_FACT in facts and "flaky_retry_hook" not in facts
    assert "1. [id d1 · 1d · stored exchange]" in documents and "2. [id d2 · 1d]" in documents
    assert [row["id"] for row in structured["memories"]] == ["m1"]
    assert [row["id"] for row in structured["documents"]] == ["d1", "d2"]

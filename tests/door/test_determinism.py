"""Search is deterministic: the same memories saved in the same order and the same query give the same
hits, in the same order and with the same scores, in every door, every process and at any moment.

Ids are random per door, so hits are compared by content; ties are meant to fall by save order."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from bli_memory.door import keyword, ranking
from bli_memory.door.embed import Embedder, load_embedder
from bli_memory.door.indexes import ANN_MIN_VECTORS_ENV, SNAPSHOT_MIN_MEMORIES_ENV
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Principal, now_s
from bli_memory.door.ranking import SECONDS_PER_DAY
from bli_memory.door.service import writer
from tests.door.helpers import device_principal, open_memories
from tests.helpers import DoorProcess

TAG = "repo-det"
NOW = datetime.now(timezone.utc).replace(microsecond=0)

#: (content, days before now, customId): exact ties (the same text under two custom ids, saved with
#: one timestamp), near-duplicates, and ages from today to two years.
MEMORIES: list[tuple[str, float, str | None]] = [
    ("The deploy key for staging rotates every 90 days", 40, "rotation-a"),
    ("The deploy key for staging rotates every 90 days", 40, "rotation-b"),
    ("Staging runs Postgres 15 on a single node", 300, None),
    ("The staging database is Postgres 15 on one node", 120, None),
    ("Staging DB: Postgres 15, single node", 120, None),
    ("Production runs Postgres 16 with two read replicas", 10, None),
    ("The billing service retries a failed charge three times", 700, None),
    ("Billing retries failed charges 3 times before giving up", 2, None),
    ("Use pnpm, not npm, in the web folder", 55, None),
    ("Use pnpm, not npm, in the web folder.", 55, "pnpm-dot"),
    ("The CI pipeline times out after 20 minutes", 33, None),
    ("CI jobs are killed after twenty minutes", 33, None),
    ("MAX_POOL_SIZE is 40 on staging", 90, None),
    ("MAX_POOL_SIZE is 30 on staging", 400, None),
    ("Ada owns the release checklist", 15, None),
    ("The release checklist lives in docs/release.md", 15, None),
    ("Friday deploys need a second reviewer", 8, None),
    ("No deploys on Friday afternoons", 8, None),
    ("The office coffee machine is descaled on Mondays", 1, None),
    ("Lunch is served at noon in the cafeteria", 1, None),
    ("The search door listens on port 8787 by default", 60, None),
    ("Port 8787 is the door's default port", 60, "port-b"),
    ("Feature flags are read from flags.yaml at start", 200, None),
    ("Flags in flags.yaml are reloaded only on restart", 200, None),
    ("Logs rotate at midnight and keep seven days", 25, None),
    ("Log files are kept for a week", 25, None),
    ("The API rate limit is 100 requests a minute per token", 5, None),
    ("Each token may make 100 requests per minute", 5, None),
    ("Backups run nightly at 02:00 UTC", 70, "backup-a"),
    ("Frontend components live in src/components", 12, None),
    # saved last: when an earlier row is forgotten, the matrix moves this row ahead of its twin
    ("Backups run nightly at 02:00 UTC", 70, "backup-b"),
]
#: saved after the fourth memory, forgotten at the end: the vector matrix moves its last row into the
#: gap and the keyword index keeps a dead slot, while a door restarted since loads both afresh.
FORGOTTEN = "Old note: the staging deploy key rotates every 90 days and Postgres 15 backs it"
QUERIES = [
    "how often does the deploy key rotate",
    "which Postgres version is on staging",
    "billing retry policy",
    "npm or pnpm",
    "CI timeout",
    "MAX_POOL_SIZE",
    "who owns the release checklist",
    "can I deploy on Friday",
    "what port does the door use",
    "when are backups taken",
    "feature flags reload",
    "how long are logs kept",
    "rate limit per token",
    "database replicas",
    "coffee",
    "snapshot schedule",  # the two identical backups by meaning alone: a vector-only tie
]


def _created_at(days: float) -> str:
    return (NOW - timedelta(days=days)).isoformat().replace("+00:00", "Z")


def _fill(door: DoorProcess) -> None:
    doomed = ""
    for index, (content, days, custom_id) in enumerate(MEMORIES):
        body: dict[str, Any] = {"content": content, "containerTag": TAG, "createdAt": _created_at(days)}
        if custom_id is not None:
            body["customId"] = custom_id
        status, saved = door.post("/api/memory/save", body)
        assert status == 201 and saved["status"] == "created", saved
        if index == len(MEMORIES) - 4:
            status, saved = door.post(
                "/api/memory/save", {"content": FORGOTTEN, "containerTag": TAG, "createdAt": _created_at(1)}
            )
            assert status == 201, saved
            doomed = saved["id"]
    status, gone = door.post("/api/memory/forget", {"containerTag": TAG, "id": doomed})
    assert status == 200, gone


def _rankings(door: DoorProcess) -> list[list[tuple[str, float, float | None, float, list[str]]]]:
    """Each query's hits as the door answers them, relevance included (it must be the same in
    every door process: the calibration reads nothing but the hit's signals)."""
    out = []
    for q in QUERIES:
        status, body = door.post("/api/memory/search", {"q": q, "containerTag": TAG, "limit": 10})
        assert status == 200, body
        assert isinstance(body["floor"], float)
        out.append(
            [
                (h["content"], h["score"], h["similarity"], h["relevance"], h["matchedBy"])
                for h in body["results"]
            ]
        )
    return out


#: doors whose space is past the approximate index's threshold (8 vectors): both search an HNSW graph.
GRAPH_ENV = {ANN_MIN_VECTORS_ENV: "8", SNAPSHOT_MIN_MEMORIES_ENV: "8"}


@pytest.mark.parametrize("env", [None, GRAPH_ENV], ids=["exact", "graph"])
def test_two_doors_rank_the_same_memories_identically(
    start_door: Callable[..., DoorProcess], env: dict[str, str] | None
) -> None:
    first = start_door("--embedder", "onnx", folder="first", env=env)
    second = start_door("--embedder", "onnx", folder="second", env=env)
    _fill(first)
    _fill(second)
    _rankings(second)  # its indexes exist (and, past the threshold, are left behind when it stops)
    # the second door is restarted: its indexes are rebuilt from the store in save order, while the
    # first keeps the ones it updated as it went (a moved matrix row, a dead keyword slot)
    assert second.stop() == 0
    # past the threshold the stopped door left its graph behind, and the restarted one reads it
    snapshots = list(second.db.with_name(second.db.name + ".indexes").glob("*.usearch"))
    assert len(snapshots) == (0 if env is None else 1)
    second.start()
    one, two = _rankings(first), _rankings(second)
    assert all(len(hits) >= 3 for hits in one)
    for q, a, b in zip(QUERIES, one, two, strict=True):
        assert a == b, q
    # exact ties fall by save order: of two identical memories the first saved comes first, whether
    # both channels found them or meaning alone (where the matrix holds the later one first)
    for q in ("when are backups taken", "snapshot schedule"):
        status, body = first.post("/api/memory/search", {"q": q, "containerTag": TAG, "limit": 10})
        assert status == 200, body
        twins = [h["customId"] for h in body["results"] if h.get("customId", "").startswith("backup-")]
        assert twins == ["backup-a", "backup-b"], q


# ---------------------------------------------------------------------------------- in-process


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    embedder, reason = load_embedder("onnx", env={})
    assert reason is None, reason
    return embedder


def _open(path: Path, embedder: Embedder) -> tuple[MemoryService, Principal]:
    service = open_memories(path, embedder)
    return service, device_principal(service)


def _hits(service: MemoryService, principal: Principal, q: str) -> list[tuple[str, float, float | None]]:
    return [(h.memory.content, h.score, h.similarity) for h in service.search(principal, TAG, q, limit=10)]


def test_the_moment_of_the_query_changes_no_score(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, principal = _open(tmp_path / "memory.db", minilm)
    saved_at = now_s()
    for content, days, custom_id in MEMORIES:
        service.save(
            principal, TAG, content, custom_id=custom_id, created_at=saved_at - days * SECONDS_PER_DAY
        )
    now = [(q, _hits(service, principal, q)) for q in QUERIES]
    # the same search asked 45 days later (nothing saved since): the same hits, the same scores
    monkeypatch.setattr(writer, "now_s", lambda: saved_at + 45 * SECONDS_PER_DAY)
    later = [(q, _hits(service, principal, q)) for q in QUERIES]
    assert later == now
    service.close()


def test_equal_cosines_fall_by_save_order_wherever_the_rows_sit(tmp_path: Path, minilm: Embedder) -> None:
    service, principal = _open(tmp_path / "memory.db", minilm)
    doomed = service.save(principal, TAG, "Lunch is served at noon", created_at=now_s() - 9 * SECONDS_PER_DAY)
    same = "The deploy key for staging rotates every 90 days"
    when = now_s() - 5 * SECONDS_PER_DAY
    first = service.save(principal, TAG, same, custom_id="first", created_at=when)
    second = service.save(principal, TAG, same, custom_id="second", created_at=when)
    for filler in ("Cats sleep most of the day", "The quarterly report is due in March"):
        service.save(principal, TAG, filler, created_at=when)
    # forgetting the first row moves the last one into its place: matrix order is no longer save order
    service.forget(principal, TAG, memory_id=doomed.id)
    query = "how often is the credential replaced"  # no word in common: meaning alone finds them
    hits = service.search(principal, TAG, query, limit=3)
    assert [h.memory.id for h in hits[:2]] == [first.id, second.id]
    assert hits[0].matched_by == ("vector",) and hits[0].similarity == hits[1].similarity
    # a second service over the same file loads the rows in save order: the very same answer
    reopened = open_memories(tmp_path / "memory.db", minilm)
    assert _hits(reopened, principal, query) == _hits(service, principal, query)
    reopened.close()
    service.close()


def test_ordered_breaks_ties_by_newer_then_save_order_never_by_id_or_arrival() -> None:
    scores = {"zz": 0.5, "aa": 0.5, "mm": 0.5, "bb": 0.9, "cc": 0.5}
    updated = {"zz": 100.0, "aa": 100.0, "mm": 100.0, "bb": 1.0, "cc": 200.0}
    position = {"zz": (0, 1), "aa": (0, 7), "mm": (1, 0), "bb": (0, 9), "cc": (0, 8)}
    expected = ["bb", "cc", "zz", "aa", "mm"]  # score, then newer, then tag and save order
    assert ranking.ordered(scores, updated, position) == expected
    shuffled = {key: scores[key] for key in ("mm", "cc", "aa", "bb", "zz")}
    assert ranking.ordered(shuffled, updated, position) == expected


def test_ages_count_back_from_the_newest_candidate_not_the_clock() -> None:
    day = SECONDS_PER_DAY
    assert ranking.ages_days([10 * day, 40 * day, 25 * day]) == [30.0, 0.0, 15.0]
    # shifting every timestamp (asking later, or in a door whose clock differs) changes nothing
    assert ranking.ages_days([1e9 + 10 * day, 1e9 + 40 * day]) == ranking.ages_days([10 * day, 40 * day])
    assert ranking.ages_days([]) == []


def test_feedback_weighs_words_by_live_memories_only() -> None:
    """An index that forgot a memory and one built without it choose the same feedback words."""
    texts = {"d1": "deploy alpha beta", "d2": "deploy beta alpha", "x": "alpha gamma"}
    forgot = keyword.KeywordIndex.build((i, t, None, 0.0) for i, t in texts.items())
    forgot.remove("x")
    fresh = keyword.KeywordIndex.build((i, t, None, 0.0) for i, t in texts.items() if i != "x")
    terms = keyword.query_terms("deploy")
    chosen = keyword.feedback_terms([forgot], ["d1", "d2"], terms)
    assert chosen == keyword.feedback_terms([fresh], ["d1", "d2"], terms) == [("alpha",), ("beta",)]

"""The memory service: what the door does with memories, over any `Store`, as the one object the
HTTP layer (`door/api/`), the extraction worker (`jobs.py`) and the CLI hold; none of them calls a
concrete store.

`MemoryService` is a facade: each method hands the request to the part of `door/service/` whose one
job it is (spaces and scopes, search, profile, writes, pins, stored exchanges, import and export,
the experience log, the job queue, the indexes' warm-up and snapshots, the operator's view of the
store). The parts share one
`service.writer.IndexedWriter`, which keeps the in-memory indexes in step with every write and says
how they stay consistent with the store and with other doors.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal

from bli_memory.door import ranking
from bli_memory.door.indexes import Indexes, IndexLimits
from bli_memory.door.model import Hit, Job, JobOutcome, Memory, Principal, SaveResult
from bli_memory.door.service.candidates import Candidates
from bli_memory.door.service.experience import ExperienceLog
from bli_memory.door.service.job_queue import JobQueue
from bli_memory.door.service.lifecycle import WARM_GRAPH_WAIT_S, IndexLifecycle
from bli_memory.door.service.operations import Operations
from bli_memory.door.service.pins import Pins
from bli_memory.door.service.profile import Profile, Profiles
from bli_memory.door.service.search import Searcher
from bli_memory.door.service.spaces import AliasResult, Scope, Spaces
from bli_memory.door.service.stored_exchanges import RETENTION_BATCH, StoredExchanges
from bli_memory.door.service.transfer import ImportRow, Transfer
from bli_memory.door.service.writer import BACKFILL_BATCH, IndexedWriter
from bli_memory.door.service.writes import MemoryWrites
from bli_memory.door.store.roles import Store

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

    from bli_memory.door.embed import Embedder, Kind
    from bli_memory.door.relevance import Calibration
    from bli_memory.door.rewrite import QuestionRewriter


class MemoryService:
    """Memories over `store`, embedded with `embedder` (None or dimension 0: keyword and recency).

    With `index_folder`, the indexes of big spaces are written there when the service closes and read
    back by the next one instead of being built (`indexes.Snapshots`)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None = None,
        index_folder: Path | None = None,
        index_limits: IndexLimits | None = None,
        own_calibrations: Mapping[str, Calibration] | None = None,
    ) -> None:
        self.store = store
        self.writer = IndexedWriter(store, embedder, index_folder, index_limits)
        self.spaces = Spaces(self.writer)
        self.candidates = Candidates(self.writer)
        self.lifecycle = IndexLifecycle(self.writer, self.candidates)
        self.searcher = Searcher(self.writer, self.spaces, self.candidates, own_calibrations)
        self.profiles = Profiles(store, self.spaces, self.searcher)
        self.stored = StoredExchanges(self.writer, self.spaces, self.candidates)
        self.pinning = Pins(self.writer, self.spaces)
        self.writes = MemoryWrites(self.writer, self.spaces, self.pinning, self.stored, self.searcher)
        self.transfer = Transfer(self.writer, self.spaces)
        self.experience = ExperienceLog(store)
        self.queue = JobQueue(store, self.spaces)
        self.operations = Operations(store)

    # ------------------------------------------------------------------ the shared state

    @property
    def embedder(self) -> Embedder | None:
        return self.writer.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder | None) -> None:
        self.writer.embedder = embedder

    @property
    def indexes(self) -> Indexes:
        return self.writer.indexes

    @property
    def needs_backfill(self) -> bool:
        """Whether rows may lack a vector of this embedder (the door's worker then backfills them)."""
        return self.writer.needs_backfill

    @property
    def embedder_error(self) -> str | None:
        """The embedder's last failure, if the last attempt failed."""
        return self.writer.embedder_error

    def transaction(self) -> AbstractContextManager[None]:
        """One store transaction with the indexes kept in step (`IndexedWriter.transaction`)."""
        return self.writer.transaction()

    def prefetch(self, texts: list[tuple[str, Kind]]) -> None:
        """Embed these (text, kind) now, before a transaction that will ask (`IndexedWriter.prefetch`)."""
        self.writer.prefetch(texts)

    def backfill_vectors(self, batch: int = BACKFILL_BATCH) -> int:
        return self.writer.backfill_vectors(batch)

    def authenticate(self, token: str) -> Principal | None:
        return self.store.authenticate(token)

    # ------------------------------------------------------------------ warm-up, snapshots, close

    def warm(self, *, wait_for_graphs: bool = True) -> int:
        return self.lifecycle.warm(wait_for_graphs=wait_for_graphs)

    def close(self) -> None:
        self.lifecycle.close()

    def write_built_snapshots(self) -> tuple[int, float]:
        return self.lifecycle.write_built_snapshots()

    def write_built_graphs(self, timeout_s: float = WARM_GRAPH_WAIT_S) -> tuple[int, float]:
        return self.lifecycle.write_built_graphs(timeout_s)

    @property
    def graphs_waiting(self) -> bool:
        return self.lifecycle.graphs_waiting

    # ------------------------------------------------------------------ spaces and scopes

    def canonical_tag(self, principal: Principal, tag: str) -> str:
        return self.spaces.canonical_tag(principal, tag)

    def space_tags(self, principal: Principal, tag: str) -> list[str]:
        return self.spaces.space_tags(principal, tag)

    def set_alias(self, principal: Principal, alias: str, canonical: str) -> AliasResult:
        return self.spaces.set_alias(principal, alias, canonical)

    def global_tag(self, principal: Principal) -> str:
        return self.spaces.global_tag(principal)

    def visible(self, principal: Principal, memory: Memory) -> bool:
        return self.spaces.visible(principal, memory)

    def scope_of(self, principal: Principal, memory: Memory) -> Literal["project", "global"]:
        return self.spaces.scope_of(principal, memory)

    def scope_tags(self, principal: Principal, tag: str, scope: str) -> list[str]:
        return self.spaces.scope_tags(principal, tag, scope)

    def write_tag(self, principal: Principal, tag: str, scope: str) -> str:
        return self.spaces.write_tag(principal, tag, scope)

    # ------------------------------------------------------------------ reading

    def get(self, principal: Principal, memory_id: str) -> Memory:
        return self.spaces.get(principal, memory_id)

    def history(self, principal: Principal, memory_id: str) -> list[Memory]:
        return self.spaces.history(principal, memory_id)

    def count_current(self, principal: Principal, tag: str) -> int:
        return self.spaces.count_current(principal, tag)

    def search(
        self,
        principal: Principal,
        tag: str,
        q: str,
        *,
        limit: int = 5,
        threshold: float = 0.0,
        context: bool = True,
        weights: ranking.Weights = ranking.DEFAULT_WEIGHTS,
        scope: Scope = "project",
    ) -> list[Hit]:
        return self.searcher.search(
            principal, tag, q, limit=limit, threshold=threshold, context=context, weights=weights, scope=scope
        )

    def search_answer(
        self,
        principal: Principal,
        tag: str,
        q: str,
        *,
        limit: int,
        threshold: float,
        scope: Scope,
        rewriter: QuestionRewriter | None,
        rewrite_budget_s: float | None,
        keep_relevant: bool = False,
    ) -> tuple[list[Hit], str | None, float | None]:
        return self.searcher.search_answer(
            principal,
            tag,
            q,
            limit=limit,
            threshold=threshold,
            scope=scope,
            rewriter=rewriter,
            rewrite_budget_s=rewrite_budget_s,
            keep_relevant=keep_relevant,
        )

    def recall_floor(self) -> float | None:
        """The relevance at which the prompt hook shows a row, for this door's embedder."""
        return self.searcher.floor()

    def profile(self, principal: Principal, tag: str, q: str | None = None) -> Profile:
        return self.profiles.profile(principal, tag, q)

    # ------------------------------------------------------------------ writing

    def save(
        self,
        principal: Principal,
        tag: str,
        content: str,
        *,
        custom_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        created_at: float | None = None,
        kind: str = "memory",
    ) -> SaveResult:
        return self.writes.save(
            principal, tag, content, custom_id=custom_id, metadata=metadata, created_at=created_at, kind=kind
        )

    def save_many(
        self,
        principal: Principal,
        tag: str,
        contents: Sequence[str],
        *,
        created_at: float | None = None,
        vectors: np.ndarray | None = None,
    ) -> list[str]:
        return self.writes.save_many(principal, tag, contents, created_at=created_at, vectors=vectors)

    def update(
        self, principal: Principal, memory_id: str, content: str, *, metadata: dict[str, Any] | None = None
    ) -> Memory:
        return self.writes.update(principal, memory_id, content, metadata=metadata)

    def forget(
        self,
        principal: Principal,
        tag: str,
        *,
        memory_id: str | None = None,
        content: str | None = None,
        query: str | None = None,
        scope: Scope = "project",
    ) -> tuple[Memory, str, float | None]:
        return self.writes.forget(
            principal, tag, memory_id=memory_id, content=content, query=query, scope=scope
        )

    # ------------------------------------------------------------------ pins

    def pin(
        self,
        principal: Principal,
        tag: str,
        content: str,
        *,
        scope: Scope = "project",
        metadata: dict[str, Any] | None = None,
    ) -> SaveResult:
        return self.pinning.pin(principal, tag, content, scope=scope, metadata=metadata)

    def pins(self, principal: Principal, tag: str) -> list[Memory]:
        return self.pinning.pins(principal, tag)

    def unpin(self, principal: Principal, memory_id: str) -> Memory:
        return self.pinning.unpin(principal, memory_id)

    # ------------------------------------------------------------------ export and import

    def export_page(
        self, principal: Principal, tag: str | None, after: str | None, limit: int
    ) -> tuple[list[Memory], list[str] | None]:
        return self.transfer.export_page(principal, tag, after, limit)

    def import_rows(self, principal: Principal, rows: Sequence[ImportRow]) -> list[tuple[str, str | None]]:
        return self.transfer.import_rows(principal, rows)

    # ------------------------------------------------------------------ stored exchanges

    def exchange_vector(self, principal: Principal, tag: str, content: str) -> np.ndarray | None:
        return self.stored.exchange_vector(principal, tag, content)

    def exchange_is_loose(self, principal: Principal, tag: str, content: str) -> bool:
        return self.stored.is_loose(principal, tag, content)

    def save_exchange(
        self,
        principal: Principal,
        tag: str,
        content: str,
        *,
        metadata: dict[str, Any],
        created_at: float,
        vector: np.ndarray | None = None,
    ) -> tuple[str, bool]:
        return self.stored.save_exchange(
            principal, tag, content, metadata=metadata, created_at=created_at, vector=vector
        )

    def expire_exchanges(self, before: float, batch: int = RETENTION_BATCH) -> int:
        return self.stored.expire_exchanges(before, batch)

    # ------------------------------------------------------------------ extraction jobs

    def enqueue_job(
        self, principal: Principal, tag: str, content: str, metadata: dict[str, Any] | None
    ) -> tuple[str, str]:
        return self.queue.enqueue_job(principal, tag, content, metadata)

    def get_job(self, principal: Principal, job_id: str) -> Job:
        return self.queue.get_job(principal, job_id)

    def claim_job(self, after_device: str | None = None) -> Job | None:
        return self.queue.claim_job(after_device)

    def requeue_interrupted_jobs(self, max_attempts: int) -> int:
        return self.queue.requeue_interrupted_jobs(max_attempts)

    def job_may_write(self, job: Job) -> bool:
        return self.queue.job_may_write(job)

    def principal_for_job(self, job: Job) -> Principal:
        return self.queue.principal_for_job(job)

    def keep_job_progress(self, job_id: str, progress: dict[str, Any]) -> None:
        self.queue.keep_job_progress(job_id, progress)

    def finish_job(
        self,
        principal: Principal,
        job: Job,
        fact_roots: list[str],
        vector: np.ndarray | None,
        outcome: JobOutcome,
        started_s: float,
    ) -> bool:
        """Keep the job's exchange and mark it done, in one transaction (`StoredExchanges.finish_job`)."""
        return self.stored.finish_job(principal, job, fact_roots, vector, outcome, started_s)

    def fail_job(self, job_id: str, error: str, *, retry: bool) -> None:
        self.queue.fail_job(job_id, error, retry=retry)

    def prune_hook_stats(self, before_hour: str, limit: int) -> int:
        return self.queue.prune_hook_stats(before_hour, limit)

    def is_damage(self, exc: BaseException) -> bool:
        return self.queue.is_damage(exc)

    # ------------------------------------------------------------------ experience log

    def record_experience(
        self,
        principal: Principal,
        *,
        entry_id: str,
        store: str,
        verdict: str,
        reason: str,
        created_at: float | None,
    ) -> Literal["inserted", "identical"]:
        return self.experience.record_experience(
            principal, entry_id=entry_id, store=store, verdict=verdict, reason=reason, created_at=created_at
        )

    def experience_rows(
        self, principal: Principal, since: float, *, page_rows: int = 1000, cap_rows: int = 50_000
    ) -> tuple[list[dict[str, Any]], int]:
        return self.experience.experience_rows(principal, since, page_rows=page_rows, cap_rows=cap_rows)


def write_snapshots_saying(what: str, write: Callable[[], tuple[int, float]], log: Any) -> None:
    """Run `write` (`MemoryService.write_built_snapshots` or `write_built_graphs`: how many snapshots,
    and the seconds searches waited) and say on `log` what it wrote, in the one line the door's start
    and its worker both print. What `write` raises is the caller's (the start prints one line and
    serves on; the worker's loop pauses and retries, or stops on a damaged file)."""
    started = time.monotonic()
    written, held_s = write()
    if written:
        log.write(
            f"bli-memory-door wrote {written} {what} in {time.monotonic() - started:.1f} s"
            f" (searches waited {held_s:.1f} s of it)\n"
        )
        log.flush()

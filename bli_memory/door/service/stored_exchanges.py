"""Stored exchanges as rows: keeping an exchange beside the facts an extraction job distilled from
it, cutting a forgotten or superseded fact's sentence out of the exchanges that say it, and the
retention sweep. The text rules (keys, links, the cut itself) are `door/exchanges.py`'s; this part
writes what they decide, through the writer.

Separate so that everything a stored exchange goes through in the door (a job keeping it, a forget
or a correction cutting it, its retention) reads in one place.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bli_memory.door import exchanges, keyword
from bli_memory.door.exchanges import is_stored_exchange
from bli_memory.door.librarian.anchors import loose_exchange
from bli_memory.door.model import Job, JobOutcome, Memory, Principal
from bli_memory.door.service.candidates import Candidates
from bli_memory.door.service.spaces import Spaces
from bli_memory.door.service.writer import IndexedWriter

if TYPE_CHECKING:
    import numpy as np

#: stored exchanges tombstoned per transaction by the retention sweep (searches run between batches).
RETENTION_BATCH = 200
#: the newest rows of a space an exchange being saved is compared with (``anchors.loose_exchange``):
#: a project's standing parts come up again within its last few dozen exchanges.
LOOSE_READ_COUNT = 200


class StoredExchanges:
    """The stored exchanges of the spaces `spaces` names, written through `writer`."""

    def __init__(self, writer: IndexedWriter, spaces: Spaces, candidates: Candidates) -> None:
        self.writer = writer
        self.store = writer.store
        self.spaces = spaces
        self.candidates = candidates

    # ------------------------------------------------------------------ keeping one

    def exchange_vector(self, principal: Principal, tag: str, content: str) -> np.ndarray | None:
        """The vector a new stored exchange of `content` gets; None when the space keeps it already,
        or without an embedder. The job computes it before its transaction: embedding a whole
        exchange takes tens of milliseconds (hundreds on a busy machine), and searches wait for
        the transaction's lock."""
        tags = self.spaces.space_tags(principal, tag)
        if (
            self.store.current_by_custom_id(principal.team_id, tags, exchanges.exchange_key(content))
            is not None
        ):
            return None
        vectors = self.writer.embed([content], "passage")
        return None if vectors is None else vectors[0]

    def is_loose(self, principal: Principal, tag: str, content: str) -> bool:
        """Whether the exchange `content` is about none of the parts of the space of `tag`
        (``librarian.anchors.loose_exchange``), judged against the space's LOOSE_READ_COUNT newest
        rows: a general question answered from general knowledge, whose facts would read like the
        project's rules. The job keeps such an exchange and distils nothing from it."""
        key = exchanges.exchange_key(content)
        rows = self.store.recent(principal.team_id, self.spaces.space_tags(principal, tag), LOOSE_READ_COUNT)
        earlier = [(exchanges.source_of(row), row.content) for row in rows]
        return loose_exchange(content, [(source, text) for source, text in earlier if source != key])

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
        """Keep an exchange as a document of the space (`door/exchanges.py`): (its id, created).

        The same text already kept (its exchange key is current in the space) is not kept twice.
        Without `vector` (from `exchange_vector`) the worker's backfill embeds it later."""
        tags = self.spaces.space_tags(principal, tag)
        key = exchanges.exchange_key(content)
        with self.writer.transaction():
            existing = self.store.current_by_custom_id(principal.team_id, tags, key)
            if existing is not None:
                return existing.id, False
            memory_id = self.writer.insert(
                principal,
                tag=tags[0],
                content=content,
                vector=vector,
                custom_id=key,
                metadata=metadata,
                created_at=created_at,
                kind="document",
            )
        if vector is None:
            self.writer.left_to_backfill()
        return memory_id, True

    def finish_job(
        self,
        principal: Principal,
        job: Job,
        fact_roots: list[str],
        vector: np.ndarray | None,
        outcome: JobOutcome,
        started_s: float,
    ) -> bool:
        """The last step of an extraction job, in one transaction: keep its exchange (linked to the
        facts it gave, `fact_roots`; `vector` from `exchange_vector`) and mark the job done with
        `outcome`, whose reconcile time counts from `started_s` (`time.perf_counter`). False, with
        nothing written, when the job may no longer write (its device revoked)."""
        with self.writer.transaction():
            if not self.store.job_may_write(job):
                return False
            self.save_exchange(
                principal,
                job.container_tag,
                job.content,
                metadata=exchanges.document_metadata(job.metadata, job.id, fact_roots),
                created_at=job.created_at,
                vector=vector,
            )
            outcome.reconcile_ms = round((time.perf_counter() - started_s) * 1000)  # this run's
            self.store.finish_job(job.id, outcome.to_json())
        return True

    def expire_exchanges(self, before: float, batch: int = RETENTION_BATCH) -> int:
        """Tombstone up to `batch` stored exchanges created before `before` (their facts stay); how
        many. The door's worker calls it until it returns less than `batch`."""
        with self.writer.transaction():
            expired = self.store.expired_documents(exchanges.EXCHANGE_KEY_PREFIX, before, batch)
            for team_id, memory in expired:
                self.writer.retire_in(team_id, memory, "forgotten")
        return len(expired)

    # ------------------------------------------------------------------ cutting a fact out

    def forget_in_exchange(self, principal: Principal, fact: Memory) -> None:
        """After `fact` is forgotten, its text must not stay searchable through the exchange it came
        from (call inside `transaction()`; see `cut_from_exchange`), nor through any other stored
        exchange of its space that says it word for word (`cut_from_other_exchanges`)."""
        self.cut_from_exchange(principal, fact)
        self.cut_from_other_exchanges(principal, fact)

    def cut_from_other_exchanges(
        self, principal: Principal, memory: Memory, *, unless: str | None = None
    ) -> None:
        """Take `memory`'s sentence out of the stored exchanges of its space, other than the one it
        came from (`cut_from_exchange` handles that one), that say it word for word: the same
        decision said again in a later session, a fact the user saved by hand and also said. Each
        gets a new version without the sentence (its facts unchanged), or is tombstoned when nothing
        else is left. Only a verbatim sentence is cut: an exchange that merely shares words with it is
        the record of something else. `unless`: an exchange that also says this text is left as it is
        (a correction's new value). The candidates are the keyword channel's for the sentence (its
        best `ranking.KEYWORD_CANDIDATES` rows: an exchange saying it holds every one of its words).
        Call inside `transaction()`."""
        if is_stored_exchange(memory) or not exchanges.has_words(memory.content):
            return
        own = exchanges.exchange_of(memory.metadata)
        tags = self.spaces.space_tags(principal, memory.container_tag)
        terms = keyword.query_terms(memory.content)
        candidates = self.candidates.keyword_candidates(principal.team_id, tags, terms)
        rows = self.store.current_by_ids(principal.team_id, candidates)
        for memory_id in candidates:
            document = rows.get(memory_id)
            if document is None or not is_stored_exchange(document) or document.custom_id in (own, None):
                continue
            if unless is not None and exchanges.cut_fact(document.content, unless) is not None:
                continue
            remaining = exchanges.cut_fact(document.content, memory.content)
            if remaining is None:
                continue
            if exchanges.has_words(remaining):
                self._rewrite_exchange(principal, document, remaining, dict(document.metadata or {}), None)
            else:
                self.writer.retire(principal, document, "forgotten")

    def supersede_in_exchange(
        self, principal: Principal, old: Memory, new_content: str, vectors: Mapping[str, np.ndarray]
    ) -> str | None:
        """After `old` is superseded by `new_content`, its stale text must not stay searchable through
        the exchange it came from: cut as a forget does, unless that exchange holds the new text too
        (then it still says what is true). `vectors`: the cut text's vector, computed before the
        transaction. The key of the exchange cut or tombstoned, else None (call inside `transaction()`)."""
        return self.cut_from_exchange(principal, old, unless=new_content, vectors=vectors, only_verbatim=True)

    def exchange_cut(
        self, principal: Principal, fact: Memory, unless: str | None, only_verbatim: bool = False
    ) -> tuple[Memory, str | None] | None:
        """The stored exchange `fact` names and its text without the fact's sentence (None: the
        sentence is not in it word for word, or nothing else is left, so it is to be tombstoned); None
        when there is nothing to cut: no such current exchange, or it holds `unless`, or
        (`only_verbatim`) the sentence is not in it word for word.

        A forget tombstones an exchange it cannot cut: the person asked for that text to be gone, and
        a fact the librarian reworded may still be said there in other words. A correction cuts only
        a sentence it finds: the exchange is the record of what was said, and dropping all of it for
        one reworded value would lose every other thing it holds (measured: a whole tracer-cli
        exchange, and the only answer to a question about it)."""
        key = exchanges.exchange_of(fact.metadata)
        if key is None or fact.kind != "memory":
            return None
        tags = self.spaces.space_tags(principal, fact.container_tag)
        document = self.store.current_by_custom_id(principal.team_id, tags, key)
        if document is None or (
            unless is not None and exchanges.cut_fact(document.content, unless) is not None
        ):
            return None
        remaining = exchanges.cut_fact(document.content, fact.content)
        if remaining is None and only_verbatim:
            return None
        return document, remaining if remaining is not None and exchanges.has_words(remaining) else None

    def cut_from_exchange(
        self,
        principal: Principal,
        fact: Memory,
        unless: str | None = None,
        vectors: Mapping[str, np.ndarray] | None = None,
        only_verbatim: bool = False,
    ) -> str | None:
        """Take `fact`'s sentence out of the stored exchange it names (`exchange_cut`): the exchange
        gets a new version without it and without the fact in its `facts` (the old one stays as
        history, which no search reads, like every superseded version), or is tombstoned. Its vector
        comes from `vectors` (by text) or else the worker's backfill. The exchange's key when it was
        cut or tombstoned, else None (call inside `transaction()`)."""
        planned = self.exchange_cut(principal, fact, unless, only_verbatim)
        if planned is None:
            return None
        document, remaining = planned
        if remaining is None:
            self.writer.retire(principal, document, "forgotten")
            return document.custom_id
        metadata = dict(document.metadata or {})
        metadata[exchanges.EXCHANGE_FACTS_FIELD] = [
            root for root in exchanges.facts_of(document.metadata) if root != fact.root_id
        ]
        self._rewrite_exchange(principal, document, remaining, metadata, (vectors or {}).get(remaining))
        return document.custom_id

    def _rewrite_exchange(
        self,
        principal: Principal,
        document: Memory,
        remaining: str,
        metadata: dict[str, Any],
        vector: np.ndarray | None,
    ) -> None:
        """A new version of a stored exchange holding `remaining` (the old one stays as history). Its
        vector is `vector`, else the worker's backfill embeds it: a forget does not wait for a whole
        exchange's embedding (call inside `transaction()`)."""
        self.writer.retire(principal, document, "superseded")
        self.writer.insert(
            principal,
            tag=document.container_tag,
            content=remaining,
            vector=vector,
            custom_id=document.custom_id,
            metadata=metadata,
            created_at=document.created_at,
            previous=document,
        )
        if vector is None:
            self.writer.left_to_backfill()

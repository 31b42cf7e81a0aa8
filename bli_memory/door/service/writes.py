"""Saving, correcting and forgetting memories: the checks each write makes (a repeated save, a
customId's new version, the row a forget means) and what it takes with it (a fact's sentence out of
its stored exchanges).

Separate from search and from the writer: it decides what to write; the writer writes it and keeps
the indexes in step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bli_memory.door import exchanges
from bli_memory.door.errors import Conflict, NoMatch, NotFound
from bli_memory.door.model import (
    Memory,
    Principal,
    SaveResult,
    hash_text,
    is_pinned_metadata,
)
from bli_memory.door.service.pins import Pins
from bli_memory.door.service.search import Searcher
from bli_memory.door.service.spaces import Scope, Spaces
from bli_memory.door.service.stored_exchanges import StoredExchanges
from bli_memory.door.service.writer import IndexedWriter
from bli_memory.wire.contract import FORGET_CLOSEST_MIN_SIMILARITY

if TYPE_CHECKING:
    import numpy as np


class MemoryWrites:
    """Saves, updates and forgets in the spaces `spaces` names, written through `writer`."""

    def __init__(
        self,
        writer: IndexedWriter,
        spaces: Spaces,
        pins: Pins,
        stored: StoredExchanges,
        searcher: Searcher,
    ) -> None:
        self.writer = writer
        self.store = writer.store
        self.spaces = spaces
        self.pins = pins
        self.stored = stored
        self.searcher = searcher

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
        """Save `content` in the space of `tag` (its canonical tag).

        With `custom_id`, the current memory carrying it is replaced by a new
        version (`updated`) unless the text is the same (`unchanged`). Without
        it, an exact duplicate of a current memory in the space is `unchanged`. A save whose metadata
        says `pinned: true` is a pin (`pin`).
        """
        if is_pinned_metadata(metadata) and custom_id is None:
            return self.pins.pin(principal, tag, content, metadata=metadata)
        tags = self.spaces.space_tags(principal, tag)
        canonical = tags[0]
        already = self._unchanged(principal, tags, content, custom_id, metadata)
        if already is not None:  # a repeated save (a re-run import, a retried hook) costs no embedding
            return already
        vectors = self.writer.embed([content], "passage")
        vector = None if vectors is None else vectors[0]
        when = self.writer.now() if created_at is None else created_at
        with self.writer.transaction():  # checked again: another request may have saved it meanwhile
            if custom_id is not None:
                existing = self.store.current_by_custom_id(principal.team_id, tags, custom_id)
                if existing is not None:
                    if existing.content == content and (metadata or None) == (existing.metadata or None):
                        return SaveResult(existing.id, existing.container_tag, "unchanged")
                    self.writer.retire(principal, existing, "superseded")
                    new = self.writer.insert(
                        principal,
                        tag=existing.container_tag,
                        content=content,
                        vector=vector,
                        custom_id=custom_id,
                        metadata=metadata,
                        created_at=when,
                        previous=existing,
                    )
                    return SaveResult(new, existing.container_tag, "updated")
            else:
                duplicate = self.store.current_by_hash(principal.team_id, tags, hash_text(content))
                if duplicate is not None and duplicate.content == content:
                    return SaveResult(duplicate.id, duplicate.container_tag, "unchanged")
            new = self.writer.insert(
                principal,
                tag=canonical,
                content=content,
                vector=vector,
                custom_id=custom_id,
                metadata=metadata,
                created_at=when,
                kind=kind,
            )
            return SaveResult(new, canonical, "created")

    def _unchanged(
        self,
        principal: Principal,
        tags: Sequence[str],
        content: str,
        custom_id: str | None,
        metadata: dict[str, Any] | None,
    ) -> SaveResult | None:
        """The `unchanged` answer when this save would change nothing: the memory carrying `custom_id`
        already says `content` with the same metadata, or (without a custom id) the space already holds
        `content` word for word."""
        if custom_id is not None:
            existing = self.store.current_by_custom_id(principal.team_id, tags, custom_id)
            same = existing is not None and existing.content == content
            if existing is not None and same and (metadata or None) == (existing.metadata or None):
                return SaveResult(existing.id, existing.container_tag, "unchanged")
            return None
        duplicate = self.store.current_by_hash(principal.team_id, tags, hash_text(content))
        if duplicate is not None and duplicate.content == content:
            return SaveResult(duplicate.id, duplicate.container_tag, "unchanged")
        return None

    def save_many(
        self,
        principal: Principal,
        tag: str,
        contents: Sequence[str],
        *,
        created_at: float | None = None,
        vectors: np.ndarray | None = None,
    ) -> list[str]:
        """Bulk import: embed in one batch and insert every text in one transaction (no dedupe).

        For imports and benchmarks; the API's `save` is the one-at-a-time path with its checks.
        `vectors`, when given, are this service's embedder's vectors of `contents` computed elsewhere.
        """
        canonical = self.spaces.canonical_tag(principal, tag)
        if vectors is None:
            vectors = self.writer.embed(list(contents), "passage")
        when = self.writer.now() if created_at is None else created_at
        with self.writer.transaction():
            return [
                self.writer.insert(
                    principal,
                    tag=canonical,
                    content=content,
                    vector=None if vectors is None else vectors[i],
                    custom_id=None,
                    metadata=None,
                    created_at=when,
                )
                for i, content in enumerate(contents)
            ]

    def update(
        self, principal: Principal, memory_id: str, content: str, *, metadata: dict[str, Any] | None = None
    ) -> Memory:
        """Replace what a current memory says; the old text stays as a superseded version.

        `metadata`, when given, replaces the memory's (an extraction job names the exchange the new
        text came from); otherwise the new version keeps it."""
        current = self.spaces.get(principal, memory_id)
        if current.status != "current":
            latest = self.store.current_version(principal.team_id, current.root_id)
            hint = f"; its current version is {latest.id!r}" if latest is not None else ""
            raise Conflict(f"memory {memory_id!r} is {current.status}{hint}", code="not_current")
        # the exchange the old text came from, cut, is embedded with the new text before the
        # transaction: a search right after finds the rest of it by meaning too
        planned = self.stored.exchange_cut(principal, current, unless=content, only_verbatim=True)
        texts = [content] if planned is None or planned[1] is None else [content, planned[1]]
        vectors = self.writer.embed(texts, "passage")
        cut_vectors = {} if vectors is None else dict(zip(texts[1:], vectors[1:], strict=True))
        with self.writer.transaction():
            self.writer.retire(principal, current, "superseded")
            kept = current.metadata if metadata is None else metadata
            cut = self.stored.supersede_in_exchange(principal, current, content, cut_vectors)
            self.stored.cut_from_other_exchanges(principal, current, unless=content)
            new = self.writer.insert(
                principal,
                tag=current.container_tag,
                content=content,
                vector=None if vectors is None else vectors[0],
                custom_id=current.custom_id,
                metadata=kept if cut is None else exchanges.unlinked(kept, cut),
                created_at=current.created_at,
                previous=current,
            )
        return self.spaces.get(principal, new)

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
        """Tombstone one memory. Returns (the memory, match kind, similarity for a closest match).

        By id, the memory may be in the space of `tag` or in the caller's global space whatever
        `scope` says; by text or meaning, `scope` names the space looked in. A pin is forgotten only
        by id (its text and meaning are not searched)."""
        tags = self.spaces.scope_tags(principal, tag, scope)
        if memory_id is not None:
            target = self.spaces.get(principal, memory_id)
            if target.container_tag not in self.spaces.scope_tags(principal, tag, "all"):
                raise NotFound(f"no memory {memory_id!r} in this space")
            if target.status != "current":
                raise Conflict(f"memory {memory_id!r} is already {target.status}", code="not_current")
            with self.writer.transaction():
                self.writer.retire(principal, target, "forgotten")
                self.stored.forget_in_exchange(principal, target)
            return target, "id", None
        if content is not None:
            with self.writer.transaction():
                found = self.store.current_by_hash(principal.team_id, tags, hash_text(content))
                if found is None or found.content != content:
                    raise NoMatch("no current memory in this space has exactly that text")
                self.writer.retire(principal, found, "forgotten")
                self.stored.forget_in_exchange(principal, found)
            return found, "exact", None
        assert query is not None
        closest = self.searcher.closest(principal, tags, query)
        if closest is None:
            raise NoMatch("no memory in this space can be compared by meaning (no embedder, or no memories)")
        memory, similarity = closest
        if similarity < FORGET_CLOSEST_MIN_SIMILARITY:
            raise NoMatch(
                f"no memory is close enough to forget (closest similarity {similarity:.2f}, "
                f"needs {FORGET_CLOSEST_MIN_SIMILARITY})"
            )
        with self.writer.transaction():
            self.writer.retire(principal, memory, "forgotten")
            self.stored.forget_in_exchange(principal, memory)
        return memory, "closest", similarity

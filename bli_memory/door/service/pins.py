"""Pins: text kept verbatim in a space or in the caller's global space, loaded at every session
start and read by nothing else (docs/scopes-and-pins.md).

Separate because a pin follows none of a memory's rules: it is not indexed (never a search hit,
never a librarian's neighbour, so never merged, superseded or decayed) and has no vector.
"""

from __future__ import annotations

from typing import Any

from bli_memory.door.errors import Conflict
from bli_memory.door.model import PINNED_FIELD, Memory, Principal, SaveResult
from bli_memory.door.service.spaces import Scope, Spaces
from bli_memory.door.service.writer import IndexedWriter


class Pins:
    """The pins of the spaces `spaces` names, written through `writer`."""

    def __init__(self, writer: IndexedWriter, spaces: Spaces) -> None:
        self.writer = writer
        self.store = writer.store
        self.spaces = spaces

    def pin(
        self,
        principal: Principal,
        tag: str,
        content: str,
        *,
        scope: Scope = "project",
        metadata: dict[str, Any] | None = None,
    ) -> SaveResult:
        """Keep `content` verbatim as a pin of the space of `tag` or of the caller's global space.
        The same text pinned again in that space is `unchanged`."""
        tags = self.spaces.scope_tags(principal, tag, "global" if scope == "global" else "project")
        with self.writer.transaction():
            for existing in self.store.pinned(principal.team_id, tags):
                if existing.content == content:
                    return SaveResult(existing.id, existing.container_tag, "unchanged")
            new = self.writer.insert(
                principal,
                tag=tags[0],
                content=content,
                vector=None,
                custom_id=None,
                metadata={**(metadata or {}), PINNED_FIELD: True},
                created_at=self.writer.now(),
            )
        return SaveResult(new, tags[0], "created")

    def pins(self, principal: Principal, tag: str) -> list[Memory]:
        """Every current pin that applies in the space of `tag`: the space's, then the caller's global
        ones, each oldest first."""
        tags = self.spaces.space_tags(principal, tag)
        return [
            *self.store.pinned(principal.team_id, tags),
            *self.store.pinned(principal.team_id, [self.spaces.global_tag(principal)]),
        ]

    def unpin(self, principal: Principal, memory_id: str) -> Memory:
        """Make a current pin an ordinary memory again: a new version without the flag (the pin stays
        as its history), searched and reconciled like any other from now on. Forget it afterwards
        when it is no longer true. 404 for an unknown or invisible id, 409 for one that is not a
        current pin."""
        current = self.spaces.get(principal, memory_id)
        if current.status != "current":
            raise Conflict(f"memory {memory_id!r} is {current.status}", code="not_current")
        if not current.pinned:
            raise Conflict(f"memory {memory_id!r} is not a pin", code="not_pinned")
        metadata = {key: value for key, value in (current.metadata or {}).items() if key != PINNED_FIELD}
        vectors = self.writer.embed([current.content], "passage")
        with self.writer.transaction():
            self.writer.retire(principal, current, "superseded")
            new = self.writer.insert(
                principal,
                tag=current.container_tag,
                content=current.content,
                vector=None if vectors is None else vectors[0],
                custom_id=current.custom_id,
                metadata=metadata or None,
                created_at=current.created_at,
                previous=current,
            )
        if vectors is None:
            self.writer.left_to_backfill()
        return self.spaces.get(principal, new)

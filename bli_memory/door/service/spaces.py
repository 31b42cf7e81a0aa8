"""Spaces and scopes: which tags name a space, which space a scope reads or writes, and which rows a
caller may see.

Every read and write of the service asks this part first, so it keeps the one cache of the service
that is not an index: the tags of a space (aliases change rarely; every search and save asks).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from bli_memory.door.errors import Forbidden, InvalidRequest, NotFound
from bli_memory.door.indexes import Lru, SpaceKey
from bli_memory.door.model import Memory, Principal, global_tag, is_door_tag
from bli_memory.door.service.writer import IndexedWriter

SPACE_TAGS_TTL_S = 5.0
#: (team, tag) -> tags-of-the-space answers kept for SPACE_TAGS_TTL_S.
SPACE_TAGS_CACHE_MAX = 4096

#: where a search reads (`project`: the request's space; `global`: the caller's global space; `all`:
#: both, one ranking) and where a write lands (`project` or `global`). docs/scopes-and-pins.md.
Scope = Literal["project", "global", "all"]


@dataclass(frozen=True)
class AliasResult:
    alias: str
    canonical: str
    tags: list[str]


class Spaces:
    """The spaces of `writer`'s store as a caller sees them."""

    def __init__(self, writer: IndexedWriter) -> None:
        self.writer = writer
        self.store = writer.store
        self._tags_cache: Lru[SpaceKey, tuple[float, tuple[str, ...]]] = Lru(SPACE_TAGS_CACHE_MAX)
        writer.on_aliases_changed(self._tags_cache.clear)

    def canonical_tag(self, principal: Principal, tag: str) -> str:
        return self.store.canonical_tag(principal.team_id, tag)

    def space_tags(self, principal: Principal, tag: str) -> list[str]:
        """Every tag that names the same space as `tag`, canonical first.

        Cached for SPACE_TAGS_TTL_S (every search and save asks, aliases change rarely): this door's
        own alias changes clear the cache at once, another process's show within the TTL."""
        key = (principal.team_id, tag)
        cached = self._tags_cache.get(key)
        if cached is not None and cached[0] > time.monotonic():
            return list(cached[1])
        canonical = self.store.canonical_tag(principal.team_id, tag)
        aliases = self.store.aliases_of(principal.team_id, canonical)
        tags = [canonical, *(alias for alias in aliases if alias != canonical)]
        self._tags_cache.put(key, (time.monotonic() + SPACE_TAGS_TTL_S, tuple(tags)))
        return tags

    def set_alias(self, principal: Principal, alias: str, canonical: str) -> AliasResult:
        if not principal.admin:
            raise Forbidden("only an admin token may set container aliases")
        if alias == canonical:
            raise InvalidRequest("alias and canonical must differ")
        with self.writer.transaction():
            target = self.store.canonical_tag(principal.team_id, canonical)
            if target != canonical:
                raise InvalidRequest(
                    f"{canonical!r} is itself an alias of {target!r}; name the canonical tag"
                )
            self.store.put_alias(principal.team_id, alias, canonical)
        self._tags_cache.clear()
        return AliasResult(alias, canonical, self.space_tags(principal, canonical))

    # ------------------------------------------------------------------ scopes

    def global_tag(self, principal: Principal) -> str:
        """The caller's global space: derived from the authenticated person, never named by a client."""
        return global_tag(principal.person_id)

    def visible(self, principal: Principal, memory: Memory) -> bool:
        """A row of a reserved tag is visible only when it is the caller's own global space."""
        return self.tag_visible(principal, memory.container_tag)

    def tag_visible(self, principal: Principal, tag: str) -> bool:
        """Whether what a space holds (its rows, a job writing into it) is the caller's to see: a space
        of the team, or the caller's own global space."""
        return not is_door_tag(tag) or tag == self.global_tag(principal)

    def scope_of(self, principal: Principal, memory: Memory) -> Literal["project", "global"]:
        return "global" if memory.container_tag == self.global_tag(principal) else "project"

    def scope_tags(self, principal: Principal, tag: str, scope: str) -> list[str]:
        """The tags a `scope` reads: the space of `tag` (canonical first), the caller's global space,
        or both, the global space last (its rows lose save-order ties to the project's)."""
        if scope == "global":
            return [self.global_tag(principal)]
        tags = self.space_tags(principal, tag)
        return [*tags, self.global_tag(principal)] if scope == "all" else tags

    def write_tag(self, principal: Principal, tag: str, scope: str) -> str:
        """Where a write of `scope` lands: the space of `tag`, or the caller's global space."""
        return self.global_tag(principal) if scope == "global" else tag

    # ------------------------------------------------------------------ rows by id

    def visible_row(self, principal: Principal, memory_id: str) -> Memory | None:
        """The row `memory_id` of the caller's team when the caller may see it, else None."""
        memory = self.store.get(principal.team_id, memory_id)
        return memory if memory is not None and self.visible(principal, memory) else None

    def get(self, principal: Principal, memory_id: str) -> Memory:
        """One row of the caller's team by id; another person's global space is never visible
        (the same 404 as an id that does not exist)."""
        memory = self.visible_row(principal, memory_id)
        if memory is None:
            raise NotFound(f"no memory {memory_id!r}")
        return memory

    def history(self, principal: Principal, memory_id: str) -> list[Memory]:
        root = self.get(principal, memory_id).root_id
        return self.store.versions(principal.team_id, root)

    def count_current(self, principal: Principal, tag: str) -> int:
        return self.store.count_current(principal.team_id, self.space_tags(principal, tag))

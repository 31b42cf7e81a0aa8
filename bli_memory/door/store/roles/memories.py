"""The memory rows role: every version of every memory, the container aliases naming spaces, and the
reads the memory service builds search, browsing and reconciliation on."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, Protocol

from bli_memory.door.model import Memory
from bli_memory.door.store.base import BrowseRow, IndexRow, NewVersion, PurgeCount


class MemoryRowStore(Protocol):
    """Memory rows in, memory rows out: a row is `current`, `superseded` or `forgotten`, never
    updated in place but by `retire`; reads are scoped by team."""

    def canonical_tag(self, team_id: int, tag: str) -> str:
        """The tag `tag` is an alias of, or `tag` itself."""
        ...

    def aliases_of(self, team_id: int, canonical: str) -> list[str]:
        """The tags that are aliases of `canonical`, sorted."""
        ...

    def put_alias(self, team_id: int, alias: str, canonical: str) -> None:
        """Make `alias` name `canonical`; tags that pointed at `alias` now point at `canonical`."""
        ...

    def get(self, team_id: int, memory_id: str) -> Memory | None: ...

    def versions(self, team_id: int, root_id: str) -> list[Memory]:
        """Every version of one memory, oldest first."""
        ...

    def current_version(self, team_id: int, root_id: str) -> Memory | None: ...

    def current_by_custom_id(self, team_id: int, tags: Sequence[str], custom_id: str) -> Memory | None: ...

    def current_by_hash(self, team_id: int, tags: Sequence[str], content_hash: str) -> Memory | None:
        """The newest current unpinned row of the tags with that content hash (and the same for
        `current_by_custom_id`): a pin never stands in for an ordinary memory."""
        ...

    def current_by_ids(self, team_id: int, ids: Sequence[str]) -> dict[str, Memory]:
        """The current rows among `ids`, with the saving person's name."""
        ...

    def updated_at(self, team_id: int, ids: Sequence[str]) -> dict[str, float]:
        """Last-change time of each current memory among `ids`."""
        ...

    def count_current(self, team_id: int, tags: Sequence[str]) -> int:
        """Current unpinned memories of `tags`: what the space's indexes hold (`index_rows`), so a
        snapshot's count is compared with the same count (a pin is never searched nor indexed)."""
        ...

    def pinned(self, team_id: int, tags: Sequence[str]) -> list[Memory]:
        """Current pinned memories, oldest first."""
        ...

    def recent(self, team_id: int, tags: Sequence[str], limit: int) -> list[Memory]:
        """Current unpinned memories, most recently changed first."""
        ...

    def page_current(
        self, team_id: int, tags: Sequence[str], limit: int, before: tuple[float, str] | None
    ) -> list[BrowseRow]:
        """Browsing: up to `limit` current unpinned memories of `tags`, newest first.

        The order is (`updated_at` descending, then `id` descending), a total order over the rows.
        With `before` = (updated_at, id) of the last row of a page, only rows strictly after it in that
        order come back (a keyset, never an offset): a row written meanwhile (newer) or retired
        meanwhile never shifts or repeats what the next page holds. Each row carries the saving
        person's name (`Memory.person`) and the device id that saved it."""
        ...

    def index_rows(self, team_id: int, tag: str) -> Iterable[IndexRow]:
        """Every current unpinned memory of one tag, in save order (pins are never searched;
        `current_vectors` and `vectors_missing` leave them out too)."""
        ...

    def purge(self, team_id: int, tags: Sequence[str] | None, *, dry_run: bool = False) -> PurgeCount:
        """Delete for good (an operator's reset, never an API call) every memory row of the team —
        current, superseded and forgotten, with their vectors — and every extraction job of the team,
        whatever its status; with `tags`, only those whose space tag is one of `tags`. One
        transaction. Devices, people, aliases and experience rows stay. With `dry_run`, counts what
        would go and deletes nothing."""
        ...

    def spaces(self, limit: int, team_id: int | None = None) -> list[tuple[int, str]]:
        """Up to `limit` (team, tag) holding a current memory, most recently changed first, equal
        last changes by team then tag; only team `team_id`'s when given."""
        ...

    def insert_version(self, row: NewVersion) -> str:
        """Insert a memory row as `current`; returns its new id."""
        ...

    def retire(self, memory_id: str, status: Literal["superseded", "forgotten"]) -> bool:
        """Mark a current row superseded or forgotten; False when it is no longer current."""
        ...

    def expired_documents(self, key_prefix: str, before: float, limit: int) -> list[tuple[int, Memory]]:
        """(team id, memory) of up to `limit` current documents of any team whose customId starts with
        `key_prefix` and that were created before `before`, oldest first (the retention sweep)."""
        ...

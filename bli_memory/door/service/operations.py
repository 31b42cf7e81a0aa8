"""What the door says about itself and keeps for its operators: the store's name, version, damage check
and room to write (`/healthz`), the devices' hourly hook figures, the devices and the team's spaces
(the memory page).

Separate because none of it touches a memory, an index or an embedding: it is the store read and
written as the operator's ledger, and the edges reach it here rather than through the store itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bli_memory.door.model import Principal
from bli_memory.door.store.roles import Store
from bli_memory.door.store.roles.core import DamageCheck


class Operations:
    """The operator's view of `store`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @property
    def store_name(self) -> str:
        """Which kind of store serves (`sqlite`, `postgresql`)."""
        return self.store.name

    @property
    def store_version(self) -> str:
        """The store's own version (SQLite's library, the PostgreSQL server's)."""
        return self.store.version

    @property
    def integrity(self) -> DamageCheck | None:
        """The store's check for damage (a SQLite file's), or None where the store has none."""
        return self.store.integrity

    def write_problem(self) -> str | None:
        """Why a write would fail now (a full disk), or None; StoreUnavailable when out of reach."""
        return self.store.write_problem()

    def put_hook_stats(self, principal: Principal, hours: Sequence[tuple[str, str]]) -> int:
        """Keep one device's checked hourly hook figures; how many hours were written."""
        return self.store.put_hook_stats(principal, hours)

    def hook_stats_since(self, team_id: int, since_hour: str) -> list[tuple[str, str, str]]:
        """Every device's hourly hook figures of the team from `since_hour` on."""
        return self.store.hook_stats_since(team_id, since_hour)

    def devices(self) -> list[dict[str, Any]]:
        """Every device the store knows, revoked ones included."""
        return self.store.list_devices()

    def team_spaces(self, team_id: int, limit: int) -> list[str]:
        """The tags of the team's spaces that hold current memories, most recently changed first."""
        return [tag for _, tag in self.store.spaces(limit, team_id)]

"""The operations rows role: the experience log (the agents' opinions of the door's answers) and the
devices' hourly hook figures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from bli_memory.door.model import Principal

#: what recording an opinion did: stored it, found the same one stored (a retry), or found another
#: under its id
ExperienceOutcome = Literal["inserted", "identical", "conflict"]


class OpsRowStore(Protocol):
    """Rows the door keeps about its own use, read back by team."""

    def record_experience(
        self,
        principal: Principal,
        *,
        entry_id: str,
        store: str,
        verdict: str,
        reason: str,
        created_at: float | None,
    ) -> ExperienceOutcome:
        """Insert one opinion, or say an identical one (`identical`) or a different one
        (`conflict`) already has that id."""
        ...

    def experience_count(self, team_id: int, since: float) -> int: ...

    def experience_page(
        self, team_id: int, since: float, after: tuple[float, str], limit: int
    ) -> list[dict[str, Any]]:
        """Up to `limit` rows created at or after `since` and after `after` in (created_at, id) order."""
        ...

    def put_hook_stats(self, principal: Principal, hours: Sequence[tuple[str, str]]) -> int:
        """Keep the caller's device's hourly hook figures: each `(hour, counts)` pair (`hour` as
        `YYYY-MM-DDTHH` in UTC, `counts` a JSON text) replaces whatever that device sent for that hour
        before, so a re-send changes nothing. One transaction; returns how many hours were written."""
        ...

    def hook_stats_since(self, team_id: int, since_hour: str) -> list[tuple[str, str, str]]:
        """The team's hourly hook figures of `since_hour` (`YYYY-MM-DDTHH`) and later, as
        `(device_id, hour, counts JSON text)` in (hour, device_id) order; never another team's."""
        ...

    def prune_hook_stats(self, before_hour: str, limit: int) -> int:
        """Delete up to `limit` hourly hook figures, of any team, of hours before `before_hour`
        (`YYYY-MM-DDTHH`); how many. One transaction; the caller repeats until it gets less than `limit`."""
        ...

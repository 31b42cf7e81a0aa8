"""The SQLite store's operations rows role (`roles/ops.py`): the experience log and the hourly hook figures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bli_memory.door.model import Principal, now_s
from bli_memory.door.store.base import (
    EXPERIENCE_PAGE_SQL,
    INSERT_EXPERIENCE_SQL,
    PUT_HOOK_STATS_SQL,
    experience_values,
    hook_stats_values,
    in_dialect,
    same_experience,
)
from bli_memory.door.store.roles.ops import ExperienceOutcome, OpsRowStore
from bli_memory.door.store.sqlite.connection import (
    SqliteConnection,
)

_PUT_HOOK_STATS = in_dialect(PUT_HOOK_STATS_SQL, "?")
_INSERT_EXPERIENCE = in_dialect(INSERT_EXPERIENCE_SQL, "?")
_EXPERIENCE_PAGE = in_dialect(EXPERIENCE_PAGE_SQL, "?")


class SqliteOps(SqliteConnection, OpsRowStore):
    """The experience log and the hourly hook figures."""

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
        """Without `created_at` the door's clock stamps the row, and a retry is identical when the
        rest is."""
        with self.transaction():
            existing = self._db.execute(
                "SELECT * FROM experience WHERE team_id = ? AND id = ?", (principal.team_id, entry_id)
            ).fetchone()
            if existing is not None:
                same = same_experience(existing, principal, store, verdict, reason, created_at)
                return "identical" if same else "conflict"
            self._db.execute(
                _INSERT_EXPERIENCE,
                experience_values(principal, entry_id, store, verdict, reason, created_at, now_s()),
            )
        return "inserted"

    def experience_count(self, team_id: int, since: float) -> int:
        with self._read():
            return int(
                self._db.execute(
                    "SELECT count(*) FROM experience WHERE team_id = ? AND created_at >= ?", (team_id, since)
                ).fetchone()[0]
            )

    def experience_page(
        self, team_id: int, since: float, after: tuple[float, str], limit: int
    ) -> list[dict[str, Any]]:
        with self._read():
            page = self._db.execute(_EXPERIENCE_PAGE, (team_id, after[0], after[1], since, limit)).fetchall()
        return [dict(row) for row in page]

    def put_hook_stats(self, principal: Principal, hours: Sequence[tuple[str, str]]) -> int:
        received = now_s()
        with self.transaction():
            self._db.executemany(_PUT_HOOK_STATS, hook_stats_values(principal, hours, received))
        return len(hours)

    def hook_stats_since(self, team_id: int, since_hour: str) -> list[tuple[str, str, str]]:
        with self._read():
            rows = self._db.execute(
                """SELECT device_id, hour, counts FROM hook_stats WHERE team_id = ? AND hour >= ?
                   ORDER BY hour, device_id""",
                (team_id, since_hour),
            ).fetchall()
        return [(row[0], row[1], row[2]) for row in rows]

    def prune_hook_stats(self, before_hour: str, limit: int) -> int:
        with self.transaction():
            return self._db.execute(
                """DELETE FROM hook_stats WHERE rowid IN
                   (SELECT rowid FROM hook_stats WHERE hour < ? LIMIT ?)""",
                (before_hour, limit),
            ).rowcount

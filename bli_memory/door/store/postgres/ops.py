"""The PostgreSQL store's operations rows role (`roles/ops.py`): the experience log and the hourly hook
figures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import psycopg

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
from bli_memory.door.store.postgres.connection import (
    PostgresConnection,
)
from bli_memory.door.store.roles.ops import ExperienceOutcome, OpsRowStore

if TYPE_CHECKING:
    Connection = psycopg.Connection[dict[str, Any]]


_PUT_HOOK_STATS = in_dialect(PUT_HOOK_STATS_SQL, "%s")
#: a retry of an opinion already stored inserts nothing; record_experience then compares the two
_INSERT_EXPERIENCE = in_dialect(INSERT_EXPERIENCE_SQL, "%s") + " ON CONFLICT (team_id, id) DO NOTHING"
_EXPERIENCE_PAGE = in_dialect(EXPERIENCE_PAGE_SQL, "%s")


class PostgresOps(PostgresConnection, OpsRowStore):
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
        with self.transaction(), self._connection() as db:
            inserted = db.execute(
                _INSERT_EXPERIENCE,
                experience_values(principal, entry_id, store, verdict, reason, created_at, now_s()),
            )
            if inserted.rowcount == 1:
                return "inserted"
            existing = db.execute(
                "SELECT * FROM experience WHERE team_id = %s AND id = %s", (principal.team_id, entry_id)
            ).fetchone()
        same = existing is not None and same_experience(
            existing, principal, store, verdict, reason, created_at
        )
        return "identical" if same else "conflict"

    def experience_count(self, team_id: int, since: float) -> int:
        with self._connection() as db:
            row = db.execute(
                "SELECT count(*) AS n FROM experience WHERE team_id = %s AND created_at >= %s",
                (team_id, since),
            ).fetchone()
        return int(row["n"]) if row else 0

    def experience_page(
        self, team_id: int, since: float, after: tuple[float, str], limit: int
    ) -> list[dict[str, Any]]:
        with self._connection() as db:
            page = db.execute(_EXPERIENCE_PAGE, (team_id, after[0], after[1], since, limit)).fetchall()
        return [dict(row) for row in page]

    def put_hook_stats(self, principal: Principal, hours: Sequence[tuple[str, str]]) -> int:
        received = now_s()
        with self.transaction(), self._connection() as db, db.cursor() as cursor:
            cursor.executemany(_PUT_HOOK_STATS, hook_stats_values(principal, hours, received))
        return len(hours)

    def hook_stats_since(self, team_id: int, since_hour: str) -> list[tuple[str, str, str]]:
        with self._connection() as db:
            rows = db.execute(
                """SELECT device_id, hour, counts FROM hook_stats WHERE team_id = %s AND hour >= %s
                   ORDER BY hour, device_id""",
                (team_id, since_hour),
            ).fetchall()
        return [(row["device_id"], row["hour"], row["counts"]) for row in rows]

    def prune_hook_stats(self, before_hour: str, limit: int) -> int:
        with self.transaction(), self._connection() as db:
            deleted = db.execute(
                """DELETE FROM hook_stats WHERE ctid IN
                   (SELECT ctid FROM hook_stats WHERE hour < %s LIMIT %s)""",
                (before_hour, limit),
            )
            return int(deleted.rowcount)

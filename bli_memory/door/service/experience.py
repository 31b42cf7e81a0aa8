"""The experience log: the opinions agents record about what the door gave them, and the pages an
analysis reads them back in.

Separate because it shares nothing with memories but the store: no index, no embedding, no space.
"""

from __future__ import annotations

from typing import Any, Literal

from bli_memory.door.errors import Conflict
from bli_memory.door.model import Principal
from bli_memory.door.store.roles import Store


class ExperienceLog:
    """The experience entries of `store`."""

    def __init__(self, store: Store) -> None:
        self.store = store

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
        """Insert one opinion, or recognise an identical retry; a different entry under the same id
        is a Conflict."""
        outcome = self.store.record_experience(
            principal, entry_id=entry_id, store=store, verdict=verdict, reason=reason, created_at=created_at
        )
        if outcome == "conflict":
            raise Conflict(f"experience entry {entry_id} exists with different content", code="conflict")
        return outcome

    def experience_rows(
        self, principal: Principal, since: float, *, page_rows: int = 1000, cap_rows: int = 50_000
    ) -> tuple[list[dict[str, Any]], int]:
        """The team's opinions since `since`, read in (created_at, id) pages up to `cap_rows`.

        Returns (rows, how many the window holds) so the caller can say when the read was capped.
        Pages are separate reads, not one snapshot: a long read never holds the database."""
        total = self.store.experience_count(principal.team_id, since)
        rows: list[dict[str, Any]] = []
        after: tuple[float, str] = (since, "")
        while len(rows) < cap_rows:
            page = self.store.experience_page(
                principal.team_id, since, after, min(page_rows, cap_rows - len(rows))
            )
            if not page:
                break
            rows.extend(page)
            after = (page[-1]["created_at"], page[-1]["id"])
        return rows, total

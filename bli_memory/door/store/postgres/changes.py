"""The PostgreSQL store's change log role (`roles/changes.py`): what other processes committed."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import psycopg

from bli_memory.door.store.base import (
    IndexRow,
    OutsideChanges,
    SpaceKey,
    outside_changes,
    split_index_state,
)
from bli_memory.door.store.roles.changes import ChangeLogStore, OutsideChangeStore

if TYPE_CHECKING:
    Connection = psycopg.Connection[dict[str, Any]]
from bli_memory.door.store.postgres.connection import (
    PostgresConnection,
)


class PostgresChanges(PostgresConnection, OutsideChangeStore, ChangeLogStore):
    """The change log read back: other doors' commits past this store's position, its own left out
    (`changes_elsewhere`), and what changed since a snapshot's counter value (`changes_since`)."""

    def changed_elsewhere(self) -> bool:
        """Whether the change counter moved by other than this store's own commits since the last call."""
        return self.changes_elsewhere(()).seen

    def changes_elsewhere(self, held: Collection[SpaceKey]) -> OutsideChanges:
        """What other doors committed since the last call, this store's own commits left out (see the
        module docstring): one query when nothing changed, three when something did."""
        with self._reading_changes:  # one reader at a time moves the position
            with self._connection() as conn:
                row = conn.execute("SELECT counter, pruned_through FROM bli_changes WHERE id = 1").fetchone()
            counter = int(row["counter"]) if row else 0
            with self._seen_lock:
                seen, self._seen = self._seen, counter
                own = self._own
                self._own = {value for value in own if value > counter}
            if seen is None or counter == seen:
                return OutsideChanges()
            if counter < seen:  # another database behind the same name
                return OutsideChanges(everything=True, seen=True)
            mine = sorted(value for value in own if seen < value <= counter)
            foreign = counter - seen - len(mine)
            if foreign == 0:
                return OutsideChanges()
            if row is not None and int(row["pruned_through"]) > seen:
                return OutsideChanges(everything=True, seen=True)
            return self._read_changes(seen, counter, mine, foreign, held)

    def index_identity(self) -> str:
        """Which database this is, for index snapshots kept outside it: the cluster's system
        identifier (when this role may read it: `pg_control_system()`), the database's oid (a
        database dropped and made again under its name gets another) and its name."""
        if self._identity is None:
            with self._connection() as conn:
                row = conn.execute(
                    """SELECT oid::text AS oid, datname,
                              has_function_privilege('pg_control_system()', 'EXECUTE') AS control
                       FROM pg_database WHERE datname = current_database()"""
                ).fetchone()
                assert row is not None
                system = ""
                if row["control"]:
                    control = conn.execute(
                        "SELECT system_identifier::text AS id FROM pg_control_system()"
                    ).fetchone()
                    system = control["id"] if control else ""
            self._identity = f"postgresql:{system}:{row['oid']}:{row['datname']}"
        return self._identity

    def change_position(self) -> int | None:
        with self._seen_lock:
            return self._seen

    def changes_since(self, position: int, held: Collection[SpaceKey]) -> OutsideChanges:
        """Every change committed after counter value `position` (this store's own included, which
        an index holding them takes as no-ops), read as `changes_elsewhere` reads them; this
        store's position stays where it is."""
        with self._connection() as conn:
            row = conn.execute("SELECT counter, pruned_through FROM bli_changes WHERE id = 1").fetchone()
        counter = int(row["counter"]) if row else 0
        if counter == position:
            return OutsideChanges()
        if row is None or counter < position or int(row["pruned_through"]) > position:
            return OutsideChanges(everything=True, seen=True)
        return self._read_changes(position, counter, [], counter - position, held)

    def _read_changes(
        self, seen: int, counter: int, mine: list[int], foreign: int, held: Collection[SpaceKey]
    ) -> OutsideChanges:
        """The log rows of the `foreign` transactions in (seen, counter] but `mine`, and the changed
        memories of `held` spaces as they are now."""
        window = "counter > %(seen)s AND counter <= %(counter)s AND NOT counter = ANY(%(mine)s::bigint[])"
        params: dict[str, Any] = {"seen": seen, "counter": counter, "mine": mine}
        with self._connection() as conn:
            rows = conn.execute(
                f"""SELECT counter, kind, team_id, container_tag, memory_id FROM bli_change_log
                    WHERE {window} ORDER BY counter LIMIT %(limit)s""",
                params | {"limit": self.change_log_max_rows + 1},
            ).fetchall()
            if len(rows) > self.change_log_max_rows:  # too many to read one by one: whole spaces
                logged_row = conn.execute(
                    f"SELECT count(DISTINCT counter) AS n FROM bli_change_log WHERE {window}", params
                ).fetchone()
                logged = int(logged_row["n"]) if logged_row else 0
                rows = conn.execute(
                    f"""SELECT DISTINCT CASE kind WHEN 'memory' THEN 'space' ELSE kind END AS kind, team_id,
                            container_tag, NULL AS memory_id FROM bli_change_log WHERE {window}""",
                    params,
                ).fetchall()
            else:
                logged = len({row["counter"] for row in rows})
        if logged < foreign:  # pruned meanwhile, or written by a door that keeps no log
            return OutsideChanges(everything=True, seen=True)
        return outside_changes(
            ((row["kind"], row["team_id"], row["container_tag"], row["memory_id"]) for row in rows),
            held,
            self._index_state,
        )

    def _index_state(
        self, wanted: dict[str, SpaceKey]
    ) -> tuple[dict[SpaceKey, list[IndexRow]], dict[SpaceKey, list[str]]]:
        """Per space, the `wanted` memories an index holds now (in save order) and those it must not."""
        if not wanted:
            return {}, {}
        with self._connection() as conn:
            rows = conn.execute(
                """SELECT id, content, device_id, updated_at FROM memories WHERE id = ANY(%s)
                   AND status = 'current' AND pinned = 0 ORDER BY seq""",
                (list(wanted),),
            ).fetchall()
        return split_index_state(
            wanted, (IndexRow(row["id"], row["content"], row["device_id"], row["updated_at"]) for row in rows)
        )

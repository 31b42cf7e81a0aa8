"""Export and import of whole histories: pages of a team's rows (current, superseded and forgotten)
in the order they were written, and the import of such rows, each checked against what is already
here (its chain, its space, its customId) so that a file imported twice changes nothing.

Separate from the writes: an imported row keeps its own id, chain and times, which no save may set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from bli_memory.door.errors import Conflict, DoorError, InvalidRequest
from bli_memory.door.model import Memory, Principal, hash_text, imported_id
from bli_memory.door.service.spaces import Spaces
from bli_memory.door.service.writer import IndexedWriter
from bli_memory.door.store.base import ImportedVersion

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class ImportRow:
    """One row of an export to import again as it was: a version (current, superseded or forgotten)
    with its own id, its chain (root, previous version, number) and its three times."""

    id: str
    root_id: str
    previous_version_id: str | None
    version: int
    status: Literal["current", "superseded", "forgotten"]
    kind: str
    container_tag: str
    content: str
    custom_id: str | None
    metadata: dict[str, Any] | None
    created_at: float
    updated_at: float
    superseded_at: float | None


class Transfer:
    """Export pages and imports of the spaces `spaces` names, written through `writer`."""

    def __init__(self, writer: IndexedWriter, spaces: Spaces) -> None:
        self.writer = writer
        self.store = writer.store
        self.spaces = spaces

    def export_page(
        self, principal: Principal, tag: str | None, after: str | None, limit: int
    ) -> tuple[list[Memory], list[str] | None]:
        """(up to `limit` rows of the space of `tag` — or, when `tag` is None, of every space of the
        team and the caller's own global space — with their history and tombstones, in the order they
        were written, after the row `after`; the tags read). Any device of the team may read its
        team's rows; another person's global space is never read (its rows, pins among them, are
        that person's alone), nor named as `after`."""
        tags = None if tag is None else self.spaces.space_tags(principal, tag)
        if after is not None and self.spaces.visible_row(principal, after) is None:
            raise InvalidRequest(f"after: no memory row {after!r} in this team")
        rows = self.store.rows_page(
            principal.team_id, tags, after, limit, own_global=self.spaces.global_tag(principal)
        )
        return rows, tags

    def _imported_row(self, principal: Principal, memory_id: str) -> Memory | None:
        """The row an export's id `memory_id` names here for the caller: the row of that id when the
        caller may see it, else the row an earlier import stored in its place (`imported_id`)."""
        return self.spaces.visible_row(principal, memory_id) or self.spaces.visible_row(
            principal, imported_id(principal.team_id, memory_id)
        )

    def import_rows(self, principal: Principal, rows: Sequence[ImportRow]) -> list[tuple[str, str | None]]:
        """Import exported rows in their order, each checked against the rows already here: per row
        (`created`, `unchanged` or `updated`, None) or (an error code, its message). A refused row
        writes nothing and the others go on; the batch is one transaction.

        A row already here (same id, root, version and text) is `unchanged`; if it is current here and
        retired in the file it is retired now (`updated`). A later version finds its previous one
        here (imported earlier, or earlier in the batch), in the same chain and space, one version
        before it; a current previous one is superseded by it. A current row may not join a chain that
        has a current row, nor take a customId another current memory of the space carries."""
        current = [
            row.content
            for row in rows
            if row.status == "current" and self._imported_row(principal, row.id) is None
        ]  # a row already here is not embedded again: re-importing a file costs lookups only
        vectors = self.writer.embed(current, "passage") if current else None
        vector_of = dict(zip(current, vectors, strict=True)) if vectors is not None else {}
        results: list[tuple[str, str | None]] = []
        with self.writer.transaction():
            for row in rows:
                try:
                    with self.writer.transaction():
                        results.append((self._import_row(principal, row, vector_of.get(row.content)), None))
                except DoorError as exc:
                    results.append((exc.code, exc.message))
        if vectors is None and current and self.writer.vector_model is not None:
            self.writer.needs_backfill = True
        return results

    def _import_row(self, principal: Principal, row: ImportRow, vector: np.ndarray | None) -> str:
        """Import one row (see `import_rows`). Only rows the caller may see are looked at: a row of
        another team or of another person's global space is as good as absent, and an id such a
        row holds is stored under `imported_id` instead, with the same answer as a free id."""
        team_id = principal.team_id
        tags = self.spaces.space_tags(principal, row.container_tag)
        existing = self._imported_row(principal, row.id)
        if existing is not None:
            root = self._imported_row(principal, row.root_id)
            if (existing.root_id, existing.version, existing.content) != (
                None if root is None else root.id,
                row.version,
                row.content,
            ):
                raise Conflict(f"a different row has id {row.id!r} here")
            if existing.container_tag not in tags:
                raise Conflict(f"row {row.id!r} is in another space here ({existing.container_tag!r})")
            if existing.status == row.status:
                return "unchanged"
            if existing.status == "current" and row.status != "current":
                self.writer.retire_in(team_id, existing, row.status)
                return "updated"
            raise Conflict(f"row {row.id!r} is {existing.status} here and {row.status} in the import")
        if (row.status == "current") != (row.superseded_at is None):
            raise InvalidRequest("supersededAt is given exactly when status is not current")
        previous: Memory | None = None
        if row.version == 1:
            if row.previous_version_id is not None or row.root_id != row.id:
                raise InvalidRequest("a first version has no previousVersionId and is its own rootId")
        else:
            previous = self._import_continues(principal, row, tags)
        root_id = None if previous is None else previous.root_id
        if previous is not None and previous.status == "current":
            self.writer.retire_in(
                team_id, previous, "superseded"
            )  # a current previous one is superseded by it
        if row.status == "current":
            if root_id is not None and self.store.current_version(team_id, root_id) is not None:
                raise Conflict(f"memory {row.root_id!r} already has a current version here")
            if row.custom_id is not None and self.store.current_by_custom_id(team_id, tags, row.custom_id):
                raise Conflict(f"another current memory of the space has customId {row.custom_id!r}")
        model = self.writer.vector_model
        keep_vector = row.status == "current" and model is not None
        stored_id = None
        for candidate in (row.id, imported_id(team_id, row.id)):  # the file's id, else this team's own
            version = ImportedVersion(
                team_id=team_id,
                id=candidate,
                container_tag=tags[0],
                content=row.content,
                content_hash=hash_text(row.content),
                kind=row.kind,
                status=row.status,
                version=row.version,
                root_id=candidate if root_id is None else root_id,
                previous_version_id=None if previous is None else previous.id,
                custom_id=row.custom_id,
                metadata=row.metadata,
                person_id=principal.person_id,
                device_id=principal.device_id,
                created_at=row.created_at,
                updated_at=row.updated_at,
                superseded_at=row.superseded_at,
                vector=vector if keep_vector else None,
                vector_model=model if keep_vector and vector is not None else None,
            )
            if self.store.insert_imported(version):
                stored_id = candidate
                break
        if stored_id is None:
            raise Conflict(f"row {row.id!r} could not be stored")
        if row.status == "current":
            self.writer.indexes.added(
                (team_id, tags[0]), stored_id, row.content, principal.device_id, row.updated_at, vector
            )
        return "created"

    def _import_continues(self, principal: Principal, row: ImportRow, tags: Sequence[str]) -> Memory:
        """The row here that `row` continues (its previous version, as the caller sees it), checked:
        same chain, one version before, same space, not forgotten."""
        if row.previous_version_id is None:
            raise InvalidRequest(f"version {row.version} needs its previousVersionId")
        previous = self._imported_row(principal, row.previous_version_id)
        if previous is None:
            raise InvalidRequest(
                f"its previous version {row.previous_version_id!r} is not here (import rows in their order)",
                code="missing_previous",
            )
        root = self._imported_row(principal, row.root_id)
        if root is None or previous.root_id != root.id or previous.version != row.version - 1:
            raise InvalidRequest(
                f"it does not follow {row.previous_version_id!r} (root or version number differ)"
            )
        if previous.container_tag != tags[0]:
            raise InvalidRequest(f"its previous version is in another space ({previous.container_tag!r})")
        if previous.status == "forgotten":
            raise Conflict(f"its previous version {row.previous_version_id!r} is forgotten")
        return previous

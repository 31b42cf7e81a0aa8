"""The indexes' life around the door's: built (or read from their snapshots) at start, their
snapshots written at start, while the door serves and when it stops.

Separate from search and writes: none of it answers a request; the door's start, its worker and its
stop call it, and it decides how long searches wait for a snapshot to be taken.
"""

from __future__ import annotations

import sys
import time

from bli_memory.door.errors import StoreUnavailable, exception_line
from bli_memory.door.indexes import SpaceKey
from bli_memory.door.service.candidates import Candidates, lasting_snapshots
from bli_memory.door.service.writer import IndexedWriter

#: how long `warm` waits for the graphs it started (a million vectors: tens of minutes on one core).
WARM_GRAPH_WAIT_S = 3600.0
#: how long closing waits for a graph being built before writing the snapshots without it.
CLOSE_GRAPH_WAIT_S = 5.0


class IndexLifecycle:
    """Warm-up and snapshots of `writer`'s indexes, built through `candidates`."""

    def __init__(self, writer: IndexedWriter, candidates: Candidates) -> None:
        self.writer = writer
        self.store = writer.store
        self.indexes = writer.indexes
        self.candidates = candidates
        self._built_at_start: list[SpaceKey] = []
        #: spaces whose snapshot wants writing with their graph: the ones built at start, written
        #: first without it, and any whose graph a thread finished while the door serves (a dict as an
        #: ordered set; `write_built_graphs` writes them)
        self._graphs_to_write: dict[SpaceKey, None] = {}
        self.indexes.on_graph_built = self._graph_built

    def warm(self, *, wait_for_graphs: bool = True) -> int:
        """Build the keyword index and vectors of every space, busiest first; the count built.

        The door runs this in the background at start, so that the first search of a space does not
        pay for its index (0.5-0.6 s per 10 000 memories, docs/benchmarks.md), or reads them from
        their snapshots. Only as many spaces as the indexes hold: more would push out the busiest,
        built first. Returns when the graphs of big spaces without a snapshot are built too (at most
        WARM_GRAPH_WAIT_S; searched exactly meanwhile), unless `wait_for_graphs` is False (the door
        writes the keyword snapshots first, then waits, `write_built_graphs`).
        """
        spaces = self.store.spaces(self.indexes.max_spaces)
        for team_id, tag in spaces:
            with self.writer.lock:
                self.writer.check_outside_writes()
                builds = self.indexes.keyword_builds
                self.candidates.keyword_index(team_id, tag)
                if self.indexes.keyword_builds != builds:
                    self._built_at_start.append((team_id, tag))
                if not self.candidates.nearest_in_store():
                    self.candidates.space_vectors(team_id, tag)
        if wait_for_graphs:
            self.indexes.wait_for_conversions(WARM_GRAPH_WAIT_S)
        return len(spaces)

    def close(self) -> None:
        """Write the snapshots of big spaces (when the service has an index folder), close the store."""
        self.indexes.wait_for_conversions(CLOSE_GRAPH_WAIT_S)  # a graph still building is left out
        with self.writer.lock:
            try:
                if self.indexes.snapshots is not None and self.indexes.big_spaces():
                    self.indexes.write_snapshots(self.writer.vector_model or "", self._snapshot_position())
            except Exception as exc:  # the next start builds them from the store instead
                sys.stderr.write(
                    f"bli-memory-door: could not write the index snapshots ({exception_line(exc)})\n"
                )
            finally:
                self.store.close()

    def _snapshot_position(self) -> int | None:
        """The change position the indexes hold every change up to, after taking in what other
        doors wrote (call under the lock); None for a store without a change log. Raises when the
        store cannot say (the snapshots are then not written)."""
        change_log = self.writer.change_log
        if change_log is None:
            return None
        self.writer.check_outside_writes()
        position = change_log.change_position()
        if position is None:
            raise StoreUnavailable("the store gave no change position", store=self.writer.store.describe())
        return position

    def write_built_snapshots(self) -> tuple[int, float]:
        """Write the snapshot of each big space `warm` built from the store (a store with a change
        log, whose snapshots outlive this door's writes): the next start reads it, even after a
        kill. The index's arrays are taken under the lock (searches wait that long), the files
        written outside it. How many were written, and the seconds the lock was held."""
        snapshots = lasting_snapshots(self.indexes)
        if snapshots is None:
            return 0, 0.0
        written = 0
        held_s = 0.0
        model = self.writer.vector_model or ""
        with self.writer.lock:
            self._graphs_to_write.update(dict.fromkeys(self._built_at_start))
        while self._built_at_start:
            key = self._built_at_start.pop(0)
            with self.writer.lock:
                started = time.monotonic()
                position = self._snapshot_position()
                prepared = self.indexes.snapshot_arrays(key)
                held_s += time.monotonic() - started
            if prepared is None:
                continue
            arrays, memories = prepared
            snapshots.write_arrays(key, model, arrays, memories, None, position)
            written += 1
        return written, held_s

    def write_built_graphs(self, timeout_s: float = WARM_GRAPH_WAIT_S) -> tuple[int, float]:
        """Once the graphs `warm` started are built (at most `timeout_s`), write the snapshot of each
        space `write_built_snapshots` wrote without its graph, with it, and of each space whose graph
        was built while the door served (one that grew past `IndexLimits.ann_min_vectors`; the door's
        worker calls this with no wait when `graphs_waiting`): a door killed after that starts from
        the graph instead of building it again (about 26 minutes at a million vectors). The whole
        snapshot is written under the lock, since writes change the graph (about 6 s at a million
        memories, once; searches wait that long). How many were written, and the seconds the lock
        was held."""
        snapshots = lasting_snapshots(self.indexes)
        if snapshots is None:
            with self.writer.lock:
                self._graphs_to_write.clear()
            return 0, 0.0
        self.indexes.wait_for_conversions(timeout_s)
        written = 0
        held_s = 0.0
        model = self.writer.vector_model or ""
        while True:
            with self.writer.lock:
                if not self._graphs_to_write:
                    break
                key = next(iter(self._graphs_to_write))
                del self._graphs_to_write[key]
                started = time.monotonic()
                graph = self.indexes.graph(key)
                index = self.indexes.keyword_of(key)
                if (
                    graph is not None
                    and index is not None
                    and len(index) >= self.indexes.limits.snapshot_min_memories
                ):
                    snapshots.write(key, model, index, graph, self._snapshot_position())
                    written += 1
                # else no graph (small, or dropped meanwhile): the stop writes what there is
                held_s += time.monotonic() - started
        return written, held_s

    def _graph_built(self, key: SpaceKey) -> None:
        """A thread finished a space's graph (`Indexes.on_graph_built`): with a store whose snapshots
        outlive this door's writes, its snapshot is due; the door's worker writes it
        (`graphs_waiting`, `write_built_graphs`). Without one, the stop writes it."""
        if lasting_snapshots(self.indexes) is not None:
            with self.writer.lock:
                self._graphs_to_write[key] = None

    @property
    def graphs_waiting(self) -> bool:
        """Whether a space's snapshot waits to be written with its graph (`write_built_graphs`)."""
        return bool(self._graphs_to_write)

#!/usr/bin/env python3
"""Two doors over one PostgreSQL database: what the first search on door B costs after door A saved
one memory into a big space, when B rebuilds the space's keyword index (as doors did before the change
log) and when it applies A's change in place (what they do now).

    nice .venv/bin/python scripts/bench_door_changes.py [--db pgserver | --db postgresql://USER:PASSWORD@HOST/DB]
        [--memories 100000] [--rounds 5]

It makes a database of its own on the server (`pgserver`, the default: a throwaway PostgreSQL 16
with pgvector from the wheel, scripts/pg_throwaway.py), seeds one space with N memories through the
memory service (`bench_doors.seed`, no embedder: the keyword index is what a door rebuilds), and opens
three memory services on it in this process, each with a store of its own, as three doors would: A
writes, B applies A's changes in place, and C is B as it was before, dropping every index whenever
another door wrote (its store answers "everything" to `changes_elsewhere`). B and C build the space's
index once (timed). Then, per round, A saves one memory holding a word of its own, and B and C each
search for that word: the time of that first search after the write is what is printed (median and
range over the rounds), with a search when nothing changed for comparison. Every such search must
find the memory just saved (read-your-writes); a miss stops the script.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence

import bench_doors  # scripts/bench_doors.py
import pg_throwaway  # scripts/pg_throwaway.py

from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Principal
from bli_memory.door.store import open_store
from bli_memory.door.store.base import OutsideChanges, SpaceKey


def rebuilding(service: MemoryService) -> MemoryService:
    """`service` as doors were before the change log: any other door's write drops every index."""
    store = service.store
    changes_elsewhere = store.changes_elsewhere

    def everything(held: object) -> OutsideChanges:
        seen = changes_elsewhere(set[SpaceKey]()).seen
        return OutsideChanges(everything=seen, seen=seen)

    store.changes_elsewhere = everything  # type: ignore[method-assign]
    return service


def timed(action: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = action()
    return (time.perf_counter() - started) * 1000, result


def first_searches_after_a_save(
    writer: tuple[MemoryService, Principal], readers: Sequence[tuple[MemoryService, Principal]]
) -> list[float]:
    """A saves one memory with a word of its own; the ms of each reader's first search for it (which
    must find it)."""
    word = "w" + uuid.uuid4().hex[:12]
    saved = writer[0].save(writer[1], bench_doors.TAG, f"a note on {word} saved by door A")
    times = []
    for door, who in readers:
        elapsed, hits = timed(lambda door=door, who=who: door.search(who, bench_doors.TAG, word, limit=5))
        if not any(hit.memory.id == saved.id for hit in hits):  # type: ignore[attr-defined]
            raise SystemExit(f"a door did not find the memory door A just saved ({word})")
        times.append(elapsed)
    return times


def summary(values: Sequence[float]) -> str:
    return f"{statistics.median(values):,.1f} ms ({min(values):,.1f}-{max(values):,.1f})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--db", default=pg_throwaway.PGSERVER, help="pgserver (the default) or a postgresql:// URL"
    )
    parser.add_argument("--memories", type=int, default=100_000, help="memories in the space (100000)")
    parser.add_argument("--rounds", type=int, default=5, help="saves on door A, each searched on B and C (5)")
    args = parser.parse_args(argv)
    if args.memories < 1 or args.rounds < 1:
        parser.error("--memories and --rounds must be 1 or more")
    if not pg_throwaway.is_postgres(args.db):
        parser.error("--db takes pgserver or a postgresql:// URL")
    with pg_throwaway.server(args.db) as server, pg_throwaway.database(server, "bench_changes") as db:
        sys.stderr.write(f"seeding {args.memories} memories\n")
        token = bench_doors.seed(db, args.memories, "none")
        bench_doors.analyze(db)
        doors = [MemoryService(open_store(db), None) for _ in range(3)]
        doors[2] = rebuilding(doors[2])
        try:
            principals = [door.authenticate(token) for door in doors]
            assert all(principals)
            a, b, c = ((door, principal) for door, principal in zip(doors, principals, strict=True))
            for door, who in (b, c):
                door.search(who, bench_doors.TAG, "cache")  # builds the space's index
            quiet: dict[str, list[float]] = {"B": [], "C": []}
            after: dict[str, list[float]] = {"B": [], "C": []}
            for number in range(args.rounds):
                readers = [b, c] if number % 2 == 0 else [c, b]  # neither always first
                times = first_searches_after_a_save(a, readers)  # type: ignore[arg-type]
                for reader, elapsed in zip(readers, times, strict=True):
                    after["B" if reader is b else "C"].append(elapsed)
                for name, (door, who) in (("B", b), ("C", c)):
                    quiet[name].append(
                        timed(lambda door=door, who=who: door.search(who, bench_doors.TAG, "cache"))[0]
                    )
                sys.stderr.write(f"  round {number + 1}/{args.rounds}\n")
            rebuilt = [door.indexes.keyword_builds for door in doors[1:]]
        finally:
            for door in doors:
                door.close()
    print(
        f"first search on door B after door A saved one memory, PostgreSQL, {args.memories:,} memories in "
        f"one space, no embedder, {args.rounds} rounds (python {sys.version.split()[0]}, {os.cpu_count()} cpus)"
    )
    print("| | in place (change log) | drop and rebuild (before) |")
    print("|---|---|---|")
    print(f"| first search after A's save | {summary(after['B'])} | {summary(after['C'])} |")
    print(f"| a search with nothing changed | {summary(quiet['B'])} | {summary(quiet['C'])} |")
    print(f"| keyword indexes built | {rebuilt[0]} | {rebuilt[1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The extraction worker: turns queued `save {extract: true}` rows into reconciled facts, and keeps
the exchange itself as a document linked both ways with them (`door/exchanges.py`).

One thread inside the door, and one child process (`door/extraction.py`). The thread reaches the
store only through the memory service (`MemoryService`: the job queue, the writes, the stored
exchange). Jobs are claimed in a round over the devices that have some waiting (`Store.claim_job`),
so one device's backlog never holds the others' back. A claimed job's text is distilled into facts
by the librarian in the child, under a CPU budget per job (a job over it fails with that reason, and
the queue goes on), so the door's threads never wait for the GIL behind the rules. An exchange about
none of its space's parts (``librarian.anchors.loose_exchange``) gives no facts. Each fact is then
reconciled against the space's facts and written in a transaction of its own together with the
job's progress, and the exchange kept with the job's `done` mark in a last one: searches wait for
one fact's writes at most, never for a whole job. A door killed mid-job, or a job retried after an
error, goes on after the facts it committed, with the same facts (`requeue_interrupted_jobs` puts it
back in the queue): each fact is applied once, never twice. A job whose device is revoked (before it
starts or while it runs) is cancelled and writes nothing more.

The same thread tombstones stored exchanges older than the door's retention (at start, then every
RETENTION_SWEEP_INTERVAL_S), in batches; the facts distilled from them stay. With them it deletes the
devices' hourly hook figures older than the ops view's longest window (`hook_stats.RETENTION_DAYS`).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bli_memory.door import exchanges, hook_stats, librarian
from bli_memory.door.config import DEFAULT_JOB_CPU_S, LlmConfig
from bli_memory.door.errors import exception_line
from bli_memory.door.extraction import ExtractorProcess, OverBudget
from bli_memory.door.memories import MemoryService, write_snapshots_saying
from bli_memory.door.model import Hit, Job, JobOutcome, Memory, Principal, now_s
from bli_memory.door.service.stored_exchanges import RETENTION_BATCH

#: a job that failed (or was interrupted) this many times is given up.
JOB_MAX_ATTEMPTS = 3
#: how many neighbours each fact is compared with.
RECONCILE_NEIGHBOURS = 5
#: the search for neighbours reads this many rows, so that documents (never a neighbour) cannot
#: crowd the facts out of the first RECONCILE_NEIGHBOURS.
RECONCILE_READ = 3 * RECONCILE_NEIGHBOURS
#: the job's thread pauses this long between its facts' transactions: a lock is no queue, and a
#: thread that releases it and takes it again at once would keep out the requests waiting for it.
BETWEEN_FACTS_S = 0.001
#: how often the worker looks for stored exchanges past their retention.
RETENTION_SWEEP_INTERVAL_S = 3600.0
SECONDS_PER_DAY = 86_400.0
#: an idle worker still looks for work this often (a wake-up is normally immediate).
IDLE_POLL_S = 5.0
#: after an unexpected error the worker waits this long before trying again.
ERROR_PAUSE_S = 2.0

Extractor = Callable[[str], tuple[list[str], str]]


def run_job(memories: MemoryService, job: Job, extract: Extractor) -> JobOutcome | None:
    """Extract, reconcile and apply one job: each fact in a transaction of its own with the job's
    progress, then the exchange and the `done` mark in a last one (`MemoryService.finish_job`).

    A transaction per fact, not one for the whole job: searches wait for the memory service's lock
    while a transaction is open, and a whole job's reconciling (up to MAX_FACTS_PER_TEXT neighbour
    searches and writes) held it for hundreds of milliseconds. The progress kept with each fact (the
    facts, how many are applied, the ids written, the counts) lets a job resumed after a crash or a
    retry go on after the facts it applied, with the same facts, so each is applied once. Each
    fact's vectors (its neighbour search embeds it as a query, its save as a passage) are computed
    before its transaction (`MemoryService.prefetch`): tens of milliseconds on a busy machine that
    searches would otherwise wait for.

    None when the job was cancelled (its device revoked): nothing is written for it after that."""
    if not memories.job_may_write(job):  # spare the extractor a cancelled job's text
        return None
    principal = memories.principal_for_job(job)
    progress = _resumed_progress(job)
    if progress is None:
        started = time.perf_counter()
        facts, _ = extract(job.content)
        if facts and memories.exchange_is_loose(principal, job.container_tag, job.content):
            facts = []  # about none of the space's parts: kept as a stored exchange only
        progress = JobProgress(facts=list(facts), extract_ms=round((time.perf_counter() - started) * 1000))
    outcome = progress.outcome()
    started = time.perf_counter()
    job_metadata = dict(job.metadata or {})
    job_metadata["source"] = job_metadata.get("source", "extract")
    metadata = exchanges.fact_metadata(job_metadata, exchanges.exchange_key(job.content))
    exchange_vector = memories.exchange_vector(principal, job.container_tag, job.content)
    written = set(progress.written)  # one exchange's facts are all current: none supersedes another
    while progress.applied < len(progress.facts):
        fact = progress.facts[progress.applied]
        memories.prefetch([(fact, "query"), (fact, "passage")])
        with memories.transaction():
            if not memories.job_may_write(job):  # revoked meanwhile: final under this transaction
                return None
            root = _apply_fact(memories, principal, job, fact, metadata, outcome, written, progress.replaced)
            progress.advance(root, written, outcome)
            memories.keep_job_progress(job.id, progress.to_json())
        time.sleep(BETWEEN_FACTS_S)  # a request waiting for the lock takes it now, not after the job
    changes = _changes(progress.replaced, job.content)
    # read before the transaction, which holds the lock the searches of others (and the lease's
    # renewal) wait for; each fact is written only if it is still the version that was read
    moves = _slot_moves(memories, principal, job.container_tag, job.content, written)
    if changes or moves:  # in one transaction: a job resumed after a crash does it again, whole
        with memories.transaction():
            if not memories.job_may_write(job):
                return None
            restated: set[str] = set()  # a fact two values of one update restate takes both
            changes += _apply_slot_moves(memories, principal, moves, metadata, outcome, written, restated)
            for replaced in changes:
                _restate_elsewhere(
                    memories, principal, job.container_tag, replaced, metadata, outcome, written, restated
                )
    if not memories.finish_job(principal, job, progress.roots, exchange_vector, outcome, started):
        return None
    return outcome


@dataclass
class JobProgress:
    """How far a job got: its facts (extracted once), how many are applied, the roots they went to,
    the ids it wrote, its counts so far. Kept in the job's row with each fact (`keep_job_progress`)."""

    facts: list[str]
    extract_ms: int = 0
    applied: int = 0
    roots: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    #: (old value, new value, fact) of each update whose value the job restates in other facts.
    replaced: list[list[str]] = field(default_factory=list)

    def outcome(self) -> JobOutcome:
        return JobOutcome(
            added=self.counts.get("added", 0),
            updated=self.counts.get("updated", 0),
            unchanged=self.counts.get("unchanged", 0),
            conflicted=self.counts.get("conflicted", 0),
            extract_ms=self.extract_ms,
        )

    def advance(self, root: str | None, written: set[str], outcome: JobOutcome) -> None:
        """One more fact applied: it went to `root`; the job has now written `written`."""
        self.applied += 1
        if root is not None and root not in self.roots:
            self.roots.append(root)
        self.written = sorted(written)
        self.counts = {
            key: value
            for key, value in outcome.to_json().items()
            if key not in ("extract_ms", "reconcile_ms")
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "facts": self.facts,
            "extract_ms": self.extract_ms,
            "applied": self.applied,
            "roots": self.roots,
            "written": self.written,
            "counts": self.counts,
            "replaced": self.replaced,
        }


def _resumed_progress(job: Job) -> JobProgress | None:
    """The progress a job kept before it was interrupted or retried; None for a fresh job (or one
    whose kept progress cannot be read: it starts over)."""
    kept = (job.outcome or {}).get("progress")
    if not isinstance(kept, dict):
        return None
    try:
        progress = JobProgress(
            facts=[str(fact) for fact in kept["facts"]],
            extract_ms=int(kept.get("extract_ms", 0)),
            applied=int(kept["applied"]),
            roots=[str(root) for root in kept.get("roots", [])],
            written=[str(memory_id) for memory_id in kept.get("written", [])],
            counts={str(key): int(value) for key, value in dict(kept.get("counts", {})).items()},
            replaced=[[str(part) for part in entry] for entry in kept.get("replaced", [])],
        )
    except (KeyError, TypeError, ValueError):
        return None
    whole = all(len(entry) == 3 for entry in progress.replaced)  # (old value, new value, fact)
    return progress if whole and 0 <= progress.applied <= len(progress.facts) else None


def _neighbours(memories: MemoryService, principal: Principal, tag: str, fact: str) -> list[Hit]:
    """The facts of the space closest to `fact`: its own look-alikes only (context rows are no
    evidence of a duplicate), never a document (an exchange holds every fact it gave), and never a
    pin (kept verbatim: the librarian never merges or supersedes one; search leaves pins out already,
    this keeps it so whatever search does)."""
    hits = memories.search(principal, tag, fact, limit=RECONCILE_READ, context=False)
    return [hit for hit in hits if hit.memory.kind == "memory" and not hit.memory.pinned][
        :RECONCILE_NEIGHBOURS
    ]


def _changes(replaced: list[list[str]], text: str) -> list[list[str]]:
    """(old value, new value, source) for every value the job replaced: those its updates replaced,
    then those a diff in the exchange changes (`librarian.changed_values`: "-  memory = 2048" /
    "+  memory = 4096"), each kept when it is specific enough to carry over (`carried_pairs`); each
    pair once, in that order."""
    out = [list(entry) for entry in replaced]
    seen = {(entry[0], entry[1]) for entry in out}
    for old_value, new_value, line in librarian.changed_values(text):
        for pair in librarian.carried_pairs(old_value, new_value):
            if pair not in seen:
                seen.add(pair)
                out.append([pair[0], pair[1], line])
    return out


#: (the fact as it was read, its moves: each a move and the statement that made it), per fact id.
SlotMoves = dict[str, tuple[Memory, list[tuple[librarian.Move, str]]]]


def _slot_moves(
    memories: MemoryService, principal: Principal, tag: str, text: str, written: set[str]
) -> SlotMoves:
    """The stored facts whose value a statement of the exchange moves in its slot ("kindly shift the
    local Jetty to 3030" after "… Jetty … listening on port 8280": `librarian.moved_value`). A
    correction that names no old value and that the extraction did not keep as a fact (a line of the
    reply's config block, a request) still reaches the fact it corrects.

    The facts are those each statement finds, then those each moved value finds (a fact stating the
    old port in a `curl` line shares few words with "the API lives on 3047 from here on"), judged by
    the statement that moved it. A fact's values each move once, by the statement whose words meet
    most (then the more specific new value); the facts this job wrote are never moved."""
    found: dict[str, Memory] = {}
    moves: dict[str, dict[str, tuple[librarian.Move, str]]] = {}  # fact id -> old value -> move

    def judge(stored: Memory, statement: str) -> None:
        if stored.kind != "memory" or stored.pinned or stored.id in written:
            return
        move = librarian.moved_value(stored.content, statement, text)
        if move is None:
            return
        found[stored.id] = stored
        kept = moves.setdefault(stored.id, {}).get(move.old)
        if kept is None or (move.shared, len(move.new)) > (kept[0].shared, len(kept[0].new)):
            moves[stored.id][move.old] = (move, statement)

    for statement in librarian.slot_statements(text):
        for hit in memories.search(principal, tag, statement, limit=RECONCILE_READ, context=False):
            judge(hit.memory, statement)
    moved = {(move.old, statement) for by_old in moves.values() for move, statement in by_old.values()}
    for old, statement in sorted(moved):
        for hit in memories.search(principal, tag, old, limit=RECONCILE_READ, context=False):
            if hit.memory.id not in moves:
                judge(hit.memory, statement)
    return {memory_id: (found[memory_id], list(by_old.values())) for memory_id, by_old in moves.items()}


def _apply_slot_moves(
    memories: MemoryService,
    principal: Principal,
    moves: SlotMoves,
    metadata: dict[str, Any],
    outcome: JobOutcome,
    written: set[str],
    restated: set[str],
) -> list[list[str]]:
    """Each moved fact, still the version that was read, gets its new values as its next version (each
    of its values in its turn: "GHC 9.6.4, i.e. ghc964"); (old value, new value, statement) for each
    move, so that `_restate_elsewhere` reaches the other facts stating the old value too."""
    pairs: list[list[str]] = []
    for memory_id, (stored, by_old) in moves.items():
        current = memories.get(principal, memory_id)
        if current.status != "current" or current.content != stored.content:
            continue  # another job moved it since: its words are no longer those judged
        content = stored.content
        for move, statement in by_old:
            content = librarian.with_value_moved(content, move.old, move.new) or content
            pairs.extend([old, new, statement] for old, new in _moved_pairs(move))
        relinked = {
            **(stored.metadata or {}),
            exchanges.FACT_EXCHANGE_FIELD: metadata[exchanges.FACT_EXCHANGE_FIELD],
        }
        version = memories.update(principal, memory_id, content, metadata=relinked).id
        written.add(version)
        restated.add(version)
        outcome.updated += 1
    return pairs


def _moved_pairs(move: librarian.Move) -> list[tuple[str, str]]:
    """The pairs a move hands to `_restate_elsewhere`: those `carried_pairs` carries, and for a person
    the first name alone as well ("Staging builds for Meenakshi's team" names Meenakshi Iyer)."""
    pairs = librarian.carried_pairs(move.old, move.new)
    if " " in move.old and librarian.passed_between(move.old, move.new):
        pairs.append((move.old.split()[0], move.new))
    return pairs


def _restate_elsewhere(
    memories: MemoryService,
    principal: Principal,
    tag: str,
    replaced: list[str],
    metadata: dict[str, Any],
    outcome: JobOutcome,
    written: set[str],
    restated: set[str],
) -> None:
    """After an update replaced a specific value (a version, a host), the other facts of the space
    that still state it get the new one in its place, each as a new version: one correction
    ("flutter is on 3.22.2 now") leaves no fact saying 3.19.6 current, however many said it, where
    the update itself reaches only the one fact closest to the correcting one. Run once every fact
    of the job is applied, so that a later fact of the same exchange that updates one of them with
    its own words does so first; the job's own facts are never restated, and a fact restated for one
    value (`restated`, the versions written so) is for the next ("Gradle 8.7 …, the plugin 8.3.2")."""
    old_value, new_value, fact = replaced
    for hit in memories.search(principal, tag, old_value, limit=RECONCILE_READ, context=False):
        stale = hit.memory
        if stale.kind != "memory" or stale.pinned or (stale.id in written and stale.id not in restated):
            continue
        text = librarian.restated(stale.content, old_value, new_value, fact)
        if text is None:
            continue
        relinked = {
            **(stale.metadata or {}),
            exchanges.FACT_EXCHANGE_FIELD: metadata[exchanges.FACT_EXCHANGE_FIELD],
        }
        version = memories.update(principal, stale.id, text, metadata=relinked).id
        written.add(version)
        restated.add(version)
        outcome.updated += 1


def _apply_fact(
    memories: MemoryService,
    principal: Principal,
    job: Job,
    fact: str,
    metadata: dict[str, Any],
    outcome: JobOutcome,
    written: set[str],
    replaced: list[list[str]],
) -> str | None:
    """Reconcile one fact and write what that decides; the root id of the fact that now holds it.

    `written` holds the ids this job wrote so far (and gains the new ones): a fact is never
    compared with its own exchange's other facts, so none of them supersedes another. `replaced`
    gains (old value, new value, fact) for an update that replaced a value other facts may state too
    (`_restate_elsewhere`, once every fact of the job is applied)."""
    hits = [
        hit
        for hit in _neighbours(memories, principal, job.container_tag, fact)
        if hit.memory.id not in written
    ]
    root_of = {hit.memory.id: hit.memory.root_id for hit in hits}
    neighbours = [librarian.Neighbour(hit.memory.id, hit.memory.content, hit.similarity) for hit in hits]
    decision = librarian.decide(fact, neighbours)
    if decision.action == "unchanged":
        outcome.unchanged += 1
        return None if decision.target_id is None else root_of.get(decision.target_id)
    if decision.action == "update" and decision.target_id is not None:
        # the new text came from this exchange: the new version names it, and keeps the rest
        target = next(hit.memory for hit in hits if hit.memory.id == decision.target_id)
        relinked = {
            **(target.metadata or {}),
            exchanges.FACT_EXCHANGE_FIELD: metadata[exchanges.FACT_EXCHANGE_FIELD],
        }
        updated = memories.update(principal, decision.target_id, decision.rewrite or fact, metadata=relinked)
        written.add(updated.id)
        outcome.updated += 1
        if decision.rewrite:  # the old memory said more: it keeps the rest, the fact joins it
            joined = memories.save(principal, job.container_tag, fact, metadata=metadata)
            written.add(joined.id)
            outcome.added += 1
        for pair in (decision.values, *decision.more_values) if decision.values is not None else ():
            replaced.extend([old, new, fact] for old, new in librarian.carried_pairs(*pair))
        return updated.root_id
    if decision.action == "conflict":
        flagged = {**metadata, "conflicted": True, "conflictsWith": decision.target_id}
        result = memories.save(principal, job.container_tag, fact, metadata=flagged)
        outcome.conflicted += 1
    else:
        result = memories.save(principal, job.container_tag, fact, metadata=metadata)
        if result.status == "unchanged":
            outcome.unchanged += 1
        else:
            outcome.added += 1
    written.add(result.id)
    return memories.get(principal, result.id).root_id


class ExtractionWorker:
    """The door's daemon thread that drains the extraction queue, then backfills missing vectors;
    `wake()` after enqueueing starts work at once."""

    def __init__(
        self,
        memories: MemoryService,
        llm: LlmConfig | None = None,
        log: Any = None,
        *,
        exchange_retention_days: float = exchanges.DEFAULT_RETENTION_DAYS,
        job_cpu_s: float = DEFAULT_JOB_CPU_S,
    ) -> None:
        self.memories = memories
        self.log = log or sys.stderr
        self.exchange_retention_days = exchange_retention_days
        self._next_sweep = 0.0  # monotonic; the first pass of the loop sweeps
        #: extraction runs in a child process under a CPU budget per job (`door/extraction.py`)
        llm = llm or LlmConfig()
        self.extractor = ExtractorProcess(llm, job_cpu_s, on_fallback=self._fell_back)
        self.extract: Extractor = self.extractor
        #: the model named on a job's outcome when the librarian's LLM wrote its facts
        self.llm_model = llm.model if llm.url else ""
        #: the device of the last job claimed: where this worker's round over devices stands
        self._last_device: str | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bli-memory-extract", daemon=True)

    def _fell_back(self, reason: str) -> None:
        self._write(
            f"[bli-memory] librarian: the LLM extractor failed ({reason}); used the deterministic one"
        )

    def start(self) -> None:
        chosen = (
            f"LLM extractor ({self.llm_model}) with deterministic fallback"
            if self.llm_model
            else "deterministic"
        )
        self._write(f"bli-memory-door librarian: {chosen}")
        requeued = self.memories.requeue_interrupted_jobs(JOB_MAX_ATTEMPTS)
        if requeued:
            self._write(f"[bli-memory] requeued {requeued} interrupted extract job(s)")
        self._thread.start()
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout_s)
        if not self._thread.is_alive():  # else the thread still uses it; the child ends with the door
            self.extractor.close()

    def _write(self, line: str) -> None:
        self.log.write(line + "\n")
        self.log.flush()

    def _loop(self) -> None:
        """Drain the queue, then backfill missing vectors, then sleep until woken (or a poll).

        Nothing may end this thread but `stop()` and a damaged file: a locked database or any other
        error is logged in one line and retried after a pause, so queued jobs are never stranded
        until a restart. Damage found while serving (the start-up check passed) stops background
        work with one line instead of retrying it every ERROR_PAUSE_S for ever.
        """
        while not self._stop.is_set():
            self._wake.wait(IDLE_POLL_S)
            self._wake.clear()
            try:
                self._drain()
            except Exception as exc:
                if self.memories.is_damage(exc):
                    self._write(
                        f"bli-memory-door: the database is damaged ({exc}); background work stopped. "
                        "Stop the door and see 'A damaged database' in docs/door-operations.md"
                    )
                    return
                self._write(f"[bli-memory] background work paused ({type(exc).__name__}); retrying")
                self._stop.wait(ERROR_PAUSE_S)
                self._wake.set()

    def _drain(self) -> None:
        while not self._stop.is_set():
            job = self.memories.claim_job(after_device=self._last_device)
            if job is None:
                break
            self._last_device = job.device_id  # the next claim goes round to the next device
            self._process(job)
        if time.monotonic() >= self._next_sweep:
            self._sweep_exchanges()
            self._sweep_hook_stats()
            self._next_sweep = time.monotonic() + RETENTION_SWEEP_INTERVAL_S
        if self.memories.graphs_waiting:
            self._write_graph_snapshots()
        while self.memories.needs_backfill and not self._stop.is_set():
            done = self.memories.backfill_vectors()
            if done:
                self._write(f"[bli-memory] backfilled vectors {json.dumps({'rows': done})}")
            elif self.memories.embedder_error is not None:
                break  # the embedder is down; try again at the next poll

    def _write_graph_snapshots(self) -> None:
        """Write the snapshot of each space whose graph was built while the door serves, so that a
        door killed later starts from it (the stop would write it only on a clean stop)."""
        write_snapshots_saying(
            "index snapshots with their graphs",
            lambda: self.memories.write_built_graphs(timeout_s=0.0),
            self.log,
        )

    def _sweep_exchanges(self) -> None:
        """Tombstone the stored exchanges older than the retention, a batch per transaction."""
        before = now_s() - self.exchange_retention_days * SECONDS_PER_DAY
        total = 0
        while not self._stop.is_set():
            done = self.memories.expire_exchanges(before, RETENTION_BATCH)
            total += done
            if done < RETENTION_BATCH:
                break
        if total:
            fields = {"tombstoned": total, "days": self.exchange_retention_days}
            self._write(f"[bli-memory] exchange retention {json.dumps(fields)}")

    def _sweep_hook_stats(self) -> None:
        """Delete the devices' hook figures older than the ops view's longest window, a batch per
        transaction."""
        before = hook_stats.oldest_kept_hour(now_s())
        total = 0
        while not self._stop.is_set():
            done = self.memories.prune_hook_stats(before, hook_stats.PRUNE_BATCH_ROWS)
            total += done
            if done < hook_stats.PRUNE_BATCH_ROWS:
                break
        if total:
            fields = {"deleted": total, "days": hook_stats.RETENTION_DAYS}
            self._write(f"[bli-memory] hook stats retention {json.dumps(fields)}")

    def _process(self, job: Job) -> None:
        try:
            outcome = run_job(self.memories, job, self.extract)
        except OverBudget as exc:  # the same text would do it again: no retry
            self.memories.fail_job(job.id, f"stopped: {exc}", retry=False)
            fields = {"job": job.id, "retry": False, "cpu_s": self.extractor.cpu_s}
            self._write(f"[bli-memory] extract job over its CPU budget {json.dumps(fields)}")
            return
        except Exception as exc:
            retry = job.attempts < JOB_MAX_ATTEMPTS
            reason = exception_line(exc).rstrip(": ")
            self.memories.fail_job(job.id, reason, retry=retry)
            self._write(f"[bli-memory] extract job failed {json.dumps({'job': job.id, 'retry': retry})}")
            return
        if outcome is None:
            self._write(f"[bli-memory] extract job cancelled {json.dumps({'job': job.id})}")
            return
        fields = {"job": job.id, **outcome.to_json()}
        self._write(f"[bli-memory] extract job done {json.dumps(fields)}")

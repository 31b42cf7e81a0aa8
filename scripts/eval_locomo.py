"""Retrieval quality of the door's search on LoCoMo: recall@k, hybrid vs keyword-only vs vector-only.

Usage: .venv/bin/python scripts/eval_locomo.py PATH_TO_LOCOMO_JSON [--embedder SPEC] [--limit-samples N]
       [--modes hybrid,keyword,vector,rrf60] [--with-facts] [--vector-cache FILE]

Every turn of each conversation is saved as one memory ("Speaker: text", plus the shared image's
caption when the turn has one) in its own space, through the real `MemoryService` and `SqliteStore` code on a temporary
database. A turn's `created_at` comes from its session's date, shifted so the conversation's last
session ends "now": recency then means what it would for someone asking right after the last session.
Every question of categories 1-4 is asked of its conversation's space; a question's recall@k is the
fraction of its evidence turns among the first k results (LoCoMo's own retrieval metric), averaged
over questions, overall and per category. Channel-only runs pass their own ranking weights
(`memories.search(..., weights=ranking.KEYWORD_ONLY)` / `VECTOR_ONLY`); everything else is the door's own path.

`--with-facts` also saves LoCoMo's generated atomic facts (`observation`, each tied to the turn it came
from) in the same space, as the librarian's extraction would; a fact in the first k counts for its
turn. These facts were written by the benchmark's authors with an LLM, not by this project's
librarian: the number is an upper reference for what extraction can add, not a result of ours.

`--vector-cache FILE` keeps every vector the embedder made in FILE (.npz) and reuses it on the next run,
so a sweep of ranking constants re-embeds nothing (the first run embeds 5 000 texts one at a time, as
the door does, about 10 minutes here). Vectors are keyed by model, kind and text.

Progress goes to stderr; the table goes to stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from bli_memory.door import ranking
from bli_memory.door.embed import Embedder, Kind, load_embedder
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import now_s
from bli_memory.door.store.sqlite import SqliteStore

KS = (1, 5, 10, 25)
CATEGORIES = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
SECONDS_PER_TURN = 30.0
MODES: dict[str, ranking.Weights] = {
    "hybrid": ranking.DEFAULT_WEIGHTS,
    "keyword": ranking.KEYWORD_ONLY,
    "vector": ranking.VECTOR_ONLY,
    # the textbook fusion this module replaced (equal weights, k = 60, same recency, no context): for comparison
    "rrf60": ranking.Weights(keyword=1.0, vector=1.0, rrf_k=60.0, context=0.0),
}
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_SESSION_KEY = re.compile(r"session_(\d+)$")


Turn = tuple[int, int]  # (session, turn) as in "D<session>:<turn>"


@dataclass
class Question:
    text: str
    category: int
    evidence: list[Turn]


@dataclass
class Conversation:
    sample_id: str
    tag: str
    questions: list[Question] = field(default_factory=list)
    #: which turns each memory stands for: a turn's own memory, or a fact drawn from it
    turns_of: dict[str, set[Turn]] = field(default_factory=dict)
    turns: int = 0
    facts: int = 0
    unresolved_evidence: int = 0


class CachingEmbedder:
    """An embedder whose vectors are kept in a file between runs; the same vectors, made once."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.path = path
        self.vectors: dict[str, np.ndarray] = {}
        self.made = 0
        if path.exists():
            with np.load(path) as data:
                self.vectors = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))

    def _key(self, text: str, kind: Kind) -> str:
        return hashlib.sha256(f"{self.name}\0{kind}\0{text}".encode()).hexdigest()

    def embed(self, texts: Sequence[str], *, kind: Kind) -> np.ndarray:
        keys = [self._key(text, kind) for text in texts]
        missing = [i for i, key in enumerate(keys) if key not in self.vectors]
        if missing:
            made = self.inner.embed([texts[i] for i in missing], kind=kind)
            for i, vector in zip(missing, made, strict=True):
                self.vectors[keys[i]] = vector
            self.made += len(missing)
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack([self.vectors[key] for key in keys])

    def save(self) -> None:
        if self.made and self.vectors:
            keys = list(self.vectors)
            # np.savez appends .npz to a name without it: write to a name that has it, then rename
            partial = self.path.with_name(self.path.name + ".partial.npz")
            np.savez(partial, keys=np.array(keys), vectors=np.vstack([self.vectors[k] for k in keys]))
            partial.replace(self.path)


def parse_session_date(raw: str) -> float:
    """ "1:56 pm on 8 May, 2023" -> POSIX seconds (naive local reading; only differences matter)."""
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").timestamp()


def turn_text(turn: dict[str, Any]) -> str:
    """What a person would have saved for this turn: who said it, what, and the photo they shared."""
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    if caption:
        text += f" [shares a photo: {caption}]"
    return text


def evidence_ids(raw: Sequence[Any]) -> list[tuple[int, int]]:
    """(session, turn) pairs from evidence strings, read leniently ("D:11:26", "D8:6; D9:17")."""
    found: list[tuple[int, int]] = []
    for item in raw:
        for session, turn in _EVIDENCE.findall(str(item)):
            found.append((int(session), int(turn)))
    return found


def sessions(conversation: dict[str, Any]) -> list[tuple[int, float, list[dict[str, Any]]]]:
    out = []
    for key, turns in conversation.items():
        match = _SESSION_KEY.match(key)
        if match and isinstance(turns, list) and turns:
            number = int(match.group(1))
            out.append((number, parse_session_date(conversation[f"{key}_date_time"]), turns))
    return sorted(out)


def load(
    memories: MemoryService, principal: Any, sample: dict[str, Any], *, with_facts: bool = False
) -> Conversation:
    """Save every turn of one sample in its own space (and, `with_facts`, LoCoMo's generated facts)."""
    tag = f"locomo-{sample['sample_id']}"
    conversation = Conversation(sample_id=str(sample["sample_id"]), tag=tag)
    all_sessions = sessions(sample["conversation"])
    shift = now_s() - max(when for _, when, turns in all_sessions) - SECONDS_PER_TURN * 100
    known: set[Turn] = set()
    for number, when, turns in all_sessions:
        for index, turn in enumerate(turns):
            created = when + shift + index * SECONDS_PER_TURN
            result = memories.save(principal, tag, turn_text(turn), created_at=created)
            pairs = evidence_ids([turn.get("dia_id", "")]) or [(number, index + 1)]
            conversation.turns_of.setdefault(result.id, set()).update(pairs)
            known.update(pairs)
            conversation.turns += 1
        if with_facts:
            observed = (sample.get("observation") or {}).get(f"session_{number}_observation") or {}
            for speaker, facts in observed.items():
                for index, (fact, source) in enumerate(facts):
                    text = fact if str(speaker) in fact else f"{speaker}: {fact}"
                    created = when + shift + index * SECONDS_PER_TURN
                    result = memories.save(principal, tag, text, created_at=created)
                    pairs = evidence_ids(source if isinstance(source, list) else [source])
                    conversation.turns_of.setdefault(result.id, set()).update(pairs)
                    conversation.facts += 1
    for qa in sample["qa"]:
        category = int(qa.get("category", 0))
        if category not in CATEGORIES:
            continue
        evidence = list(dict.fromkeys(evidence_ids(qa.get("evidence", []))))
        conversation.unresolved_evidence += sum(1 for pair in evidence if pair not in known)
        evidence = [pair for pair in evidence if pair in known]
        if evidence:  # a question none of whose evidence names a turn cannot be scored (counted above)
            conversation.questions.append(Question(str(qa["question"]), category, evidence))
    return conversation


def recall(found: Sequence[set[Turn]], evidence: Sequence[Turn], k: int) -> float:
    """The fraction of the evidence turns that the first k memories stand for."""
    covered: set[Turn] = set().union(*found[:k]) if found[:k] else set()
    return sum(1 for pair in evidence if pair in covered) / len(evidence)


def evaluate(
    memories: MemoryService, principal: Any, conversations: Sequence[Conversation], modes: Sequence[str]
) -> dict[str, dict[int, list[list[float]]]]:
    """mode -> category -> per-question [recall@k for k in KS]."""
    results: dict[str, dict[int, list[list[float]]]] = {m: {c: [] for c in CATEGORIES} for m in modes}
    total = sum(len(c.questions) for c in conversations)
    done = 0
    started = time.perf_counter()
    for conversation in conversations:
        for question in conversation.questions:
            for mode in modes:
                hits = memories.search(
                    principal, conversation.tag, question.text, limit=max(KS), weights=MODES[mode]
                )
                # a channel-only run leaves the other channel's rows at score 0: they were not found
                found = [conversation.turns_of.get(hit.memory.id, set()) for hit in hits if hit.score > 0]
                results[mode][question.category].append([recall(found, question.evidence, k) for k in KS])
            done += 1
            if done % 50 == 0 or done == total:
                rate = done / max(time.perf_counter() - started, 1e-9)
                print(f"  asked {done}/{total} questions ({rate:.0f}/s)", file=sys.stderr, flush=True)
    return results


def mean(rows: Sequence[Sequence[float]], column: int) -> float:
    return sum(r[column] for r in rows) / len(rows) if rows else 0.0


def table(results: dict[str, dict[int, list[list[float]]]]) -> str:
    """One row per slice; per mode, recall at each k."""
    modes = list(results)
    ks = " ".join(f"{'@' + str(k):>5}" for k in KS)
    width = len(ks)
    header = f"{'recall':<15}{'n':>5} | " + " | ".join(f"{m:^{width}}" for m in modes)
    lines = [header, f"{'':<15}{'':>5} | " + " | ".join(ks for _ in modes), "-" * len(header)]
    slices: list[tuple[str, int | None]] = [("overall", None)] + [
        (f"{c} {CATEGORY_NAMES[c]}", c) for c in CATEGORIES
    ]
    for label, category in slices:
        blocks = []
        n = 0
        for mode in modes:
            rows = [
                row
                for cat, per in results[mode].items()
                if category is None or cat == category
                for row in per
            ]
            n = len(rows)
            blocks.append(" ".join(f"{mean(rows, col):>5.3f}" for col in range(len(KS))))
        lines.append(f"{label:<15}{n:>5} | " + " | ".join(blocks))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "path",
        help="LoCoMo conversations as JSON (a list of samples, the layout of snap-research/locomo's data/locomo10.json)",
    )
    parser.add_argument(
        "--embedder", default="onnx", help="embedder spec (default: onnx, the packaged MiniLM)"
    )
    parser.add_argument(
        "--with-facts",
        action="store_true",
        help="also save LoCoMo's generated atomic facts (each tied to its turn), as the librarian would",
    )
    parser.add_argument("--limit-samples", type=int, default=0, help="only the first N conversations")
    parser.add_argument(
        "--vector-cache", type=Path, help="keep the embedder's vectors in this .npz file and reuse them"
    )
    parser.add_argument(
        "--modes", default="hybrid,keyword,vector", help="comma list of hybrid,keyword,vector"
    )
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        print(
            f"eval_locomo: unknown mode {unknown[0]!r} (use hybrid, keyword, vector, rrf60)", file=sys.stderr
        )
        return 2
    path = Path(args.path)
    try:
        samples = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        print(f"eval_locomo: {path} does not exist (give the path of a LoCoMo JSON file)", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"eval_locomo: cannot read {path}: {type(exc).__name__}", file=sys.stderr)
        return 2
    if not isinstance(samples, list) or not samples:
        print(f"eval_locomo: {path} is not a list of LoCoMo samples", file=sys.stderr)
        return 2
    if args.limit_samples > 0:
        samples = samples[: args.limit_samples]
    embedder, reason = load_embedder(args.embedder)
    if reason:
        print(f"eval_locomo: {reason}", file=sys.stderr)
    if embedder.dim == 0 and "vector" in modes:
        modes.remove("vector")
    cache = None
    if args.vector_cache is not None and embedder.dim:
        try:
            cache = CachingEmbedder(embedder, args.vector_cache)
        except (OSError, ValueError, KeyError) as exc:
            print(f"eval_locomo: cannot read {args.vector_cache}: {type(exc).__name__}", file=sys.stderr)
            return 2
        embedder = cache
    print(f"eval_locomo: embedder {embedder.name}, {len(samples)} conversations", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="bli-locomo-") as folder:
        memories = MemoryService(SqliteStore(Path(folder) / "memory.db"), embedder)
        _, token = memories.store.create_device(person="eval")
        principal = memories.authenticate(token)
        assert principal is not None
        conversations = []
        started = time.perf_counter()
        for sample in samples:
            conversations.append(load(memories, principal, sample, with_facts=args.with_facts))
            c = conversations[-1]
            print(
                f"  stored {c.sample_id}: {c.turns} turns, {c.facts} facts, {len(c.questions)} questions "
                f"({time.perf_counter() - started:.0f}s)",
                file=sys.stderr,
                flush=True,
            )
        results = evaluate(memories, principal, conversations, modes)
        memories.close()
    if cache is not None:
        cache.save()
    unresolved = sum(c.unresolved_evidence for c in conversations)
    memories = "turns + generated facts" if args.with_facts else "turns"
    print(
        f"LoCoMo retrieval, {len(conversations)} conversations, memories: {memories}, embedder {embedder.name}"
    )
    print(
        f"weights: {ranking.DEFAULT_WEIGHTS}; evidence ids that name no turn: {unresolved}; "
        "cell = mean recall@k over questions"
    )
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

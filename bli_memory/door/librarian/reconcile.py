"""Reconciliation: what to do with one new fact, given its nearest stored neighbours. Pure (no I/O).

:func:`decide` says ``unchanged`` (a near-duplicate), ``update`` (the same subject with a new value),
``conflict`` (a negation it cannot settle) or ``add``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bli_memory.door.librarian.words import tokens

#: cosine similarity at or above which two facts say the same thing (unless their numbers differ).
NEAR_DUPLICATE_SIMILARITY = 0.92
#: Jaccard overlap of word sets at or above which two facts say the same thing.
NEAR_DUPLICATE_OVERLAP = 0.8
#: a fact whose words are all inside a stored fact at least this much longer... is already known;
#: a stored fact whose words are all inside the new one is updated to the richer wording.
CONTAINMENT_MIN_LENGTH_RATIO = 0.5
#: containment needs this many words on the smaller side, so "run tests" does not swallow everything.
CONTAINMENT_MIN_WORDS = 3
#: the longest changed span (in words, each side) that still counts as "the same subject, new value".
MAX_VALUE_WORDS = 3
#: share of the longer fact's words that must be unchanged around the changed span.
VALUE_CONTEXT_MIN_RATIO = 0.6

Action = Literal["add", "unchanged", "update", "conflict"]


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A current memory of the space close to the fact being reconciled."""

    id: str
    content: str
    similarity: float | None


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with one fact; ``target_id`` names the memory to update or flag."""

    action: Action
    target_id: str | None
    reason: str


_NEGATIONS = frozenset({"not", "no", "never"})
_POLARITY_MARKERS = _NEGATIONS | {"always"}
_DO_AUX = frozenset({"do", "does", "did"})
_VALUE_LEADS = frozenset("is are was were be = : to at on of as with via using equals uses use runs".split())
_WEAK_CONTEXT = frozenset("it this that we i you they the a an is are to of".split())
_NUMBER = re.compile(r"\d")
_KEY_VALUE = re.compile(r"^\s*`?([A-Za-z_][\w.-]*)`?\s*[=:]\s*`?(.+?)`?\s*\.?\s*$")


def _jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def _numbers(tokens: Sequence[str]) -> list[str]:
    return [t for t in tokens if _NUMBER.search(t)]


def _polarity(tokens: Sequence[str]) -> tuple[bool, list[str]]:
    """(negated?, the statement with negations, "always" and the "do" of "do not" removed)."""
    negated = sum(t in _NEGATIONS for t in tokens) % 2 == 1
    core: list[str] = []
    for i, token in enumerate(tokens):
        if token in _POLARITY_MARKERS:
            continue
        if token in _DO_AUX and i + 1 < len(tokens) and tokens[i + 1] in _NEGATIONS:
            continue
        # "lives" and "does not live" must meet: a crude singular is enough for the comparison.
        core.append(
            token[:-1] if len(token) > 3 and token.endswith("s") and not token.endswith("ss") else token
        )
    return negated, core


def _value_change(old: list[str], new: list[str]) -> tuple[str, str, str] | None:
    """(subject, old value, new value) when both say the same thing about the same subject.

    The two must share a prefix and suffix covering :data:`VALUE_CONTEXT_MIN_RATIO` of the longer one,
    differ in one short span, and that span must be a value: it holds a number, or it follows an
    assignment-like word ("is", "=", "to", "with" …) after a subject with real content.
    """
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(old), len(new)) - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]
    ):
        suffix += 1
    old_span, new_span = old[prefix : len(old) - suffix], new[prefix : len(new) - suffix]
    if not (1 <= len(old_span) <= MAX_VALUE_WORDS and 1 <= len(new_span) <= MAX_VALUE_WORDS):
        return None
    if prefix == 0 or (prefix + suffix) / max(len(old), len(new)) < VALUE_CONTEXT_MIN_RATIO:
        return None
    context = old[:prefix] + old[len(old) - suffix :]
    if all(t in _WEAK_CONTEXT or t in _VALUE_LEADS for t in context):
        return None
    numeric = bool(_numbers(old_span)) or bool(_numbers(new_span))
    if not numeric:
        if old[prefix - 1] in {"uses", "use", "runs"}:
            return None  # "we use pnpm" and "we use Docker" can both be true
        if not any(t in _VALUE_LEADS for t in old[max(0, prefix - 2) : prefix]):
            return None  # the span is not in a value position ("with `make <deploy>`" is)
    return " ".join(old[:prefix]), " ".join(old_span), " ".join(new_span)


def _key_value(text: str) -> tuple[str, str] | None:
    match = _KEY_VALUE.match(text)
    if not match or " " in match.group(1):
        return None
    return match.group(1).lower(), match.group(2).strip().lower()


_RANK: dict[Action, int] = {"unchanged": 0, "conflict": 1, "update": 2, "add": 3}


def _judge(fact: str, new: list[str], neighbour: Neighbour) -> tuple[Action, str]:
    """The verdict of one fact against one neighbour, with its reason."""
    old = tokens(neighbour.content)
    if old == new:
        return "unchanged", f"same text as {neighbour.id}"
    new_negated, new_core = _polarity(new)
    old_negated, old_core = _polarity(old)
    if new_negated != old_negated and (
        new_core == old_core or _jaccard(new_core, old_core) >= NEAR_DUPLICATE_OVERLAP
    ):
        return "conflict", f"negates {neighbour.id}; both kept for a person to settle"
    new_kv, old_kv = _key_value(fact), _key_value(neighbour.content)
    if new_kv and old_kv and new_kv[0] == old_kv[0] and new_kv[1] != old_kv[1]:
        return "update", f"{new_kv[0]}: {old_kv[1]!r} -> {new_kv[1]!r}"
    change = _value_change(old, new) if new_negated == old_negated else None
    if change:
        subject, before, after = change
        return "update", f"{subject!r}: {before!r} -> {after!r}"
    same_numbers = sorted(_numbers(old)) == sorted(_numbers(new))
    similarity = neighbour.similarity
    if new_negated != old_negated:
        return "add", "the opposite polarity of a different statement"
    if similarity is not None and similarity >= NEAR_DUPLICATE_SIMILARITY and same_numbers:
        return "unchanged", f"similarity {similarity:.3f} >= {NEAR_DUPLICATE_SIMILARITY} with {neighbour.id}"
    overlap = _jaccard(old, new)
    if overlap >= NEAR_DUPLICATE_OVERLAP and same_numbers:
        return "unchanged", f"word overlap {overlap:.2f} >= {NEAR_DUPLICATE_OVERLAP} with {neighbour.id}"
    old_set, new_set = set(old), set(new)
    if min(len(old), len(new)) / max(len(old), len(new), 1) >= CONTAINMENT_MIN_LENGTH_RATIO:
        if len(new) >= CONTAINMENT_MIN_WORDS and new_set <= old_set:
            return "unchanged", f"already contained in {neighbour.id}"
        if len(old) >= CONTAINMENT_MIN_WORDS and old_set <= new_set:
            return "update", f"adds detail to {neighbour.id}"
    return "add", "no stored fact says the same or the opposite"


def decide(fact: str, neighbours: Sequence[Neighbour]) -> Decision:
    """Reconcile one fact with its nearest stored neighbours.

    Each neighbour gets a verdict; the strongest wins: ``unchanged`` (the space already knows it) over
    ``conflict`` (a negation: both are kept and flagged) over ``update`` (same subject, new value; the
    old version becomes history) over ``add``. Ties go to the most similar neighbour, then to the first.
    """
    new = tokens(fact)
    best: tuple[int, float, int, Decision] | None = None
    for index, neighbour in enumerate(neighbours):
        action, reason = _judge(fact, new, neighbour)
        if action == "add":
            continue
        similarity = neighbour.similarity if neighbour.similarity is not None else -1.0
        key = (_RANK[action], -similarity, index, Decision(action, neighbour.id, reason))
        if best is None or key[:3] < best[:3]:
            best = key
    if best is None:
        return Decision("add", None, "no stored fact says the same or the opposite")
    return best[3]

"""The capture file and what a replay made of it (scripts/eval_capture.py): its exchanges and facts,
the questions with nothing stored (scripts/capture_unanswered.json), and per exchange what its job
stored and what the searches and hooks answered."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NOISE_QUERY_WORDS = 12
NOISE_RUN_WORDS = 6
_WORD = re.compile(r"\w+")
_REPLY = re.compile(r"(?:^|\n)\s*Assistant\s*:\s*", re.IGNORECASE)


class EvalError(Exception):
    """A one-line reason the evaluation cannot run; `status` is the exit code."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# ------------------------------------------------------------------------------------- the capture file


@dataclass(frozen=True)
class Fact:
    query: str
    key: tuple[str, ...]
    lasting: bool = False  # belongs in the briefing shown at every session start


@dataclass(frozen=True)
class Exchange:
    id: str
    project: str
    text: str
    facts: tuple[Fact, ...]
    must_not: tuple[str, ...]
    noise: bool


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ValueError(f"{what} must be a list of non-empty strings")
    return tuple(value)


def parse_exchange(row: Any) -> Exchange:
    """One line of a capture file; ValueError names what is wrong with it."""
    if not isinstance(row, dict):
        raise ValueError("not a JSON object")
    for name in ("id", "project", "exchange"):
        if not isinstance(row.get(name), str) or not row[name].strip():
            raise ValueError(f"{name} must be a non-empty string")
    if not isinstance(row.get("noise", False), bool):
        raise ValueError("noise must be true or false")
    raw_facts = row.get("facts", [])
    if not isinstance(raw_facts, list):
        raise ValueError("facts must be a list")
    facts = []
    for fact in raw_facts:
        if not isinstance(fact, dict) or not isinstance(fact.get("query"), str) or not fact["query"].strip():
            raise ValueError("each fact needs a non-empty query")
        key = _strings(fact.get("key"), "a fact's key")
        if not key:
            raise ValueError("a fact's key must hold at least one string")
        if not isinstance(fact.get("lasting", False), bool):
            raise ValueError("a fact's lasting must be true or false")
        facts.append(Fact(fact["query"], key, bool(fact.get("lasting", False))))
    return Exchange(
        id=row["id"],
        project=row["project"],
        text=row["exchange"],
        facts=tuple(facts),
        must_not=_strings(row.get("must_not", []), "must_not"),
        noise=bool(row.get("noise", False)),
    )


def load_exchanges(path: Path) -> list[Exchange]:
    """Every exchange of a capture file, in file order; EvalError (exit 2) for a missing or bad file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise EvalError(
            f"{path} does not exist; give a capture file (one JSON exchange a line; see --help)", 2
        ) from None
    except IsADirectoryError:
        raise EvalError(f"{path} is a folder, not a capture file", 2) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalError(f"cannot read {path}: {type(exc).__name__}", 2) from None
    exchanges: list[Exchange] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            exchange = parse_exchange(json.loads(line))
        except ValueError as exc:  # JSONDecodeError is a ValueError
            reason = "not JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise EvalError(f"{path} line {number}: {reason}", 2) from None
        if exchange.id in seen:
            raise EvalError(f"{path} line {number}: id {exchange.id!r} appears twice", 2)
        seen.add(exchange.id)
        exchanges.append(exchange)
    if not exchanges:
        raise EvalError(f"{path} holds no exchange", 2)
    return exchanges


def only_projects(exchanges: Sequence[Exchange], projects: str) -> list[Exchange]:
    """The exchanges of the named projects (comma-separated), in file order; all of them when empty."""
    wanted = {name.strip() for name in projects.split(",") if name.strip()}
    if not wanted:
        return list(exchanges)
    unknown = sorted(wanted - {e.project for e in exchanges})
    if unknown:
        raise EvalError(f"--projects: no exchange belongs to {', '.join(unknown)}", 2)
    return [e for e in exchanges if e.project in wanted]


def load_unanswered(path: Path, projects: Sequence[str]) -> dict[str, list[str]]:
    """The questions with nothing stored of each of `projects` that `path` names ({project: [question,
    ...]}); EvalError (exit 2) for a file that cannot be read or is not of that shape."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EvalError(f"--unanswered: {path} does not exist", 2) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise EvalError(f"--unanswered: cannot read {path}: {type(exc).__name__}", 2) from None
    if not isinstance(data, dict):
        raise EvalError(f"--unanswered: {path} must hold a JSON object {{project: [question, ...]}}", 2)
    out: dict[str, list[str]] = {}
    for project in projects:
        try:
            questions = _strings(data.get(project, []), f"{project}'s questions")
        except ValueError as exc:
            raise EvalError(f"--unanswered: {path}: {exc}", 2) from None
        if questions:
            out[project] = list(questions)
    return out


def projects_of(exchanges: Sequence[Exchange]) -> list[str]:
    """The projects in the order they first appear."""
    return list(dict.fromkeys(exchange.project for exchange in exchanges))


def halves(projects: Sequence[str]) -> tuple[list[str], list[str]]:
    """The projects split in two in file order, the first half the larger: 7 projects are 4 and 3."""
    middle = (len(projects) + 1) // 2
    return list(projects[:middle]), list(projects[middle:])


def other_project(projects: Sequence[str], project: str) -> str | None:
    """The project whose space a question is asked in where nothing answers it: the next one in file
    order, the last one's is the first's (None when there is only one)."""
    if len(projects) < 2:
        return None
    return projects[(projects.index(project) + 1) % len(projects)]


def space_tag(project: str) -> str:
    """`repo_<slug>__<sha256(project)[:16]>`; the slug is the name lowercased, each run outside
    [a-z0-9] replaced by `_`."""
    slug = re.sub(r"[^a-z0-9]+", "_", project.lower())
    return f"repo_{slug}__{hashlib.sha256(project.encode('utf-8')).hexdigest()[:16]}"


def reply_of(text: str) -> str:
    """The assistant's part of an exchange (the whole text when it names no assistant)."""
    match = _REPLY.search(text)
    return text[match.end() :] if match else text


def noise_query(exchange: Exchange) -> str:
    return " ".join(reply_of(exchange.text).split()[:NOISE_QUERY_WORDS])


def word_runs(text: str, length: int = NOISE_RUN_WORDS) -> set[tuple[str, ...]]:
    """Every run of `length` consecutive words (lowercased letters, digits and `_`) of `text`."""
    words = [w.lower() for w in _WORD.findall(text)]
    return {tuple(words[i : i + length]) for i in range(len(words) - length + 1)}


def holds(content: str, needles: Iterable[str]) -> bool:
    lowered = content.lower()
    return all(needle.lower() in lowered for needle in needles)


def corrected_later(fact: Fact, later: Iterable[Exchange]) -> bool:
    """Whether one of the fact's keys holds one of `later`'s `must_not` strings (a value they retire)."""
    keys = [key.lower() for key in fact.key]
    return any(value.lower() in key for exchange in later for value in exchange.must_not for key in keys)


def in_force_flags(exchanges: Sequence[Exchange]) -> list[tuple[bool, ...]]:
    """Per exchange of `exchanges`, in order, one flag per fact: whether it is in force, no later
    exchange of its project correcting it (`corrected_later`: "owned by Dana Whitfield", then "not
    Whitfield"). Asked once every exchange is saved, a corrected fact's question has the correcting
    exchange's value as its answer, which that exchange's own fact asks for."""
    return [
        tuple(
            not corrected_later(fact, [e for e in exchanges[index + 1 :] if e.project == exchange.project])
            for fact in exchange.facts
        )
        for index, exchange in enumerate(exchanges)
    ]


def corrected_values(exchanges: Sequence[Exchange]) -> dict[str, list[str]]:
    """exchange id -> its must_not strings that appear in an earlier exchange of the same project."""
    out: dict[str, list[str]] = {}
    for index, exchange in enumerate(exchanges):
        earlier = [e.text.lower() for e in exchanges[:index] if e.project == exchange.project]
        old = [m for m in exchange.must_not if any(m.lower() in text for text in earlier)]
        if old:
            out[exchange.id] = old
    return out


@dataclass(frozen=True)
class Row:
    """One current memory, as the door's database holds it."""

    id: str
    content: str
    kind: str
    version: int
    previous_version_id: str | None
    conflicted: bool


@dataclass
class FactResult:
    fact: Fact
    rank: int | None  # 1-based rank of the first result holding every key, within the top 5
    kind: str | None
    top: str  # the first result, for the verbose line of a fact missed or found below it
    shown: bool = False  # a row of the prompt hook's block for the query holds every key
    unrelated: int | None = None  # the block's rows for the query asked in another project's space


@dataclass
class ExchangeResult:
    exchange: Exchange
    tag: str
    job_status: str  # done | failed | timeout | rejected
    outcome: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    added: list[Row] = field(default_factory=list)
    updated: list[tuple[Row, Row]] = field(default_factory=list)  # (old, new)
    removed: list[Row] = field(default_factory=list)
    old_current_before: dict[str, bool] = field(default_factory=dict)  # corrected value -> a fact held it
    facts: list[FactResult] = field(default_factory=list)
    wrong: dict[str, str] = field(default_factory=dict)  # id -> content
    noise_kept: dict[str, str] = field(default_factory=dict)

    def own_statements(self) -> list[Row]:
        """The facts this exchange's job wrote in the exchange's own words: every one it added, and
        each new version of an older fact whose words all come from the exchange ("we're not on 2.8.1
        any more: ... 2.9.2" written over "Airflow 2.8.1 on MWAA"). A correcting exchange's own
        statement may name the old value it retires; an older fact rewritten with a value replaced
        keeps words of its own exchange, and is judged as any other fact."""
        said = set(_WORD.findall(self.exchange.text.lower()))
        rewritten = [new for _old, new in self.updated if set(_WORD.findall(new.content.lower())) <= said]
        return self.added + rewritten


@dataclass
class Run:
    librarian: str
    embedder: str = ""
    exchanges: list[ExchangeResult] = field(default_factory=list)
    spaces: dict[str, dict[str, Row]] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)  # memory id -> the exchange whose job wrote it
    fallbacks: int = 0
    seconds: float = 0.0
    #: project -> (question whose answer is not stored, the prompt hook's rows for it in that space)
    unanswered: dict[str, list[tuple[str, list[str]]]] = field(default_factory=dict)
    #: project -> the item lines of its space's session-start block once every exchange is saved
    briefings: dict[str, list[str]] = field(default_factory=dict)

"""Answer kinds: what sort of string a question asks for, and whether a memory holds one.

Pure functions, no I/O and no state. A question that asks *which version*, *who*, *where*, *which
port*, *how many*, *when* or *why* is answered by a memory that holds a version, a name, a path or
an address, a port, a number, a time or a reason. Among the memories a search found by words and
meaning, the one holding that sort of string is likelier the answer than a neighbour that only talks
about the same subject: the fix beside the cause it repairs, the decision beside the file it touched,
the command that failed beside the version that was pinned. Search lifts such a memory
(:func:`bli_memory.door.ranking.lift_answer_kinds`); it never adds one the channels did not find.

The kinds are the coarse answer types of open-domain question answering (person, location, number,
date, reason), with the ones coding questions ask for most: a version, a port, a command-line flag,
a command, a range, a ticket, a name, a rule. A question may ask for several ("which version range" asks for a version and a
range); a memory's share is the fraction of them it holds.

Question patterns read the lower-cased question; answer patterns read the memory as written (a name
is a capitalised word after a lower-case one, a month a capitalised month name), so that "may" the
verb is not a month and a sentence's first word is not a name.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

_NAME_WORD = re.compile(r"[A-Z][a-zà-öø-ÿ]+[,.;:)]*")


_CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday "
    "mondays tuesdays wednesdays thursdays fridays saturdays sundays".split()
)
#: who answers a "who" question when no one is named: a role or a team
_ROLE = re.compile(
    r"\b(?:team|lead|owner|owners|manager|maintainer|maintainers|reviewer|reviewers|on-call|admins?)\b", re.I
)


def _has_name(text: str) -> bool:
    """A capitalised word right after an all-lower-case word ("names Priya as", "ask Wei"): a name
    in running text, not the sentence's first word, not a CamelCase identifier, not an acronym, not
    a month or a weekday."""
    words = text.split()
    return any(
        _NAME_WORD.fullmatch(word)
        and previous.isalpha()
        and previous.islower()
        and word.rstrip(",.;:)").lower() not in _CALENDAR
        for previous, word in itertools.pairwise(words)
    )


_HANDLE = re.compile(r"(?<![\w.])@[A-Za-z][\w-]+")


def _names_someone(text: str) -> bool:
    """A handle (@fin-eng), a name, or a role or team ("the release manager", "the data team")."""
    return bool(_HANDLE.search(text) or _has_name(text) or _ROLE.search(text))


def _pattern(regex: str, flags: int = 0) -> Callable[[str], bool]:
    compiled = re.compile(regex, flags)
    return lambda text: compiled.search(text) is not None


# Every pattern below starts only where a token starts (a look-behind, not a bare \b) and has no two
# quantifiers that can share characters, so its search is linear in the text: a memory of 100 000
# dots or dashes cannot stall a search (tests/door/test_answer_kind.py feeds them such texts).
_VERSION = r"(?<![\w.])v?\d+\.\d+(?:\.\d+)?(?![.\d]|[A-Za-z%])"
#: a code span: its text is checked in Python (:func:`_has_path`), never by a pattern that backtracks
_CODE_SPAN = re.compile(r"`([^`\n]{1,300})`")
#: a bare path of three segments or more (`src/lib/api`, `~/.config/tracer/`)
_BARE_PATH = re.compile(r"(?<![\w./~-])[\w.~-]+/[\w.-]+/[\w./-]*")
_URI = r"(?<![\w+.-])[a-z][a-z0-9+.-]*://\S+"
#: a network address: a web or RPC URL, or a host name (an `s3://` object is a place, not an address)
_ADDRESS = (
    r"(?<![\w+.-])(?:https?|wss?|grpcs?)://\S+"
    r"|(?<![\w.-])[\w-]+(?:\.[\w-]+)*\.(?:com|dev|io|net|org|internal|local|app|cloud)\b(?!\.\w)"
)
_FILE_SUFFIX = re.compile(r"\.[A-Za-z]{1,5}")


def _has_path(text: str) -> bool:
    """A path in a code span (`src/lib/api/`, `.golangci.yml`: a slash or a file suffix, no space
    before it), or a bare one of three segments or more."""
    for match in _CODE_SPAN.finditer(text):
        span = match.group(1)
        head = span.split("/", 1)[0]
        if "/" in span and not any(ch.isspace() for ch in head):
            return True
        if not any(ch.isspace() for ch in span) and _FILE_SUFFIX.fullmatch(span[span.rfind(".") :]):
            return True
    return _BARE_PATH.search(text) is not None


_PLACE = re.compile(f"{_ADDRESS}|{_URI}")
#: what names a thing in a repository: a code span, a kebab- or snake-case word, camelCase, UPPER_SNAKE
_IDENTIFIER = (
    r"`[^`\n]{1,300}`|(?<![\w-])[A-Za-z][A-Za-z0-9]*[-_][A-Za-z0-9_-]+\b"
    r"|(?<!\w)[a-z]+[A-Z]\w*|(?<!\w)[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"
)
_TIME_WORDS = (
    r"\b\d{1,2}:\d{2}\b|\b\d{4}-\d{2}-\d{2}\b"
    r"|\b(?:January|February|March|April|May|June|July|August|September|October|November|December"
    r"|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b"
    r"|\b(?i:yesterday|today|tonight|tomorrow|ago|(?:last|next) (?:week|month|year|night))\b"
)
_REASON_WORDS = (
    r"\b(?:because|due to|caused|causes|so|since|therefore|which means|which meant|that's why"
    r"|as a result|instead of|fails|failed|breaks|broke)\b|\bwhy\?"
)


#: where a sentence ends: after its full stop, question or exclamation mark, or at a line break
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+|\n+")


def _outside_questions(held: Callable[[str], bool]) -> Callable[[str], bool]:
    """`held` read on the memory without the questions it restates ("Who should review changes to
    X? CODEOWNERS maps …"): "who should review …?" asks, it lays down no rule."""

    def test(text: str) -> bool:
        said = [sentence for sentence in _SENTENCE_END.split(text) if not sentence.rstrip().endswith("?")]
        return held(" ".join(said))

    return test


@dataclass(frozen=True)
class AnswerKind:
    """One sort of answer: the question wording that asks for it, and the test a memory passes.

    `asks_at` says where a match asks: a wh-word only where it opens a question
    (:func:`_opens_question`: "who owns …?" asks for a person, "a module whose factory …" does not),
    "policy for" only where it names a convention (:func:`_names_a_convention`: "our policy for
    reviews", not "the trust policy for the deploy role")."""

    name: str
    asked_by: re.Pattern[str]
    held_by: Callable[[str], bool]
    #: where a match of `asked_by` asks (the lower-cased question, the match's start); None: anywhere
    asks_at: Callable[[str, int], bool] | None = None

    def is_asked(self, lowered: str) -> bool:
        return any(
            self.asks_at is None or self.asks_at(lowered, match.start())
            for match in self.asked_by.finditer(lowered)
        )


#: after these a wh-word still opens a (coordinated) question: "… and who reviews it?"
_CONJUNCTIONS = frozenset("and or but so then also ok okay".split())
#: "to whom", "since when": a preposition before the wh-word belongs to the question
_PREPOSITIONS = frozenset("to for by with from of since until till at on in".split())
#: verbs and words that embed a question: "do you know who …", "tell me when …", "no idea where …"
_EMBEDDING = frozenset(
    "know knows knew ask asked asking tell told remember recall find out check see wonder sure idea "
    "decide decided figure say said me us show explain mention mentioned note noted record recorded".split()
)
_WORD = re.compile(r"[a-z']+")
#: how much of the question before a wh-word is read to place it (its last word is enough)
_BEFORE_CHARS = 64


def _word_before(lowered: str, start: int) -> str | None:
    """The word just before `start` in the lower-cased question; None when nothing but punctuation
    or the question's start comes before it. Reads a few characters only."""
    before = lowered[max(0, start - _BEFORE_CHARS) : start].rstrip()
    if not before or before[-1] in ",;:(.?!":
        return None
    words = _WORD.findall(before)
    return words[-1] if words else None


def _opens_question(lowered: str, start: int) -> bool:
    """Whether the wh-word at `start` of the lower-cased question opens a question rather than a
    relative or a time clause: it comes first, after punctuation or a conjunction, after a
    preposition, or after a word that embeds a question. After a noun or a verb it does not ("a
    module whose …", "what rounding mode applies when …")."""
    word = _word_before(lowered, start)
    return word is None or word in _CONJUNCTIONS or word in _PREPOSITIONS or word in _EMBEDDING


#: words before "rules for" / "policy on" that make it a convention of the team, not a thing that
#: happens to be called a policy or a rule (a trust policy, firewall rules, a lint rule)
_CONVENTION_MARKERS = frozenset(
    "the our your their its any a what which are is 's team team's house project repo repository "
    "naming style coding code commit branch branching review reviewing formatting testing test "
    "documentation docs writing merge merging release versioning".split()
)


def _names_a_convention(lowered: str, start: int) -> bool:
    """Whether "rules for" / "policy on" at `start` asks for a convention: first in the question, or
    after a determiner or a word naming a practice ("our policy for", "naming rules for"); after any
    other noun it names a thing ("the trust policy for the deploy role", "ingress rules for")."""
    word = _word_before(lowered, start)
    return word is None or word in _CONVENTION_MARKERS


KINDS: tuple[AnswerKind, ...] = (
    # "which release of X", "what version": asked; "the latency regression in the last release": not
    AnswerKind(
        "version",
        re.compile(
            r"\b(?:which|what)(?:'s)?(?: +[\w.-]+){0,3}? +(?:version|versions|release|releases)\b"
            r"|\bversions? of\b"
        ),
        _pattern(_VERSION),
    ),
    AnswerKind(
        "port", re.compile(r"\bports?\b"), _pattern(r"(?<=[\w\]]):\d{2,5}\b|\bport\s+\d{2,5}\b", re.I)
    ),
    AnswerKind(
        "person",
        re.compile(r"\b(?:who|whom|whose)\b"),
        _names_someone,
        asks_at=_opens_question,
    ),
    AnswerKind(
        "where",
        re.compile(r"\bwhere\b"),
        lambda text: _has_path(text) or bool(_PLACE.search(text)),
        asks_at=_opens_question,
    ),
    AnswerKind(
        "path",
        re.compile(
            r"\b(?:which|what)(?:'s| is| are)? (?:the )?(?:\w+ )?"
            r"(?:file|files|folder|folders|directory|directories|path|paths)\b"
        ),
        _has_path,
    ),
    AnswerKind(
        "address", re.compile(r"\b(?:url|urls|address|endpoint|domain|hostname)\b"), _pattern(_ADDRESS)
    ),
    AnswerKind(
        "flag",
        re.compile(r"\b(?:what|which) (?:\w+ )?(?:flag|flags|option|options|switch)\b"),
        _pattern(r"(?<![\w-])--?[A-Za-z][\w-]*"),
    ),
    AnswerKind("command", re.compile(r"\bcommands?\b"), _pattern(r"`[a-z][\w.:/-]* [^`\n]{1,300}`")),
    AnswerKind(
        "range",
        re.compile(r"\b(?:range|ranges|cidr|subnet)\b"),
        _pattern(
            r"[<>~^]=?\s*v?\d|(?<![\w.])\d+\.\d+\.\d+\.\d+/\d+\b"
            r"|(?<![\w.])\d+(?:\.\d+)*\s*(?:-|to)\s*\d+(?:\.\d+)*\b"
        ),
    ),
    AnswerKind(
        "ticket",
        re.compile(r"\b(?:ticket|tickets|jira|pr number|pull request|issue number)\b"),
        _pattern(r"(?<![\w-])[A-Z][A-Z0-9]+-\d+\b|(?<![\w&])#\d+\b"),
    ),
    AnswerKind(
        "name",
        re.compile(r"\bname of\b|\b(?:what|which)(?:'s| is)? (?:the |our |its |their )?(?:\w+ )?name\b"),
        _pattern(_IDENTIFIER),
    ),
    # "the rules for X", "our convention on Y": a standing order answers, not a fact about X
    AnswerKind(
        "rule",
        re.compile(r"\b(?:rules?|conventions?|policy|policies|guidelines?) (?:for|on|about|of)\b"),
        _outside_questions(
            _pattern(
                r"\b(?:must|has to|have to|always|never|from now on|don't|do not|should|prefer|every new"
                r"|no more|not allowed|only)\b",
                re.I,
            )
        ),
        asks_at=_names_a_convention,
    ),
    AnswerKind(
        "number",
        re.compile(r"\bhow (?:many|much|long|big)\b|\b(?:what|which)\s+(?:\w+\s+){0,2}number\b"),
        _pattern(r"\d"),
    ),
    AnswerKind(
        "reason",
        re.compile(r"\bwhy\b|\bwhat (?:caused|causes|broke|went wrong)\b|\b(?:cause|reason) (?:of|for)\b"),
        _pattern(_REASON_WORDS, re.I),
    ),
    # "when does the gateway commit" asks for a condition, not a date: only other "when"s ask for a time
    AnswerKind(
        "time",
        re.compile(r"\bwhen (?!does\b|do\b)|\bwhat time\b|\bwhich (?:day|date|month|year)\b"),
        _pattern(_TIME_WORDS),
        asks_at=_opens_question,
    ),
)
_BY_NAME = {kind.name: kind for kind in KINDS}


#: a question naming which place it wants ("where is the staging endpoint?") asks for that one only
_NARROWER = {"where": ("path", "address")}


def asked(question: str) -> frozenset[str]:
    """The names of the kinds of answer `question` asks for (empty for most statements)."""
    lowered = question.lower()
    kinds = {kind.name for kind in KINDS if kind.is_asked(lowered)}
    for broad, narrower in _NARROWER.items():
        if broad in kinds and kinds.intersection(narrower):
            kinds.discard(broad)
    return frozenset(kinds)


#: the part of a memory read for kinds: a distilled fact is at most 500 characters; a long memory is
#: judged by its opening, which keeps the lift's cost per search small whatever people save.
HELD_TEXT_CHARS = 2_000


def held_share(text: str, kinds: frozenset[str]) -> float:
    """The share of `kinds` that `text` holds a string of, in [0, 1] (0 when nothing is asked)."""
    if not kinds:
        return 0.0
    opening = text[:HELD_TEXT_CHARS]
    return sum(1 for name in kinds if _BY_NAME[name].held_by(opening)) / len(kinds)

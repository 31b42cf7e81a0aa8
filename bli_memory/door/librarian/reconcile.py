"""Reconciliation: what to do with one new fact, given its nearest stored neighbours. Pure (no I/O).

:func:`decide` says ``unchanged`` (a near-duplicate), ``update`` (the same subject with a new value),
``conflict`` (a negation it cannot settle) or ``add``. An update is "the same subject, a new
value": an identifier that differs only in its digits (``events.raw.v2`` -> ``events.raw.v3``), or a
version, number, quantity, handle (``@team-ledger``) or URL (same site) after the same words ("Node 18"
-> "Node 20"); a correction needs only one word in common with the value's context, when no value
follows the same words as the new one ("JDK 17" -> "JDK 21" before "Gradle 7.6" -> "21"). A fact is a
correction when it says so at its start ("actually …", "correction: …"), says a value holds now ("it's
X now", "is now X") or names the value it retires ("not X", "from X", "instead of X"); "instead of" or
"no longer" about anything else only describes. For a correction, a URL's host names its service (one
on the same site; on another, a new address of hosts sharing two name words: `corrections.address_moved`,
or of the thing named just before both addresses, "images now come from X" after "images come from Y":
`corrections.address_replaced`). Two numbers whose next words are of different unit families ("24
hours", "8 climbers") count different things and are never one value's old and new.
Two facts that each name their own thing in the same place ("the admin API listens on 8081", "the
public API listens on 8080"), a fact that adds ("CI also runs …") and a value in another file are
never a new value of the old one (`corrections.siblings`, `corrections.adds`).
A fact that names what it retires ("moved the broker from Redis to RabbitMQ", "Jenkins is gone, use
…") updates the fact that still states the retired thing about the same subject (`retiring`).
A correction that names another thing right after the same noun as the old fact ("Velero target is
B2 now: bucket cn-vault-b2" after "… to wasabi bucket coopnest-velero") updates it when a word of
their subject meets beyond that noun. A value said to change "to" another ("Spring Boot goes to
3.3.1") is a correction too.
The corrections that name no retired value are read in `corrections`: a version bumped as an action
("bumped `revision:` in `west.yml` to v2.7.0"), one argument of a quoted statement changed in the same
file, a state said to hold no more ("not shared with BI anymore").
A setting given a new value in the same place (`fly secrets set HOST=b -a app-prod` after `HOST=a -a
app-prod`; not `.env.prod` after `.env.staging`) updates the old one, and so does a role handed to
another person (`roles`) the fact naming the former one about the same thing.
A subject moved to a new value ("We renamed the default branch to `trunk`", "the broker is now
RabbitMQ", "staging now lives at `stg.example.io`", "switched to `gofumpt` for formatting Go code")
updates the fact that names every word of that subject with a value the move no longer states ("The
default branch is `main`": `moves`). A job's schedule said to have changed ("the reminder job moved
to 06:15" after "every day at 07:30", "redrive now runs every 5 min" after `rate(15 minutes)`)
updates the fact stating that job's one schedule of the same kind (`schedules`). The old memory stays as history; when it said more than the new fact, it
is kept with the new value in place (``Decision.rewrite``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from bli_memory.door.librarian.corrections import (
    CLAUSE_END,
    address_moved,
    address_replaced,
    adds,
    as_written,
    bumped,
    gone_for,
    kebab_renamed,
    predicate_retired,
    renamed,
    renamed_in,
    restated,
    siblings,
    statement_changed,
    stems,
)
from bli_memory.door.librarian.lasting import VERSION as VERSION_NUMBER
from bli_memory.door.librarian.moves import SUBJECT_FILLER, SUBJECT_WORD_MIN_CHARS, moved, moved_from
from bli_memory.door.librarian.nearest import changed_nearest, counts_apart, moved_number
from bli_memory.door.librarian.retiring import (
    CHANGE_STEMS,
    DECLARED_CORRECTION,
    WEAK_CONTEXT,
    retired_terms,
    retires,
)
from bli_memory.door.librarian.roles import (
    departed_holder,
    handed_over,
    holder_replaced,
    newcomer,
    passed_between,
)
from bli_memory.door.librarian.schedules import Schedule, moved_in, rescheduled
from bli_memory.door.librarian.values import (
    CODE_SPAN,
    JOINED_NAME,
    QUANTITY,
    VERSION,
    closed_ranges,
    declared_unchanged,
    domain_of,
    host_of,
    host_words,
    is_file,
    is_host,
    is_value,
    nearest_anchor,
    shape_of,
    slots,
    value_tokens,
    values_of,
    words_before,
)
from bli_memory.door.librarian.words import compound_parts, tokens
from bli_memory.door.librarian.words import is_anchor as _is_anchor

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
    """What to do with one fact; ``target_id`` names the memory to update or flag.

    ``rewrite``, on an update only: the target's own text with its old value replaced, when it says
    more than the new fact (other paths, identifiers or values); the target becomes that text and the
    fact is added beside it, so nothing else the target said is lost. None: the target becomes the fact.
    ``values``, on an update that replaced one value with another: (old value, new value), so that the
    job can bring other facts still stating the old value up to date (`corrections.restated`);
    ``more_values``, the other values the same fact changed in the target ("Kotlin 2.0.0 …, Compose
    then 1.6.11"), for the same.
    """

    action: Action
    target_id: str | None
    reason: str
    rewrite: str | None = None
    values: tuple[str, str] | None = None
    more_values: tuple[tuple[str, str], ...] = ()


_NEGATIONS = frozenset({"not", "no", "never"})
_POLARITY_MARKERS = _NEGATIONS | {"always"}
_DO_AUX = frozenset({"do", "does", "did"})
_VALUE_LEADS = frozenset("is are was were be = : to at on of as with via using equals uses use runs".split())
_NUMBER = re.compile(r"\d")
#: a setting and its value ("`timeout` = 30", "retries: 3."): the key is read by this pattern, the
#: value's closing backtick, full stop and spaces are cut in Python (`(.+?)`?\s*\.?\s*$` was cubic
#: in a run of spaces that ends badly)
_KEY_VALUE_HEAD = re.compile(r"\s*`?([A-Za-z_][\w.-]*)`?\s*[=:]\s*`?")


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
    if all(t in WEAK_CONTEXT or t in _VALUE_LEADS for t in context):
        return None
    numeric = bool(_numbers(old_span)) or bool(_numbers(new_span))
    if not numeric:
        if old[prefix - 1] in {"uses", "use", "runs"}:
            return None  # "we use pnpm" and "we use Docker" can both be true
        if not any(t in _VALUE_LEADS for t in old[max(0, prefix - 2) : prefix]):
            return None  # the span is not in a value position ("with `make <deploy>`" is)
    return " ".join(old[:prefix]), " ".join(old_span), " ".join(new_span)


#: a version inside an identifier: "v2", "@9.1", ":18", "==2.7", "3.11"; "service-1" numbers a sibling.
_VERSIONED = re.compile(r"(?:\bv|[a-z]v|[@:=])\d|\d\.\d")
#: letters an identifier needs, besides its digits, to be its own subject ("events.raw.v2").
IDENTIFIER_MIN_LETTERS = 3
#: corrections phrased as one: "actually …", "correction: …", "not X but Y", "we moved from X to Y".
_CORRECTION_WORDS = re.compile(
    r"\b(?:actually|correction|change of plan|not [\w.:@+/-]+,? but|(?:moved|switched|migrated|went)\b[^.;]{0,40}?\bfrom|"
    r"no longer|instead of)\b|"
    r",\s+not\s+(?:v?\d|@|https?://)",
    re.IGNORECASE,
)


_RETIRING = frozenset({"not", "from", "replacing"})


def _retired(words: list[str]) -> set[str]:
    """The values a correction names as the old ones: the first within two words after "not", "from",
    "replacing" or "instead of" ("from Node 18 to Node 20" retires "18")."""
    out: set[str] = set()
    for index, word in enumerate(words):
        if word in _RETIRING or (word == "of" and index > 0 and words[index - 1] == "instead"):
            for following in words[index + 1 : index + 3]:
                if is_value(following):
                    out.add(following)
                    break
    return out


#: a value said to hold now, so not before: "it's https://x.dev now", "30 snapshots now", "is now `db3`",
#: "UI + grpc now https://cd.example.io only".
#: (a value with a digit is entered at the start of its token, up to its first digit: from each
#: character of a long token the token was read again)
_NOW_VALUE = re.compile(
    r"(?:https?://[^\s`]+|`[^`\n]+`|(?<![^\s`])[^\s`\d]*\d[^\s`]*|@[\w.-]+)(?:\s+[a-z]+)?\s+now\s*(?:[.,;:!)]|$)|"
    r"\b(?:is|are|it's|that's)\s+now\s+(?:at\s+|on\s+|in\s+)?(?:https?://|`|[^\s`]*\d|@)|"
    r"\bnow\s+(?:at\s+|on\s+)?https?://|"
    r"\bit's\s+[a-z][\w-]*[_-][\w-]+\s+now\b",  # "it's scan_intake now": a joined name
    re.IGNORECASE,
)


#: "the new bucket is wbg-masters", "emails go from avisos@… from now": the old one is no more.
_NEW_ONE = re.compile(
    r"\bthe\s+new\s+[\w-]+\s+(?:is|are|will be|lives)\b|\bfrom now(?: on)?\b|\bgoing forward\b", re.IGNORECASE
)
#: a value something is said to change to: "Spring Boot goes to 3.3.1", "go to v1.64.0", "bumped the
#: chart to `2.4.0`", "moved the job to 04:15".
_CHANGED_TO = re.compile(
    # "go to" a version only: "questions go to `#oncall`" routes, it changes nothing
    r"\b(?:goes|go|going|went)\s+(?:[\w.`-]+\s+){0,2}?to\s+v?\d|"
    r"\b(?:moves?|moved|bump(?:s|ed)?|upgrad(?:e|es|ed)|rais(?:e|es|ed)|lower(?:s|ed)?|chang(?:e|es|ed))"
    r"\s+(?:[\w.`-]+\s+){0,2}?to\s+(?:v?\d|`|https?://|@)|"
    # a move to anything: "he's moved us to Cloudflare R2 — bucket is `qs-content`"
    r"\b(?:moved|switched|migrated)\s+(?:[\w.`-]+\s+){0,3}?(?:to|onto|over to)\s+\S",
    re.IGNORECASE,
)


def _corrects(new_text: str, old_text: str) -> bool:
    """Whether the new fact is a correction of the old one: it says so at its start ("Correction: …",
    "Actually …"), it says a value holds "now" ("it's https://x.dev now", "is now `db-3`": the value
    before it no longer does) or changes to ("goes to 3.3.1"), or it names a value of the old fact as
    the one it retires ("from 8080",
    "not 18", "instead of 1.74"). "Instead of" or "no longer" about anything else ("requests queued
    instead of failing") describes, it does not correct."""
    if _NOW_VALUE.search(new_text) or _CHANGED_TO.search(new_text) or _NEW_ONE.search(new_text):
        return True
    if not _CORRECTION_WORDS.search(new_text):
        return False
    if DECLARED_CORRECTION.match(new_text):
        return True
    return bool(_retired(value_tokens(new_text)) & set(value_tokens(old_text)))


def _subject_named(old_text: str, value: str, new_text: str) -> bool:
    """Whether the new fact names every word the old one says before `value` (its subject): "the
    staging host is `db-2`" -> "the staging host is now `db-3`", not "the production host …"."""
    before = tokens(old_text.lower().split(value, 1)[0])
    subject = {w for w in before if len(w) >= SUBJECT_WORD_MIN_CHARS and w not in SUBJECT_FILLER}
    return bool(subject) and subject <= set(tokens(new_text))


#: two whole numbers this many times apart count different things, not one setting changed.
NUMBER_MAX_RATIO = 100


def _orders_apart(old: str, new: str) -> bool:
    """Whether two whole numbers are NUMBER_MAX_RATIO times apart or more ("4200" and "18")."""
    if not (old.isdigit() and new.isdigit()):
        return False
    low, high = sorted((int(old), int(new)))
    return low == 0 or high >= NUMBER_MAX_RATIO * low


def _new_value_for(old_text: str, new_text: str, corrects: bool) -> tuple[str, str] | None:
    """(old value, new value) when the new fact gives the same subject another value.

    The subject is the same when the identifier is the same apart from its digits ("events.raw.v2"
    -> "events.raw.v3"), or when the words just before both values meet ("MSRV to 1.74" -> "MSRV
    channel 1.75"); for a correction, when any word of the old fact's value context appears in it.
    The old value must be gone from the new fact, and both values of the same kind.
    """
    new_values = values_of(new_text)
    if not new_values:
        return None
    words = value_tokens(new_text)
    # a value the correction names as the old one ("not 8080", "from 18") is not one it states
    retired = _retired(words) if _CORRECTION_WORDS.search(new_text) else set()
    present = set(words) - retired
    new_values = [v for v in new_values if v[0] not in retired]
    new_words = {w for w in words if _is_anchor(w)}
    old_values = values_of(old_text)
    stated_before = {value for value, _shape, _anchors in old_values}
    new_shapes = {shape for value, shape, _anchors in new_values if shape.startswith("id:")}
    if any(
        shape in new_shapes
        and value not in present
        and not _VERSIONED.search(value)
        and not (corrects and _subject_named(old_text, value, new_text))
        for value, shape, _anchors in old_values
    ):
        # "service-1" and "service-2": a numbered sibling, unless the fact says the same subject holds
        # another one now ("the staging host is now `db-3`" after "the staging host is `db-2`")
        return None
    # the words right before both values meet first ("JDK 17" -> "JDK 21", not "Gradle 7.6" -> "21");
    # a correction's looser rule (any word of the old value's context) only when none does
    kept = declared_unchanged(new_text)  # "…, CPU stays": the CPU's value is not the one replaced
    for loose in (False, True) if corrects else (False,):
        met: list[tuple[int, int, tuple[str, str]]] = []
        for old_value, old_shape, old_anchors in old_values:
            if old_value in present or nearest_anchor(old_text, old_value) in kept:
                continue
            for new_value, new_shape, new_anchors in new_values:
                if new_value == old_value or new_shape != old_shape or new_value in stated_before:
                    continue  # a value the old fact states too is no new one ("Scala 2.13.12" in both)
                stem = old_shape[3:] if old_shape.startswith("id:") else ""
                if sum(ch.isalpha() for ch in stem) >= IDENTIFIER_MIN_LETTERS and _VERSIONED.search(
                    old_value
                ):
                    return old_value, new_value  # "events.raw.v2" -> "events.raw.v3"; not "service-1" -> "-2"
                if old_shape == "url" and domain_of(old_value) != domain_of(new_value):
                    continue  # another site is another service: localhost is not staging
                # loosely, a part of a compound anchor meets too ("org.springframework.boot" … "Spring Boot")
                shared = old_anchors & new_anchors if not loose else _with_parts(old_anchors) & new_words
                nearest = nearest_anchor(old_text, old_value) == nearest_anchor(new_text, new_value)
                if old_shape == "number" and old_value.count(".") != new_value.count(".") and not nearest:
                    continue  # "invoices 7+ days" is no old value of "invoices render with … ^1.5"
                if old_shape == "number" and _orders_apart(old_value, new_value):
                    continue  # "Angular 18" (a version) is no new value of "Angular on 4200" (a port)
                if old_shape == "number" and counts_apart(old_text, old_value, new_text, new_value):
                    continue  # "8 climbers" is no new value of "24 hours", nor "14 days" of "15 ms"
                if shared:
                    # "Android 7.0 (API 24)" -> "API 26": the pair whose nearest words are the same wins
                    met.append((int(nearest and not loose), len(shared), (old_value, new_value)))
                elif loose and old_shape == "handle" and words_before(old_text, old_value) & new_words:
                    met.append((0, 0, (old_value, new_value)))  # "the billing service is owned by @x now"
                elif loose and old_shape == "url" and host_words(old_value) & new_words:
                    # "Grafana moved, it's https://g.example.dev now"
                    met.append((0, 0, (old_value, new_value)))
        if met:
            # the best-met pair; of equals, the first in the old fact's order, then the new one's
            best = max(range(len(met)), key=lambda i: (met[i][0], met[i][1], -i))
            return met[best][2]
    return None


def _with_parts(words: frozenset[str]) -> set[str]:
    """Words and the anchor parts of their compounds ("grpc-go" -> grpc-go, grpc, go)."""
    return {part for word in words for part in [word, *compound_parts(word)] if _is_anchor(part)}


#: code spans (paths, identifiers) an old fact must hold beyond the new fact's to be kept, rewritten.
REWRITE_MIN_OTHER_SPANS = 2


def _rewrite(old_text: str, new_text: str) -> str | None:
    """The old fact with its value replaced, when it holds other values the new fact lacks."""
    change = (
        _new_value_for(old_text, new_text, _corrects(new_text, old_text))
        or statement_changed(new_text, old_text)
        or bumped(new_text, old_text)
    )
    if change is None:
        return None
    before, after = change
    if not _says_more(old_text, new_text, before):
        return None  # the old fact says little else: the new one replaces it
    rewritten = _replaced(old_text, before, after)
    for pair in _more_changes(old_text, new_text, change):
        rewritten = _replaced(rewritten, *pair)
    return rewritten


def _more_changes(old_text: str, new_text: str, first: tuple[str, str]) -> list[tuple[str, str]]:
    """The values besides `first` that the new fact changes in the old one: "Kotlin 2.0.0 …, Compose
    then 1.6.11" changes two values of "Kotlin 1.9.23, Compose 1.6.1"."""
    corrects = _corrects(new_text, old_text)
    text = _replaced(old_text, *first)
    pairs: list[tuple[str, str]] = []
    for _more in range(REWRITE_MAX_PAIRS - 1):
        further = _new_value_for(text, new_text, corrects) if text else None
        if further is None:
            break
        pairs.append(further)
        text = _replaced(text, *further)
    return pairs


#: values one new fact may replace in the old fact it rewrites.
REWRITE_MAX_PAIRS = 3


def _replaced(text: str | None, before: str, after: str) -> str | None:
    """`text` with the value `before` replaced by `after` as a whole token; None when it is absent. A
    range the new value closes on itself names that value alone: "Django stays inside `>=5.1,<5.2`"
    with 5.1 -> 5.2 reads "… inside `5.2` …", not `>=5.2,<5.2`, which allows nothing."""
    if text is None:
        return None
    pattern = re.compile(rf"(?<![\w.]){re.escape(before)}(?![\w]|\.\d)", re.IGNORECASE)
    rewritten, count = pattern.subn(lambda _: after, text)  # a value, never a template (`C:\new`)
    if not count:
        return None
    return closed_ranges(rewritten)


def _renamed_in(old_text: str, values: tuple[str, str] | None, new_text: str) -> str | None:
    """The old fact with a renamed name in place (`corrections.renamed_in`); for a host, only when
    the old fact says more than its address ("port 7, EU868, the network server at lns.old.net"),
    else the new fact replaces it ("The staging host is `db-2…`" after "staging moved to `db-3…`")."""
    if values is not None and is_host(values[0].strip("`")) and not _says_more(old_text, new_text, values[0]):
        return None
    if values is not None and passed_between(*values):  # "failure emails go to Kwame" -> a full name
        # a role handed over in one clause of a summary: its other clauses still hold ("reminders fire
        # at 16:30; SMS questions go to Marisol Okafor" -> "…; SMS questions go to Tobias Lindqvist"), unless
        # one is about what passed ("…; resize requests go in #snowflake-admin"), which may have changed too
        clauses = [c for c in CLAUSE_END.split(old_text) if values[0] not in c]
        others = [c for c in clauses if len(tokens(c)) >= _CLAUSE_MIN_WORDS]
        about = stems(new_text) - stems(" ".join(values))
        if not others or any(_compound_stems(c) & about for c in clauses):
            return None
        return restated(old_text, *values, new_text)
    return renamed_in(old_text, values, new_text)


def _compound_stems(text: str) -> set[str]:
    """The stems of a text's words and of their compounds' parts (`#snowflake-admin` -> snowflake, admin)."""
    return stems(" ".join(part for word in tokens(text) for part in [word, *compound_parts(word)]))


#: words a clause of a fact holds to say something of its own.
_CLAUSE_MIN_WORDS = 4


def _says_more(old_text: str, new_text: str, before: str) -> bool:
    """Whether the old fact states other values than `before` that the new fact lacks, or other
    code spans (paths, identifiers): then it is kept with its value replaced."""
    present = set(value_tokens(new_text))
    other_values = {v for v, _form, _anchors in values_of(old_text) if v != before and v not in present}
    other_spans = {span for span in CODE_SPAN.findall(old_text.lower()) if before not in span} - {
        span for span in CODE_SPAN.findall(new_text.lower())
    }
    return bool(other_values) or len(other_spans) >= REWRITE_MIN_OTHER_SPANS


def _rescheduled_text(old_text: str, new_text: str, moved: tuple[Schedule, list[Schedule]]) -> str | None:
    """The old fact with its job's schedule moved (`schedules.rescheduled` found `moved`), when it
    says more."""
    new, old = moved
    return moved_in(old_text, new, old) if _says_more(old_text, new_text, old[0].text.lower()) else None


def _other_file(new_text: str, old_text: str) -> bool:
    """Whether each fact names files and none the other names: another file is another setting."""
    new_files, old_files = _files(new_text), _files(old_text)
    return bool(new_files) and bool(old_files) and not new_files & old_files


def _files(text: str) -> set[str]:
    """The file names a fact says (not host names, which look alike)."""
    return {t for t in value_tokens(text) if is_file(t) and not is_host(t)}


def _same_place(new_text: str, old_text: str) -> bool:
    """Whether the new fact names every file, path and identifier the old one names besides its
    numbers: `pool_size = 25` in `config/database.yml` is the same setting as `pool_size = 10` there,
    not as `pool_size = 5` in `config/cache.yml`."""
    places = {t for t in _specific_tokens(old_text) if not VERSION.fullmatch(t) and not QUANTITY.fullmatch(t)}
    return places <= _specific_tokens(new_text)


def _key_value(text: str) -> tuple[str, str] | None:
    match = _KEY_VALUE_HEAD.match(text)
    value = None if match is None else _setting_value(text[match.end() :])
    if match is None or value is None or is_file(match.group(1)):
        return None  # "`package.json`: added …" names a file that changed, not a setting
    return match.group(1).lower(), value.strip().lower()


def _setting_value(rest: str) -> str | None:
    """A setting's value without its closing backtick, full stop and spaces; None when it runs over
    more than one line."""
    value = rest.rstrip()
    if value.endswith("."):
        value = value[:-1].rstrip()
    if value.endswith("`"):
        value = value[:-1]
    if not value:
        value = rest.strip()
    return value if value and "\n" not in value else None


#: a setting given its value inside a sentence or a command: `PHX_HOST=app.example.com`, `retries=3`
#: (read from the start of its token: from inside a long token it was tried again at every character).
_ASSIGNMENT = re.compile(r"(?<![\w.=-])([A-Za-z_][\w.-]*)=([^\s`,;)\]]+)")


def _assignments(text: str) -> dict[str, str]:
    return {key.lower(): value.rstrip(".").lower() for key, value in _ASSIGNMENT.findall(text)}


def _specific_tokens(text: str) -> set[str]:
    """The tokens of a fact that name one thing (a path, a flag's value, an app): with a digit or
    punctuation inside, assignments left out."""
    assigned = {part for pair in _assignments(text).items() for part in pair}
    return {
        t
        for t in value_tokens(text)
        if t not in assigned and len(t) > 2 and any(ch.isdigit() or ch in "._/@-" for ch in t.strip("-"))
    }


def _reassigned(new_text: str, old_text: str) -> tuple[str, str, str] | None:
    """(setting, old value, new value) when both facts set the same setting to different values and
    everything specific the old fact names besides (the app, the file, the environment) the new one
    names too: `fly secrets set HOST=a -a app-prod` -> `… HOST=b -a app-prod`. Another file or
    environment (`.env.staging` against `.env.prod`) is another setting."""
    new_set, old_set = _assignments(new_text), _assignments(old_text)
    for key, old_value in old_set.items():
        new_value = new_set.get(key)
        if new_value is None or new_value == old_value or new_value in old_text.lower():
            continue
        if _specific_tokens(old_text) <= _specific_tokens(new_text):
            return key, old_value, new_value
    return None


#: how the reason of an update by a fact that retires the old thing opens.
_RETIRES = "retires "

_RANK: dict[Action, int] = {"unchanged": 0, "conflict": 1, "update": 2, "add": 3}


def _judge(fact: str, new: list[str], neighbour: Neighbour) -> tuple[Action, str, tuple[str, str] | None]:
    """The verdict of one fact against one neighbour, with its reason and, for a value replaced by
    another, (old value, new value)."""
    old = tokens(neighbour.content)
    if old == new:
        return "unchanged", f"same text as {neighbour.id}", None
    new_negated, new_core = _polarity(new)
    old_negated, old_core = _polarity(old)
    corrects = _corrects(fact, neighbour.content)
    sibling = siblings(fact, neighbour.content)
    replaced = _new_value_for(neighbour.content, fact, corrects) if corrects and not sibling else None
    if replaced:  # "8443, not 8080" negates the old value on purpose: a correction, not a conflict
        return "update", f"corrects {replaced[0]!r} to {replaced[1]!r} in {neighbour.id}", replaced
    retired = retires(fact, neighbour.content)
    if retired:  # "from Redis to RabbitMQ", "amqp://… now, not redis://…": the old fact is history
        # other facts naming the old host get the new one ("… is gone", "moved off …, it's … now":
        # the one host the fact names besides the old one)
        old_host = host_of(retired[0])
        hosts = (old_host, host_of(retired[1]) if retired[1] else _only_host(fact, besides=old_host))
        moved_host = hosts if all(is_host(h) and not is_file(h) for h in hosts) else None
        return "update", f"{_RETIRES}{retired[0]!r}, which {neighbour.id} states", moved_host
    move = moved(fact, neighbour.content)
    if move:
        return (
            "update",
            f"{move[0]!r} moved to {move[1]!r} in {neighbour.id}",
            renamed(neighbour.content, move[0], fact, move[1])
            or kebab_renamed(neighbour.content, fact, move[1])
            or moved_from(neighbour.content, fact, move[1]),
        )
    readdressed = address_moved(fact, neighbour.content) or address_replaced(fact, neighbour.content)
    if readdressed:  # "the new URL is https://hr-staging.example.net" after "hr-stg.example.azure…"
        return "update", f"{readdressed[0]!r} moved to {readdressed[1]!r} in {neighbour.id}", readdressed
    gone = gone_for(fact, neighbour.content)
    if gone:  # "the old project was decommissioned, use `harbor-dw-prd`" after "`harbor-prod-dw`"
        return "update", f"{gone[0]!r} is gone for {gone[1]!r} in {neighbour.id}", gone
    schedule = rescheduled(fact, neighbour.content)
    if schedule:  # "the reminder job moved to 06:15" after "send them every day at 07:30"
        new_schedule, old_mentions = schedule
        moved_schedule = (old_mentions[0].text, new_schedule.text)
        return (
            "update",
            f"schedule {moved_schedule[0]!r} moved to {moved_schedule[1]!r} in {neighbour.id}",
            moved_schedule,
        )
    changed = statement_changed(fact, neighbour.content) or bumped(fact, neighbour.content)
    if changed:  # `… COMPONENTS glslc)` -> `… COMPONENTS dxc)`; "bumped X in `west.yml` to v2.7.0"
        return "update", f"changes {changed[0]!r} to {changed[1]!r} in {neighbour.id}", changed
    no_more = predicate_retired(fact, neighbour.content)
    if no_more:  # "not shared with BI anymore": the fact saying it is shared is history
        return "update", f"{no_more!r} holds no more, which {neighbour.id} states", None
    if new_negated != old_negated and (
        new_core == old_core or _jaccard(new_core, old_core) >= NEAR_DUPLICATE_OVERLAP
    ):
        return "conflict", f"negates {neighbour.id}; both kept for a person to settle", None
    reassigned = _reassigned(fact, neighbour.content)
    if reassigned:
        return (
            "update",
            f"{reassigned[0]}: {reassigned[1]!r} -> {reassigned[2]!r} in {neighbour.id}",
            (reassigned[1], reassigned[2]),
        )
    former = (
        handed_over(fact, neighbour.content)
        or holder_replaced(fact, neighbour.content)
        or departed_holder(fact, neighbour.content)
    )
    if former:
        successor = newcomer(fact, neighbour.content)
        passed = (former, successor) if successor else None
        return "update", f"the role passes from {former!r} in {neighbour.id}", passed
    slot = _slot_value(neighbour.content, fact) if corrects and not sibling else None
    if slot:  # "Velero target is B2 now: bucket cn-vault-b2" after "… to wasabi bucket coopnest-velero"
        return "update", f"the {slot[0]} {slot[1]!r} is now {slot[2]!r} in {neighbour.id}", slot[1:]
    new_kv, old_kv = _key_value(fact), _key_value(neighbour.content)
    if (
        new_kv
        and old_kv
        and new_kv[0] == old_kv[0]
        and new_kv[1] != old_kv[1]
        and _same_place(fact, neighbour.content)
    ):
        return "update", f"{new_kv[0]}: {old_kv[1]!r} -> {new_kv[1]!r}", (old_kv[1], new_kv[1])
    # "CI also runs the tests on 3.12" replaces nothing; nor does a value in another file
    additive = not corrects and (adds(fact) or _other_file(fact, neighbour.content))
    change = _value_change(old, new) if new_negated == old_negated and not additive else None
    if change:
        subject, before, after = change
        return "update", f"{subject!r}: {before!r} -> {after!r}", (before, after)
    replaced = None if additive or sibling else _new_value_for(neighbour.content, fact, corrects)
    # a negation in another clause of the old fact says nothing of its version; one in the new fact does
    if replaced and (
        new_negated == old_negated or _version_in_a_clause(neighbour.content, replaced, new_negated)
    ):
        return "update", f"new value {replaced[1]!r} for {replaced[0]!r} in {neighbour.id}", replaced

    same_numbers = sorted(_numbers(old)) == sorted(_numbers(new))
    similarity = neighbour.similarity
    if new_negated != old_negated:
        return "add", "the opposite polarity of a different statement", None
    if similarity is not None and similarity >= NEAR_DUPLICATE_SIMILARITY and same_numbers:
        return (
            "unchanged",
            f"similarity {similarity:.3f} >= {NEAR_DUPLICATE_SIMILARITY} with {neighbour.id}",
            None,
        )
    overlap = _jaccard(old, new)
    if overlap >= NEAR_DUPLICATE_OVERLAP and same_numbers:
        return (
            "unchanged",
            f"word overlap {overlap:.2f} >= {NEAR_DUPLICATE_OVERLAP} with {neighbour.id}",
            None,
        )
    old_set, new_set = set(old), set(new)
    if min(len(old), len(new)) / max(len(old), len(new), 1) >= CONTAINMENT_MIN_LENGTH_RATIO:
        if len(new) >= CONTAINMENT_MIN_WORDS and new_set <= old_set:
            return "unchanged", f"already contained in {neighbour.id}", None
        if len(old) >= CONTAINMENT_MIN_WORDS and old_set <= new_set:
            return "update", f"adds detail to {neighbour.id}", None
    return "add", "no stored fact says the same or the opposite", None


def _slot_value(old_text: str, new_text: str) -> tuple[str, str, str] | None:
    """(noun, old name, new name) when a correction names another thing right after the same noun as
    the old fact ("bucket cn-vault-b2 now" after "bucket coopnest-velero"), neither fact naming the
    other's, both of one kind (two values of one shape, or two joined names)."""
    new_slots, old_slots = slots(new_text), slots(old_text)
    new_words, old_words = set(value_tokens(new_text)), set(value_tokens(old_text))
    for noun, new_name in new_slots.items():
        old_name = old_slots.get(noun)
        if old_name is None or old_name == new_name or old_name in new_words or new_name in old_words:
            continue
        # two values of one shape, or two joined names ("coopnest-velero", "cn-vault-b2")
        joined = all(JOINED_NAME.fullmatch(n) for n in (old_name, new_name))
        old_value, new_value = is_value(old_name), is_value(new_name)
        unlike = old_value != new_value or (old_value and shape_of(old_name) != shape_of(new_name))
        if unlike and not joined:
            continue
        # the two are about one thing: a word of their subject meets beyond the noun and the names
        # ("Velero … bucket"), so "uploads go to bucket b now" leaves "thumbnails … bucket a" alone
        named = _compound_stems(f"{noun} {old_name} {new_name}") | CHANGE_STEMS
        if _compound_stems(new_text) & _compound_stems(old_text) - named:
            return noun, old_name, new_name
    return None


def _version_in_a_clause(old_text: str, change: tuple[str, str], new_negated: bool) -> bool:
    """Whether a version is replaced by one of its form ("6.7.2" -> "6.8.1") and the old fact's clause
    stating it has the new fact's polarity ("requires Qt 6.7.2 …, and … wasn't set"). Not a bare
    number: "sigma 6 g, no outliers" is no old value of an interval of 600 s."""
    before, after = change
    if not (VERSION.fullmatch(before) and VERSION.fullmatch(after) and "." in before):
        return False
    if before.count(".") != after.count("."):
        return False
    clause = next((c for c in CLAUSE_END.split(old_text) if before in value_tokens(c)), old_text)
    return _polarity(tokens(clause))[0] == new_negated


def decide(fact: str, neighbours: Sequence[Neighbour]) -> Decision:
    """Reconcile one fact with its nearest stored neighbours.

    Each neighbour gets a verdict; the strongest wins: ``unchanged`` (the space already knows it) over
    ``conflict`` (a negation: both are kept and flagged) over ``update`` (same subject, new value; the
    old version becomes history) over ``add``. Ties go to the most similar neighbour, then to the first.
    """
    new = tokens(fact)
    best: tuple[int, float, int, Decision] | None = None
    for index, neighbour in enumerate(neighbours):
        action, reason, values = _judge(fact, new, neighbour)
        if action == "add":
            continue
        similarity = neighbour.similarity if neighbour.similarity is not None else -1.0
        key = (_RANK[action], -similarity, index, Decision(action, neighbour.id, reason, values=values))
        if best is None or key[:3] < best[:3]:
            best = key
    if best is None:
        return (
            _number_moved(fact, neighbours)
            or _nearest_changed(fact, neighbours)
            or Decision("add", None, "no stored fact says the same or the opposite")
        )
    decision = best[3]
    if decision.action == "update":
        target = next(n for n in neighbours if n.id == decision.target_id)
        first = decision.values
        if first is not None and all(is_value(value) for value in first):  # a version, a URL; not a person
            decision = replace(decision, more_values=tuple(_more_changes(target.content, fact, first)))
        schedule = rescheduled(fact, target.content)
        rewrite = (
            _rescheduled_text(target.content, fact, schedule)
            if schedule
            else _rewrite(target.content, fact)
            # a fact that retires a thing says what holds now; the old one's other words held with it
            or (
                None
                if decision.reason.startswith(_RETIRES)
                else _renamed_in(target.content, decision.values, fact)
            )
        )
        if rewrite is not None and not _mixes_versions(rewrite, fact):
            return replace(decision, reason=decision.reason + "; the rest of it kept", rewrite=rewrite)
    return decision


#: words beside a version that name nothing ("on 8.5", "to 2.0.0", "is 17.3").
_VERSION_FILLER = frozenset("on to is are at of in from with and or now the a v ver version release".split())


def _named_versions(text: str) -> set[tuple[str, str]]:
    """(version, a word beside it) for each version number of a fact: "DBR 16.4 LTS" gives (16.4, dbr)
    and (16.4, lts)."""
    out: set[tuple[str, str]] = set()
    for match in VERSION_NUMBER.finditer(text):  # the version numbers the briefing reads, not measures
        before = tokens(text[max(0, match.start() - 40) : match.start()])[-1:]
        ends = text.startswith(".", match.end())  # the next word is another sentence's
        after = [] if ends else tokens(text[match.end() : match.end() + 40])[:1]
        for word in before + after:
            if word.isalpha() and len(word) > 1 and word not in _VERSION_FILLER:
                out.add((match.group().lower().lstrip("v"), word))
    return out


def _mixes_versions(rewritten: str, fact: str) -> bool:
    """Whether an old fact rewritten with the new fact's value would still name another version of a
    thing the new fact names: "DBR 16.4 LTS ships Spark 3.5.2" given 4.0.0 by "17.3 LTS is Spark
    4.0.0" would say 16.4 ships what 17.3 does. The new fact then replaces the old one whole."""
    new = _named_versions(fact)
    return any(
        name == other_name and version != other
        for version, name in _named_versions(rewritten)
        for other, other_name in new
    )


def _only_host(text: str, besides: str = "") -> str:
    """The one host a fact names, bare or in a URL, other than `besides` (the host it retires), or ""
    when it names none or several."""
    hosts = {host_of(t) for t in value_tokens(text) if "://" in t or (is_host(t) and not is_file(t))}
    hosts -= {besides}
    return hosts.pop() if len(hosts) == 1 else ""


def _number_moved(fact: str, neighbours: Sequence[Neighbour]) -> Decision | None:
    """The update `nearest.moved_number` finds: a number said to move ("from 52000 to 55000") put in
    place of the one a near fact states, the rest of that fact kept."""
    found = moved_number(fact, [(n.id, n.content, n.similarity) for n in neighbours])
    if found is None:
        return None
    target_id, before, after = found
    target = next(n for n in neighbours if n.id == target_id)
    return Decision(
        "update",
        target_id,
        f"{before!r} moves to {after!r} in {target_id}; the rest of it kept",
        rewrite=_replaced(target.content, before, after),
    )


def _nearest_changed(fact: str, neighbours: Sequence[Neighbour]) -> Decision | None:
    """The update `nearest.changed_nearest` finds when no rule pairs the fact with a neighbour: the
    nearest fact's one value of a kind replaced; the old fact is kept with the new value in place
    when it says more and states the old value once."""
    if retired_terms(fact):
        return None  # "moved from ledger-db to …" says which thing it retires: its rule has spoken
    found = changed_nearest(fact, [(n.id, n.content, n.similarity) for n in neighbours])
    if found is None:
        return None
    target_id, before, after = found
    target = next(n for n in neighbours if n.id == target_id)
    # each value as its fact writes it ("Kenji Watanabe", not the lower case the kinds compare)
    before, after = as_written(target.content, before), as_written(fact, after)
    found = (target_id, before, after)
    decision = Decision("update", target_id, f"{before!r} is now {after!r} in the nearest fact, {target_id}")
    mentions = re.findall(rf"(?<![\w.:]){re.escape(before)}(?![\w:]|\.\d)", target.content, re.IGNORECASE)
    # the old fact says more: other values, or a path or an identifier the new one lacks ("certs in
    # /etc/medroute/tls" beside the host that moved)
    more = _specific_tokens(target.content) - _specific_tokens(fact) - {before}
    if len(mentions) == 1 and (_says_more(target.content, fact, before) or more):
        rewrite = _replaced(target.content, before, after)
        return replace(
            decision, reason=decision.reason + "; the rest of it kept", rewrite=rewrite, values=found[1:]
        )
    return replace(decision, values=found[1:])

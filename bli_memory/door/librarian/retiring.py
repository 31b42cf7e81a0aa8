"""What a correction names as retired: a thing it says was replaced, moved or dropped. Pure.

A fact that names what it retires, in one of :data:`RETIRING_SHAPES` ("moved the broker from Redis to
RabbitMQ", "amqp://… now, not redis://…", "switched yarn for pnpm", "Sentry was replaced by
Honeybadger", "Jenkins is gone, use …", "the Charts component is no longer requested", "`.glsl`
files ported to `.hlsl`"), updates the fact that still states the retired thing (:func:`retires`),
when the two share a word of their subject (stemmed: "dependency" meets "dependencies") or the
retired thing is a name no other subject shares (a URL, a path, a digit); "from Redis to RabbitMQ"
about the broker leaves "sessions are cached in Redis" alone. A shape that needs such a name takes
any name when the old fact states it after the same two words ("bundled with Vite, not Webpack" after
"bundled with Webpack"). A host may be retired by its first label ("moved from pg-staging to
db-stg.spokes.internal").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from bli_memory.door.librarian.corrections import stems
from bli_memory.door.librarian.values import host_of, is_file, is_host, value_tokens
from bli_memory.door.librarian.words import NOT_ANCHORS as _NOT_ANCHORS
from bli_memory.door.librarian.words import names_one_thing, tokens

#: words too weak to name a subject or a retired thing.
WEAK_CONTEXT = frozenset("it this that we i you they the a an is are to of".split())
#: a fact that opens by saying it corrects something: "Correction: …", "Actually, …", "Change of plan: …".
DECLARED_CORRECTION = re.compile(r"^\W*(?:actually|correction|to correct|change of plan)\b", re.IGNORECASE)

#: one named thing a correction can retire or bring: a code span, or one token (a URL, a name).
_TERM = r"(?:`[^`\n]+`|[^\s,;`()]+)"
#: a term that opens a shape starts at a word's start: from inside a long token the pattern was
#: tried again at every character.
_TERM_START = r"(?<![^\s(\"'])"
#: a word naming what kind of thing a name is ("the Charts component"), between the name and its verb.
_KIND = (
    r"(?:component|module|package|library|plugin|dependency|service|step|job|target|flag|script|tool|file|option|"
    r"subdomain|domain|host|hostname|server|endpoint|url|bucket|cluster|instance)s?"
)
#: words that never name a retired thing ("from the", "not a").
_NOT_TERMS = WEAK_CONTEXT | _NOT_ANCHORS | frozenset("here there yet".split())


@dataclass(frozen=True, slots=True)
class RetiringShape:
    """A sentence shape in which a fact names a thing it retires (`old`) and, mostly, what replaces
    it (`new`). `needs` says what the old thing must look like, because some shapes also contrast
    without retiring: "word" (any word: the verb says it changed), "named" (a code span, a digit, a
    capital or punctuation inside: "tests run in CI, not locally" retires nothing) or "specific" (a
    URL, a path, a digit: "uploads go through S3 instead of the API" leaves the API in place), eased
    to "named" when the fact also says it is a correction ("now", "actually"). `example` is a fact of
    that shape, and `retires` what it retires."""

    name: str
    pattern: re.Pattern[str]
    needs: Literal["word", "named", "specific"]
    example: str
    retires: str


#: the shapes of a correction that names what it replaces, however the correction is worded; the
#: tests iterate the examples.
RETIRING_SHAPES: tuple[RetiringShape, ...] = (
    RetiringShape(
        "moved from old to new",
        re.compile(
            r"\b(?:moved|moving|switched|switching|migrated|migrating|changed|changing|went|cut over|ported|"
            r"upgraded|downgraded|bumped|raised|lowered|increased|reduced|dropped|renamed|replaced)\b[^.;]{0,60}?"
            rf"\bfrom\s+(?:the\s+|our\s+)?(?P<old>{_TERM}(?:\s+[A-Z][\w.-]*)?)\s+(?:over\s+)?(?:to|onto|into)\s+"
            rf"(?P<new>{_TERM})",
            re.IGNORECASE,
        ),
        "word",
        "We moved the message broker from Redis to RabbitMQ last week.",
        "redis",
    ),
    RetiringShape(
        "moved off old",
        re.compile(
            r"(?:\b(?:moved|moving|migrated|migrating|switched|switching|went|got)(?:\s+[\w-]+){0,5}?"
            r"|\b(?:is|are|was|were|now)|'re|'s)(?:\s+(?:finally|now|already|fully))?\s+off\s+"
            rf"(?:of\s+)?(?:the\s+|our\s+)?(?P<old>{_TERM}(?:\s+(?-i:[A-Z])[\w.-]*|\s+v?\d[\w.]*)?)"
            rf"(?:[^.;]{{0,40}}?\s(?:to|onto|on|at)\s+(?P<new>{_TERM}))?",
            re.IGNORECASE,
        ),
        "named",
        "The build runner is off tavi-desktop and now runs on lf-build01.",
        "tavi-desktop",
    ),
    RetiringShape(
        "renamed old to new",
        re.compile(
            rf"\b(?:renamed|replaced|swapped|switched|traded|exchanged)\s+(?:the\s+|our\s+)?(?P<old>{_TERM})\s+"
            rf"(?:to|with|for|by)\s+(?P<new>{_TERM})",
            re.IGNORECASE,
        ),
        "word",
        "We switched yarn for pnpm in every package.",
        "yarn",
    ),
    RetiringShape(
        "old replaced by new",
        re.compile(
            rf"{_TERM_START}(?P<old>{_TERM})\s+(?:(?:is|are|was|were|has been|have been|got)\s+)?"
            rf"(?:renamed|replaced|superseded|swapped out)\s+(?:to|by|with|for)\s+(?:the\s+)?(?P<new>{_TERM})",
            re.IGNORECASE,
        ),
        "named",
        "Sentry was replaced by Honeybadger for error tracking.",
        "sentry",
    ),
    RetiringShape(
        "old ported to new",
        re.compile(
            rf"{_TERM_START}(?P<old>{_TERM})\s+(?:(?:files|sources|code|modules|calls|jobs)\s+)?"
            r"(?:(?:is|are|was|were|has been|have been)\s+)?(?:ported|converted|rewritten|translated)\s+"
            rf"(?:over\s+)?(?:to|into)\s+(?P<new>{_TERM})",
            re.IGNORECASE,
        ),
        "named",
        "`shaders/`: all 34 `.glsl` files ported to `.hlsl`.",
        ".glsl",
    ),
    RetiringShape(
        "new, not old",
        re.compile(
            rf"{_TERM_START}(?P<new>{_TERM}),?\s+(?:now,?\s+)?not\s+(?:(?:from|in|on|at|with|by|via|through|for)\s+)?"
            rf"(?:the\s+)?(?P<old>{_TERM})",
            re.IGNORECASE,
        ),
        "specific",
        "The broker URL is amqp://mq.internal:5672 now, not redis://cache:6379/0.",
        "redis://cache:6379/0",
    ),
    RetiringShape(
        "not old but new",
        re.compile(
            rf"\bnot\s+(?:the\s+)?(?P<old>{_TERM}),?\s+but\s+(?:the\s+)?(?P<new>{_TERM})", re.IGNORECASE
        ),
        "named",
        "The default branch is not `master` but `main`.",
        "master",
    ),
    RetiringShape(
        "new instead of old",
        re.compile(
            rf"{_TERM_START}(?P<new>{_TERM})\s+(?:instead of|rather than|in place of|replacing)\s+(?:the\s+)?(?P<old>{_TERM})",
            re.IGNORECASE,
        ),
        "specific",
        "Deploys now go through ArgoCD instead of Jenkins.",
        "jenkins",
    ),
    RetiringShape(
        "old is gone",
        re.compile(
            rf"{_TERM_START}(?P<old>{_TERM})(?:\s+{_KIND})?\s+(?:(?:is|are|was|were|has been|have been)\s+)?(?:now\s+)?"
            r"(?:gone|retired|deprecated|removed|dead|decommissioned|dropped|shut down|turned off|switched off|"
            r"powered off|taken offline|"
            r"no longer (?:\w+ed|used|needed|in use|exists?|supported|available))\b",
            re.IGNORECASE,
        ),
        "named",
        "Jenkins is gone, use the GitHub Actions workflow.",
        "jenkins",
    ),
    RetiringShape(
        "no longer uses old",
        re.compile(
            r"\b(?:no longer (?:use|uses|using|run|runs|need|needs)|stopped using|got rid of)\s+"
            rf"(?:the\s+|our\s+)?(?P<old>{_TERM})",
            re.IGNORECASE,
        ),
        "named",
        "We no longer use Memcached; sessions live in Postgres.",
        "memcached",
    ),
)


def _term(raw: str) -> str:
    """A term as compared: lower case, without its backticks and the punctuation that closed the
    sentence around it."""
    return raw.strip("`").rstrip(".,;:!?)'\"").lower()


#: a fact that says it states how things are now: "… is X now", "now uses X", "actually".
_SAYS_NOW = re.compile(r"\bnow\b|^\W*actually\b", re.IGNORECASE)


def _looks(raw: str, needs: str) -> bool:
    """Whether a retired thing looks as its shape needs: any word; a name (a code span, or a token
    with a digit, a capital or punctuation inside); or a specific name (`words.names_one_thing`)."""
    bare = raw.rstrip(".,;:!?)'\"")
    if needs == "word":
        return True
    if needs == "specific":
        return names_one_thing(_term(raw))
    return (
        bare.startswith("`")
        or any(ch.isdigit() or ch.isupper() for ch in bare)
        or any(ch in "._-/:@#" for ch in bare.strip("`")[1:-1])
    )


def retired_terms(text: str, eased: bool = False) -> list[tuple[str, str]]:
    """(retired term, new term or "") for each thing the fact names as replaced, in any of
    :data:`RETIRING_SHAPES`; `eased`: a shape that needs a specific name takes any name."""
    out: list[tuple[str, str]] = []
    declared = eased or bool(_SAYS_NOW.search(text) or DECLARED_CORRECTION.match(text))
    for shape in RETIRING_SHAPES:
        needs = "named" if declared and shape.needs == "specific" else shape.needs
        for match in shape.pattern.finditer(text):
            raw_old = match.group("old")
            old = _term(raw_old)
            if len(old) < 2 or old in _NOT_TERMS or not _looks(raw_old, needs):
                continue
            new = _term(match.groupdict().get("new") or "")
            if old != new and (old, new) not in out:
                out.append((old, new if new not in _NOT_TERMS else ""))
    return out


#: the shortest name whose environment variables (`NAME_API_KEY`) name it too: "CI_" or "APP_" are
#: every tool's prefix.
ENV_PREFIX_MIN_CHARS = 4


def mentions(text: str, term: str) -> bool:
    """Whether a fact names the term as a whole (not inside a longer name), or, for a URL, a URL of
    the same host, or, for a plain word, an environment variable it heads (`POSTMARK_API_KEY`)."""
    lowered = text.lower()
    if re.search(rf"(?<![\w./-]){re.escape(term)}(?![\w/-]|\.\w)", lowered):
        return True
    if term.isalpha() and len(term) >= ENV_PREFIX_MIN_CHARS:
        # a setting named for the thing is the thing's: "POSTMARK_API_KEY" after "Postmark is gone"
        return (
            re.search(rf"(?<![\w.-]){re.escape(term.upper())}_[A-Z0-9_]*[A-Z0-9](?![\w-])", text) is not None
        )
    if "://" in term:
        if term.split("://", 1)[1] in {"…", "..."}:  # "not redis://…": any address of that scheme
            return any(token.startswith(term.split("://", 1)[0] + "://") for token in value_tokens(text))
        return any(host_of(token) == host_of(term) for token in value_tokens(text) if "://" in token)
    return False


#: stems of the words that say a thing changed: shared by a correction and its old fact, they say
#: nothing about the two being about the same subject.
CHANGE_STEMS = stems("moved switched migrated replaced renamed changed ported bumped upgraded now")


def _same_slot(new_text: str, new_term: str, old_text: str, old_term: str) -> bool:
    """Whether the old fact states the old thing after the same two words as the new fact states the
    new one ("bundled with Vite, not Webpack" after "bundled with Webpack")."""
    new_words, old_words = tokens(new_text), tokens(old_text)
    if new_term not in new_words or old_term not in old_words:
        return False
    before_new = new_words[max(0, new_words.index(new_term) - 2) : new_words.index(new_term)]
    before_old = old_words[max(0, old_words.index(old_term) - 2) : old_words.index(old_term)]
    return len(before_new) == 2 and before_new == before_old and any(w not in _NOT_TERMS for w in before_new)


def _host_named_by_label(old_text: str, term: str, new_term: str) -> str | None:
    """The host of the old fact that a retired term names by its first label: "moved from pg-staging to
    db-stg.spokes.internal" retires `pg-staging.spokes.internal` (a new host on the same parent
    domain), "the old api-staging subdomain is gone" retires `api-staging.tandemtalk.app` (a label with a
    hyphen or a digit names one host alone)."""
    if "." in term or not term.replace("-", "").isalnum():
        return None
    new_host = host_of(new_term)
    # a new host on the same parent domain, or a label specific enough alone ("api-staging is gone")
    parent = new_host.split(".", 1)[-1] if is_host(new_host) else None
    if parent is None and not any(ch == "-" or ch.isdigit() for ch in term):
        return None
    for token in value_tokens(old_text):
        host = host_of(token)
        named = is_host(host) and not is_file(host) and host.split(".", 1)[0] == term
        if named and (parent is None or host.split(".", 1)[1] == parent or "-" in term):
            return token if "://" in token else host  # a URL is retired whole, as `mentions` reads one
    return None


#: a new host put in place of one the fact only describes: "CH is on ch-prod-2.corp instead of the old
#: analytics box now" (the words of the description name the old host's first label).
_DESCRIBED_OLD_HOST = re.compile(
    rf"{_TERM_START}(?P<new>{_TERM})\s+(?:instead of|rather than|in place of|replacing)\s+(?:the|our)\s+"
    r"(?:old|former|previous)\s+(?P<desc>[A-Za-z][\w-]*(?:\s[A-Za-z][\w-]*)?)\s+"
    r"(?:box|server|host|machine|instance|vm|node|database|db|cluster)\b",
    re.IGNORECASE,
)


#: a host name as an internal network writes one: labels of letters, digits and hyphens ("ch-2.ff-internal")
_HOST_LIKE = re.compile(r"[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)+", re.IGNORECASE)


def _described_host(new_text: str, old_text: str) -> tuple[str, str] | None:
    """(old host, new host) when the new fact puts a host in place of "the old <words> box" and the old
    fact states a host on the same parent domain whose first label holds one of those words."""
    for match in _DESCRIBED_OLD_HOST.finditer(new_text):
        new_term = _term(match.group("new"))
        new_host = host_of(new_term)
        if not _HOST_LIKE.fullmatch(new_host) or is_file(new_host) or mentions(old_text, new_term):
            continue
        parent = new_host.split(".", 1)[1]
        described = {word.lower() for word in match.group("desc").split()} - _NOT_TERMS
        for token in value_tokens(old_text):
            host = host_of(token)
            if not _HOST_LIKE.fullmatch(host) or is_file(host) or host == new_host:
                continue
            label, rest = host.split(".", 1)
            if rest == parent and described & set(label.lower().split("-")):
                return host, new_host
    return None


def retires(new_text: str, old_text: str) -> tuple[str, str] | None:
    """The term the new fact retires that the old fact still states as current: the old fact names
    it, does not name its replacement, and the two share a word of their subject ("broker") unless
    the term is a name no other subject shares (a URL, a path, a versioned identifier) or the new
    fact retires it with nothing in its place ("Jenkins is gone": no fact about it is current).
    "From Redis to RabbitMQ" about the broker leaves "sessions are cached in Redis" alone."""
    strict = retired_terms(new_text)
    retired_by_old: set[str] | None = None  # what the old fact retires itself, read once when needed
    for said, new_term in strict + [t for t in retired_terms(new_text, eased=True) if t not in strict]:
        old_term = (
            said if mentions(old_text, said) else _host_named_by_label(old_text, said, new_term) or said
        )
        if not mentions(old_text, old_term) or (new_term and mentions(old_text, new_term)):
            continue
        if retired_by_old is None:
            retired_by_old = {term for term, _new in retired_terms(old_text)}
        if old_term in retired_by_old:
            continue  # the old fact retires it too: history, not the current value
        if (said, new_term) not in strict and not _same_slot(new_text, new_term, old_text, old_term):
            continue  # "S3 instead of the API" leaves "the API accepts uploads" alone
        terms = stems(f"{old_term} {new_term}")
        shared = stems(new_text) & stems(old_text) - CHANGE_STEMS
        if shared - terms or names_one_thing(old_term) or not new_term:
            return old_term, new_term
    return _described_host(new_text, old_text)

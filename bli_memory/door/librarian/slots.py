"""A value moved in its slot: the correction that names no old value and repeats no old wording. Pure.

People correct by naming the new value only: "kindly shift the local Jetty to 3030" after "Local
server is Jetty … listening on port 8280"; "she wants the free delivery cut-off raised to £50" after
"free delivery on UK orders over £40"; "regression sign-off on staging will henceforth come from
Suresh Pillai" after "the offshore QA team (Meenakshi Iyer is the lead) will do regression on staging
builds"; a reply's `hp = pkgs.haskell.packages.ghc966;` after "… haskell.packages.ghc964". What ties
the two is the slot, not the wording:

- a value of the same kind on both sides: a port, a count of time in any spelling of its unit ("36h",
  "96 hours"), a sum in the same currency, a version of the same release line, a cloud region, a
  person holding a role, or a name whose other parts are the same (`quietfern/ropewalk` ->
  `brambleshed/ropewalk`, `haskell.packages.ghc964` -> `…ghc966`);
- words that meet around the two values (a thing named near each: "Jetty", "free delivery"), two for
  a sum or a person (a role is held over something), none for a name (its other parts are the slot);
- the exchange says something changed (a change word in the statement, in the prose line that opens
  the block holding it, or in the user's message), or the block is a diff;
- and the exchange never names the old value (but in a diff's removed line): one that still names it
  is no retirement of it.

A value said to hold as before ("is still 180ms"), a range's bound ("<1.8.0"), a measure ("~50s",
"(38s)", a test runner's report line) and a version inside a built package's name are no new value.

`statements` reads an exchange's change statements (the job searches the space with each);
`moved_value` judges one stored fact against one of them. `reconcile` judges a stored fact against
a new fact by its wording; this reads the whole exchange, so a correction the extraction did not keep
as a fact (a line of a config block, a request) still reaches the fact it corrects.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from bli_memory.door.librarian.corrections import numbered_siblings
from bli_memory.door.librarian.diffs import is_diff, segments
from bli_memory.door.librarian.roles import NAME_WORD, PERSON, names_a_role
from bli_memory.door.librarian.values import FILE_EXTENSIONS, closed_ranges, is_host
from bli_memory.door.librarian.words import NOT_ANCHORS, compound_parts, is_anchor, stem, tokens

#: a statement that says something changed: a verb of change, a switch of holder, or a time from
#: which a value holds ("from here on", "henceforth", "since last week", "now").
_CHANGE = re.compile(
    r"\b(?:now|henceforth|hereafter|from\s+(?:now|here|today|monday|tomorrow)\s+on|going\s+forward|"
    r"from\s+now|since\s+(?:last|this|yesterday|today)\b|no\s+longer|any\s?more|instead|"
    r"(?:re)?mov(?:e|es|ed|ing)|shift(?:s|ed|ing)?|switch(?:es|ed|ing)?|chang(?:e|es|ed|ing)|"
    r"updat(?:e|es|ed|ing)|bump(?:s|ed|ing)?|rais(?:e|es|ed|ing)|lower(?:s|ed|ing)?|"
    r"increas(?:e|es|ed|ing)|decreas(?:e|es|ed|ing)|upgrad(?:e|es|ed|ing)|downgrad(?:e|es|ed|ing)|"
    r"migrat(?:e|es|ed|ing)|replac(?:e|es|ed|ing)|renam(?:e|es|ed|ing)|repoint(?:s|ed|ing)?|"
    r"offload(?:s|ed|ing)?|hand(?:s|ed|ing)?\s+(?:it\s+)?over|t(?:ake|akes|ook|aken|aking)\s+over|"
    r"went|goes\s+to|go\s+to|lives?\s+on|lives?\s+(?:at|in)|points?\s+(?:at|to))\b",
    re.IGNORECASE,
)
#: a line of a tool's run report ("✓ src/a.test.ts (6 tests) 15ms", "ok  pkg 0.8s", "PASS …"): its
#: numbers are measures of that run.
_RUN_REPORT = re.compile(r"\s*(?:[✓✔✗✘×√]|(?:PASS|FAIL|ok|FAILED|PASSED)\b)")
#: a sentence of prose: up to its end mark, which a space or the end follows.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
#: a sum of money: a currency sign and an amount ("£50", "$1,200.00").
_MONEY = re.compile(r"(?<![\w])([£$€])\s?(\d{1,3}(?:,\d{3})*(?:\.\d{1,2})?|\d+(?:\.\d{1,2})?)(?![\d])")
#: a version: two to four numeric parts, a "v" allowed before ("4.3", "v2.7.0", "Godot_v4.3-stable").
_VERSION = re.compile(r"(?:(?<![\w.£$€])|(?<=[_-]))v?(\d+)\.(\d+)(?:\.\d+){0,2}(?![\w%]|\.\d)")
#: a whole number on its own, not a part of a version, a date, a time or a name.
_INTEGER = re.compile(r"(?<![\w.,:/£$€-])(\d{1,5})([a-z]{1,3})?(?![\w%]|[.,:/]\d)")
#: a number right after a host and a colon ("localhost:3030", "db.internal:5432") is a port.
_COLON_PORT = re.compile(r"(?<=[\w\]]):(\d{2,5})(?!\d)")
#: the longest host name read back from a port's colon.
HOST_MAX_CHARS = 253
#: a host a port follows: a name with a dot in it, or the machine itself.
_HOST_BEFORE = re.compile(r"localhost|\[::1\]|[\w-]*\.[\w.-]*")
#: a text that speaks of a port ("port 8080", "the app's port", `KELP_PORT`).
_PORT_WORD = re.compile(r"(?:\b|_)ports?\b", re.IGNORECASE)
#: words after a number that are no unit of it ("7311 behind nginx", "60 via the proxy").
_NOT_UNITS = frozenset(
    "behind before after via from into onto inside outside across between for with".split()
)
#: words right before a number that make it a measure ("~50s", "took 38s", "about 40 minutes").
_ABOUT = re.compile(
    r"(?:[~≈]|\b(?:about|around|roughly|approx(?:imately)?|took|takes|took about))\s*$", re.IGNORECASE
)
MEASURE_REACH_CHARS = 20
#: the marks of a version range's bound (">=1.8.0", "<1.9.0"): a bound, not the version in use.
_BOUND_BEFORE = re.compile(r"[<>]=?$")
#: the spellings of a unit of time, each to its one name.
_TIME_UNITS = {
    **dict.fromkeys("ms msec msecs millisecond milliseconds".split(), "millisecond"),
    **dict.fromkeys("s sec secs second seconds".split(), "second"),
    **dict.fromkeys("min mins minute minutes".split(), "minute"),
    **dict.fromkeys("h hr hrs hour hours".split(), "hour"),
    **dict.fromkeys("d day days".split(), "day"),
    **dict.fromkeys("w wk wks week weeks".split(), "week"),
}
#: the stems of those spellings, which say the unit again and nothing of what is counted.
_UNIT_STEMS = frozenset(stem(word) for word in _TIME_UNITS)
#: units after a number that make it a size, a time or a share, not a version.
_UNITS = frozenset("b kb mb gb tb kib mib gib ms s sec secs seconds min mins minutes h hours x % px".split())
#: words any port stands beside, which say nothing of what listens on it.
_ADDRESS_WORDS = frozenset(stem(word) for word in "port ports addr address host url listen bind".split())
#: ports a service is given by choice (1024 and 65535 are the bounds of a range), and the years a bare
#: number may be.
PORT_MIN, PORT_MAX = 1025, 65534
YEAR_MIN, YEAR_MAX = 1990, 2099
#: a cloud region: `eu-west-1` (AWS), `europe-west4` (Google Cloud); a deployment's one place, most often.
_REGION = re.compile(
    r"(?<![\w-])(?:(?:us|eu|ap|sa|ca|me|af|il|mx)-(?:gov-)?|(?:europe|asia|australia|northamerica|"
    r"southamerica|africa)-)(?:north|south|east|west|central|northeast|southeast|northwest|southwest)-?\d(?![\w-])"
)
#: a name with a number in it, read for numbered siblings ("service-3", "db-2").
_NAME_TOKEN = re.compile(r"(?<![\w.-])[A-Za-z][\w-]*\d[\w-]*")
#: a name made of parts joined by marks ("quietfern/ropewalk", "haskell.packages.ghc964").
_JOINED = re.compile(r"(?<![\w./@:-])[A-Za-z][\w-]*(?:[./][\w-]+)+(?![\w/@-]|\.\w)")
#: the endings of built packages and images, a version inside whose name is a build's, not a setting.
PACKAGE_EXTENSIONS = "apk|aab|ipa|dmg|msi|deb|rpm|whl|nupkg|gem|crate|bin|img|iso|tpz|pck|zst|xz|bz2|7z"
_FILE = re.compile(rf"\.(?:{FILE_EXTENSIONS}|{PACKAGE_EXTENSIONS})$", re.IGNORECASE)
#: parts that name one of several places a thing runs side by side: a name differing in one of them
#: is a sibling (`tarn-uat-compute`, `tarn-prod-compute`), not a new value.
_SIDE_BY_SIDE = frozenset(
    "prod production staging stage stg uat dev development test testing qa live preview local sandbox "
    "main master release canary beta alpha stable nightly windows linux macos mac darwin ios android "
    "web arm64 amd64 x86_64 x64 primary replica standby read write public private internal admin".split()
)
#: a joined name's fewest pieces: a part, a mark, a part.
NAME_MIN_PARTS = 3
#: letters a name's unchanged parts must hold to be a slot ("ropewalk", not "a").
NAME_SLOT_MIN_LETTERS = 4
#: the shortest word that may say what a value belongs to.
CONTEXT_WORD_MIN_CHARS = 3
#: words on each side of a value that say what it belongs to.
CONTEXT_BEFORE_WORDS = 12
CONTEXT_AFTER_WORDS = 1
#: words a person's two statements must share beyond the names (what the role is held over).
PERSON_MIN_SHARED = 2
#: how far from a name (in characters, each side) a word of holding makes it a person's.
HOLDER_REACH_CHARS = 24
#: words that must meet around two counts in one unit, besides the unit ("reserved for 12 minutes" and
#: "seats held for 8 minutes": held, reserved differ, seats meets).
NUMBER_MIN_SHARED = 1
#: words that must meet around two sums of money (prices, fees and thresholds are everywhere).
MONEY_MIN_SHARED = 2
#: words that say a value holds as it did, and how far before it they reach.
_STILL = re.compile(r"\b(?:still|stays?|remains?|unchanged|untouched|as before)\b", re.IGNORECASE)
STILL_REACH_CHARS = 24
#: exchanges whose names and kept lines are remembered: one job judges many facts against one exchange.
EXCHANGES_CACHED = 4
#: the most statements one exchange is read for (each costs a search of the space).
MAX_STATEMENTS = 16
#: words of a request or of a change, which say nothing of what a value belongs to.
_NOT_CONTEXT = frozenset(
    stem(word)
    for word in (
        "please pls kindly want wants need needs make made add added let lets get got going "
        "move moves shift switch change update bump raise lower increase decrease upgrade downgrade "
        "migrate replace rename offload take over hand went goes go lives live point points "
        "henceforth hereafter forward since last week today yesterday monday from here instead longer "
        "anymore more did do does done has have had will would should could can may might must "
        "i'm i've i'd he she him her his they them their us me my mine through who whom what which when where "
        "after before about across within without between behind beside summary note listening pointing "
        "going getting making doing having being saying called named pin pinned keep kept stay stays "
        "lock locked latest".split()
    )
)


#: words that say a person holds or answers for a thing, besides those of an owner (`roles`).
_HOLDER = re.compile(
    r"\b(?:holders?|holds|chair|in\s+charge|responsible|sign(?:s|ed)?[\s-]?off|point\s+of\s+contact|"
    r"go(?:es)?\s+to|handles?|manages|ask)\b",
    re.IGNORECASE,
)
#: capitalised words that open a sentence or greet, read as a name's first word by a name's pattern.
_OPENERS = frozenset(
    "Hello Hi Hey Dear Thanks Thank Please Kindly Also And But So The This That These Those Our My "
    "Your We It Its If When Then Now Next Note Update Moved Changed Today Yesterday Tomorrow".split()
)


@dataclass(frozen=True, slots=True)
class Value:
    """One value a text states: its text as written, its kind, and what it is in (stems of the words
    around it; a number's unit, the word right after it)."""

    text: str
    kind: str
    context: frozenset[str]
    unit: str | None = None
    major: str | None = None


@dataclass(frozen=True, slots=True)
class Move:
    """A stored fact's value that a statement moves: the old value, the new one as the statement
    writes it, and the stored fact rewritten with it."""

    old: str
    new: str
    text: str
    #: how many words meet around the two values (0 for a joined name, whose parts are the slot).
    shared: int = 0


def statements(exchange: str) -> list[str]:
    """The statements of an exchange that say a value changed: each prose sentence with a change word
    and a value, then each line with a value of a fenced block that a change word opens (the last prose
    line before it), that answers a message asking for a change or that is a diff (its removed lines
    left out); in order, once each, at most MAX_STATEMENTS."""
    prose: list[str] = []
    lines: list[str] = []
    last_prose = ""
    asked = _asked_change(exchange)
    full_names = _full_names(exchange)
    for language, part in segments(exchange):
        if language is not None:
            block_changes = asked or bool(_CHANGE.search(last_prose))
            lines.extend(_block_statements(part, language, full_names, block_changes))
            continue
        for line in part:
            if line.strip():
                last_prose = line
            for sentence in _SENTENCE_END.split(line):
                if (
                    _CHANGE.search(sentence)
                    and not sentence.rstrip().endswith("?")
                    and _values(sentence, full_names, scope=line)
                ):
                    prose.append(sentence.strip())
    return list(dict.fromkeys([*prose, *lines]))[:MAX_STATEMENTS]


def _block_statements(
    block: list[str], language: str, full_names: dict[str, str], changes: bool
) -> list[str]:
    """The lines of one fenced block that state a value, when a change opens it or it is a diff (which
    is a change itself); a diff's removed lines state the old value and are left out."""
    diff = is_diff(language, block)
    if not (changes or diff):
        return []
    return [
        line.strip()
        for line in block
        if not (diff and line.startswith("-")) and not _RUN_REPORT.match(line) and _values(line, full_names)
    ]


def _asked_change(exchange: str) -> bool:
    """Whether the user's message of an exchange ("User: …" up to the reply) says something changed."""
    head, _, _ = exchange.partition("\n\nAssistant:")
    return head.startswith("User:") and any(
        _CHANGE.search(sentence) and not sentence.rstrip().endswith("?")
        for sentence in _SENTENCE_END.split(head)
    )


def moved_value(stored: str, statement: str, exchange: str) -> Move | None:
    """The move `statement` makes of a value `stored` states in the same slot, or None: the two
    values of one kind, their words meeting, the old value named nowhere in `exchange`. Of several,
    the pair whose words meet most, then the more specific new value."""
    best: tuple[int, Value, Value] | None = None
    full_names = _full_names(exchange)
    new_values = [
        value
        for value in _values(statement, full_names, scope=_scope(exchange, statement))
        if not (_kept_as_is(statement, value.text) or _bound(statement, value))
    ]
    old_values = _values(stored)
    kept = _without_removed_lines(exchange)
    if _about_siblings(stored, statement):
        return None
    for old in old_values:
        if _named_in(kept, old) or _history(old, old_values, new_values):
            continue
        for new in new_values:
            shared = _slot_shared(old, new, stored, statement)
            if shared is None:
                continue
            if best is None or (shared, len(new.text)) > (best[0], len(best[2].text)):
                best = (shared, old, new)  # of two as near, the more specific ("1.8.7" over "1.8")
    if best is None:
        return None
    _, old, new = best
    written = (
        new.text[1:] if old.kind == "version" and new.text[:1] == "v" and old.text[:1] != "v" else new.text
    )
    text = with_value_moved(stored, old.text, written)
    return None if text is None else Move(old.text, written, text, best[0])


def _about_siblings(stored: str, statement: str) -> bool:
    """Whether the two name numbered siblings ("service-3" and "service-5", "db-1" and "db-2"): each
    is about its own thing, whose values are no old and new value of one."""
    names = [
        {token for token in _NAME_TOKEN.findall(text) if any(ch.isdigit() for ch in token)}
        for text in (stored, statement)
    ]
    return any(
        numbered_siblings(a.lower(), b.lower()) for a in names[0] - names[1] for b in names[1] - names[0]
    )


@functools.lru_cache(maxsize=EXCHANGES_CACHED)
def _without_removed_lines(exchange: str) -> str:
    """The exchange without its diffs' removed lines: a line a diff removes names the old value to
    retire it, as a correction that names no old value would have."""
    out: list[str] = []
    for language, lines in segments(exchange):
        diff = language is not None and is_diff(language, lines)
        out.extend(line for line in lines if not (diff and line.startswith("-")))
    return "\n".join(out)


def _bound(statement: str, value: Value) -> bool:
    """Whether a statement gives a version as a range's bound ("depends on dbt-core<1.8.0"): a limit,
    not the version now in use (a stored range, "stays inside `>=5.1,<5.2`", is the pin it moves)."""
    at = statement.find(value.text)
    return (
        value.kind == "version"
        and at >= 0
        and _BOUND_BEFORE.search(statement[max(0, at - 2) : at]) is not None
    )


def _kept_as_is(statement: str, value: str) -> bool:
    """Whether the statement says a value holds as it did ("the p99 target is still 180ms")."""
    at = statement.find(value)
    return at >= 0 and _STILL.search(statement[max(0, at - STILL_REACH_CHARS) : at]) is not None


def _scope(exchange: str, statement: str) -> str:
    """The line of the exchange a statement stands in (the paragraph that says what its numbers are)."""
    return next((line for line in exchange.splitlines() if statement in line), statement)


def _history(old: Value, stored_values: list[Value], new_values: list[Value]) -> bool:
    """Whether a stored fact states another version of the old one's line in the same words, which the
    statement does not ("replaced `pragma solidity ^0.8.20;` with `pragma solidity 0.8.24;`"): a
    history of the thing, which no one value rewrites."""
    if old.kind != "version":
        return False
    news = {value.text.lstrip("v") for value in new_values}
    return any(
        value.kind == "version"
        and value.major == old.major
        and value.text != old.text
        and value.text.lstrip("v") not in news
        and value.context & old.context
        for value in stored_values
    )


def _slot_shared(old: Value, new: Value, stored: str, statement: str) -> int | None:
    """How many words meet around two values of one slot; None when they are not of one slot."""
    if old.text.lower() == new.text.lower() or not _same_kind(old, new):
        return None
    if old.kind == "name":
        return 0 if _one_part_moved(old.text, new.text) else None
    if old.kind == "person":
        if _named_in(stored, new) or set(old.text.split()) & set(new.text.split()):
            return None
        if not (_holder_near(stored, old.text) and _holder_near(statement, new.text)):
            return None  # "Google Cloud", "Messaging Service": two capitalised words name things too
        role = _words(_sentence_of(stored, old.text), old.text) & _words(statement, new.text)
        return len(role) if len(role) >= PERSON_MIN_SHARED else None
    if old.kind == "version" and old.major != new.major:
        return None
    shared = old.context & new.context
    if old.kind == "port":
        shared -= _ADDRESS_WORDS  # every port is a port of an address: what listens there must meet
    if old.kind.startswith("money"):
        # prices, fees and thresholds are everywhere: two words must say which one
        return len(shared) if len(shared) >= MONEY_MIN_SHARED else None
    if old.kind == "number":
        # a count in a unit ("10 minutes", "50 messages") names many things: more must meet than the unit
        shared -= {old.unit, *_UNIT_STEMS}
        return len(shared) if len(shared) >= NUMBER_MIN_SHARED else None
    return len(shared) if shared else None


def _holder_near(text: str, name: str) -> bool:
    """Whether `text` says, right beside `name`, that it holds, owns or answers for something ("owned
    by Dana Whitfield", "Morag Tulloch (co-op chair, holder of …"): a name there is a person's."""
    for word in name.split()[:1]:
        for at in re.finditer(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text):
            near = text[max(0, at.start() - HOLDER_REACH_CHARS) : at.start() + len(name) + HOLDER_REACH_CHARS]
            if names_a_role(near) or _HOLDER.search(near):
                return True
    return False


def _same_kind(old: Value, new: Value) -> bool:
    """Two values of one kind: a port and a bare number of a port's size count as one."""
    if old.kind == new.kind:
        return old.kind != "number" or (old.unit is not None and old.unit == new.unit)
    ports = {old.kind, new.kind} == {"port", "number"}
    bare = new if new.kind == "number" else old
    return ports and bare.unit is None and PORT_MIN <= int(bare.text) <= PORT_MAX


def _one_part_moved(old: str, new: str) -> bool:
    """Two joined names alike but for one part (the longer read from its end: `pkgs.haskell.packages.
    ghc966` names what `haskell.packages.ghc964` did), the others holding a name's letters: a number
    moved inside a part (`ghc964` -> `ghc966`, `events.v2` -> `events.v3`), or the owner of an
    `owner/name` handle (`quietfern/ropewalk` -> `brambleshed/ropewalk`). Never a file or a host, nor
    two places run side by side (`uat`, `prod`): paths and dotted names differing by a word are
    siblings (`payments.raw.v1`, `payments.enriched.v1`)."""
    if _FILE.search(old) or _FILE.search(new) or is_host(old) or is_host(new):
        return False
    old_parts, new_parts = re.split(r"([./])", old), re.split(r"([./])", new)
    common = min(len(old_parts), len(new_parts))
    old_parts, new_parts = old_parts[len(old_parts) - common :], new_parts[len(new_parts) - common :]
    if common < NAME_MIN_PARTS:
        return False
    changed = [
        index for index, (a, b) in enumerate(zip(old_parts, new_parts, strict=True)) if a.lower() != b.lower()
    ]
    if len(changed) != 1:
        return False
    before, after = old_parts[changed[0]].lower(), new_parts[changed[0]].lower()
    kept = "".join(part for index, part in enumerate(old_parts) if index != changed[0])
    if sum(ch.isalpha() for ch in kept) < NAME_SLOT_MIN_LETTERS or {before, after} & _SIDE_BY_SIDE:
        return False
    if re.sub(r"\d", "", before) == re.sub(r"\d", "", after) and before.isalnum():
        return True
    handle = len(old_parts) == len(new_parts) == NAME_MIN_PARTS and old_parts[1] == "/" and changed[0] == 0
    return handle and before.isalnum() and after.isalnum()


def _values(text: str, full_names: dict[str, str] | None = None, scope: str | None = None) -> list[Value]:
    """The values `text` states, each with the words of its slot. A number is a port when `scope` (the
    text, or the paragraph a statement stands in) speaks of a port and no unit follows it."""
    found: list[tuple[int, Value]] = []
    taken: list[tuple[int, int]] = []
    ported = _PORT_WORD.search(scope if scope is not None else text) is not None

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    for match in _MONEY.finditer(text):
        taken.append(match.span())
        found.append(
            (match.start(), Value(match.group(0).replace(" ", ""), "money:" + match.group(1), frozenset()))
        )
    for match in _COLON_PORT.finditer(text):
        host = _run_before(text, match.start(), ".[]:-", HOST_MAX_CHARS).lstrip(":")
        named = _HOST_BEFORE.fullmatch(host) is not None
        if named and free(*match.span(1)) and PORT_MIN <= int(match.group(1)) <= PORT_MAX:
            taken.append(match.span())
            found.append((match.start(1), Value(match.group(1), "port", frozenset())))
    for match in _REGION.finditer(text):
        taken.append(match.span())
        found.append((match.start(), Value(match.group(0), "region", frozenset())))
    for match in _JOINED.finditer(text):
        if free(*match.span()) and not match.group(0).lower().startswith(("http", "www.")):
            found.append((match.start(), Value(match.group(0), "name", frozenset())))
    for match in _VERSION.finditer(text):
        if free(*match.span()) and not (
            _dotted_quad(text, match) or _unit_follows(text, match.end()) or _in_file_name(text, match)
        ):
            taken.append(match.span())
            found.append((match.start(), Value(match.group(0), "version", frozenset(), major=_line(match))))
    for match in _INTEGER.finditer(text):
        if not free(*match.span()):
            continue
        if _measured(text, match):
            continue
        number = int(match.group(1))
        glued = match.group(2)
        after = [glued] if glued else tokens(text[match.end() :])[:1]
        unit = (
            _unit(after[0])
            if after and (glued or is_anchor(after[0])) and after[0] not in _NOT_UNITS
            else None
        )
        if glued and unit not in _TIME_UNITS.values():
            continue  # "3x", "64k", "v2": no count of a time
        port = ported and unit is None and PORT_MIN <= number <= PORT_MAX
        if not port and (unit is None or YEAR_MIN <= number <= YEAR_MAX or number < 2):
            continue  # a bare count says nothing of what it counts; a year is no setting
        found.append((match.start(), Value(match.group(0), "port" if port else "number", frozenset(), unit)))
    for name in _people(text, full_names or {}):
        found.append((text.find(name.split()[0]), Value(name, "person", frozenset())))
    return _with_slots(text, sorted(found, key=lambda item: item[0]))


def _with_slots(text: str, found: list[tuple[int, Value]]) -> list[Value]:
    """Each value with the words of its slot: those before it back to the value of its kind before it
    (or its sentence's start), a version's or a name's own parts, and the word right after it."""
    out: list[Value] = []
    last_end: dict[str, int] = {}
    for start, value in found:
        if value.kind in ("name", "person"):
            out.append(value)
            continue
        kind = "number" if value.kind == "port" else value.kind
        end = start + len(value.text)
        whole = text[last_end.get(kind, 0) : start]
        head = whole[max(whole.rfind(". "), whole.rfind("\n"), -1) + 1 :]
        if not any(_stems(tokens(head))):  # "… on the fw:tt keys. 36h.": the thing is in the sentence before
            before = whole[: len(whole) - len(head)].rstrip(". \n")
            head = before[max(before.rfind(". "), before.rfind("\n"), -1) + 1 :] + " " + head
        if value.kind == "port":  # a host's name before its port is the host's, not what listens there
            head = head[: len(head.rstrip()) - len(head.rstrip().split()[-1])] if head.strip() else head
        tail = re.split(r"[.;!?,]\s|\n", text[end:], maxsplit=1)[0]
        words = tokens(head)[-CONTEXT_BEFORE_WORDS:] + tokens(tail)[:CONTEXT_AFTER_WORDS]
        if value.kind == "version":
            outside = re.match(r"[\w./-]*", text[end:])
            joined = _run_before(text, start, "./-") + (outside.group(0) if outside else "")
            words += compound_parts(joined.lower())
        last_end[kind] = end
        out.append(Value(value.text, value.kind, frozenset(_stems(words)), value.unit, value.major))
    return out


def _in_file_name(text: str, match: re.Match[str]) -> bool:
    """A version inside a file's name ("Hatchery-1.4.0.aab", "tool-2.1.0.tar.gz"): a build's."""
    after = re.match(r"[\w.+-]*", text[match.end() :])
    name = _run_before(text, match.start(), ".+-") + match.group(0) + (after.group(0) if after else "")
    return _FILE.search(name.rstrip(".")) is not None


def _measured(text: str, match: re.Match[str]) -> bool:
    """A number that reports a measure, not a setting: about so much ("~50s", "roughly 40 minutes") or
    a run's time alone in brackets ("(38s)"; "(7 days)" explains a setting)."""
    before = text[max(0, match.start() - MEASURE_REACH_CHARS) : match.start()]
    bracketed = (
        before.rstrip().endswith("(") and match.group(2) and text[match.end() : match.end() + 1] == ")"
    )
    return bool(bracketed) or _ABOUT.search(before) is not None


def _unit(word: str) -> str:
    """A unit as one name, whatever its spelling: "min", "mins", "minutes" -> minute; "h", "hrs" -> hour."""
    return _TIME_UNITS.get(word.lower(), stem(word.lower()))


def _run_before(text: str, end: int, marks: str, most: int = HOST_MAX_CHARS) -> str:
    """The run of word characters and `marks` that ends at `end`, at most `most` long (read back one
    character at a time: a pattern anchored at the end would be tried from every start of a long run)."""
    start = end
    while start > max(0, end - most) and (
        text[start - 1].isalnum() or text[start - 1] in marks or text[start - 1] == "_"
    ):
        start -= 1
    return text[start:end]


def _line(match: re.Match[str]) -> str:
    """The release line a version belongs to: its major number, or "0.minor" before 1.0 (where a
    minor release breaks as a major one does)."""
    major, minor = match.group(1), match.group(2)
    return f"0.{minor}" if major == "0" else major


def _unit_follows(text: str, end: int) -> bool:
    """A unit right after a number read as a version: "1.8 MB" is a size, "0.8 s" a time."""
    after = tokens(text[end : end + 12])[:1]
    return bool(after) and after[0] in _UNITS


def _dotted_quad(text: str, match: re.Match[str]) -> bool:
    """An address ("10.0.0.12") or a date ("2024.06.01") read as a version."""
    return match.group(0).count(".") >= 3 or bool(re.match(r"\.\d", text[match.end() :]))


def _people(text: str, full_names: dict[str, str]) -> Iterator[str]:
    """The people `text` names: whole names, and a first name alone that the exchange gives in full
    elsewhere ("go to Ewan" where "Ewan Baird, our treasurer, …" opens the message)."""
    seen: set[str] = set()
    for match in PERSON.finditer(text):
        if match.group(0).split()[0] in _OPENERS:
            continue  # "Hello Claude", "Kindly Note": a greeting or a word that opens a sentence
        seen.add(match.group(0))
        yield match.group(0)
    for match in re.finditer(rf"(?<![\w-])({NAME_WORD})(?![\w-])", text):
        full = full_names.get(match.group(1))
        if full and full not in seen and full not in text:
            seen.add(full)
            yield full


@functools.lru_cache(maxsize=EXCHANGES_CACHED)
def _full_names(exchange: str) -> dict[str, str]:
    """Each first name of a whole name the exchange gives, with that name; a first name two names
    share is left out."""
    names: dict[str, set[str]] = {}
    for match in PERSON.finditer(exchange):
        names.setdefault(match.group(0).split()[0], set()).add(match.group(0))
    return {first: next(iter(full)) for first, full in names.items() if len(full) == 1}


def _sentence_of(text: str, name: str) -> str:
    """The sentence of `text` that names `name`."""
    return next((part for part in _SENTENCE_END.split(text) if name in part), text)


def _words(text: str, name: str) -> set[str]:
    """The stems of a whole text's words that may say what a person is named for, the name's own out."""
    own = {stem(word.lower()) for word in name.split()}
    return set(_stems(tokens(text))) - own


def _stems(words: list[str]) -> Iterator[str]:
    """The stems of the words that may say what a value belongs to, compounds split: a thing's name,
    the noun of its setting ("billing", "shipping" among them, as "ship" and "bill")."""
    for word in words:
        for part in {word, *re.split(r"[-/_.:]", word)}:
            if len(part) < CONTEXT_WORD_MIN_CHARS or part in NOT_ANCHORS or any(ch.isdigit() for ch in part):
                continue
            if part.endswith("ly"):
                continue
            stemmed = stem(part)
            if part.endswith(("ing", "ed")) and len(stemmed) > 3 and stemmed[-1] == stemmed[-2]:
                stemmed = stemmed[:-1]  # "shipping" -> "ship", as "ships" is
            if stemmed not in _NOT_CONTEXT:
                yield stemmed


def _named_in(text: str, value: Value) -> bool:
    """Whether `text` names the value: as a whole token, or a person by any word of the name."""
    if value.kind == "person":
        return any(re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) for word in value.text.split())
    return re.search(rf"(?<![\w.-]){re.escape(value.text)}(?![\w-]|\.\d)", text, re.IGNORECASE) is not None


def with_value_moved(stored: str, old: str, new: str) -> str | None:
    """`stored` with each whole mention of `old` replaced by `new` (a range closed on itself then
    names the value alone); None when none is found."""
    pattern = re.compile(rf"(?<![\w.-]){re.escape(old)}(?![\w-]|\.\d)")
    text, count = pattern.subn(lambda _: new, stored)
    return closed_ranges(text) if count else None

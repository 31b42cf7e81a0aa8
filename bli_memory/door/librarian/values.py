"""The values a fact states, and the words that name what each is the value of. Pure (no I/O).

A value is what one fact can state and a later one change: a URL, a handle (``@team-ledger``), a
number or version, a quantity with its unit, or an identifier with a digit. Its anchors are the content
words just before it ("the MSRV channel in X to 1.74"): two values of the same shape whose anchors meet
are values of the same thing. `reconcile` pairs an old fact's value with a new fact's through them.
"""

from __future__ import annotations

import re
from itertools import pairwise

from bli_memory.door.librarian.words import is_anchor, tokens

#: the extensions that make a dotted name a file's rather than a host's (one list for the librarian:
#: extraction's host signal, reconciliation's "another file is another setting", the values never
#: carried over to other facts).
FILE_EXTENSIONS = (
    "py|pyi|ipynb|ts|tsx|js|jsx|mjs|cjs|json|jsonc|jsonl|toml|ya?ml|md|rst|txt|rs|go|mod|sum|java|kt|kts|"
    "rb|sh|bash|sql|cfg|ini|env|lock|html|css|scss|vue|svelte|c|h|cc|cpp|hpp|cs|swift|dart|ex|exs|lua|php|"
    "proto|tf|hcl|db|sqlite|xml|gradle|properties|conf|log|csv|zip|gz|tar|tgz|png|jpg|svg|pdf|bak|tmp|old|"
    "orig|dll|exe|so|dylib|jar|war|class"
)
#: a file's name or path (another file is another setting, never a new value of the same one).
_FILE_NAME = re.compile(rf".*\.(?:{FILE_EXTENSIONS})$|.*/.*", re.IGNORECASE)
#: a host name: labels and a dot, no scheme ("files-sbx.partner.com").
HOST_NAME_PATTERN = r"[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.[a-z]{2,}"
_HOST_NAME = re.compile(HOST_NAME_PATTERN)
#: a span of code in a fact: `…`.
CODE_SPAN = re.compile(r"`[^`\n]+`")
#: a token that may be a value: a URL whole, or a run of word characters and the marks inside
#: versions, paths, hosts and handles.
VALUE_TOKEN = re.compile(r"[a-z][a-z0-9+.-]*://[^\s`'\")\]>]+|[\w.:@+/-]+")
VERSION = re.compile(r"v?\d+(?:\.\d+)*")
#: a number with its unit ("512mb", "30s").
QUANTITY = re.compile(r"\d+(?:\.\d+)?([a-z]+)")
#: how many words before a value may name what it is the value of ("the MSRV channel in X to 1.74").
ANCHOR_WORDS = 3


def value_tokens(text: str) -> list[str]:
    """A fact's tokens, lowercased, code spans opened and the punctuation around each stripped."""
    return [t.strip(".,;:'\"()[]{}+=") for t in VALUE_TOKEN.findall(text.lower().replace("`", " "))]


def is_value(word: str) -> bool:
    """A value a fact can state and a later one change: a URL, anything with a digit, or a handle
    ("@team-ledger": an owner is a value of who owns)."""
    return (
        "://" in word
        or any(ch.isdigit() for ch in word)
        or HANDLE.fullmatch(word) is not None
        or EMAIL.fullmatch(word) is not None
    )


#: a person's or a team's handle.
HANDLE = re.compile(r"@[a-z][\w.-]*(?:/[\w.-]+)?")
#: an e-mail address: a sender, a recipient, an account ("escala@notify.rotaboard.org").
EMAIL = re.compile(r"[a-z0-9][\w.+-]*@[a-z0-9-]+(?:\.[a-z0-9-]+)+")


def shape_of(value: str) -> str:
    """What kind of value: a URL, a handle, a number or version, a quantity with its unit, or an
    identifier's stem."""
    if "://" in value:
        return "url"
    if HANDLE.fullmatch(value):
        return "handle"
    if EMAIL.fullmatch(value):
        return "email"
    if VERSION.fullmatch(value):
        return "number"
    quantity = QUANTITY.fullmatch(value)
    if quantity:
        return f"quantity:{quantity.group(1)}"
    return "id:" + re.sub(r"\d+", "#", value)


def host_of(url: str) -> str:
    return url.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]


def domain_of(url: str) -> str:
    """The last two labels of a URL's host ("api.stg.acmepay.dev" -> "acmepay.dev"), or of an
    e-mail address's ("ops@mail.acmepay.dev" -> "acmepay.dev")."""
    return ".".join(host_of(url).rsplit("@", 1)[-1].split(".")[-2:])


def host_words(url: str) -> frozenset[str]:
    """The words a URL's host names its service with, before the site's own two labels
    ("https://grafana.ops.example.dev/d/1" -> grafana, ops)."""
    return frozenset(label for label in host_of(url).split(".")[:-2] if is_anchor(label) and label != "www")


def values_of(text: str) -> list[tuple[str, str, frozenset[str]]]:
    """(value, shape, anchors) for each value of a fact; anchors are the words just before it."""
    words = value_tokens(text)
    out = []
    for index, word in enumerate(words):
        if not is_value(word):
            continue
        before = [w for w in words[max(0, index - ANCHOR_WORDS - 2) : index] if is_anchor(w)]
        out.append((word, shape_of(word), frozenset(before[-ANCHOR_WORDS:])))
    return out


#: a thing a fact says is not changing: "CPU stays", "the region remains", "port unchanged".
_UNCHANGED = re.compile(
    r"(?<![\w-])([\w-]+)\s+(?:stays|stay|remains|remain|(?:is|are)\s+unchanged|unchanged|untouched)\b",
    re.IGNORECASE,
)


def declared_unchanged(text: str) -> set[str]:
    """The content words a fact says stay as they are ("the task gets 4096 MB, CPU stays" -> cpu):
    a value of one of them is no old value the fact replaces, however near its other words."""
    return {word for word in (m.group(1).lower() for m in _UNCHANGED.finditer(text)) if is_anchor(word)}


def words_before(text: str, value: str) -> set[str]:
    """The content words a fact says before a value: for an owner's handle, what is owned."""
    return {w for w in tokens(text.lower().split(value, 1)[0]) if is_anchor(w)}


def nearest_anchor(text: str, value: str) -> str | None:
    """The content word right before a value's first mention ("API" in "Android 7.0 (API 24)")."""
    words = value_tokens(text)
    if value not in words:
        return None
    before = [w for w in words[: words.index(value)] if is_anchor(w)]
    return before[-1] if before else None


#: a name in CamelCase: two capitalised parts or more ("PoolService", "ObjectPoolRegistry").
CAMEL_CASE = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b")


def camel_parts(name: str) -> list[str]:
    """The words a CamelCase name joins, lower-cased ("PoolService" -> pool, service)."""
    return [part.lower() for part in re.findall(r"[A-Z][a-z0-9]+", name)]


#: a name inside a sentence: a capitalised word that does not open it.
_CAPITALISED = re.compile(r"(?<=[\w,)] )[A-Z][\w.-]*[a-zA-Z0-9]")


def stated_values(text: str) -> set[str]:
    """What a fact states as values: its code spans, its tokens with a digit, a URL or a handle, and
    the names it gives with a capital inside the sentence ("runs under Jest")."""
    spans = {span.strip("`").lower() for span in CODE_SPAN.findall(text)}
    names = {w.lower() for w in _CAPITALISED.findall(CODE_SPAN.sub(" ", text))}
    return spans | names | {t for t in value_tokens(text) if is_value(t)}


def is_file(value: str) -> bool:
    """Whether a value is a file's name or a path."""
    return _FILE_NAME.match(value) is not None


def is_host(value: str) -> bool:
    """Whether a value is a host name (labels and a dot, no scheme)."""
    return _HOST_NAME.fullmatch(value) is not None


def name_parts(text: str) -> list[str]:
    """The words a fact's class and setting names join: "PoolService" -> pool service,
    "ATTACHMENTS_BUCKET" -> attachments bucket. (Not a kebab-case name: `billing-reports` is its own
    thing, not the billing one.)"""
    camel = [" ".join(camel_parts(name)) for name in CAMEL_CASE.findall(text)]
    settings = [name.replace("_", " ") for name in re.findall(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b", text)]
    return camel + settings


#: a name of parts joined by "-", "_" or "." ("coopnest-velero", "raw_events"): what a slot may hold
#: besides a value.
JOINED_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_.][a-z0-9]+)+")


#: a build target: `//services/scan_ingest:ScanIngest`, `//pkg/api:server`.
_TARGET = re.compile(r"//[\w./-]+:[\w.-]+")


#: words between a noun and the name it is given: "a bucket called whitlow-masters", "the new bucket is
#: wbg-masters".
_SLOT_LINKS = frozenset({"is", "called", "named"})


def slots(text: str) -> dict[str, str]:
    """The names a fact gives right after a noun that says what they are ("bucket cn-vault-b2",
    "`bucket: coopnest-velero`", "tgt //services/scan_ingest:ScanIngest"): noun -> the first name after
    it. A file is no slot's value (files live side by side), but a build target is."""
    words = value_tokens(text)
    out: dict[str, str] = {}
    # the noun right before the name, or before a word that links them ("bucket called x", "bucket is y")
    linked = [(noun, name) for (noun, link), (_, name) in pairwise(pairwise(words)) if link in _SLOT_LINKS]
    pairs = [*pairwise(words), *linked]
    for noun, name in pairs:
        named = (is_value(name) or JOINED_NAME.fullmatch(name)) and not is_file(name)
        if is_anchor(noun) and noun not in _SLOT_LINKS and (named or _TARGET.fullmatch(name)):
            out.setdefault(noun, name)
    return out


#: a version range: ">=5.1,<5.2", "> 1.0, <= 2.0".
_RANGE = re.compile(r">=?\s?v?(\d[\w.]{0,30}),\s?<=?\s?v?(\d[\w.]{0,30})")


def closed_ranges(text: str) -> str:
    """`text` with each version range whose two bounds are one value named by that value alone: a
    rewrite of "Django stays inside `>=5.1,<5.2`" for 5.1 -> 5.2 reads "… inside `5.2` …", not
    `>=5.2,<5.2`, which allows nothing."""
    return _RANGE.sub(lambda m: m.group(1) if m.group(1) == m.group(2) else m.group(0), text)

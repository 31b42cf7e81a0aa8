"""Corrections that name no retired value of their own: the shapes `reconcile` adds to its value rules.

Pure (no I/O). Each function reads an old fact and a newer one and says whether the newer one makes
the older stale, and through which value:

- a change verb that gives a thing a new version (:func:`bumped`): "bumped `revision:` in `west.yml`
  to v2.7.0", "upgraded the `go` directive in `go.mod` to 1.22", after a fact stating a version of
  the same form about the same file or the same named thing;
- the same code statement with one argument changed (:func:`statement_changed`):
  `find_package(Qt6 REQUIRED COMPONENTS Charts)` -> `find_package(Qt6 … COMPONENTS Graphs)`, where
  an ellipsis stands for what the new fact leaves out;
- a state said to hold no more (:func:`predicate_retired`): "no longer shared with BI", "not shared
  with BI anymore" retire the fact that says it is shared with BI;
- a value replaced in one fact, restated in every other fact that still states it
  (:func:`carried_pairs`, :func:`restated`): after `.fvmrc` pins 3.22.2 instead of 3.19.6, "we are on
  3.19.6" in the request that set the pin is stale too; a URL's host goes with it, a role's
  former holder is replaced only in the facts about what passed, and a port wherever this machine's
  address, the word "port" or a binding verb names it (`localhost:3333`, "`PORT` (default 3333)");
- a class renamed by the words of its name or by its name in the subject (:func:`renamed`,
  :func:`renamed_in`): "we renamed the pool service to ObjectPoolRegistry" after "always use
  PoolService", "renamed the SaveManager autoload to Persistence" after "autoload SaveManager" keep
  the rule, renamed; a kebab-case name likewise (:func:`kebab_renamed`: "the attachments bucket,
  it's orbit-files-prod now");
- a service given an address on another site (:func:`address_moved`): "the new URL is
  https://hr-staging.atlas-corp.net" after "staging is https://atlas-hr-stg.azurewebsites.net";
- and two guards the value rules consult: a fact that adds ("we also …") replaces nothing
  (:func:`adds`), and two facts that each name their own thing in the same place ("the admin API
  listens on 8081", "the public API listens on 8080") are siblings, not versions (:func:`siblings`).
"""

from __future__ import annotations

import re

from bli_memory.door.librarian.prose import _VERBS
from bli_memory.door.librarian.roles import (
    NAME_WORD,
    about_the_same_thing,
    is_first_name,
    is_person,
    passed_between,
)
from bli_memory.door.librarian.schedules import is_schedule, reschedule
from bli_memory.door.librarian.values import (
    CAMEL_CASE,
    FILE_EXTENSIONS,
    HOST_NAME_PATTERN,
    camel_parts,
    host_of,
    is_file,
    is_host,
    value_tokens,
)
from bli_memory.door.librarian.words import compound_parts, is_anchor, stem, tokens

#: a version or a dated release, with or without its "v": 1.22, v2.7.0, 2024-06-20, 3.3.6p108 (read
#: from the start of its token: from inside a run of digits it was tried again at every digit).
_VERSION_VALUE = re.compile(r"(?<![\w.-])(?:v?\d+(?:[.-]\d+)+[a-z]*\d*|v\d+)")
#: words that say a value was changed, then "to" and the new value within this many characters.
CHANGE_SPAN_CHARS = 80
_CHANGE_TO = re.compile(
    r"\b(?:bumped|bump|bumping|upgraded|upgrade|upgrading|downgraded|raised|lowered|increased|reduced|"
    r"pinned|moved|moving|went|going|go|changed|updated|switched)\b"
    rf"(?P<thing>(?:[^.;]|\.(?=\w)){{0,{CHANGE_SPAN_CHARS}}}?)\bto\s+(?:\w+\s+)?`?(?P<value>v?\d[\w.-]*)",
    re.IGNORECASE,
)
#: words that name what a version is of no more than "version" does.
_VERSION_WORDS = frozenset("version versions release revision rev pin pinned tag channel".split())
#: words too common to name a thing.
_COMMON = frozenset(
    "a an the and or but so to of in on at by for with from into as is are was were be it its this that "
    "these those they we i you our your now then also only still just not no never all both each any new "
    "old set run runs use uses using via per every than up down "
    # the labels a reply opens a line with ("Summary: Qt pinned at 6.8.1") name no thing of their own
    "summary note update fyi result tldr".split()
)
#: a fact that adds to what is stored rather than replacing it.
_ADDS = re.compile(r"\b(?:also|as well|too|in addition|additionally|besides)\b", re.IGNORECASE)


def stems(text: str) -> set[str]:
    """The stems of a fact's content words."""
    return {stem(w) for w in tokens(text) if len(w) >= 3 and w not in _COMMON}


def _content(words: list[str]) -> list[str]:
    return [w for w in words if len(w) >= 2 and w not in _COMMON and not any(ch.isdigit() for ch in w)]


def _specific(text: str) -> set[str]:
    """Names no other subject shares: paths and files (a dot or a slash inside)."""
    return {w for w in tokens(text) if re.fullmatch(r"[\w-]*[./][\w./-]*[a-z][\w-]*", w)}


def _fine_shape(value: str) -> str:
    """A version's form: its separators and a leading "v", digits folded ("v2.6.1" -> "v#.#.#")."""
    return re.sub(r"\d+", "#", value.lower())


def _versions(text: str) -> list[str]:
    return [v.lower() for v in _VERSION_VALUE.findall(text.replace("`", " "))]


def _name_before(text: str, value: str) -> str | None:
    """The content word just before a value, within three words: what the value is a version of."""
    head = text.lower().replace("`", " ").split(value, 1)[0]
    before = [w for w in _content(tokens(head))[-3:] if not w.endswith("ed") and w not in _VERSION_WORDS]
    return before[-1] if before else None


#: what a change names when it changes the version of everything it is about ("upgraded the project
#: locally to …", "moved the runner image to …"): no thing of its own beside the old fact's.
_WHOLE_PROJECT = frozenset(
    "project app repo repository codebase everything all it locally here us build builds runner runners "
    "image images ci machine machines laptop laptops team shared".split()
)
#: the fewest parts a release line keeps before its last one ("2022.3" of "2022.3.21f1"): one part
#: ("1" of "1.7.5") is shared by too many things.
RELEASE_LINE_MIN_PARTS = 2


def same_release_line(old: str, new: str) -> bool:
    """Whether two versions of one form differ only in their last part ("2022.3.21f1" and
    "2022.3.40f1", "3.11.4" and "3.11.9"), the line before it of RELEASE_LINE_MIN_PARTS parts or more:
    a version moved along its release line, whatever the fact calls the thing (two things of one
    project on one line of three parts are rare; "1.7.5" and "1.9.8" share one part only)."""
    old_parts, new_parts = old.lstrip("v").split("."), new.lstrip("v").split(".")
    return (
        len(old_parts) == len(new_parts) > RELEASE_LINE_MIN_PARTS
        and old_parts[:-1] == new_parts[:-1]
        and old_parts[-1] != new_parts[-1]
    )


def adds(text: str) -> bool:
    """Whether a fact adds to what is known ("CI also runs …", "… as well"): it replaces nothing."""
    return _ADDS.search(text) is not None


def bumped(new_text: str, old_text: str) -> tuple[str, str] | None:
    """(old version, new version) when the new fact changes something to a version ("bumped X to
    v2.7.0") and the old fact states one version of the same form, gone from the new fact, about
    the same file or the same named thing ("`west.yml` pins the SDK at v2.6.1")."""
    match = _CHANGE_TO.search(new_text)
    if match is None:
        return None
    new_value = match.group("value").rstrip(".,;:`").lower()
    if not _VERSION_VALUE.fullmatch(new_value):
        return None
    present = set(_versions(new_text))
    candidates = {
        v for v in _versions(old_text) if v not in present and _fine_shape(v) == _fine_shape(new_value)
    }
    if len(candidates) != 1:
        return None  # none, or several the fact cannot tell apart
    old_value = candidates.pop()
    thing = {w for w in _content(tokens(match.group("thing"))) if w not in _VERSION_WORDS}
    named = _name_before(old_text, old_value)
    new_words = set(tokens(new_text))
    old_words = set(tokens(old_text))
    if same_release_line(old_value, new_value) and not thing - old_words - _WHOLE_PROJECT:
        # "upgraded the project locally to 2022.3.40f1" after "Unity's 2022.3.21f1"
        return old_value, new_value
    shares_file = bool(_specific(new_text) & _specific(old_text))
    if named is not None and named not in new_words and thing - old_words - _specific(new_text):
        return None  # "bumped axios to 1.7" after "lodash at 4.17": each names its own thing
    if shares_file or (named is not None and named in new_words):
        return old_value, new_value
    return None


#: a code span that reads as a statement: a call, a command, a declaration with its arguments.
_CODE_SPAN = re.compile(r"`([^`\n]{8,})`")
#: what stands for left-out arguments in a quoted statement.
_ELLIPSIS = frozenset({"...", "…"})
#: the fewest words two quotes of a statement share around its changed argument, the first among them.
STATEMENT_MIN_SHARED = 3


def _code_words(span: str) -> list[str]:
    return re.findall(r"\.\.\.|…|[\w$.{}/-]+", span.lower())


def _aligned_change(old: list[str], new: list[str]) -> tuple[str, str] | None:
    """(old word, new word) when two statements differ in one word and share at least
    :data:`STATEMENT_MIN_SHARED` others, an ellipsis in the new one standing for any run of the old
    one's words."""
    i = j = shared = 0
    change: tuple[str, str] | None = None
    while i < len(old) and j < len(new):
        if new[j] in _ELLIPSIS:
            j += 1
            if j == len(new):
                return change if shared >= STATEMENT_MIN_SHARED else None
            while i < len(old) and old[i] != new[j]:
                i += 1
            continue
        if old[i] == new[j]:
            i += 1
            j += 1
            shared += 1
            continue
        if change is not None:
            return None
        change = (old[i], new[j])
        i += 1
        j += 1
    if i != len(old) or j != len(new) or shared < STATEMENT_MIN_SHARED:
        return None
    return change


def statement_changed(new_text: str, old_text: str) -> tuple[str, str] | None:
    """(old argument, new argument) when both facts quote the same statement of the same file and the
    new one changes one of its words to one the old fact never names (`... COMPONENTS glslc)` ->
    `... COMPONENTS dxc)` in `cmake/Vulkan.cmake`); a numbered sibling ("rev-b" after "rev-c") is
    another thing, and two commands that differ in one word were both run, not one changed."""
    for old_span in _CODE_SPAN.findall(old_text):
        old_words = _code_words(old_span)
        for new_span in _CODE_SPAN.findall(new_text):
            new_words = _code_words(new_span)
            if not old_words or not new_words or old_words[0] != new_words[0] or old_words == new_words:
                continue
            change = _aligned_change(old_words, new_words)
            if change is None:
                continue
            before, after = change
            if before in new_text.lower() or after in old_text.lower() or numbered_siblings(before, after):
                continue
            if not _specific(old_text.replace(old_span, " ")) & _specific(new_text.replace(new_span, " ")):
                continue  # not said to be in the same file: two commands run, not one line changed
            return before, after
    return None


def numbered_siblings(a: str, b: str) -> bool:
    """Two names that differ only in a short tail ("hivemon_revb", "hivemon_revc"; "db-1", "db-2")."""
    common = 0
    while common < min(len(a), len(b)) and a[common] == b[common]:
        common += 1
    return common >= 3 and max(len(a), len(b)) - common <= 2


#: "no longer shared with BI", "not shared with BI anymore", "is no longer on the VPN".
_NO_MORE = re.compile(
    r"\bno longer\s+(?P<p1>[^.;,()]{3,60})|\bnot\s+(?P<p2>[^.;,()]{3,60}?)\s+(?:any ?more|any longer)\b",
    re.IGNORECASE,
)
#: the fewest content words a retired state names, so "no longer needed" retires nothing by itself.
PREDICATE_MIN_WORDS = 2


def predicate_retired(new_text: str, old_text: str) -> str | None:
    """The state the new fact says holds no more ("not shared with BI anymore") when the old fact
    states it, every content word of it, without a negation of its own."""
    lowered_old = old_text.lower()
    if re.search(r"\b(?:not|no longer|never)\b", lowered_old):
        return None
    old_stems = [stem(w) for w in tokens(old_text)]
    for match in _NO_MORE.finditer(new_text):
        phrase = match.group("p1") or match.group("p2") or ""
        words = _content(tokens(phrase))[:4]
        if len(words) >= PREDICATE_MIN_WORDS and _in_order([stem(w) for w in words], old_stems):
            return " ".join(words)
    return None


#: words the old fact may hold between two words of a retired state ("shared with the BI tool").
PREDICATE_MAX_GAP = 2


def _in_order(wanted: list[str], words: list[str]) -> bool:
    """Whether `wanted` occurs in `words` in its order, at most :data:`PREDICATE_MAX_GAP` words apart."""
    for start, word in enumerate(words):
        if word != wanted[0]:
            continue
        position, found = start, 1
        while found < len(wanted):
            window = words[position + 1 : position + 2 + PREDICATE_MAX_GAP]
            if wanted[found] not in window:
                break
            position += 1 + window.index(wanted[found])
            found += 1
        if found == len(wanted):
            return True
    return False


def siblings(new_text: str, old_text: str) -> bool:
    """Whether the two facts each name their own thing in the same place: a word only the old fact
    has and one only the new fact has, each just before the same shared word, before the values
    ("the admin API listens" / "the public API listens"; "the Go services" / "the Rust services")."""
    old_words, new_words = tokens(old_text), tokens(new_text)
    # a word of one fact is the other's too when it is a part of its compound ("ingest", "scan-ingest")
    old_set = set(old_words) | {part for word in old_words for part in compound_parts(word)}
    new_set = set(new_words) | {part for word in new_words for part in compound_parts(word)}

    def heads(words: list[str], own: set[str], other: set[str]) -> set[str]:
        found = set()
        for index, word in enumerate(words[:-1]):
            if any(ch.isdigit() for ch in word) or "://" in word:
                break  # the values start: what follows is what the fact says, not its subject
            following = words[index + 1]
            if (
                word not in other
                and word not in _COMMON
                and any(ch.isalpha() for ch in word)  # "fixes -> ctrl-runtime": an arrow names nothing
                and following in other
                and following not in _COMMON
            ):
                found.add(following)
        return found

    return bool(heads(old_words, old_set, new_set) & heads(new_words, new_set, old_set))


# --------------------------------------------------------------------------- an address moved to another site

#: words that say an address is new: "the new URL is …", "moved to our AKS cluster", "is now …".
_NEW_ADDRESS = re.compile(
    r"\bnew\s+(?:url|host|address|endpoint|domain|location|base\s*url)\b|\b(?:moved|migrated|now)\b",
    re.IGNORECASE,
)
#: words two hosts' names share to be one service's old and new address ("atlas-hr-stg…" and
#: "hr-staging.atlas-corp…"): one ("atlas") is often only the company's name, which all its hosts share.
SHARED_HOST_WORDS_MIN = 2
#: host labels that name no service: the web's prefixes and the sites' last labels.
_GENERIC_LABELS = frozenset("www com net org io dev app co uk de internal local lan svc cluster".split())


def _addresses(text: str) -> list[str]:
    """A fact's URLs and host names, a host with a path too (`gcr.io/acme-prod`); a file's name
    (`readme.md`) is neither."""
    return [t for t in value_tokens(text) if "://" in t or (is_host(host_of(t)) and not is_file(host_of(t)))]


def host_parts(address: str) -> set[str]:
    """The words of a host's name that name a service or a site ("gtfs", "ridenorth"), not the web's
    prefixes nor the site's kind."""
    labels = host_of(address).split(".")[:-1]  # the last label is the site's kind, not its name
    return {
        part for label in labels for part in label.split("-") if part not in _GENERIC_LABELS and len(part) > 1
    }


def address_moved(new_text: str, old_text: str) -> tuple[str, str] | None:
    """(old address, new address) when a fact gives a service a new address on another site ("Staging
    moved off App Service to our AKS cluster, the new URL is https://hr-staging.atlas-corp.net") and
    the old fact states the one address of the same thing ("The staging environment is
    https://atlas-hr-stg.azurewebsites.net"): the new fact says the address is new, the two hosts
    share two words of their names ("atlas", "hr"), and the facts share a word of what they are about
    beyond those ("staging"). Another site is otherwise another service."""
    if not _NEW_ADDRESS.search(new_text):
        return None
    new_addresses, old_addresses = _addresses(new_text), _addresses(old_text)
    if len(set(old_addresses)) != 1 or len(set(new_addresses)) != 1:
        return None
    old, new = old_addresses[0], new_addresses[0]
    shared_host = host_parts(old) & host_parts(new)
    if old == new or len(shared_host) < SHARED_HOST_WORDS_MIN or old in new_text.lower():
        return None
    about = (stems(_without_addresses(old_text)) & stems(_without_addresses(new_text))) - {
        stem(part) for part in shared_host
    }
    return (old, new) if any(is_anchor(word) for word in about) else None


#: this machine's host names: a port or an address on them is local, never a deployed one.
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "0.0.0.0", "::1"})
#: the words before an address that say what it is the address of ("tiles … from", "images now come from").
ADDRESS_SLOT_WORDS = 6


def address_replaced(new_text: str, old_text: str) -> tuple[str, str] | None:
    """(old address, new address) when a fact says one thing's address is new ("the tiles we serve now
    ourselves, from https://maps.example.app/v3/…") and the old fact gives the same thing another
    host ("vector tiles from our tile server: https://tiles.example.app/v2/…"), on any site: a word
    of what each address is for, in the words just before it, meets ("tiles", "images"), neither fact
    names the other's host, and the two do not each name their own thing there ("the staging API",
    "the prod API": `siblings`). One thing has one address; the newer fact says which."""
    if not _NEW_ADDRESS.search(new_text):
        return None
    new_addresses = _site_addresses(new_text)
    if len({host_of(a) for a in new_addresses}) != 1:
        return None
    new = new_addresses[0]
    new_slot = _address_slot(new_text, new)
    for old in dict.fromkeys(_site_addresses(old_text)):
        if (
            host_of(old) == host_of(new)
            or host_of(old) in new_text.lower()
            or host_of(new) in old_text.lower()
        ):
            continue
        if (host_of(old) in _LOCAL_HOSTS) != (host_of(new) in _LOCAL_HOSTS):
            continue  # a service on this machine and one deployed are two places, not one moved
        if not (new_slot & _address_slot(old_text, old)):
            continue
        if siblings(_clause_of(new_text, new), _clause_of(old_text, old)):
            continue
        return old, new
    return None


#: the last labels of a site's host names: `supabase.rpc` and `locals.getSession` are code, not hosts.
_SITE_SUFFIXES = frozenset(
    "com net org io dev app cloud ai co uk de fr eu nl se no fi es it ch at be pl cz jp in au ca us "
    "internal local lan svc example test studio fit so sh gg me xyz tech run site page pages host "
    "services systems digital online store shop".split()
)


def _site_addresses(text: str) -> list[str]:
    """The addresses of sites a fact names: URLs, and host names (a path after them or not) whose
    last label is a site's and that no call follows ("`supabase.rpc('book_slot')`" is code)."""
    bare = text.lower().replace("`", "")
    return [
        address
        for address in _addresses(text)
        if "://" in address
        or (host_of(address).rsplit(".", 1)[-1] in _SITE_SUFFIXES and f"{address}(" not in bare)
    ]


def _address_slot(text: str, address: str) -> set[str]:
    """The stemmed content words of the few words before an address in its clause: what it is for."""
    at = text.lower().find(address.lower())
    if at < 0:
        return set()
    words = tokens(re.split(r"[;\u2014\u2013]", text[:at])[-1])[-ADDRESS_SLOT_WORDS:]
    return {stem(w) for w in words if is_anchor(w) and w not in _VERBS} - CHANGE_WORD_STEMS


#: stems of the words that say a thing changed: shared by two facts, they say nothing of one subject.
CHANGE_WORD_STEMS = frozenset(stem(w) for w in "moved switched migrated replaced now new old".split())


def _without_addresses(text: str) -> str:
    return " ".join(t for t in value_tokens(text) if not ("://" in t or is_host(t)))


# --------------------------------------------------------------------------- one value, every fact

#: a value specific enough to mean the same thing in every fact of a space that states it: a version
#: or an identifier with a digit and a separator (`3.19.6`, `2022.3.21f1`, `build-02.rack.lan`), a URL,
#: or a host name. A bare number ("7", "512") or a word could be anything, and is never carried over.
_SPECIFIC_VALUE = re.compile(
    r"(?=[\w.:/@+-]*\d)[\w@+]+(?:[.:/-][\w@+]+)+"
    r"|[a-z][a-z0-9+.-]*://\S+"
    rf"|{HOST_NAME_PATTERN}",
    re.IGNORECASE,
)
#: the shortest value carried over: "1.2" is too common to stand for one thing.
CARRIED_VALUE_MIN_CHARS = 5
#: a file's name or path: files live side by side, so one in place of another in one fact says nothing
#: of the others (a host may end in `.md` or `.sh` too, and is then not carried over either).
_FILE_LIKE = re.compile(rf"^(?![a-z][a-z0-9+.-]*://).*/|\.(?:{FILE_EXTENSIONS})$", re.IGNORECASE)


def _bare(value: str) -> str:
    return value.strip("`'\".,;:()[]")


def carried_over(old_value: str, new_value: str) -> bool:
    """Whether a value one update replaced (`3.19.6` -> `3.22.2`) is specific enough that any other
    fact of the space still stating it states the old value of the same thing."""
    old, new = _bare(old_value), _bare(new_value)
    return (
        old.lower() != new.lower()
        and len(old) >= CARRIED_VALUE_MIN_CHARS
        and _SPECIFIC_VALUE.fullmatch(old) is not None
        and _SPECIFIC_VALUE.fullmatch(new) is not None
        and not (_FILE_LIKE.search(old) or _FILE_LIKE.search(new))
    )


def carried_pairs(old_value: str, new_value: str) -> list[tuple[str, str]]:
    """The values one update replaced that other facts may still state: the pair itself when it is
    carried over, and for two URLs their hosts as well (a summary names "`staging.example.dev`"
    without its scheme). A role's holders, a renamed CamelCase class or kebab-case name, a short
    version and a bare number are carried too; `restated` then asks each fact for the same subject."""
    if passed_between(old_value, new_value):
        # a role handed over ("Kenji went to the Android side" names him by his first name alone):
        # `restated` asks for the same subject
        return [(old_value, new_value)]
    if CAMEL_CASE.fullmatch(old_value) and CAMEL_CASE.fullmatch(new_value):
        return [(old_value, new_value)]  # a class renamed: "PoolService" names one thing in a space
    if _KEBAB.fullmatch(_bare(old_value)) and _KEBAB.fullmatch(_bare(new_value)):
        return [(old_value, new_value)]  # a bucket or a project renamed: one thing in a space too
    if _schedules_only(old_value, new_value):
        return [(old_value, new_value)]  # `rate(15 minutes)` -> 5: `restated` asks for the same job
    if _short_versions(old_value, new_value) or _bare_numbers(old_value, new_value):
        return [(old_value, new_value)]  # "1.75" -> "1.80": `restated` asks for the same words before it
    if not carried_over(old_value, new_value):
        inside = _host_inside(old_value), _host_inside(new_value)
        if inside[0] and inside[1] and carried_over(inside[0], inside[1]):
            return [(inside[0], inside[1])]  # `ProxyJump=jump.lab.example.edu` -> `…=ops@gate.lab…:2222`
        return []
    pairs = [(old_value, new_value)]
    old, new = _bare(old_value), _bare(new_value)
    if "://" in old and "://" in new:
        old_host, new_host = host_of(old), host_of(new)
        if old_host != new_host and carried_over(old_host, new_host):
            pairs.append((old_host, new_host))
    return pairs


def _host_inside(value: str) -> str | None:
    """The one host name a setting or an address states inside its token ("proxyjump=ops@gate.lab.edu:2222"
    -> "gate.lab.edu"), or None."""
    hosts = [part for part in re.split(r"[=@:/'\"]", _bare(value)) if is_host(part) and not is_file(part)]
    return hosts[0] if len(hosts) == 1 and hosts[0] != _bare(value) else None


#: a version too short to be specific alone ("1.75"): two or three parts of at most four digits each.
_SHORT_VERSION = re.compile(r"v?\d{1,4}(?:\.\d{1,4}){1,2}")
#: how many content words before a value may name what it is the version of.
VERSION_CONTEXT_WORDS = 5


def _short_versions(old_value: str, new_value: str) -> bool:
    """Two versions of as many parts, neither specific enough alone ("1.75" -> "1.80")."""
    old, new = _bare(old_value), _bare(new_value)
    return (
        old != new
        and _SHORT_VERSION.fullmatch(old) is not None
        and _SHORT_VERSION.fullmatch(new) is not None
        and old.count(".") == new.count(".")
        and not carried_over(old, new)
    )


#: a bare number: "API 24", "port 8080".
_BARE_NUMBER = re.compile(r"\d{1,5}")
#: context words a bare number's two mentions share, the word right before it among them.
BARE_NUMBER_MIN_SHARED = 2


def _bare_numbers(old_value: str, new_value: str) -> bool:
    """Two bare numbers ("24" -> "26"): `restated` asks for the same word right before each."""
    old, new = _bare(old_value), _bare(new_value)
    return old != new and _BARE_NUMBER.fullmatch(old) is not None and _BARE_NUMBER.fullmatch(new) is not None


def _mention(text: str, value: str) -> re.Match[str] | None:
    """A value's first mention as a whole token."""
    return re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w-]|\.\w)", text, re.IGNORECASE)


def _anchors(words: list[str]) -> list[str]:
    """The content words among `words`, stemmed and with compounds split ("rust-version" -> rust,
    version), in order and once each."""
    parts = [part for word in words for part in [*compound_parts(word), word] if part]
    return [stem(part) for part in dict.fromkeys(parts) if is_anchor(part)]


def _context_before(text: str, value: str) -> list[str]:
    """The content words in the words before a value's first mention, the nearest last."""
    at = _mention(text, value)
    return [] if at is None else _anchors(tokens(text[: at.start()])[-VERSION_CONTEXT_WORDS:])


def _unit_after(text: str, value: str) -> list[str]:
    """The content word right after a value's first mention, within two words: its unit or what it
    counts ("60 Hz", "port 7777 listen"), or nothing."""
    at = _mention(text, value)
    after = [] if at is None else _anchors(tokens(text[at.end() :])[:NUMBER_AFTER_WORDS])
    return after[:1]


#: the words after a bare number read for its unit or what it counts.
NUMBER_AFTER_WORDS = 2
#: content words two whole facts share for a bare number in one to be the other's, when the words
#: around the numbers share fewer than `BARE_NUMBER_MIN_SHARED`.
BARE_NUMBER_MIN_SHARED_FACT = 3


def _same_thing(content: str, old: str, source: str, new: str) -> bool:
    """Whether a version or a number names the same thing in a fact as the new one does in the
    correcting fact: a word before each meets. For a bare number, a word right beside each (before,
    or after: its unit) is the same, and another word meets around them or a third in the two
    facts: "minimum Android API 24" and "minimum android is now API 26", "The tick rate must 60 Hz
    be" and "the simulation rate lower: 30 Hz", "the server should on UDP port 7777 listen" and "the
    default port clashes with the other server, listen on 24600"."""
    before_old, before_new = _context_before(content, old), _context_before(source, new)
    shared = set(before_old) & set(before_new)
    if not _bare_numbers(old, new):
        return bool(shared)
    after_old, after_new = _unit_after(content, old), _unit_after(source, new)
    beside = {*before_old[-1:], *after_old} & {*before_new[-1:], *after_new}
    around = shared | (set(after_old) & set(after_new))
    # the word beside is often a unit ("min"), which many things are counted in: others must meet too
    together = len(around - beside) >= BARE_NUMBER_MIN_SHARED - 1 or (
        len(stems(content) & stems(source) - beside) >= BARE_NUMBER_MIN_SHARED_FACT - 1
    )
    # "the admin API moved to port 9090" is no news of "the public API listens on port 8080": each
    # names its own thing in the clause that states the number (another clause says something else)
    return bool(beside) and together and not siblings(_clause_of(source, new), _clause_of(content, old))


def _same_setting(content: str, old: str, source: str, new: str) -> bool:
    """Whether the correction assigns its value to a setting ("memory = 4096", "maxSize: 1024", a
    diff's added line) that `content` names right before the old value ("`memory = 2048` MB"): the
    setting's own name says it is the same thing, however few other words meet."""
    # each name is tried from its first character only: a long run is read once, not from each of its
    assigned = re.search(
        rf"(?<![\w.-])([A-Za-z_][\w.-]*)[\"']?\s*[:=]\s*[\"']?{re.escape(new)}(?![\w.])", source
    )
    if assigned is None:
        return False
    setting = re.escape(assigned.group(1))
    return (
        re.search(rf"(?<![\w.-]){setting}[\"']?\s*[:=]?\s*[\"']?{re.escape(old)}(?![\w.])", content)
        is not None
    ) or _told_by_name(content, old, assigned.group(1))


#: the shortest word of a setting's name that says what it sets: "hold" and "payout" do, "max" not.
NAME_WORD_MIN_CHARS = 4


def _told_by_name(content: str, old: str, setting: str) -> bool:
    """Whether `content` states `old` as the setting's name spells it in words: the number with the
    unit the name ends on ("7 days" for SELLER_PAYOUT_HOLD_DAYS) and another word of the name before
    or after it ("Hold seller money 7 days"). "Logs are kept 7 days" is not the hold."""
    words = [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", setting)]
    if len(words) < 2 or not old.isdigit():
        return False
    unit, named = words[-1].rstrip("s"), {w.rstrip("s") for w in words[:-1] if len(w) >= NAME_WORD_MIN_CHARS}
    said = re.search(rf"(?<![\w.-]){re.escape(old)}[\s-]?{re.escape(unit)}s?\b", content, re.IGNORECASE)
    return said is not None and any(re.search(rf"\b{re.escape(w)}", content, re.IGNORECASE) for w in named)


#: the lowest port a service is given by choice: "18" or "443" are no port a correction moves.
PORT_MIN = 1024
#: what stands right before a number that is a port: a local host and a colon ("localhost:3333"), or
#: the word "port" with at most one word between ("`PORT` (default 3333)", "--port 8080", "port=8080"),
#: or a verb that binds one ("listens on 3100").
_PORT_BEFORE = re.compile(
    r"(?:(?:\blocalhost|\b127\.0\.0\.1|\b0\.0\.0\.0|\[::1\]):"
    r"|\bports?\b\W{0,3}(?:\w+\W{1,3})?"
    r"|\b(?:listens?|listening|bound|binds?|served|serves|runs?|running)\s+(?:on|to)\s+(?:port\s+)?)$",
    re.IGNORECASE,
)


def _port_at(text: str, value: str) -> bool:
    """Whether a whole number of PORT_MIN or more is named as a port in `text`, at any mention."""
    if not value.isdigit() or not PORT_MIN <= int(value) <= 65535:
        return False
    mentions = re.finditer(rf"(?<![\w.-]){re.escape(value)}(?![\w-]|\.\w)", text)
    return any(
        _PORT_BEFORE.search(text[max(0, m.start() - 40) : m.start()]) and not _UNIT_AFTER.match(text, m.end())
        for m in mentions
    )


#: a unit right after a number: "runs on 2048 MB" is memory, not a port.
_UNIT_AFTER = re.compile(
    r"\s?(?:ms|s|sec|secs|seconds?|mb|gb|kb|mib|gib|kib|%|rpm|hz|px|rows|items)\b", re.IGNORECASE
)


def _local_port_at(content: str, value: str, source: str) -> bool:
    """Whether `content` names `value` as a port, and names no host (but this machine's) that the
    correcting fact does not: "localhost:3333" and "`PORT` (default 3333)" take the API's new port;
    "db.internal port 5432" keeps its own when the local database moves to 5433."""
    if not _port_at(content, value):
        return False
    hosts = {host_of(address) for address in _addresses(content)}
    return not (hosts - _LOCAL_HOSTS - {host_of(address) for address in _addresses(source)})


#: where one clause of a fact ends and the next begins (`reconcile` and `nearest` read it too).
CLAUSE_END = re.compile(r"[;\u2014\u2013]|,\s")


def _clause_of(text: str, value: str) -> str:
    """The clause of a fact that mentions a value, or the whole fact."""
    return next((clause for clause in CLAUSE_END.split(text) if _mention(clause, value)), text)


def renamed(old_text: str, subject: str, new_text: str, value: str) -> tuple[str, str] | None:
    """(old name, new name) when the subject a fact renames is a CamelCase name the old fact states,
    word for word ("renamed the pool service to ObjectPoolRegistry" after "always use PoolService") or
    as one word of the subject ("renamed the SaveManager autoload to Persistence" after "autoload
    SaveManager"), and the new name is a CamelCase name or one capitalised word."""
    new_names = [name for name in _CAPITALISED_NAME.findall(new_text) if name.lower() == value]
    words = subject.split()
    old_names = [
        name for name in CAMEL_CASE.findall(old_text) if camel_parts(name) == words or name.lower() in words
    ]
    return (old_names[0], new_names[0]) if new_names and old_names else None


#: a name a thing is renamed to: a CamelCase name or one capitalised word ("Persistence").
_CAPITALISED_NAME = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*\b")


def renamed_in(old_text: str, values: tuple[str, str] | None, new_text: str) -> str | None:
    """The old fact with a renamed CamelCase or kebab-case name, or a moved host, in place: it states
    more about the thing, which holds under its new name ("always use PoolService" -> "always use
    ObjectPoolRegistry", "autoload SaveManager" -> "autoload Persistence", "data lands in
    `harbor-prod-dw.raw`" -> "… `harbor-dw-prd.raw`", "port 7, EU868, the network server at
    lns.old.net" -> "… at lns.new.io")."""
    if values is None:
        return None
    names = (
        all(CAMEL_CASE.fullmatch(v) for v in values)
        or (
            CAMEL_CASE.fullmatch(values[0]) is not None and _CAPITALISED_NAME.fullmatch(values[1]) is not None
        )
        or all(_KEBAB.fullmatch(_bare(v)) for v in values)
        or all(is_host(host_of(_bare(v))) and not is_file(host_of(_bare(v))) for v in values)
    )
    if not names:
        return None
    return restated(old_text, *values, new_text)


#: a kebab-case name of three parts or more: a bucket, a project, a queue ("orbit-files-prod").
_KEBAB = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+){2,}")


def kebab_renamed(old_text: str, new_text: str, value: str) -> tuple[str, str] | None:
    """(old name, new name) when a subject moved to a kebab-case name and the old fact states one name
    of as many parts sharing a part with it, which the new fact does not ("the attachments bucket,
    it's orbit-files-prod now" after `"orbit-attachments-prod"`)."""
    if not _KEBAB.fullmatch(value):
        return None
    parts = set(value.split("-"))
    present = set(value_tokens(new_text))
    old = {
        t
        for t in value_tokens(old_text)
        if _KEBAB.fullmatch(t)
        and t not in present
        and t.count("-") == value.count("-")
        and parts & set(t.split("-"))
    }
    return (old.pop(), value) if len(old) == 1 else None


#: a thing said to be gone: "was decommissioned", "it's gone", "has been shut down".
_GONE = re.compile(
    r"\b(?:decommissioned|retired|(?:is|it's|it is|are) gone|(?:was|were|been) (?:removed|deleted|shut down)|"
    r"no longer exists?)\b",
    re.IGNORECASE,
)
#: a kebab-case name anywhere, the head of a dotted name too ("harbor-prod-dw" in `harbor-prod-dw.raw`).
_KEBAB_NAME = re.compile(rf"(?<![\w.-]){_KEBAB.pattern}(?![\w-])")


def _abbreviates(short: str, long: str) -> bool:
    """ "prd" for "prod", "stg" for "staging": the same first letter, the rest in order."""
    if not short or short[0] != long[:1]:
        return False
    letters = iter(long)
    return all(ch in letters for ch in short)


def _reworded(old: str, new: str) -> bool:
    """Whether two kebab-case names are one name reworded: as many parts, the same parts in another
    order, or a part abbreviated ("harbor-prod-dw" -> "harbor-dw-prd"); "orbit-logs-prod" and
    "orbit-files-prod" are two siblings."""
    old_parts, new_parts = old.split("-"), new.split("-")
    if len(old_parts) != len(new_parts) or old == new:
        return False
    left = sorted(p for p in old_parts if p not in new_parts)
    right = sorted(p for p in new_parts if p not in old_parts)
    if len(left) != len(right):
        return False
    return all(_abbreviates(min(a, b, key=len), max(a, b, key=len)) for a, b in zip(left, right, strict=True))


def gone_for(new_text: str, old_text: str) -> tuple[str, str] | None:
    """(old name, new name) when the new fact says a thing is gone and gives one kebab-case name the old
    fact lacks, and the old fact states one name that is that name reworded (``_reworded``), which the
    new fact does not: "the old warehouse project was decommissioned, use `harbor-dw-prd`" after
    "raw data lands in `harbor-prod-dw.raw_shopify`"."""
    if not _GONE.search(new_text):
        return None
    new_names = set(_KEBAB_NAME.findall(new_text.lower()))
    old_names = set(_KEBAB_NAME.findall(old_text.lower()))
    given = new_names - old_names
    if len(given) != 1:
        return None
    value = given.pop()
    old = {name for name in old_names - new_names if _reworded(name, value)}
    return (old.pop(), value) if len(old) == 1 else None


def _schedules_only(old_value: str, new_value: str) -> bool:
    """Two schedules too plain to be carried over alone ("15 minutes", a cron line); a time of day
    ("01:30") is, like any specific value."""
    return is_schedule(old_value) and is_schedule(new_value) and not carried_over(old_value, new_value)


def as_written(text: str, value: str) -> str:
    """`value` as `text` writes it, found without regard to case; `value` itself when absent."""
    at = text.lower().find(value.lower())
    return text[at : at + len(value)] if at >= 0 else value


#: a version of three numeric parts or more ("1.3.280"): a fourth part after it numbers a build of it.
_LONG_VERSION = re.compile(r"v?\d+\.\d+\.\d+")


def restated(content: str, old_value: str, new_value: str, source: str) -> str | None:
    """`content` with `old_value` replaced by `new_value` as `source` (the correcting fact) writes it,
    or None when `content` does not state the old value as a whole token, or states the new one too
    (a history: "upgraded from 3.19.6 to 3.22.2")."""
    old, new = _bare(old_value), _bare(new_value)
    if _schedules_only(old, new):
        return reschedule(content, source)  # "15 minutes" is many jobs' interval: only the same job's
    holder = is_person(old) or passed_between(old, new)
    if holder and not about_the_same_thing(content, source, (old, new)):
        return None  # a person holds other roles: only a fact about what passed names the new holder
    moved_port = (
        _bare_numbers(old, new)
        and _port_at(source, new)
        and _local_port_at(content, old, source)
        # "the admin API moved to port 9090" says nothing of "the public API listens on port 8080"
        and not siblings(_clause_of(source, new), _clause_of(content, old))
    )
    if (_short_versions(old, new) or _bare_numbers(old, new)) and not (
        moved_port or _same_thing(content, old, source, new) or _same_setting(content, old, source, new)
    ):
        return None  # "1.75" is many things' version: only where the same words name what it versions
    # a kebab-case name heads a dotted one ("harbor-prod-dw.raw_shopify"), a class its members
    # ("AudioBus.stop_all"); a version never does
    named = _KEBAB.fullmatch(old.lower()) or CAMEL_CASE.fullmatch(old)
    after = r"(?![\w-])" if named else r"(?![\w-]|\.\w)"
    if _LONG_VERSION.fullmatch(old):
        # a build part after the version is the same release: "LunarG SDK 1.3.280.0" states 1.3.280
        after = rf"(?=(?:\.\d+)?{after})"
    if holder and is_first_name(old):
        after = rf"(?-i:[ ]{NAME_WORD})?{after}"  # "Kenji" stands for "Kenji Watanabe": the whole name goes
    found = re.compile(rf"(?<![\w.-]){re.escape(old)}{after}", re.IGNORECASE)
    if found.search(content) is None or new.lower() in content.lower():
        return None
    written = as_written(source, new)
    return found.sub(lambda _: written, content)

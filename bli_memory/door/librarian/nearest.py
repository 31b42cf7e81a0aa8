"""A change said of the nearest fact: the one value of a kind it states, replaced. Pure.

The correction rules in `reconcile` pair an old fact with a new one by their words: the same words
before a value, a retired name, a moved subject. Writers name a thing differently from one week to the
next ("carts are kept for 20 minutes" / "a basket now stays reserved for 35 minutes"), so a correction
often shares no word of its subject with the fact it corrects, while the door's embedder still finds
that fact nearest. :func:`changed_nearest` takes that evidence: a fact that says something changed
("now", "from now on", "as of", "drop … to 2 hours", …) in the clause stating exactly one value of a
kind (a quantity in one unit, a time of day, a version, a port, a host, a role's holder) replaces that
kind's one value in the most similar stored fact, when that fact is close enough (closer still when
no word of their subjects meets), names no other thing in the same place (`corrections.siblings`),
and states no value of the kind the new one does. A host moves to another one only when the two share
two words of their names or the facts are closer still: another host is often another service. A
quantity (a hold of 8 minutes, a 25 MB cap) is said again in other words more than a host or a name,
so a change of one reaches a fact further away that states one of the same unit and shares a word of
the subject.

:func:`moved_number` reads a number said to move ("the withdrawal budget moves from 52000 to 55000"):
the old number named is evidence a cosine is not, so a fact further away that states it once, in the
same unit, and shares a word of the subject takes the new number in its place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bli_memory.door.librarian.corrections import (
    CLAUSE_END,
    SHARED_HOST_WORDS_MIN,
    host_parts,
    siblings,
    stems,
)
from bli_memory.door.librarian.retiring import CHANGE_STEMS
from bli_memory.door.librarian.roles import PERSON as _PERSON
from bli_memory.door.librarian.roles import names_a_role
from bli_memory.door.librarian.values import HOST_NAME_PATTERN, is_file, value_tokens
from bli_memory.door.librarian.words import SETTING_VERBS

#: the lowest cosine similarity at which the nearest fact may be about the same thing: when the two
#: share a word of their subject ...
NEAREST_MIN_SIMILARITY = 0.55
#: ... or, when they share none, this close.
NEAREST_ALONE_SIMILARITY = 0.65
#: the neighbours, most similar first, read for the one that states a value of the kind.
NEAREST_READ = 2
#: how close a fact stating one quantity of a unit must be for a change of that quantity to replace
#: it, when the two share a word of their subject: a duration or a size is said again in other words
#: ("Holds now expire after 8 minutes" / "Changed the hold length to 12 minutes", cosine 0.33), and a
#: number of the same unit in a sentence that says a change is evidence a host or a name is not.
QUANTITY_MIN_SIMILARITY = 0.30

#: words that say something changed, read in the new fact.
CHANGE_SIGNAL = re.compile(
    r"\b(?:now|from now on|going forward|anymore|any more|no longer|instead|moved|moving|switched|"
    r"changed|bump(?:ed)?|upgraded|raised|lowered|renamed|replaced|decommissioned|retired|as of|"
    r"change of plan|correction|actually|from (?:this|next) (?:week|month)|"
    rf"(?:{SETTING_VERBS})\w*\s+(?:the\s+)?(?:[\w-]+\s+){{0,4}}?to\s+~?\d)\b",
    re.IGNORECASE,
)
#: a number and the unit after it ("12 minutes", "30 Hz", "512 MB"), one token or two.
#: (a rate's unit is read whole: "0.6 m/s" is a speed, not 0.6 minutes)
_QUANTITY = re.compile(r"(?<![\w.:-])(\d+(?:\.\d+)?)\s?(%|[a-z]{1,12}(?:/[a-z]{1,3})?\b)", re.IGNORECASE)
#: units written differently that count the same thing.
_UNIT_FAMILIES = {
    "m/s": "metres per second",
    "km/h": "kilometres per hour",
    "mph": "miles per hour",
    "s": "seconds",
    "sec": "seconds",
    "secs": "seconds",
    "second": "seconds",
    "seconds": "seconds",
    "min": "minutes",
    "mins": "minutes",
    "minute": "minutes",
    "minutes": "minutes",
    "m": "m",  # minutes ("5m") or metres ("3.2 m wide"): only another "m" is the same unit
    "h": "hours",
    "hr": "hours",
    "hrs": "hours",
    "hour": "hours",
    "hours": "hours",
    "d": "days",
    "day": "days",
    "days": "days",
    "ms": "ms",
    "millisecond": "ms",
    "milliseconds": "ms",
    "%": "percent",
    "percent": "percent",
    "hz": "hz",
    "khz": "khz",
    "mb": "mb",
    "gb": "gb",
    "kb": "kb",
    "tb": "tb",
    "mib": "mb",
    "gib": "gb",
    "rps": "rps",
    "req": "requests",
    "requests": "requests",
    "retries": "retries",
    "attempts": "retries",
    "times": "times",
    "workers": "workers",
    "replicas": "replicas",
    "connections": "connections",
    "threads": "threads",
}
#: the stems of the unit words, which say what a number counts and not what it is about.
_UNIT_STEMS = stems(" ".join([*_UNIT_FAMILIES, *set(_UNIT_FAMILIES.values())]))
#: a time of day ("04:15", "18:00").
_TIME = re.compile(r"(?<![\d:])(?:[01]?\d|2[0-3]):[0-5]\d(?![\d:])")
#: a version of two parts or more ("3.3.1", "v1.64.0"), with a release's letters and number after it
#: ("2022.3.40f1", "1.8.0rc2").
_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?:[a-z]{1,3}\d+)?(?![\w%]|\.\d)")
#: dots a host name holds at least to be read as one ("geo.county.gov", not "prj.conf").
HOST_MIN_DOTS = 2
#: a port: "port 7777", "listen on 24600", "listens on port 8080".
_PORT = re.compile(r"\b(?:port|listen(?:s|ing)?\s+on(?:\s+port)?)\s+(\d{2,5})\b", re.IGNORECASE)
#: a host name, with its port when it has one ("db-2.internal:5432" moves whole).
_HOST = re.compile(rf"(?<![\w./@-])({HOST_NAME_PATTERN}(?::\d{{2,5}})?)(?![\w/-]|\.\w)")
#: the host of a URL, with its port ("https://models.sprout.internal:8443/v2" names
#: models.sprout.internal:8443): a URL's path says what the host is, so one dot is enough.
_URL_HOST = re.compile(rf"\b[a-z][a-z0-9+.-]*://(?:[^\s/@]+@)?({HOST_NAME_PATTERN}(?::\d{{2,5}})?)")


#: the word right after a number: its unit, or what it counts ("8 climbers").
_WORD_AFTER = re.compile(r"\s?(%|[a-z]{1,12}(?:/[a-z]{1,3})?)\b")


def counts_apart(old_text: str, old: str, new_text: str, new: str) -> bool:
    """Whether two numbers count different things by the word right after each: one is a quantity of
    a unit family ("24 hours", "15 ms") and the other is followed by a word of another family or of
    none ("8 climbers", "14 days"). A number with no word after it ("on 3333,") may be either."""
    after_old, after_new = _word_after(old_text, old), _word_after(new_text, new)
    if after_old is None or after_new is None:
        return False
    family_old, family_new = _UNIT_FAMILIES.get(after_old), _UNIT_FAMILIES.get(after_new)
    return (family_old is not None or family_new is not None) and family_old != family_new


def _word_after(text: str, number: str) -> str | None:
    """The word right after a number's first mention as a whole token, lower case, or None."""
    lowered = text.lower().replace("`", " ")
    at = re.search(rf"(?<![\w.:-]){re.escape(number)}(?![\w]|\.\d)", lowered)
    if at is None:
        return None
    found = _WORD_AFTER.match(lowered, at.end())
    return found.group(1) if found else None


def kinds(text: str) -> dict[str, set[str]]:
    """The values a fact states, by kind: a quantity's unit family ("quantity:minutes"), "time",
    "version", "port", "host", "person" (two capitalised words, in a fact naming a role). Values are
    compared as written, lower case (a unit's spelling aside)."""
    lowered = text.lower().replace("`", " ")
    out: dict[str, set[str]] = {}
    for number, unit in _QUANTITY.findall(lowered):
        family = _UNIT_FAMILIES.get(unit)
        if family:
            out.setdefault(f"quantity:{family}", set()).add(number)
    for time in _TIME.findall(lowered):
        out.setdefault("time", set()).add(time.zfill(5))
    for version in _VERSION.findall(lowered):
        # "0.6 m/s" and "4.5 hours" are quantities; "4.3 now" and "4.3 stable" are versions
        quantity = _QUANTITY.match(lowered, lowered.find(version))
        if quantity is None or quantity.group(2) not in _UNIT_FAMILIES or version.count(".") > 1:
            out.setdefault("version", set()).add(version.lstrip("v"))
    if names_a_role(text):  # "Tom Reyes wrote the service" names an author, no holder of a role
        for person in _PERSON.findall(text.replace("`", " ")):
            out.setdefault("person", set()).add(person.lower())
    for port in _PORT.findall(lowered):
        out.setdefault("port", set()).add(port)
    for found in _HOST.findall(lowered):
        host = found.split(":", 1)[0]
        # three labels or more, and no file's name: `prj.conf` and `board.yml` are files
        if host.count(".") >= HOST_MIN_DOTS and not is_file(host) and not host.replace(".", "").isdigit():
            out.setdefault("host", set()).add(found)
    for found in _URL_HOST.findall(lowered):
        if not found.split(":", 1)[0].replace(".", "").isdigit():
            out.setdefault("host", set()).add(found)
    return out


def _nearest_read(
    neighbours: Sequence[tuple[str, str, float | None]], floor: float
) -> list[tuple[str, str, float | None]]:
    """The NEAREST_READ most similar neighbours at `floor` or more, most similar first (a stable sort:
    ties keep the search's order)."""
    ranked = sorted(
        (n for n in neighbours if n[2] is not None and n[2] >= floor),
        key=lambda n: -(n[2] or 0.0),
    )
    return ranked[:NEAREST_READ]


def changed_nearest(
    fact: str, neighbours: Sequence[tuple[str, str, float | None]]
) -> tuple[str, str, str] | None:
    """(neighbour id, old value, new value) when `fact` says a change and states one value of a kind
    that the most similar neighbour (of the first NEAREST_READ, at NEAREST_MIN_SIMILARITY or more)
    states another one value of, and neither states the other's; `neighbours` are (id, text,
    cosine similarity). A quantity is read further: among the neighbours under that floor, at
    QUANTITY_MIN_SIMILARITY or more and sharing a word of the subject, the most similar two."""
    # the change is said where the new value is: "no longer warmed at boot; it fills within 30 s"
    # changes the warming, not a time
    said = [clause for clause in CLAUSE_END.split(fact) if CHANGE_SIGNAL.search(clause)]
    if not said:
        return None
    # one value of the kind in the clauses that say the change ("from now maximum 0.4 m/s inside the
    # rows, and the turn … 0.25 m/s": the turn's speed is another setting, said in a clause of its own)
    new_kinds = {kind: values for kind, values in kinds(" ; ".join(said)).items() if len(values) == 1}
    if not new_kinds:
        return None
    present = set(value_tokens(fact))
    found = _changed_value(fact, said, new_kinds, present, _nearest_read(neighbours, NEAREST_MIN_SIMILARITY))
    if found is not None:
        return found
    # a quantity changed: a fact further away that states one of the same unit and shares a word of
    # the subject ("hold" in "Holds now expire after 8 minutes")
    quantities = {kind: values for kind, values in new_kinds.items() if kind.startswith("quantity:")}
    if not quantities:
        return None
    subject = _subject_stems(fact) - _UNIT_STEMS  # the unit is shared by the rule's own condition
    further = [
        (ident, text, similarity)
        for ident, text, similarity in neighbours
        if (similarity or 0.0) < NEAREST_MIN_SIMILARITY and subject & stems(text)
    ]
    read = _nearest_read(further, QUANTITY_MIN_SIMILARITY)
    return _changed_value(fact, said, quantities, present, read) if read else None


def _subject_stems(text: str) -> set[str]:
    """The stems of a text's words long enough to name its subject, no word of change and no number."""
    return {
        word
        for word in stems(text) - CHANGE_STEMS
        if len(word) >= SHARED_STEM_MIN_CHARS and not word[0].isdigit()
    }


def _changed_value(
    fact: str,
    said: list[str],
    new_kinds: dict[str, set[str]],
    present: set[str],
    read: Sequence[tuple[str, str, float | None]],
) -> tuple[str, str, str] | None:
    """`changed_nearest`'s pairing over the neighbours `read`: the first that states one other value
    of a kind the change states one of."""
    for ident, text, similarity in read:
        if siblings(" ; ".join(said), text):
            continue  # "the production host is now …" beside "the staging host is …"
        if not (stems(fact) & stems(text) - CHANGE_STEMS) and (similarity or 0.0) < NEAREST_ALONE_SIMILARITY:
            continue
        old_kinds = kinds(text)
        for kind, (new_value,) in ((k, tuple(v)) for k, v in new_kinds.items()):
            old_values = old_kinds.get(kind, set())
            if len(old_values) != 1:
                continue
            (old_value,) = tuple(old_values)
            if old_value == new_value or old_value in present or new_value in text.lower():
                continue
            if (
                kind == "host"
                and len(host_parts(old_value) & host_parts(new_value)) < SHARED_HOST_WORDS_MIN
                and (similarity or 0.0) < NEAREST_ALONE_SIMILARITY
            ):
                continue  # another host is another service ("Grafana now lives at …" beside Prometheus)
            return ident, old_value, new_value
    return None


#: a number said to move to another, with the unit or word after each: "moves from 52000 to 55000",
#: "goes from 9600 to 19200 baud".
_FROM_TO_NUMBER = re.compile(
    r"\bfrom\s+`?~?(\d[\d,.]*\d|\d)`?\s+(?:\w+\s+)?to\s+`?~?(\d[\d,.]*\d|\d)`?(?![\w:.]\d)", re.IGNORECASE
)
#: how close the fact stating the old number must be: the move names that number, which is evidence a
#: cosine alone is not, so the floor is lower than NEAREST_MIN_SIMILARITY.
MOVED_MIN_SIMILARITY = 0.25
#: the characters a stem of one fact needs to be found inside a word of the other ("withdrawal" in
#: "executeWithdrawal").
SHARED_STEM_MIN_CHARS = 4


def moved_number(
    fact: str, neighbours: Sequence[tuple[str, str, float | None]]
) -> tuple[str, str, str] | None:
    """(neighbour id, old number, new number) when `fact` says one number moves to another ("the
    withdrawal budget moves from 52000 to 55000") and one of the NEAREST_READ most similar facts (at
    MOVED_MIN_SIMILARITY or more) states the old number once, not the new one, of the same unit, and
    shares a word of its subject ("…executeWithdrawal stays under 52000 gas")."""
    moves = list(_FROM_TO_NUMBER.finditer(fact))
    if len(moves) != 1:
        return None
    old, new = moves[0].group(1), moves[0].group(2)
    if old == new:
        return None
    subject = _subject_stems(fact[: moves[0].start()] + fact[moves[0].end() :])
    for ident, text, _similarity in _nearest_read(neighbours, MOVED_MIN_SIMILARITY):
        if len(_number_mentions(text, old)) != 1 or _number_mentions(text, new):
            continue
        if counts_apart(text, old, fact, new):
            continue  # "52000 gas" is no "52000 users"
        lowered = text.lower()
        if any(word in lowered for word in subject):
            return ident, old, new
    return None


def _number_mentions(text: str, number: str) -> list[str]:
    """The mentions of `number` as a whole number in `text` (not inside "152000" or "52000.5")."""
    return re.findall(rf"(?<![\w.,]){re.escape(number)}(?![\w]|[.,]\d)", text)

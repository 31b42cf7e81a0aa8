"""Roles: who owns, maintains or answers for a thing, and a role handed to another person. Pure.

A role handed to another person ("the Stripe owner is now Ana Lima", "Marco Bellini owns the Vault
rotation now", or with no word of change, "the Snowflake account is owned by Lars Eriksen" after
"... owned by Noor Haddad", "… (Marcus Lindqvist) as the feed contract owner" after "Priya Raman owns
the feed contract": one thing has one owner) makes the fact naming the former one about the
same thing history; `reconcile` asks :func:`handed_over` and :func:`holder_replaced` for that person,
and :func:`newcomer` for the one it passed to, so the job can name the new holder in the other facts
:func:`about_the_same_thing`. A name is two or more capitalised words, accented Latin letters included.
"""

from __future__ import annotations

import re

from bli_memory.door.librarian.words import (
    NOT_ANCHORS,
    compound_parts,
    is_anchor,
    names_one_thing,
    stem,
    tokens,
)

#: a capitalised word of a name, Latin letters with their accents ("Wójcik", "Lucía", "Łukasz").
_NAME_WORD = "[A-Z\u00c0-\u00d6\u00d8-\u00de\u0100-\u017f][a-z\u00df-\u00f6\u00f8-\u00ff\u0100-\u017f]+"
#: a person's name: two or more capitalised words ("Dana Whitfield", "Tomasz Wójcik").
_NAME = rf"{_NAME_WORD}(?:[ -]{_NAME_WORD})+"
_PERSON = re.compile(rf"\b{_NAME}\b")
#: a person's name as other modules read one.
PERSON = _PERSON
#: one capitalised word of a name as other modules read one (the surname after a first name).
NAME_WORD = _NAME_WORD


def names_a_role(text: str) -> bool:
    """Whether a fact says who owns, maintains or answers for something ("owns", "contact", "is with
    Ana Lima"): a person it names there is a role's holder, not an author."""
    return bool(_ROLE.search(text) or _IS_WITH_ROLE.search(text))


#: who owns, maintains or answers for a thing.
_ROLE = re.compile(
    r"\b(?:own(?:s|ed|er|ers|ership|ing)?|maintain(?:s|ed|er|ers|ing)?|lead|approv(?:e|es|ed|er|ers|al)|contact|"
    r"review(?:s|ed|er|ers)?|"
    r"admin(?:s|istrators?)?|on-?call|belong(?:s|ed)?\s+to|go(?:es)?\s+through)\b",
    re.IGNORECASE,
)
#: a role that now falls to a named person: "the owner is now Ana Lima", "it's Ana Lima in ops now".
#: (each alternative opens on a fixed word: one opening on the name was tried again from every word
#: of a long run of capitalised words)
_ROLE_NOW = re.compile(
    rf"\b(?:is|are)\s+now\s+(?:owned\s+by\s+|maintained\s+by\s+|with\s+)?{_NAME}\b|"
    rf"\bit's\s+{_NAME}\b[^.;]{{0,40}}?\bnow\b"
)


#: a role verb right after a name that opens a fact ("Priya Nair owns …"): the name is a person's.
_HOLDS = re.compile(r"\s+(?:owns|maintains|leads|approves|runs)\b")
#: a first name alone that opens a fact by holding a role: "Priya owns helm chart, …".
_FIRST_NAME_HOLDS = re.compile(rf"^({_NAME_WORD})(?=\s+(?:owns|maintains|leads|approves)\b)")
#: a role held "now" by whoever the fact names before the verb ("Marco Bellini owns … now", "Bartek
#: Nowak is the person to go to from now on").
_HOLDS_NOW = re.compile(
    r"\b(?:owns|maintains|leads|approves|is the (?:person|one|contact|people) to (?:go to|ask|talk to))\b"
    r"[^.;]{0,60}?\b(?:now|going (?:forward|fwd)|these days)\b"
)
#: capitalised words that open a sentence without naming anyone: "Nobody owns it now".
_NOBODY = frozenset("Nobody Everyone Everybody Someone Somebody Anyone Anybody Each Whoever".split())


#: a role a named person took from another: "Tobias Lindqvist has kindly taken over the Twilio account".
_TAKES_OVER = re.compile(
    r"\b(?:has|have|had|is|will)?\s*(?:\w+ly\s+)?(?:taken|took|takes|taking|take)\s+over\b"
)


#: a thing held by a named person: "the push keys are with Lucía Ortega".
_IS_WITH_ROLE = re.compile(r"\b(?:is|are)\s+(?:now\s+)?with\s+[A-Z\u00c0-\u017f]")


def handed_over(new_text: str, old_text: str) -> str | None:
    """The person a role passed from: the new fact gives a role to a named person "now" (or says the
    person took it over), the old one gives the same role, about a thing both name, to a person the
    new fact does not name."""
    holds_now = _HOLDS_NOW.search(new_text) or _TAKES_OVER.search(new_text)
    opener = _FIRST_NAME_HOLDS.match(new_text)  # "Dele owns the job workers going forward"
    named_now = holds_now is not None and (
        _PERSON.search(new_text[: holds_now.start()]) is not None
        or (opener is not None and opener.group(1) not in _NOBODY)
    )
    if not ((_ROLE_NOW.search(new_text) or named_now) and _ROLE.search(old_text)):
        return None
    people = set(_PERSON.findall(new_text))
    shared = _subject_words(new_text) & _subject_words(old_text)
    subject = shared - {stem(w.lower()) for person in people for w in person.split()}
    # a capitalised word or an acronym of the new fact ("Stripe", "SMS") names one thing
    if len(subject) < 2 and not any(
        names_one_thing(w) or w.title() in new_text or w.upper() in new_text for w in subject
    ):
        return None  # "the search service" and "the billing service" share only a common noun
    former = [
        p
        for p in _PERSON.findall(old_text)
        if p not in people and (p.split()[0] != old_text.split()[0] or _HOLDS.match(old_text, len(p)))
    ]
    opening = _FIRST_NAME_HOLDS.match(old_text)  # "Priya owns helm chart": a first name alone
    if not former and opening and opening.group(1) not in new_text:
        former = [opening.group(1)]
    return former[-1] if former else None


def _subject_words(text: str) -> set[str]:
    """A fact's content words but its role words, stemmed, and the parts of its compounds
    ("Stripe-webhook" meets "the Stripe webhooks")."""
    words = {part for word in tokens(text) for part in [word, *compound_parts(word)]}
    return {stem(w) for w in words if is_anchor(w) and not _ROLE.fullmatch(w)}


#: a thing given to a named person by a role verb: "owned by Lars Eriksen", "maintained by Ana Lima".
_HELD_BY = re.compile(rf"\b(?:owned|maintained|run|led|approved|administered)\s+by\s+(?P<who>{_NAME})\b")
#: words before "owned by" that may name what is owned.
HELD_SUBJECT_WORDS = 8
#: content words the two facts' subjects share to be about the same thing ("Snowflake account").
HELD_SUBJECT_MIN_SHARED = 2


def _held_subject(text: str, match: re.Match[str]) -> set[str]:
    """The words that name what the role is held over: the anchors just before "owned by"."""
    before = tokens(text[: match.start()])[-HELD_SUBJECT_WORDS:]
    return {w for w in before if is_anchor(w) and not _ROLE.fullmatch(w)}


def holder_replaced(new_text: str, old_text: str) -> str | None:
    """The person the old fact names as holding a role ("… are owned by Noor Haddad", "Priya Raman
    owns the feed contract") over the same thing the new fact gives to another person ("… are owned
    by Lars Eriksen", "@mlindqvist (Marcus Lindqvist) as the feed contract owner"), without a word
    saying it changed: one thing has one owner, and the newer fact says who it is now."""
    for who, subject in _holders(new_text):
        for former, held in _holders(old_text):
            if former == who or former in new_text or who in old_text:
                continue
            if len(subject & held) >= HELD_SUBJECT_MIN_SHARED:
                return former
    return None


#: a thing held by the person named just before the verb: "Priya Raman owns the feed contract with …".
#: (each opens on a fixed word, the name read back from there: opening on the name, the pattern was
#: tried again from every word of a long run of capitalised words)
_HOLDS_THING = re.compile(r"\b(?:(?:now|still|also)\s+)?(?:owns|maintains|leads)\s+(?P<thing>[^.;,()]{1,60})")
#: a thing whose owner is the person named just before: "Marcus Lindqvist (is|as) the feed contract owner".
_OWNER_OF = re.compile(
    r"\b(?:is\s+(?:now\s+)?|as\s+)(?:the\s+)?(?P<thing>[\w -]{1,40}?)\s+(?:owner|maintainer|lead)\b"
)
#: one capitalised word of a name, read word by word.
_NAME_WORD_ALONE = re.compile(_NAME_WORD)
#: how far back from its verb a holder's name may start.
HOLDER_NAME_MAX_CHARS = 60


def _holders(text: str) -> list[tuple[str, set[str]]]:
    """(person, the words of what they hold) for each role a fact gives a named person: "owned by …",
    "… owns …" and "… as the … owner" read alike, so either wording replaces the other."""
    out = [(match.group("who"), _held_subject(text, match)) for match in _HELD_BY.finditer(text)]
    for match in (*_HOLDS_THING.finditer(text), *_OWNER_OF.finditer(text)):
        named = _name_at_end(text[max(0, match.start() - HOLDER_NAME_MAX_CHARS) : match.start()])
        if named:
            out.append((named, _thing_words(match.group("thing"))))
    return out


def _name_at_end(text: str) -> str | None:
    """The person's name (two capitalised words or more) that ends `text`, a closing bracket aside."""
    words = text.rstrip().rstrip(")").split(" ")
    name: list[str] = []
    for word in reversed(words):
        if not _NAME_WORD_ALONE.fullmatch(word.lstrip("(")):
            break
        name.insert(0, word.lstrip("("))
        if word.startswith("("):
            break  # "(Marcus Lindqvist)": the name opens with its bracket
    return " ".join(name) if len(name) >= 2 else None


def _thing_words(phrase: str) -> set[str]:
    """The content words of the noun phrase a role is held over: no verb stands there, so a word
    ending in "-ed" is a noun too ("the feed contract")."""
    return {
        w
        for w in tokens(phrase)
        if len(w) >= 2 and w not in NOT_ANCHORS and not w.isdigit() and not _ROLE.fullmatch(w)
    }


#: a person who left, or left the role for other work: "Kwame has moved on from the company", "Dmitri
#: left last week", "Kenji went to the Android side", "Marisol has stepped down", "Lena's on the mobile
#: team now".
_DEPARTED = re.compile(
    rf"\b(?P<who>{_NAME_WORD})(?:\s+{_NAME_WORD})?(?:\s+(?:has|have|had)\b)?\s*"
    r"(?:left(?!\s+(?:a|an|it|them|some|comments?|notes?)\b)|moved\s+on|is\s+leaving|quit|retired|"
    r"(?:moved|went|switched|transferred)\s+(?:over\s+)?to\s+(?:the\s+)?[\w-]+(?:\s+[\w-]+)?\s+(?:team|side|squad|group)|"
    r"stepped\s+(?:down|back|away)|'s\s+on\s+(?:the\s+)?[\w-]+(?:\s+[\w-]+)?\s+(?:team|side|squad|group))\b"
)
#: the role passing to someone now: "… will be looking after the pipelines from now on", "… from this
#: week", "as of Monday".
_PASSES_NOW = re.compile(
    r"\b(?:now|from now on|going forward|from here on|from (?:this|next) (?:week|month|sprint)|as of|"
    r"starting (?:today|tomorrow|monday|this week)|take[sn]?\s+over|took\s+over)\b",
    re.IGNORECASE,
)


def departed_holder(new_text: str, old_text: str) -> str | None:
    """The person who left and whose role the new fact gives to another one, now ("Kwame has moved on
    from the company, and Inès Duarte will be looking after the finance pipelines from now on"), when
    the old fact names that person in a role or as whom something goes to ("failure emails go to Kwame")."""
    if not _PASSES_NOW.search(new_text) or newcomer(new_text, old_text) is None:
        return None
    for found in _DEPARTED.finditer(new_text):
        who = found.group("who")
        if not re.search(rf"\b{re.escape(who)}\b", old_text):
            continue
        if _ROLE.search(old_text) or re.search(rf"\bto\s+{re.escape(who)}\b", old_text):
            return who
    return None


def newcomer(new_text: str, old_text: str) -> str | None:
    """The one person the new fact names and the old one does not: who a role passed to."""
    people = {p for p in _PERSON.findall(new_text) if p not in old_text}
    return people.pop() if len(people) == 1 else None


_FIRST_NAME = re.compile(_NAME_WORD)


def is_first_name(value: str) -> bool:
    """Whether a value is one capitalised word as a name reads ("Kwame"): a holder named by a first name."""
    return _FIRST_NAME.fullmatch(value) is not None


def is_person(value: str) -> bool:
    """Whether a value is a person's name as roles read one ("Tomasz Wójcik")."""
    return _PERSON.fullmatch(value) is not None


def passed_between(old_value: str, new_value: str) -> bool:
    """Whether a pair of values is a role passed from one holder to another: the new one a person's
    name, the old one too or a first name alone ("Kenji went to the Android side", "failure emails go
    to Kwame")."""
    return is_person(new_value) and (is_person(old_value) or is_first_name(old_value))


def about_the_same_thing(content: str, source: str, people: tuple[str, ...]) -> bool:
    """Whether two facts share a word of what a role is held over, beyond the people's names and the
    role words: the former holder named in "the endpoint … is Ines Moreau's call" about Stripe is the
    Stripe owner there, and not in "Ines Moreau also runs the booking calendar"."""
    names = {stem(w.lower()) for person in people for w in person.split()}
    return bool((_subject_words(content) & _subject_words(source)) - names)

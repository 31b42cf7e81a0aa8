"""Which saved exchanges of a space are about none of its parts. Pure.

A project's standing parts come up again and again: its host, its database, its pipeline's folder, the
person who owns the workers, the pinned version. An exchange that names one of them, or a path of the
repository, is about the project. An exchange that names no path and nothing any other exchange of the
space names is about something else: a general question answered from general knowledge ("why does
0.1 + 0.2 give 0.30000000000000004", "mutex or semaphore"), which however it is worded leaves facts
that read like rules ("a mutex has an owner"). Its facts stay searchable; the session-start briefing
leaves them out. On the capture sets this marks about two in five of the exchanges written as off the
project's topic and none of those about it (docs/evaluation.md, "Two more sets, p and q, and exchanges
about nothing of the project").

The same judgement is made when an exchange is saved (:func:`loose_exchange`), against the rows the
space already holds: an exchange about none of their parts is kept as a stored exchange and gives no
facts. It needs fewer sources before it (LOOSE_AT_SAVE_MIN_SOURCES) than the briefing's judgement,
as it asks only whether one new exchange meets the space, not which of many stand apart; the first
exchanges of a space are never judged, so a new project's first words give their facts, and neither
is a space whose exchanges mostly name no path (a chat about anything else has no such parts). A path
under the home directory (``~/Pictures/trip``) is the user's, not the repository's, and ties no
exchange to the project.

The same names order the briefing: among facts that last alike, one naming a thing comes first
(``service/profile.py``).

The names are read by shape, not from a word list: a token with a letter and a digit, or one of
``. _ / : @ -`` inside (`tidemark-pg`, `lf-build01`, `192.168.20.53`, `fly.staging.toml`, `09:00`), a number of
IDENTIFIER_NUMBER_MIN_DIGITS digits or more (an app id, a port), and a capitalised word that does not
open a sentence, a line or a label (a person, a product: "Priya", "Databricks"). Plain words are no
anchor: "the build" is in every exchange of every space.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

from bli_memory.door.librarian.extract import _PATH_TOKEN
from bli_memory.door.librarian.prose import _FUNCTION_WORDS, _IMPERATIVES, _VERBS

#: a token: word characters, with the punctuation of hosts, paths and versions inside it.
_TOKEN = re.compile(r"\w[\w./:@-]*\w|\w")
#: what marks a token as a value's name rather than a word.
_VALUE_MARK = re.compile(r"\w[._/:@-]\w")
_LETTER_AND_DIGIT = re.compile(r"^(?=.*[^\W\d_])(?=.*\d)")
#: the characters an anchor has at least: "s3" or "v2" name too little to tie two exchanges together.
IDENTIFIER_MIN_CHARS = 3
#: the digits a bare number needs to name something (an app id, a port): "12" or "200" is a quantity.
IDENTIFIER_NUMBER_MIN_DIGITS = 4
#: texts whose identifiers are remembered: a session start reads the same newest rows every time.
IDENTIFIERS_CACHE_MAX = 8192
#: the saved exchanges a space needs before one of them can be judged loose.
LOOSE_MIN_SOURCES = 4
#: the saved exchanges (or memories saved on their own) naming a path of the repository that a space
#: needs before a new exchange is judged loose as it is saved: two, so that a new project's first
#: exchanges always give their facts.
LOOSE_AT_SAVE_MIN_SOURCES = 2
#: an abbreviation written with full stops ("e.g", "i.e", "a.k.a") names nothing.
_DOTTED_ABBREVIATION = re.compile(r"^(?:[a-z]\.)+[a-z]$")
#: what ends a sentence: the word after it is capitalised by grammar, not because it is a name.
_SENTENCE_END = (".", "!", "?", ":")
#: words a capital letter does not make a name ("Use the pool", "Fix: Bumped …").
_PLAIN_WORDS = _FUNCTION_WORDS | _VERBS | _IMPERATIVES | frozenset({"true", "false", "none", "null"})


def words(text: str) -> frozenset[str]:
    """Every token of `text`, lower-cased: what a name of another fact is looked up in."""
    return frozenset(token.lower() for token in _TOKEN.findall(text))


@functools.lru_cache(maxsize=IDENTIFIERS_CACHE_MAX)
def identifiers(text: str) -> frozenset[str]:
    """The tokens of `text` that name a thing (see the module's docstring), lower-cased."""
    found: set[str] = set()
    opens_sentence = True  # the first token, and each after a full stop, is capitalised by grammar
    previous_end = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        between = text[previous_end : match.start()]
        gap = between.strip(" \t\n\"'`(*[")
        opens_sentence = (opens_sentence and not gap) or gap.endswith(_SENTENCE_END) or "\n" in between
        previous_end = match.end()
        if len(token) < IDENTIFIER_MIN_CHARS or _DOTTED_ABBREVIATION.match(token):
            pass
        elif _VALUE_MARK.search(token) or _LETTER_AND_DIGIT.match(token):
            found.add(token.lower())
        elif token.isdigit():
            if len(token) >= IDENTIFIER_NUMBER_MIN_DIGITS:
                found.add(token)
        elif token[:1].isupper() and not opens_sentence and token.lower() not in _PLAIN_WORDS:
            found.add(token.lower())
        opens_sentence = False
    return frozenset(found)


def _holders(texts: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """Each word of a space and the sources that hold it, from (source, text) pairs."""
    out: dict[str, set[str]] = {}
    for source, text in texts:
        for word in words(text):
            out.setdefault(word, set()).add(source)
    return out


def loose_sources(texts: Sequence[tuple[str, str]]) -> frozenset[str]:
    """The saved exchanges of a space that are about none of its parts, from (source, text) pairs
    (each saved exchange, and the facts drawn from it, under the exchange's key): those that name no
    path and none of whose names another exchange holds. Judged only among LOOSE_MIN_SOURCES
    exchanges or more: the first exchanges of a space have nothing to share yet."""
    by_source: dict[str, list[str]] = {}
    for source, text in texts:
        by_source.setdefault(source, []).append(text)
    if len(by_source) < LOOSE_MIN_SOURCES:
        return frozenset()
    # a path of the repository ties an exchange to the project, and most exchanges name one
    pathless = [source for source, said in by_source.items() if not any(map(_names_a_path, said))]
    if not pathless:
        return frozenset()
    held = _holders(texts)
    return frozenset(source for source in pathless if not _meets(by_source[source], held, source))


def loose_exchange(text: str, earlier: Sequence[tuple[str, str]]) -> bool:
    """Whether an exchange being saved is about none of its space's parts, given the space's rows as
    (source, text) pairs (see :func:`loose_sources`): it names no path of the repository and none
    of its names is held by the space's rows. False while fewer than LOOSE_AT_SAVE_MIN_SOURCES sources
    name a path, or fewer than half of them: a new project's first exchanges have nothing to meet
    yet, and a space that is not about a repository has no parts of that kind."""
    if _names_a_path(text):
        return False
    sources = {source for source, _ in earlier}
    pathed = {source for source, said in earlier if _names_a_path(said)}
    # a space about a repository: most of its exchanges name one of its paths (a space of chat about
    # anything else has no parts to meet, and every exchange would look loose)
    if len(pathed) < LOOSE_AT_SAVE_MIN_SOURCES or 2 * len(pathed) < len(sources):
        return False
    return not _meets([text], _holders(earlier), None)


def _names_a_path(text: str) -> bool:
    """A path of the repository in `text`: one under the home directory is the user's own."""
    return any(
        not match.group().lstrip().startswith("~/") for match in _PATH_TOKEN.finditer(text.replace("`", " "))
    )


def _meets(said: Sequence[str], held: dict[str, set[str]], source: str | None) -> bool:
    """Whether one of the names of `said` is held by a source other than `source`."""
    names = frozenset().union(*(identifiers(text) for text in said))
    return any(held.get(name, set()) - {source} for name in names)

"""The words of a fact: the one tokenizer that extraction's dedup and reconciliation's comparisons share."""

from __future__ import annotations

import re

_CONTRACTIONS = (
    (re.compile(r"\bcan't\b|\bcannot\b"), "can not"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\bshan't\b"), "shall not"),
    (re.compile(r"\b(\w+)n't\b"), r"\1 not"),
)


def tokens(text: str) -> list[str]:
    """Lower-case words with markup, quotes and edge punctuation removed and contractions expanded."""
    lowered = text.lower().replace("`", " ").replace("*", " ").replace("“", " ").replace("”", " ")
    for pattern, replacement in _CONTRACTIONS:
        lowered = pattern.sub(replacement, lowered)
    out = []
    for raw in lowered.split():
        token = raw.strip(".,;:!?()[]{}\"'")
        if token:
            out.append(token)
    return out


#: the shortest stem a suffix is taken off to leave ("uses" stays, "caches" becomes "cach").
STEM_MIN_CHARS = 3


def stem(word: str) -> str:
    """A crude stem of a lower-case word, so "shared" meets "sharing", "cache" meets "cached" and
    "dependency" meets "dependencies": the one both extraction and reconciliation compare words by."""
    for suffix, replacement in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= STEM_MIN_CHARS:
            word = word[: len(word) - len(suffix)] + replacement
            break
    return word[:-1] if word.endswith("e") and len(word) > STEM_MIN_CHARS + 1 else word


#: the marks a compound name is split at ("rust-version", "app/api", "ATTACHMENTS_BUCKET", "Orbit.Storage").
_COMPOUND_MARK = re.compile(r"[-/_.]")


def compound_parts(word: str) -> list[str]:
    """The parts of a compound name, split at `- / _ .` ("stripe-webhook" -> stripe, webhook)."""
    return _COMPOUND_MARK.split(word)


def fact_key(fact: str) -> str:
    """Case, punctuation and markup-insensitive key used to deduplicate facts."""
    return " ".join(tokens(fact))


#: verbs that set a quantity to a new value ("drop the window to 2 hours", "raise the limit to 50").
SETTING_VERBS = "drop|lower|raise|reduce|increase|cut|shorten|extend"

#: words too common to say that two values belong to the same thing.
NOT_ANCHORS = frozenset(
    "a an the and or but so to of in on at by for with from into as is are was were be it its it's this that "
    "these those they we i you our your now then also only still just not no never always all both each any "
    "version versions v release new old set sets setting value values default defaults runs run uses use "
    "using via per every than over under up down".split()
)


def is_anchor(word: str) -> bool:
    """A word that can say what a value belongs to: not a common word, a number or a verb form."""
    return (
        len(word) >= 2
        and word not in NOT_ANCHORS
        and not any(ch.isdigit() for ch in word)
        and not word.endswith(("ed", "ing", "ly"))
    )


def names_one_thing(term: str) -> bool:
    """A URL, a path, an identifier with a digit or a dot: a name no other subject shares."""
    return "://" in term or any(ch.isdigit() or ch in "._/@" for ch in term)

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


def fact_key(fact: str) -> str:
    """Case, punctuation and markup-insensitive key used to deduplicate facts."""
    return " ".join(tokens(fact))

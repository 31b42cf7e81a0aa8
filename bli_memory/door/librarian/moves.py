"""Moves: a subject given a new value by a fact that says it moved. Pure (no I/O).

"We renamed the default branch to `trunk`", "the staging host moved to `db-3`", "the broker is now
RabbitMQ", "staging now deploys to X", "infra moved staging, it's `stg-eu1.example.io` now",
"switched to `gofumpt` for formatting Go code": :func:`moved` reads the subject and its new value,
and says whether an old fact names every word of that subject with a value the move no longer
states ("The default branch is `main`"). :func:`moved_from` then finds the one old value of the
new one's kind that it replaces, so that other facts stating it can be brought up to date.
"""

from __future__ import annotations

import re

from bli_memory.door.librarian.corrections import stems
from bli_memory.door.librarian.values import (
    is_file,
    is_host,
    is_value,
    name_parts,
    shape_of,
    stated_values,
    value_tokens,
)
from bli_memory.door.librarian.words import tokens

#: the verbs that move a subject to a new value.
_MOVED = r"(?:renamed|moved|migrated|switched|changed|cut over|upgraded|bumped|pointed|repointed)"
#: the value a subject moves to: a code span or a word, after an article or "a new host," and a word of
#: it may follow ("to Node 20", "to the Terraform Cloud workspace `acme-prod`", "to a new host, X").
_MOVE_VALUE = r"(?:(?:the|a|an)\s+)?(?:new\s+\w+\s*[,:]\s*)?(?P<value>`[^`]+`|[^\s,;]+)(?P<more>(?:\s+(?:`[^`]+`|[\w.@:/-]+)){0,3})"
#: "We renamed the default branch to `trunk`", "the staging host moved to `db-3`": a subject and its
#: new value, which a fact stating another value for every word of that subject has lost.
#: (a subject starts and ends at a word: the spaces around it belong to the `\s` runs alone, else
#: every split of a run of spaces was tried with every length of subject)
_MOVE = re.compile(
    r"^(?:\W*correction:\s*)?(?:(?:we|i)(?:'ve| have)?\s+)?(?:"
    rf"{_MOVED}\s+(?P<subject>[^,;:\s][^,;:]{{1,78}}?[^,;:\s])|"
    rf"(?P<mover>[^,;:\s][^,;:]{{1,78}}?[^,;:\s])\s+(?:has\s+|was\s+|is\s+)?(?:been\s+)?{_MOVED}"
    rf")\s+to\s+{_MOVE_VALUE}",
    re.IGNORECASE,
)
#: "We switched to `gofumpt` for formatting Go code": the subject is what the new value is for.
_MOVED_FOR = re.compile(
    r"^(?:\W*correction:\s*)?(?:(?:we|i)(?:'ve| have)?\s+)?"
    rf"{_MOVED}\s+(?:over\s+)?to\s+{_MOVE_VALUE}\s+for\s+(?P<subject>[^,;:\s][^,;:.]{{1,78}}[^,;:.\s])",
    re.IGNORECASE,
)
#: "infra moved staging, it's `stg-eu1.example.io` now", "the broker moved: it is `amqp://mq` now": a
#: move, then the subject's new value after a comma and "it's" (or "its", as typed in a hurry).
_MOVED_NOW = re.compile(
    r"^(?:\W*correction:\s*)?(?:(?:we|i|[\w-]+)\s+)?(?:"
    rf"{_MOVED}\s+(?P<subject>[^,;:\s][^,;:]{{0,78}}?)|(?P<mover>[^,;:\s][^,;:]{{0,78}}?)\s+(?:has\s+|was\s+)?{_MOVED}"
    r")\s*[,;:]\s*(?:(?:the\s+|its\s+)?new\s+(?:host|url|address|endpoint|domain)\s+is|it'?s|it\s+is|now\s+(?:at|on|in))"
    r"\s+(?P<value>`[^`]+`|[^\s,;]+)",
    re.IGNORECASE,
)
#: words that end the name of a value a subject moves to ("to Ktor for API calls").
_VALUE_ENDS = frozenset("for in on with because so since and but after before when".split())
#: "The broker is now RabbitMQ", "Celery's broker is now `amqp://mq:5672`": a subject and the value it
#: holds now, which a fact stating another value for every word of that subject has lost.
_NOW_IS = re.compile(
    r"^(?:\W*correction:\s*)?(?P<mover>[^,;:\s][^,;:]{1,78}?[^,;:\s])\s+(?:(?:is|are)\s+now|"
    r"now\s+(?:lives?|runs?|sits?|points?|goes|go|deploys?)(?:\s+(?:served|hosted|deployed))?)\s+"
    r"(?:at\s+|on\s+|in\s+|to\s+|from\s+)?(?P<value>`[^`]+`|[^\s,;]+)",
    re.IGNORECASE,
)
#: words of a subject too common to name it.
SUBJECT_FILLER = frozenset(
    "it this that we i you they the a an is are to of our its their all every each now everything everyone anything something".split()
)
#: letters a word of the subject needs to count.
SUBJECT_WORD_MIN_CHARS = 3


def moved(new_text: str, old_text: str) -> tuple[str, str] | None:
    """(subject, new value) when the new fact moves a subject to a new value ("renamed the default
    branch to `trunk`") and the old fact names every word of that subject with another value
    ("The default branch is `main`."): the old value is gone from the new fact, the new one from the old."""
    text = _LABEL.sub("", new_text.strip())
    match = _MOVED_FOR.match(text) or _MOVE.match(text) or _NOW_IS.match(text) or _MOVED_NOW.match(text)
    if match is None:
        return None
    subject = match.groupdict().get("subject") or match.group("mover") or ""
    words = [w for w in tokens(subject) if len(w) >= SUBJECT_WORD_MIN_CHARS and w not in SUBJECT_FILLER]
    value = match.group("value").strip("`.,;").lower()
    old_text = " ".join([old_text, *name_parts(old_text)])  # "PoolService": pool service too
    named: list[str] = []  # the value and the words of its name: "Node 20", "Terraform Cloud workspace `x`"
    for word in tokens(value + " " + (match.groupdict().get("more") or "")):
        if word in _VALUE_ENDS:
            break
        named.append(word)
    old_words, old_stems = set(tokens(old_text)), stems(old_text)
    missing = [w for w in words if w not in old_words and not stems(w) <= old_stems]
    if not words or len(missing) > (1 if _same_site(value, old_text) and len(words) > 2 else 0):
        return None  # "the sandbox SFTP host" may be the old fact's "server" on the same site
    if all(w in old_words or w in SUBJECT_FILLER for w in named):
        return None  # the old fact already names the value
    new_values = stated_values(new_text)
    if not (stated_values(old_text) - new_values):
        return None  # the old fact states no value the new one lost
    return " ".join(words), value


#: a short label before a move ("Small refactor request: we renamed …", "Quick update: infra renamed …",
#: "Other thing: the network server has moved, …").
_LABEL = re.compile(
    rf"^[a-z][\w ]{{0,40}}?:\s+(?=(?:we|i)\s|(?:the\s+)?[\w-]+(?:\s+[\w-]+){{0,2}}\s+(?:has\s+|was\s+)?{_MOVED}\b)",
    re.IGNORECASE,
)


def moved_from(old_text: str, new_text: str, value: str) -> tuple[str, str] | None:
    """(old value, new value) for a subject moved to `value` when the old fact states one value of
    its kind the new fact lacks ("Staging: https://staging.example.dev" before "staging moved to a
    new host, https://stg.example.run"); None when it states none or several."""
    present = set(value_tokens(new_text))
    kind = _kind(value)
    old = {
        v
        for v in value_tokens(old_text)
        if (is_value(v) or kind == "host") and _kind(v) == kind and v not in present
    }
    return (old.pop(), value) if len(old) == 1 else None


def _kind(value: str) -> str:
    """A value's shape, with every host name one kind ("staging.example.internal", "stg-eu1.example.io")."""
    return "host" if is_host(value) and not is_file(value) else shape_of(value)


def _same_site(value: str, old_text: str) -> bool:
    """Whether a host name names another host of a site the old fact names (the last two labels)."""
    if not is_host(value) or is_file(value):
        return False
    site = ".".join(value.split(".")[-2:])
    return any(t != value and t.endswith("." + site) for t in value_tokens(old_text))

"""Decide, from the prompt text alone, whether a prompt has anything to recall against.

"ok", "continue", "thanks" carry no subject: their embedding is that of a stopword, the similarity
floor throws every neighbour away at the far end, and the person has already waited. So the prompt
hook skips them without calling the door. The rule is deliberately a CLOSED LIST plus a length, so
anyone can predict it: a prompt is trivial when it is a /slash command, or it is in `CLOSED_LIST`
after normalising case and punctuation, or it is shorter than `MIN_PROMPT_CHARS` — unless it names
an identifier: a short `BLI-3580?` or `parse_args` is the best query the keyword channel
ever gets, so it is always searched.

Pure functions, no imports: this runs on every prompt, inside the prompt hook's 2 s, on prompts of
up to a few MB. So no decision reads more than it needs: only a prompt of at most
`CLOSED_LIST_MAX_CHARS` can be a closed-list entry, and identifiers are looked for in the first
`IDENTIFIER_SCAN_MAX_CHARS`.
"""

from __future__ import annotations

import itertools

#: Anything shorter than this (after trimming whitespace) is trivial unless it names an identifier.
MIN_PROMPT_CHARS = 12

#: Whole prompts that carry no subject, compared after `normalise`. Closed on purpose: extend it by
#: editing this tuple, never by a heuristic.
CLOSED_LIST: frozenset[str] = frozenset(
    {
        # acknowledgements
        "ok", "okay", "k", "kk", "ok thanks", "ok thank you", "okay thanks", "ok cool", "ok great",
        "y", "yes", "yep", "yeah", "yup", "ya", "sure", "n", "no", "nope", "nah",
        "thanks", "thank you", "thx", "ty", "thanks a lot", "thank you very much", "many thanks",
        "great", "good", "nice", "cool", "perfect", "awesome", "excellent", "lgtm", "sgtm",
        "sounds good", "looks good", "looks good to me", "sounds good thanks", "great thanks",
        "perfect thanks", "nice work", "good job", "well done", "great work", "makes sense",
        # continuations
        "continue", "go", "go on", "go ahead", "proceed", "next", "more", "again", "retry",
        "try again", "keep going", "carry on", "do it", "yes do it", "yes please", "please do",
        "please continue", "continue please", "yes continue", "ok continue", "okay continue",
        "yes go ahead", "ok go ahead", "go for it", "ship it", "please proceed", "proceed please",
        "keep going please", "yes proceed", "ok proceed", "sure go ahead", "sounds good go ahead",
        # small talk and pauses
        "hi", "hello", "hey", "hmm", "hm", "wait", "stop", "done", "help", "what", "why", "huh",
    }
)  # fmt: skip

_EDGE_PUNCTUATION = ".,;:!?()[]{}<>\"'“”‘’…"

#: A prompt longer than this (after trimming whitespace) is never a closed-list entry: the longest
#: entry is a few dozen characters, so a few hundred leave room for any punctuation around one, and
#: a megabyte prompt is never normalised whole.
CLOSED_LIST_MAX_CHARS = 256
#: Identifiers are looked for in this much of a prompt: the keyword query sent to the door is the
#: prompt's first 4 KB, so a name further on could not have matched anything anyway.
IDENTIFIER_SCAN_MAX_CHARS = 4 * 1024

#: the table remembers this many characters (a hostile prompt of all-distinct characters stays small)
_TABLE_MAX_ENTRIES = 4096


class _SpaceForNonAlnum(dict[int, str]):
    """A `str.translate` table that keeps letters and digits and turns anything else into a space,
    filled in as characters are met (no table can list all of Unicode up front)."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        mapped = char if char.isalnum() else " "
        if len(self) < _TABLE_MAX_ENTRIES:
            self[code] = mapped
        return mapped


_SPACE_FOR_NON_ALNUM = _SpaceForNonAlnum()


def normalise(text: str) -> str:
    """Lowercase, every run of non-alphanumeric characters becomes one space, trimmed.

    C-speed passes only (`lower`, `translate`, `split`, `join`): no Python step per character.
    """
    return " ".join(text.lower().translate(_SPACE_FOR_NON_ALNUM).split())


def is_slash_command(text: str) -> bool:
    """`/compact`, `/clear foo`, `/plugin:cmd` — but not an absolute path such as `/etc/hosts`."""
    stripped = text.lstrip()
    if not stripped.startswith("/") or len(stripped) < 2:
        return False
    head = stripped[1:].split(None, 1)[0] if stripped[1:].strip() else ""
    return bool(head) and head[0].isalpha() and "/" not in head


def _is_identifier(token: str) -> bool:
    if token.startswith("`") and token.endswith("`") and len(token) > 2:
        return True
    word = token.strip(_EDGE_PUNCTUATION + "`")
    if len(word) < 2:
        return False
    if word.startswith("#") and word[1:].isdigit() and len(word) >= 3:
        return True  # an issue or PR number
    has_alpha = any(c.isalpha() for c in word)
    has_digit = any(c.isdigit() for c in word)
    if has_alpha and has_digit and len(word) >= 3:
        return True  # BLI-3580, v0.2.83, i18n, a commit sha
    if "_" in word.strip("_") or "::" in word or "/" in word.strip("/") or "->" in word:
        return True  # snake_case, Rust/C++ paths, file paths
    parts = word.split(".")
    if len(parts) > 1 and all(parts) and has_alpha and sum(len(p) > 1 for p in parts) >= 2:
        return True  # foo.py, os.path
    if word.endswith("()") and len(word) > 2:
        return True  # a call
    return any(a.islower() and b.isupper() for a, b in itertools.pairwise(word))  # camelCase


def names_identifier(text: str) -> bool:
    """True when some whitespace-separated token looks like code, a ticket, a path or a version
    (in the first `IDENTIFIER_SCAN_MAX_CHARS` characters)."""
    return any(_is_identifier(token) for token in text[:IDENTIFIER_SCAN_MAX_CHARS].split())


def identifiers(text: str) -> list[str]:
    """The identifier tokens of `text` (as `names_identifier` sees them), without edge punctuation or
    backticks, e.g. `["BLI-3580", "parse_args"]` for "why did BLI-3580 break `parse_args`?"."""
    found: list[str] = []
    for token in text[:IDENTIFIER_SCAN_MAX_CHARS].split():
        if _is_identifier(token):
            word = token.strip(_EDGE_PUNCTUATION + "`")
            if word.endswith("()"):
                word = word[:-2]
            if len(word) >= 2 and word not in found:
                found.append(word)
    return found


def skip_reason(prompt: object) -> str | None:
    """`no_prompt`, `trivial_prompt`, or None when the prompt should be searched."""
    if not isinstance(prompt, str) or not prompt.strip():
        return "no_prompt"
    text = prompt.strip()
    if is_slash_command(text):
        return "trivial_prompt"
    if len(text) <= CLOSED_LIST_MAX_CHARS and normalise(text) in CLOSED_LIST:
        return "trivial_prompt"
    if len(text) < MIN_PROMPT_CHARS and not names_identifier(text):
        return "trivial_prompt"
    return None

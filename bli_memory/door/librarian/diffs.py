"""The values a diff in an exchange changes: the old and the new value of one setting. Pure (no I/O).

A reply that shows a diff says exactly what changed: `-  memory = 2048` then `+  memory = 4096`,
`-dbt-core==1.7.11` then `+dbt-core==1.8.7`. The facts the librarian distils from its prose may name
neither line, so the job hands each changed value to the space's other facts as an update does
(`jobs._restate_elsewhere`, with `corrections.carried_pairs` and `restated` judging each fact): a diff
leaves no fact stating the old value current, however the prose around it was phrased.

Only a fenced block reads as a diff: one marked ``diff`` or ``patch``, or one holding a hunk header
(`@@`) or both added and removed lines. A removed line is paired with the added line after it that
shares the longest start with it (the setting's name), and the two must differ in one value.
"""

from __future__ import annotations

import re

#: a line that opens or closes a fenced block, and the block's language.
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*([\w+-]*)")
#: a comment at the end of a line ("  # 03:00 Brisbane", " // in ms"): not part of the setting.
_TRAILING_COMMENT = re.compile(r"(?<!\s)\s+(?:#|//)\s.*$")
#: the characters of one value: a version, a host, a URL, a path, a name with its marks.
_VALUE_CHARS = re.compile(r"[\w.@:/%|+~-]")
#: a diff's lines that open or mark a file, not a change.
_FILE_MARKS = ("---", "+++")
#: the most a changed value may hold; more is a line rewritten, not a value changed.
VALUE_MAX_CHARS = 80
VALUE_MAX_WORDS = 5
#: letters the start two lines share must hold to name a setting ("memory = ", "schedule=").
KEY_MIN_LETTERS = 2
#: a value a diff elides or names by its kind: "...", "…", "<old name>".
_PLACEHOLDER = re.compile(r"\.\.\.|…|^<[^>]*>$")
#: the most pairs one text hands on (a long diff rewrites code rather than settings).
MAX_CHANGES = 12


def segments(text: str) -> list[tuple[str | None, list[str]]]:
    """`text` cut into its runs of prose lines (language None) and its fenced blocks (their language,
    "" when none is given, and their lines), in order, a block closed or not; the fence lines
    themselves belong to neither. Read line by line, once: a pattern spanning the block read an
    unclosed fence to the end from each opening."""
    parts: list[tuple[str | None, list[str]]] = []
    fence: str | None = None
    for line in text.split("\n"):
        marks = _FENCE.match(line)
        if fence is None:
            if marks:
                fence = marks.group(1)
                parts.append((marks.group(2).lower(), []))
            else:
                if not parts or parts[-1][0] is not None:
                    parts.append((None, []))
                parts[-1][1].append(line)
        elif marks and marks.group(1).startswith(fence) and not line.strip(" \t`~"):
            fence = None
        else:
            parts[-1][1].append(line)
    return parts


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """Each fenced block of `text`, closed or not: its language and its lines."""
    return [(language, lines) for language, lines in segments(text) if language is not None]


def is_diff(language: str, lines: list[str]) -> bool:
    """Whether a fenced block is a diff: marked ``diff`` or ``patch``, or holding a hunk header or
    both added and removed lines (a file's `---`/`+++` marks are neither)."""
    if language in ("diff", "patch"):
        return True
    added = any(line.startswith("+") and not line.startswith("+++") for line in lines)
    removed = any(line.startswith("-") and not line.startswith("---") for line in lines)
    return any(line.startswith("@@") for line in lines) or (added and removed)


def _setting(line: str) -> str:
    """A changed line without its mark, its trailing comment and its runs of space."""
    return " ".join(_TRAILING_COMMENT.sub("", line[1:]).split())


def _runs(lines: list[str]) -> list[tuple[list[str], list[str]]]:
    """Each run of removed lines with the run of added lines right after it."""
    runs: list[tuple[list[str], list[str]]] = []
    removed: list[str] = []
    added: list[str] = []
    for line in [*lines, ""]:
        if line.startswith(_FILE_MARKS):
            continue
        if line.startswith("-"):
            if added:
                runs.append((removed, added))
                removed, added = [], []
            removed.append(_setting(line))
        elif line.startswith("+") and removed:
            added.append(_setting(line))
        else:
            if removed and added:
                runs.append((removed, added))
            removed, added = [], []
    return runs


def _common_start(a: str, b: str) -> int:
    size = 0
    while size < min(len(a), len(b)) and a[size] == b[size]:
        size += 1
    return size


def changed_value(old_line: str, new_line: str) -> tuple[str, str] | None:
    """(old value, new value) when two lines are one setting with one value changed: the same start
    (a name of KEY_MIN_LETTERS letters or more, unless each line is its value alone) and end, and a
    short span between that differs ("memory = 2048" / "memory = 4096")."""
    if "".join(old_line.split()) == "".join(new_line.split()):
        return None  # spacing changed, no value
    start = _common_start(old_line, new_line)
    end = _common_start(old_line[start:][::-1], new_line[start:][::-1])
    # widen both spans to whole values: "payments.settled.v1", not "1"
    while start > 0 and _VALUE_CHARS.fullmatch(old_line[start - 1]):
        start -= 1
    while end > 0 and _VALUE_CHARS.fullmatch(old_line[len(old_line) - end]):
        end -= 1
    key = old_line[:start]
    quote = key[-1:] if key[-1:] in ("'", '"') and key.count(key[-1]) % 2 == 1 else ""
    if quote and end and quote in old_line[len(old_line) - end :]:
        # a quoted value changed in part is changed whole: `schedule="0 17 * * *"`, not "0 17"
        tail = old_line[len(old_line) - end :]
        end = len(tail) - tail.index(quote)
    old = old_line[start : len(old_line) - end].strip()
    new = new_line[start : len(new_line) - end].strip()
    # a line that is its value alone (`.terraform-version`): one token each
    alone = not key.strip() and not old_line[len(old_line) - end :].strip() and " " not in old + new
    if not old or not new or (sum(ch.isalpha() for ch in key) < KEY_MIN_LETTERS and not alone):
        return None
    for value in (old, new):
        if len(value) > VALUE_MAX_CHARS or len(value.split()) > VALUE_MAX_WORDS:
            return None
        if _PLACEHOLDER.search(value):
            return None  # "…" or "<old name>" stands for a value the diff does not show
    return old.strip("\"'`,;"), new.strip("\"'`,;")


def changed_values(text: str) -> list[tuple[str, str, str]]:
    """(old value, new value, the added line) for each setting a diff of `text` changes, in order,
    each pair once, at most MAX_CHANGES."""
    out: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for language, lines in _blocks(text):
        if not is_diff(language, lines):
            continue
        for removed, added in _runs(lines):
            for old_line in removed:
                partner = max(added, key=lambda line: _common_start(old_line, line))
                change = changed_value(old_line, partner)
                if change is None or change in seen or not all(change):
                    continue
                seen.add(change)
                out.append((*change, partner))
                if len(out) >= MAX_CHANGES:
                    return out
    return out

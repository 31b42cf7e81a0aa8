"""What every importer returns: the records it read, and the ones it could not read.

An importer is a pure function from a file's bytes (or an opened SQLite database) to `Parsed`: no
door, no network, no clock. The `import` command redacts each record, gives it its key and sends it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

#: a customId is at most this long at the door; ours are far shorter.
CUSTOM_ID_HASH_CHARS = 32
#: a vendor's own metadata is kept with the memory only up to this size (JSON bytes); the door caps the whole at 16 KiB.
VENDOR_METADATA_MAX_BYTES = 4096
#: ... and only this deep (the door refuses metadata nested deeper than 16 levels).
VENDOR_METADATA_MAX_DEPTH = 8


@dataclass(frozen=True)
class Record:
    """One memory to save: its text, where it came from, and when it was written (ISO 8601 or None)."""

    content: str
    #: the vendor's id of the record, or a key built from what identifies it (never empty).
    original_id: str
    created_at: str | None = None
    #: extra metadata the import keeps (beside `source` and `originalId`, which the command adds).
    metadata: dict[str, Any] = field(default_factory=dict)
    #: the vendor's own space names (Supermemory container tags), which become aliases of the space.
    vendor_tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Problem:
    """A record not imported: where it is in the file (`line 3`, `record 4`) and why."""

    where: str
    reason: str
    #: True for a record that could not be read (malformed); False for one left out on purpose.
    malformed: bool = True


@dataclass
class Parsed:
    records: list[Record] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    #: whole memory rows with their history (our own `jsonl` export): (where, row), in file order.
    rows: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def skip(self, where: str, reason: str, *, malformed: bool = True) -> None:
        self.problems.append(Problem(where, reason, malformed))


class FormatError(Exception):
    """The file as a whole is not in the format (not one of its records): one line for a person."""


def custom_id(fmt: str, key: str) -> str:
    """The customId an imported record is saved under: the same format and key give the same id, so
    a second import of the same file finds every record already there (`unchanged`)."""
    digest = hashlib.sha256(f"{fmt}\x00{key}".encode()).hexdigest()[:CUSTOM_ID_HASH_CHARS]
    return f"import:{fmt}:{digest}"


def content_key(text: str) -> str:
    """A key for a record that has no id of its own: the hash of its text."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def vendor_metadata(value: Any) -> dict[str, Any] | None:
    """The vendor's own metadata object, when it is a small JSON object; None otherwise."""
    if not isinstance(value, dict) or not value:
        return None
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    if len(encoded.encode("utf-8")) > VENDOR_METADATA_MAX_BYTES:
        return None
    return value if _depth(value) <= VENDOR_METADATA_MAX_DEPTH else None


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(item) for item in value), default=0)
    return 0


def text_of(value: Any) -> str | None:
    """`value` as a memory's text: a string with more than whitespace, stripped; None otherwise."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    return text or None


def timestamp_of(value: Any) -> str | None:
    """An ISO 8601 string as given (the door checks it), or None."""
    return value.strip() if isinstance(value, str) and value.strip() else None


def describe_json_error(exc: Exception, *, whole_file: bool = False) -> str:
    """What is wrong with a piece of JSON, where: its column (and line, in a whole file)."""
    if isinstance(exc, RecursionError):
        return "not readable JSON (nested too deep)"
    if not isinstance(exc, json.JSONDecodeError):
        return "not valid JSON"
    place = f"line {exc.lineno} column {exc.colno}" if whole_file else f"column {exc.colno}"
    return f"not valid JSON at {place}: {exc.msg.lower().removesuffix(' at')}"


_DECODER = json.JSONDecoder()
#: how far back a broken element's line start is looked for (a longer indentation is none: a look
#: back to the start of a one-line file for every broken element would be quadratic).
INDENT_MAX_CHARS = 256
_SPACE = " \t\r\n"


@dataclass(frozen=True)
class Item:
    """One element of a JSON array as the file holds it: its number (1-based), the line it starts on,
    and its value, or the reason it could not be read."""

    number: int
    line: int
    value: Any = None
    error: str | None = None

    @property
    def where(self) -> str:
        return f"record {self.number} (line {self.line})"


def lone_surrogate(value: Any) -> str | None:
    """Why `value` (a decoded JSON value) cannot be sent, when a string in it holds a lone surrogate
    (`"\\ud800"` is valid JSON but no UTF-8 text); None when it can."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                return f"not valid Unicode: a lone surrogate (\\u{ord(item[exc.start]):04x})"
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return None


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


class _Lines:
    """The line of a place in a text, for places met in increasing order: each call counts only the
    line breaks since the last one, so numbering every element of an array is linear (a count from
    the start for each element made 40 000 mem0 records take 27 s)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.line = 1

    def __call__(self, at: int) -> int:
        if at < self.at:  # never in order of reading; kept correct all the same
            return self.text.count("\n", 0, at) + 1
        self.line += self.text.count("\n", self.at, at)
        self.at = at
        return self.line


def _next_sibling(text: str, failed_at: int) -> int | None:
    """Where the element after a broken one starts: the next line that opens an object at the broken
    element's indentation (exports are pretty-printed one element per block), or None."""
    line_start = text.rfind("\n", max(0, failed_at - INDENT_MAX_CHARS), failed_at) + 1
    indent = text[line_start:failed_at] if line_start else "?"  # no line break near: not indented
    if indent.strip():  # not at the start of its line: look for the next `{` after a comma instead
        comma = text.find(",", failed_at + 1)
        brace = -1 if comma < 0 else _skip_space(text, comma + 1)
        return brace if 0 <= brace < len(text) and text[brace] == "{" else None
    marker = "\n" + indent + "{"
    found = text.find(marker, failed_at + 1)
    return None if found < 0 else found + 1 + len(indent)


def array_items(text: str, start: int) -> list[Item]:
    """The elements of the JSON array opening at `start` (`text[start] == "["`), each read on its own:
    a broken element is reported with its line and the reading goes on at the next one."""
    items: list[Item] = []
    line_at = _Lines(text)
    at = _skip_space(text, start + 1)
    number = 0
    while at < len(text) and text[at] != "]":
        number += 1
        line = line_at(at)
        try:
            value, end = _DECODER.raw_decode(text, at)
        except (ValueError, RecursionError) as exc:
            items.append(Item(number, line, error=describe_json_error(exc, whole_file=True)))
            resume = _next_sibling(text, at)
            if resume is None:
                break
            at = resume
            continue
        items.append(Item(number, line, value, error=lone_surrogate(value)))
        at = _skip_space(text, end)
        if at < len(text) and text[at] == ",":
            at = _skip_space(text, at + 1)
        elif at < len(text) and text[at] != "]":
            number += 1
            items.append(Item(number, line_at(at), error="not valid JSON (a comma is missing)"))
            resume = _next_sibling(text, at)
            if resume is None:
                break
            at = resume
    return items


def keyed_array(text: str, key: str) -> int | None:
    """Where the array under `"key":` opens in `text` (the first such key), or None."""
    import re

    found = re.search(r'(?<!\\)"' + re.escape(key) + r'"\s*:\s*\[', text)
    return None if found is None else found.end() - 1


def top_array(text: str) -> int | None:
    """Where the document's top-level array opens, when the document is an array; None otherwise."""
    at = _skip_space(text, 0)
    return at if at < len(text) and text[at] == "[" else None


def decode_text(data: bytes) -> str:
    """A file's bytes as text (UTF-8, with or without a byte-order mark)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(f"the file is not UTF-8 text (byte {exc.start})") from None

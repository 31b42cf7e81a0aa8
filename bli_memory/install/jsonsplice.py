"""JSON text splicing: a file's new text that changes only the members and elements that differ.

Claude Code and the person both edit these files; install must change its own keys and leave every
other byte where it was. So the new text is not a re-serialisation: the old text is parsed into
spans, compared with the wanted data, and only the members and elements that differ are rewritten.
Whatever is new is written in the file's own style (its indent unit, `": "` or `":"`, `", "` or
`","`), so install then uninstall gives back the same bytes. A file we create gets
JSON.stringify(x, null, 2), what Claude Code writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

_JSON_WHITESPACE = " \t\r\n"
NEW_JSON_INDENT = 2


@dataclass
class _Span:
    """A JSON value at text[start:end]; containers list their members as (key, member start, value)."""

    start: int
    end: int
    kind: str  # "object" | "array" | "scalar"
    items: list[tuple[str | None, int, _Span]] = field(default_factory=list)


class _SpanParser:
    """Positions of the values of a text `json.loads` already accepted (so it need not re-validate)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def skip(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] in _JSON_WHITESPACE:
            pos += 1
        return pos

    def string_end(self, pos: int) -> int:
        index = pos + 1
        while self.text[index] != '"':
            index += 2 if self.text[index] == "\\" else 1
        return index + 1

    def value(self, pos: int) -> _Span:
        pos = self.skip(pos)
        char = self.text[pos]
        if char in "{[":
            return self.container(pos)
        if char == '"':
            return _Span(pos, self.string_end(pos), "scalar")
        end = pos
        while end < len(self.text) and self.text[end] not in _JSON_WHITESPACE + ",]}":
            end += 1
        return _Span(pos, end, "scalar")

    def container(self, pos: int) -> _Span:
        is_object = self.text[pos] == "{"
        close = "}" if is_object else "]"
        span = _Span(pos, pos, "object" if is_object else "array")
        index = self.skip(pos + 1)
        while self.text[index] != close:
            start = index
            key = None
            if is_object:
                key_end = self.string_end(index)
                key = json.loads(self.text[index:key_end])
                index = self.skip(key_end) + 1  # past ':'
            value = self.value(index)
            span.items.append((key, start, value))
            index = self.skip(value.end)
            if self.text[index] == ",":
                index = self.skip(index + 1)
        span.end = index + 1
        return span


@dataclass(frozen=True)
class _JsonStyle:
    indent: str | None  # one level of indentation; None for a file on one line
    key_sep: str  # between a key and its value
    inline_sep: str  # between items of a container written on one line
    newline: str = "\n"  # "\r\n" in a file written with CRLF line ends


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _json_style(text: str, root: _Span) -> _JsonStyle:
    indent: str | None = None
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            indent = line[: len(line) - len(stripped)]
            break
    key_sep, inline_sep = ": ", ", "
    stack = [root]
    found_key = found_inline = False
    while stack and not (found_key and found_inline):
        span = stack.pop()
        for number, (key, start, value) in enumerate(span.items):
            if key is not None and not found_key:
                key_end = _SpanParser(text).string_end(start)
                key_sep = text[key_end : value.start]
                found_key = True
            if number and not found_inline:
                between = text[span.items[number - 1][2].end : start]
                if "\n" not in between:
                    inline_sep = between.strip(_JSON_WHITESPACE) + between.split(",", 1)[1]
                    found_inline = True
            stack.append(value)
    return _JsonStyle(indent, key_sep, inline_sep, "\r\n" if "\r\n" in text else "\n")


def _line_indent(text: str, pos: int) -> str:
    line = text[text.rfind("\n", 0, pos) + 1 : pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _dump(value: Any, style: _JsonStyle, base_indent: str, multiline: bool) -> str:
    if multiline and style.indent is not None:
        rendered = json.dumps(value, indent=style.indent, ensure_ascii=False)
        return rendered.replace("\n", style.newline + base_indent)
    return json.dumps(value, ensure_ascii=False, separators=(style.inline_sep, style.key_sep))


def _splice(text: str, span: _Span, old: Any, new: Any, style: _JsonStyle) -> str:
    """The text for `new` where `span` (holding `old`) was: old text wherever old and new agree."""
    if _canonical(old) == _canonical(new):
        return text[span.start : span.end]
    if span.kind == "object" and isinstance(old, dict) and isinstance(new, dict):
        return _splice_object(text, span, old, new, style)
    if span.kind == "array" and isinstance(old, list) and isinstance(new, list):
        return _splice_array(text, span, old, new, style)
    return _dump(new, style, _line_indent(text, span.start), multiline=True)


def _splice_object(
    text: str, span: _Span, old: dict[str, Any], new: dict[str, Any], style: _JsonStyle
) -> str:
    last = {key: number for number, (key, _, _) in enumerate(span.items)}
    pieces: list[tuple[int | None, str]] = []
    for number, (key, start, value) in enumerate(span.items):
        assert key is not None
        if key not in new:
            continue
        if last[key] != number:  # an earlier duplicate: json.loads ignores it, so do we
            pieces.append((number, text[start : value.end]))
            continue
        pieces.append((number, text[start : value.start] + _splice(text, value, old[key], new[key], style)))
    added = [key for key in new if key not in old]
    multiline = _is_multiline(text, span, style)
    item_indent = _item_indent(text, span, style)
    key_sep = _key_sep(text, span, style)
    for key in added:
        rendered = _dump(new[key], style, item_indent, multiline)
        pieces.append((None, json.dumps(key, ensure_ascii=False) + key_sep + rendered))
    return _join(text, span, pieces, style)


def _splice_array(text: str, span: _Span, old: list[Any], new: list[Any], style: _JsonStyle) -> str:
    import difflib

    matcher = difflib.SequenceMatcher(
        None, [_canonical(v) for v in old], [_canonical(v) for v in new], autojunk=False
    )
    multiline = _is_multiline(text, span, style)
    item_indent = _item_indent(text, span, style)
    pieces: list[tuple[int | None, str]] = []
    for op, old_from, old_to, new_from, new_to in matcher.get_opcodes():
        if op == "equal" or (op == "replace" and old_to - old_from == new_to - new_from):
            for offset in range(old_to - old_from):
                _, _, value = span.items[old_from + offset]
                spliced = _splice(text, value, old[old_from + offset], new[new_from + offset], style)
                pieces.append((old_from + offset, spliced))
            continue
        for number in range(new_from, new_to):
            pieces.append((None, _dump(new[number], style, item_indent, multiline)))
    return _join(text, span, pieces, style)


def _is_multiline(text: str, span: _Span, style: _JsonStyle) -> bool:
    """Items of this container sit on lines of their own (an empty one: when the file is indented)."""
    if span.items:
        return "\n" in text[span.start + 1 : span.items[0][1]]
    return style.indent is not None


def _item_indent(text: str, span: _Span, style: _JsonStyle) -> str:
    if span.items:
        return _line_indent(text, span.items[0][1])
    return _line_indent(text, span.start) + (style.indent or "")


def _key_sep(text: str, span: _Span, style: _JsonStyle) -> str:
    if span.items:
        _, start, value = span.items[0]
        return text[_SpanParser(text).string_end(start) : value.start]
    return style.key_sep


def _join(text: str, span: _Span, pieces: list[tuple[int | None, str]], style: _JsonStyle) -> str:
    """Reassemble a container: kept neighbours keep the bytes between them; new joints copy the
    container's own separator (or, for a container that had at most one item, the file's)."""
    open_char, close_char = text[span.start], text[span.end - 1]
    if not pieces:
        return open_char + close_char
    items = span.items
    if items:
        lead = text[span.start + 1 : items[0][1]]
        trail = text[items[-1][2].end : span.end - 1]
        if len(items) > 1:
            default_sep = text[items[0][2].end : items[1][1]]
        elif "\n" in lead:
            default_sep = "," + lead
        else:
            default_sep = style.inline_sep
    elif style.indent is not None:
        outer = _line_indent(text, span.start)
        lead, trail = style.newline + outer + style.indent, style.newline + outer
        default_sep = "," + lead
    else:
        lead = trail = ""
        default_sep = style.inline_sep
    out = [open_char, lead]
    for number, (origin, piece) in enumerate(pieces):
        if number:
            before = pieces[number - 1][0]
            if before is not None and origin == before + 1:
                out.append(text[items[before][2].end : items[origin][1]])
            else:
                out.append(default_sep)
        out.append(piece)
    out += [trail, close_char]
    return "".join(out)


def splice_json(old_text: str | None, data: dict[str, Any]) -> str:
    """The new text of a JSON file holding `data`, changing only what differs from `old_text`.

    Raises ValueError if the splice would not read back as `data` (a safety net: the caller reports
    the file and leaves it untouched).
    """
    if old_text is None or not old_text.strip():
        return json.dumps(data, indent=NEW_JSON_INDENT, ensure_ascii=False) + "\n"
    old = json.loads(old_text)
    parser = _SpanParser(old_text)
    root = parser.value(0)
    style = _json_style(old_text, root)
    body = _splice(old_text, root, old, data, style)
    new_text = old_text[: root.start] + body + old_text[root.end :]
    if _canonical(json.loads(new_text)) != _canonical(data):
        raise ValueError("the splice does not read back as the wanted data")
    return new_text

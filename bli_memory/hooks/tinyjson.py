"""JSON for the hook path without importing `json`.

`import json` pulls in `re`, `enum`, `functools` and `collections`: about 12-18 ms of a hook's cold
start, more than everything else the trivial-prompt path does (measured with `python -X importtime`
on a wheel install, docs/benchmarks.md). The hooks read one small JSON payload and write one receipt,
a stats file and a remembered prompt, so a strict little codec pays for itself. It accepts exactly
RFC 8259 JSON (no NaN, no trailing commas) and writes what `json.dumps` writes for the same values
(tests compare the two on generated values).
"""

from __future__ import annotations

_WHITESPACE = " \t\n\r"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_MAX_DEPTH = 200


class JSONError(ValueError):
    """Not JSON (a ValueError, as `json.JSONDecodeError` is)."""


def loads(text: str) -> object:
    value, end = _value(text, _skip(text, 0), 0)
    if _skip(text, end) != len(text):
        raise JSONError(f"extra data at {end}")
    return value


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def _value(text: str, index: int, depth: int) -> tuple[object, int]:
    if depth > _MAX_DEPTH:
        raise JSONError("nested too deep")
    if index >= len(text):
        raise JSONError("unexpected end")
    char = text[index]
    if char == '"':
        return _string(text, index + 1)
    if char == "{":
        return _object(text, index + 1, depth)
    if char == "[":
        return _array(text, index + 1, depth)
    for literal, value in (("true", True), ("false", False), ("null", None)):
        if text.startswith(literal, index):
            return value, index + len(literal)
    return _number(text, index)


def _object(text: str, index: int, depth: int) -> tuple[dict[str, object], int]:
    result: dict[str, object] = {}
    index = _skip(text, index)
    if text.startswith("}", index):
        return result, index + 1
    while True:
        if not text.startswith('"', index):
            raise JSONError(f"expected a key at {index}")
        key, index = _string(text, index + 1)
        index = _skip(text, index)
        if not text.startswith(":", index):
            raise JSONError(f"expected ':' at {index}")
        value, index = _value(text, _skip(text, index + 1), depth + 1)
        result[key] = value
        index = _skip(text, index)
        if text.startswith(",", index):
            index = _skip(text, index + 1)
            continue
        if text.startswith("}", index):
            return result, index + 1
        raise JSONError(f"expected ',' or '}}' at {index}")


def _array(text: str, index: int, depth: int) -> tuple[list[object], int]:
    result: list[object] = []
    index = _skip(text, index)
    if text.startswith("]", index):
        return result, index + 1
    while True:
        value, index = _value(text, index, depth + 1)
        result.append(value)
        index = _skip(text, index)
        if text.startswith(",", index):
            index = _skip(text, index + 1)
            continue
        if text.startswith("]", index):
            return result, index + 1
        raise JSONError(f"expected ',' or ']' at {index}")


def _string(text: str, index: int) -> tuple[str, int]:
    parts: list[str] = []
    while True:
        quote = text.find('"', index)
        if quote < 0:
            raise JSONError("unterminated string")
        backslash = text.find("\\", index, quote)
        end = quote if backslash < 0 else backslash
        chunk = text[index:end]
        if any(ord(char) < 0x20 for char in chunk):
            raise JSONError("control character in a string")
        parts.append(chunk)
        if backslash < 0:
            return "".join(parts), quote + 1
        escape = text[backslash + 1 : backslash + 2]
        if escape in _ESCAPES:
            parts.append(_ESCAPES[escape])
            index = backslash + 2
        elif escape == "u":
            code, index = _hex4(text, backslash + 2)
            if 0xD800 <= code < 0xDC00 and text.startswith("\\u", index):
                low, after = _hex4(text, index + 2)
                if 0xDC00 <= low < 0xE000:
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    index = after
            parts.append(chr(code))
        else:
            raise JSONError(f"bad escape at {backslash}")


def _hex4(text: str, index: int) -> tuple[int, int]:
    digits = text[index : index + 4]
    if len(digits) != 4 or any(char not in "0123456789abcdefABCDEF" for char in digits):
        raise JSONError(f"bad \\u escape at {index}")
    return int(digits, 16), index + 4


def _number(text: str, index: int) -> tuple[int | float, int]:
    """-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?  — RFC 8259's grammar, walked by hand."""
    end = index
    if text.startswith("-", end):
        end += 1
    digits = _digits(text, end)
    if digits == end or (text[end] == "0" and digits > end + 1):
        raise JSONError(f"bad value at {index}")
    end, is_float = digits, False
    if text.startswith(".", end):
        after = _digits(text, end + 1)
        if after == end + 1:
            raise JSONError(f"bad number at {index}")
        end, is_float = after, True
    if end < len(text) and text[end] in "eE":
        start = end + 1 + (1 if text[end + 1 : end + 2] in ("+", "-") and end + 1 < len(text) else 0)
        after = _digits(text, start)
        if after == start:
            raise JSONError(f"bad number at {index}")
        end, is_float = after, True
    token = text[index:end]
    if not is_float:
        return int(token), end
    number = float(token)
    if number in (float("inf"), float("-inf")):
        raise JSONError(f"number out of range at {index}")
    return number, end


def _digits(text: str, index: int) -> int:
    while index < len(text) and "0" <= text[index] <= "9":
        index += 1
    return index


def dumps(value: object, *, compact: bool = False, sort_keys: bool = False, ensure_ascii: bool = True) -> str:
    """What `json.dumps(value, separators=(",", ":") if compact else None, sort_keys=..., ensure_ascii=...)`
    writes, for dicts with string keys, lists, strings, ints, finite floats, booleans and None."""
    parts: list[str] = []
    _write(value, parts, "," if compact else ", ", ":" if compact else ": ", sort_keys, ensure_ascii)
    return "".join(parts)


def _write(
    value: object, parts: list[str], comma: str, colon: str, sort_keys: bool, ascii_only: bool
) -> None:
    if value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, str):
        parts.append(_quote(value, ascii_only))
    elif isinstance(value, int):
        parts.append(int.__repr__(value))
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("out of range float values are not JSON compliant")
        parts.append(float.__repr__(value))
    elif isinstance(value, dict):
        parts.append("{")
        items = sorted(value.items()) if sort_keys else list(value.items())
        for position, (key, item) in enumerate(items):
            if not isinstance(key, str):
                raise TypeError("keys must be str")
            if position:
                parts.append(comma)
            parts.append(_quote(key, ascii_only))
            parts.append(colon)
            _write(item, parts, comma, colon, sort_keys, ascii_only)
        parts.append("}")
    elif isinstance(value, (list, tuple)):
        parts.append("[")
        for position, item in enumerate(value):
            if position:
                parts.append(comma)
            _write(item, parts, comma, colon, sort_keys, ascii_only)
        parts.append("]")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON serializable")


_SHORT = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _quote(text: str, ascii_only: bool) -> str:
    if '"' not in text and "\\" not in text and text.isprintable() and (text.isascii() or not ascii_only):
        return f'"{text}"'  # nothing to escape (isprintable excludes controls and DEL): no loop per character
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _SHORT:
            out.append(_SHORT[char])
        elif code < 0x20 or (ascii_only and code > 0x7E):
            if code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}")
            else:
                out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)

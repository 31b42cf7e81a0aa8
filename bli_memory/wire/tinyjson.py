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
#: the escapes other than `\\\\` and `\\u`, as they appear in the text, and what each stands for
_SIMPLE_ESCAPES = {"\\" + key: value for key, value in _ESCAPES.items() if key != "\\"}
_MAX_DEPTH = 200
_DIGITS = "0123456789"
#: a run of whitespace or digits longer than this is read a window at a time (see `_span`)
_SHORT_RUN_CHARS = 16
_RUN_WINDOW_CHARS = 64 * 1024
#: the control characters a JSON string may not hold raw, as UTF-8 bytes (each is one byte there)
_CONTROL_BYTES = bytes(range(0x20))


class JSONError(ValueError):
    """Not JSON (a ValueError, as `json.JSONDecodeError` is)."""


def loads(text: str) -> object:
    value, end = _value(text, _skip(text, 0), 0)
    if _skip(text, end) != len(text):
        raise JSONError(f"extra data at {end}")
    return value


def _skip(text: str, index: int) -> int:
    return _span(text, index, _WHITESPACE)


def _span(text: str, index: int, chars: str) -> int:
    """The end of the run of `chars` that starts at `index`.

    A short run (the usual case: a space or two) is walked directly; a long one is stripped a window
    at a time with `str.lstrip`, so a megabyte of whitespace or digits costs C time, not a Python
    step per character.
    """
    end = len(text)
    for _ in range(_SHORT_RUN_CHARS):
        if index >= end or text[index] not in chars:
            return index
        index += 1
    while index < end:
        window = text[index : index + _RUN_WINDOW_CHARS]
        rest = len(window.lstrip(chars))
        index += len(window) - rest
        if rest:
            return index
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
    """The string whose opening quote is just before `index`, and the index after its closing quote.

    Linear in the string's length whatever it holds, and C work only: the closing quote is found
    with `str.find` (`_string_end`), control characters are looked for once over the whole raw
    string, and the escapes are undone by a few whole-string passes (`_unescape`). A string with no
    backslash, the usual case, is one `find` and one slice.
    """
    end = _string_end(text, index)
    raw = text[index:end]
    if not raw.isprintable() and _has_control(raw):
        raise JSONError("control character in a string")
    if "\\" not in raw:
        return raw, end + 1
    return _unescape(raw, index), end + 1


def _string_end(text: str, index: int) -> int:
    """The index of the quote that closes the string starting at `index`."""
    quote = text.find('"', index)
    if quote < 0:
        raise JSONError("unterminated string")
    if quote == index or text[quote - 1] != "\\":
        return quote
    # A quote after a backslash may be escaped. Look at windows (growing up to a bound): pair off
    # escaped backslashes, blank out escaped quotes (both keep the length), and the first quote
    # left is the end. A window never ends between a backslash and the character it escapes.
    size = quote - index + _SHORT_RUN_CHARS
    while index < len(text):
        window = text[index : index + size].replace("\\\\", "\0\0")
        if window.endswith("\\") and index + size < len(text):
            window = window[:-1]
        found = window.replace('\\"', "\0\0").find('"')
        if found >= 0:
            return index + found
        index += len(window)
        size = min(2 * size, _RUN_WINDOW_CHARS)
    raise JSONError("unterminated string")


def _has_control(raw: str) -> bool:
    """True when `raw` holds a character below U+0020 (`isprintable` also refuses others)."""
    encoded = raw.encode("utf-8", "surrogatepass")
    return len(encoded.translate(None, _CONTROL_BYTES)) != len(encoded)


def _unescape(raw: str, offset: int) -> str:
    """`raw` (no control character, no unescaped quote) with its escapes undone, by whole-string
    passes: NUL cannot occur raw, so it stands in for an escaped backslash, after which every
    backslash left starts an escape of its own and can be counted and replaced."""
    text = raw.replace("\\\\", "\0")
    escapes = text.count("\\")
    simple = sum(text.count(escape) for escape in _SIMPLE_ESCAPES)
    if simple == escapes:
        for escape, char in _SIMPLE_ESCAPES.items():
            text = text.replace(escape, char)
        return text.replace("\0", "\\")
    if simple + text.count("\\u") != escapes:
        raise JSONError(f"bad escape in the string at {offset}")
    if not raw.isprintable():  # e.g. a raw surrogate, which the codec pass below could pair up
        return _unescape_each(raw, offset)
    # Only JSON's escapes are left, and `\\/` is the one the unicode_escape codec does not know.
    # Characters past Latin-1 go through it as `\\uXXXX`; UTF-16 then pairs escaped surrogates as
    # JSON does (a high one right before a low one), leaving any other surrogate as it is.
    text = text.replace("\\/", "/").replace("\0", "\\\\")
    try:
        decoded = text.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        raise JSONError(f"bad \\u escape in the string at {offset}") from None
    if "\\ud" in text or "\\uD" in text:
        decoded = decoded.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return decoded


def _unescape_each(raw: str, offset: int) -> str:
    """`_unescape` one escape at a time: for the rare string that holds a non-printable character."""
    parts: list[str] = []
    index = 0
    while True:
        backslash = raw.find("\\", index)
        if backslash < 0:
            parts.append(raw[index:])
            return "".join(parts)
        parts.append(raw[index:backslash])
        escape = raw[backslash + 1 : backslash + 2]
        if escape in _ESCAPES:
            parts.append(_ESCAPES[escape])
            index = backslash + 2
        elif escape == "u":
            code, index = _hex4(raw, backslash + 2)
            if 0xD800 <= code < 0xDC00 and raw.startswith("\\u", index):
                low, after = _hex4(raw, index + 2)
                if 0xDC00 <= low < 0xE000:
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    index = after
            parts.append(chr(code))
        else:
            raise JSONError(f"bad escape at {offset + backslash}")


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
    return _span(text, index, _DIGITS)


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

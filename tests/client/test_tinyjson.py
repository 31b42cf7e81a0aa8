"""The hook path's JSON codec agrees with `json` on every value and every malformed text."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bli_memory.wire import tinyjson
from tests.hooks.helpers import BIG_CHARS, MAX_GROWTH, MB, code_prompt, cpu_s

TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(TEXT, children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(VALUES, st.booleans(), st.booleans(), st.booleans())
def test_dumps_writes_what_json_writes(
    value: object, compact: bool, sort_keys: bool, ascii_only: bool
) -> None:
    expected = json.dumps(
        value, separators=(",", ":") if compact else None, sort_keys=sort_keys, ensure_ascii=ascii_only
    )
    assert tinyjson.dumps(value, compact=compact, sort_keys=sort_keys, ensure_ascii=ascii_only) == expected


@settings(max_examples=400, deadline=None)
@given(VALUES, st.booleans(), st.sampled_from([None, 0, 2]))
def test_loads_reads_what_json_reads(value: object, ascii_only: bool, indent: int | None) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    assert tinyjson.loads(text) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1,}',
        "[1,]",
        "{'a':1}",
        '{"a" 1}',
        "01",
        "-",
        "1.",
        ".5",
        "1e",
        "1e+",
        "+1",
        "NaN",
        "Infinity",
        '"\\x"',
        '"\\u12"',
        '"a\nb"',
        '"open',
        "[1 2]",
        "{} {}",
        "",
        "   ",
        "tru",
        "nul",
        '{"a":1',
        "[",
        "1e999",
        "[" * 300 + "]" * 300,
    ],
)
def test_malformed_text_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        tinyjson.loads(text)


def test_surrogate_pairs_and_escapes() -> None:
    text = '{"k": "\\ud83d\\ude00 \\u00e9 \\/ \\" \\\\ \\n"}'
    assert tinyjson.loads(text) == json.loads(text) == {"k": '😀 é / " \\ \n'}


def _payload(value: str, ensure_ascii: bool = False) -> str:
    return json.dumps({"prompt": value, "session_id": "s1"}, ensure_ascii=ensure_ascii)


SHAPES: dict[str, Callable[[int], str]] = {
    "code": lambda n: _payload(code_prompt(n)),
    "code_ascii_escaped": lambda n: _payload(code_prompt(n), ensure_ascii=True),
    "newlines": lambda n: _payload("word\n" * (n // 5)),
    "escaped_quotes": lambda n: _payload('"' * (n // 2)),
    "backslash_run": lambda n: _payload("\\" * (n // 2) + '"'),
    "unicode_escapes": lambda n: _payload("é😀" * (n // 18), ensure_ascii=True),
    "whitespace_run": lambda n: '{"a":' + " " * n + "1}",
    "digit_run": lambda n: '{"a": 1.' + "5" * n + "}",
    "plain": lambda n: _payload("a" * n),
}


@pytest.mark.parametrize("shape", list(SHAPES.values()), ids=list(SHAPES))
def test_tinyjson_reads_megabytes_in_linear_time(shape: Callable[[int], str]) -> None:
    small, big = shape(MB), shape(BIG_CHARS)
    assert tinyjson.loads(big) == json.loads(big)
    small_s, big_s = cpu_s(tinyjson.loads, small), cpu_s(tinyjson.loads, big)
    assert big_s <= MAX_GROWTH * small_s + 0.02, (small_s, big_s)
    assert big_s < 1.0, big_s


def test_tinyjson_reads_a_4_mb_prompt_of_code_well_inside_the_prompt_deadline() -> None:
    payload = _payload(code_prompt(BIG_CHARS))
    assert cpu_s(tinyjson.loads, payload) < 0.25


_PIECES = ["a", "é", "😀", '"', "\\", "\n", "\t", "/", "\x7f", "\u2028", "\x00", "\x1f", "\ud83d", "\ude00"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30), st.booleans())
def test_tinyjson_strings_agree_with_json(pieces: list[str], ascii_only: bool) -> None:
    text = json.dumps("".join(pieces), ensure_ascii=ascii_only)
    assert tinyjson.loads(text) == json.loads(text)


_RAW_PIECES = [
    "a", "é", "東", "😀", "\x7f", "\u2028", "\ud83d", '\\"', "\\\\", "\\n", "\\/", "\\b", "\\f", "\\u00e9",
    "\\u00E9", "\\ud83d", "\\uDE00", "\\udbff", "\\u0022", "\\u005c", "\\x41", "\\U0001f600", "\\u12",
    "\\u12g4", "\\N{DASH}", "\\101", "\\a", "\\'", "\\", "\n", "\x01", '"', "\\\\\\", "u0041",
]  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_RAW_PIECES), max_size=12))
def test_tinyjson_refuses_exactly_what_json_refuses(pieces: list[str]) -> None:
    text = '{"k": "' + "".join(pieces) + '"}'
    try:
        expected: object = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            tinyjson.loads(text)
        return
    assert tinyjson.loads(text) == expected


@pytest.mark.parametrize("seed", range(6))
def test_tinyjson_agrees_with_json_on_long_strings_of_backslashes_and_quotes(seed: int) -> None:
    """Long enough that the closing quote is looked for over many windows, each boundary a chance to
    split a backslash from what it escapes."""
    rng = random.Random(seed)
    value = "".join(rng.choice(["\\", '"', "a", "\\\\", '\\"', "é"]) for _ in range(200_000))
    text = json.dumps([value, "next"], ensure_ascii=seed % 2 == 0)
    assert tinyjson.loads(text) == json.loads(text)
    cut = text[: rng.randrange(len(text) // 2, len(text))]  # cut short: unterminated
    with pytest.raises(ValueError):
        tinyjson.loads(cut)

"""The hook path's JSON codec agrees with `json` on every value and every malformed text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bli_memory.hooks import tinyjson

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

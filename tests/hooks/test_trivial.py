"""The trivial-prompt rule (`hooks/trivial.py`): which prompts are searched, which are skipped and why."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bli_memory.hooks.trivial import (
    CLOSED_LIST,
    CLOSED_LIST_MAX_CHARS,
    MIN_PROMPT_CHARS,
    identifiers,
    names_identifier,
    normalise,
    skip_reason,
)
from tests.hooks.helpers import BIG_CHARS, MB, code_prompt, cpu_s


@pytest.mark.parametrize(
    "text",
    ["ok", "OK!", "y", "thanks", "Thank you.", "continue", "Continue please", "looks good to me",
     "please continue", "yes, go ahead", "/compact", "/clear and start over please", "/plugin:cmd x",
     "what is x", "fix it", "hello there"],
)  # fmt: skip
def test_subjectless_prompts_are_trivial(text: str) -> None:
    assert skip_reason(text) == "trivial_prompt"


@pytest.mark.parametrize(
    "text",
    ["BLI-3580?", "parse_args", "fooBar", "HookAnswer", "foo.py", "v0.2.83", "#123", "`x`", "a1b2c3d",
     "/etc/hosts is broken?", "how does the stop hook save the turn?", "why is parse_args slow?"],
)  # fmt: skip
def test_identifiers_and_real_questions_are_searched(text: str) -> None:
    assert skip_reason(text) is None


@pytest.mark.parametrize("text", [None, "", "   \n\t", 42, ["ok"]])
def test_a_missing_or_blank_prompt_is_no_prompt(text: object) -> None:
    assert skip_reason(text) == "no_prompt"


def test_the_length_floor_is_twelve_characters() -> None:
    assert MIN_PROMPT_CHARS == 12
    assert skip_reason("a" * 5 + " " + "b" * 5) == "trivial_prompt"  # 11 characters
    assert skip_reason("abcde fghijk") is None  # 12 characters


def test_a_slash_command_is_trivial_even_when_it_names_an_identifier() -> None:
    assert skip_reason("/review BLI-3580") == "trivial_prompt"


def test_the_closed_list_holds_no_identifier() -> None:
    assert not [entry for entry in CLOSED_LIST if names_identifier(entry)]


def _normalise_by_hand(text: str) -> str:
    """The rule spelled out one character at a time (what `normalise` must equal)."""
    out: list[str] = []
    pending_space = False
    for char in text.lower():
        if char.isalnum():
            if pending_space and out:
                out.append(" ")
            pending_space = False
            out.append(char)
        else:
            pending_space = True
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=200))
def test_normalise_is_the_character_rule(text: str) -> None:
    assert normalise(text) == _normalise_by_hand(text)


def test_normalise_costs_a_few_plain_string_passes() -> None:
    text = ("def parse_args(argv): return x + str(argv)  # ok!\n" * (BIG_CHARS // 50))[:BIG_CHARS]
    plain_s = cpu_s(lambda t: t.lower().split(), text)
    assert cpu_s(normalise, text) <= 3.0 * plain_s + 0.01


@pytest.mark.parametrize(
    "prompt",
    [
        code_prompt(BIG_CHARS),
        "ok" + "!" * BIG_CHARS,
        "/" + "x" * BIG_CHARS,
        "thanks " * (BIG_CHARS // 7),
    ],
    ids=["code", "ok_then_punctuation", "slash", "repeated_closed_word"],
)
def test_the_trivial_decision_and_its_identifiers_read_a_bounded_prefix(prompt: str) -> None:
    assert cpu_s(skip_reason, prompt) < 0.05
    assert cpu_s(identifiers, prompt) < 0.05


def test_only_a_short_prompt_can_be_a_closed_list_entry() -> None:
    assert skip_reason("Thanks" + "!" * (CLOSED_LIST_MAX_CHARS - 6)) == "trivial_prompt"
    assert skip_reason("Thanks" + "!" * (CLOSED_LIST_MAX_CHARS - 5)) is None


def test_identifiers_are_those_of_the_prompts_head() -> None:
    prompt = "why does parse_args fail? " + "and then " * MB + "BLI-3580"
    assert identifiers(prompt) == ["parse_args"]

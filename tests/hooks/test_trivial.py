"""The trivial-prompt rule (`hooks/trivial.py`): which prompts are searched, which are skipped and why."""

from __future__ import annotations

import pytest

from bli_memory.hooks.trivial import CLOSED_LIST, MIN_PROMPT_CHARS, names_identifier, skip_reason


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

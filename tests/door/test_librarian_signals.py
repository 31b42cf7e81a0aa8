"""Extraction's signals are rules as data: each carries its examples, and these tests iterate them.
An example is read by its own signal and, alone in a reply, kept as a fact; a sentence with no
signal is not."""

from __future__ import annotations

import pytest

from bli_memory.door.librarian import extract_facts
from bli_memory.door.librarian.signals import SIGNALS

EXAMPLES = [(signal.name, example) for signal in SIGNALS for example in signal.examples]


def test_every_signal_has_a_name_of_its_own_and_an_example() -> None:
    names = [signal.name for signal in SIGNALS]
    assert len(names) == len(set(names))
    assert all(signal.examples for signal in SIGNALS)


@pytest.mark.parametrize(("name", "example"), EXAMPLES, ids=[f"{n}: {e}" for n, e in EXAMPLES])
def test_each_example_is_read_by_its_own_signal(name: str, example: str) -> None:
    signal = next(signal for signal in SIGNALS if signal.name == name)
    assert signal.pattern.search(example)


@pytest.mark.parametrize(("name", "example"), EXAMPLES, ids=[f"{n}: {e}" for n, e in EXAMPLES])
def test_each_example_alone_in_a_reply_is_kept(name: str, example: str) -> None:
    assert len(extract_facts(f"Assistant: {example}")) == 1, name


@pytest.mark.parametrize(
    "sentence",
    [
        "That went well, thanks for the patience.",
        "Sounds good to me.",
        "Thanks, that was 2 good ideas.",  # a number, but in no unit
        "Write to me at the usual address.",
    ],
)
def test_a_sentence_without_a_signal_is_not_kept(sentence: str) -> None:
    assert not any(signal.pattern.search(sentence) for signal in SIGNALS)
    assert extract_facts(f"Assistant: {sentence}") == []

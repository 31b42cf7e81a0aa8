"""What the redactor and the prompt hook's pre-scan read alike (`bli_memory/scan_text.py`)."""

from __future__ import annotations

from bli_memory.scan_text import ascii_lower, at_token_start, at_word_start


def test_the_lower_case_copy_keeps_every_index() -> None:
    assert ascii_lower("Bearer ABC") == "bearer abc"
    text = "İstanbul TOKEN=x"  # str.lower() makes "İ" two characters
    lowered = ascii_lower(text)
    assert len(lowered) == len(text)
    assert lowered.index("token") == text.index("TOKEN")


def test_a_word_starts_after_a_non_word_character_and_a_token_also_after_an_escaped_break() -> None:
    text = "x sk-1 _sk-2 a\\nsk-3"
    assert at_word_start(text, 0) and at_word_start(text, text.index("sk-1"))
    assert not at_word_start(text, text.index("sk-2"))  # after "_"
    escaped = text.index("sk-3")  # after a JSON-escaped line break: "\n" written out
    assert not at_word_start(text, escaped) and at_token_start(text, escaped)
    assert not at_token_start("ask-4", 1)

"""The prompt hook's pre-scan (`secret_scan.py`) never lets through a text the redactor would
change: every text of the redaction corpus (tests/fixtures/redaction), random mixes of it, and random
text the redactor masks something in, are flagged; and a normal prompt is not (it keeps the hook's
fast path, without importing the redactor)."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bli_memory import redact as redactor
from bli_memory.hooks import prompt
from bli_memory.secret_scan import (
    RUN_MARKERS,
    TOKEN_MARKERS,
    WORD_START_MARKERS,
    might_hold_secret,
)
from tests.helpers import fill_redaction_template, redaction_rows

POSITIVES = redaction_rows("positives.json")
NEGATIVES = redaction_rows("negatives.json")
SEEDS = (1, 7, 1337, 2024)


def _changed(text: str) -> bool:
    return redactor.redact(text).text != text


def _corpus() -> list[str]:
    texts = [
        fill_redaction_template(row["template"], random.Random(seed))[0]
        for row in POSITIVES
        for seed in SEEDS
    ]
    return texts + [row["text"] for row in NEGATIVES]


CORPUS = _corpus()


@pytest.mark.parametrize("text", CORPUS)
def test_every_corpus_text_the_redactor_changes_is_flagged(text: str) -> None:
    if _changed(text):
        assert might_hold_secret(text), text


def test_the_corpus_really_exercises_the_scan() -> None:
    changed = [text for text in CORPUS if _changed(text)]
    assert len(changed) >= len(POSITIVES) * len(SEEDS)  # every positive is masked
    assert not all(might_hold_secret(row["text"]) for row in NEGATIVES)  # and the scan is no constant


@pytest.mark.parametrize(
    "text",
    [
        "Please look at why the prompt hook clips the query to 4 KB, and what foo.py line 12 does.",
        "why is numpy pinned below 2.0? see pyproject.toml: dependencies = ['numpy<2']",
        "How does the stop hook save the turn? Use `parse_args()` in cli.py, see BLI-3580 and v0.2.83.",
        "run pytest -q tests/hooks/test_prompt.py and fix the failing assert: expected 3, got 4",
        "the task-list component re-renders twice; memo it. Timeout: 30 s, retries = 3.",
        "in bli_memory/hooks/prompt.py the TASK queue and ASK_USER flag: why does `keyword = 3` stay?",
    ],
)
def test_a_normal_prompt_is_not_flagged(text: str) -> None:
    assert not _changed(text)
    assert not might_hold_secret(text)


def test_every_vendor_rule_of_the_redactor_has_a_marker() -> None:
    """Each literal the redactor keys a vendor rule on holds one of the scan's markers, or (for the
    GitLab rule, whose literal `gl` is too common) each prefix its pattern starts with does."""
    for kind, literals, source in redactor._PREFIX_RULES:
        for literal in literals:
            if literal == "gl":
                alternatives = re.match(r"gl\(\?:([a-z|]+)\)-", source)
                assert alternatives is not None, source
                for name in alternatives.group(1).split("|"):
                    assert f"gl{name}-" in TOKEN_MARKERS, (kind, name)
                continue
            covered = (
                any(marker in literal for marker in TOKEN_MARKERS)
                or literal.startswith(WORD_START_MARKERS)
                or literal in dict(RUN_MARKERS)
            )
            assert covered, (kind, literal)


_FRAGMENTS = [fill_redaction_template(row["template"], random.Random(5))[0] for row in POSITIVES] + [
    row["text"] for row in NEGATIVES
]
_GLUE = st.sampled_from(["", " ", "\n", "=", ": ", '"', "\\n", "--", "</", "_", "-", ".", "x"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.tuples(st.sampled_from(_FRAGMENTS), _GLUE), min_size=1, max_size=4))
def test_mixed_corpus_texts_the_redactor_changes_are_flagged(parts: list[tuple[str, str]]) -> None:
    text = "".join(fragment + glue for fragment, glue in parts)
    if _changed(text):
        assert might_hold_secret(text), text


_SECRETISH = st.sampled_from(
    [
        "password",
        "Token",
        "_key",
        "secret",
        "auth",
        "sk-",
        "AKIA",
        "-u ",
        "bearer ",
        "://",
        "=",
        ":",
        '"',
        "'",
        " ",
    ]
)
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.:/=@ \"'\n"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(st.one_of(_SECRETISH, st.text(alphabet=_ALPHABET, min_size=1, max_size=40)), max_size=8)
)
def test_random_text_the_redactor_changes_is_flagged(parts: list[str]) -> None:
    text = "".join(parts)
    if _changed(text):
        assert might_hold_secret(text), text


def _token(rng: random.Random, size: int) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(rng.choice(alphabet) for _ in range(size))


def test_the_query_is_masked_whatever_the_scan_would_say(monkeypatch: Any) -> None:
    """`search_query` masks what the redactor masks; the pre-scan only decides whether to import it."""
    secret = "sk-" + _token(random.Random(11), 40)
    query = prompt.search_query(f"why does the client reject {secret} with 401?")
    assert secret[3:] not in query and "[REDACTED:api_key]" in query


def test_a_secret_across_the_query_limit_is_masked_before_the_cut() -> None:
    """The query is the first 4 KB, but the redactor sees more: a token cut by the limit could no
    longer look like one, and its first half would be sent."""
    secret = "ghp_" + _token(random.Random(12), 36)
    filler = "word " * ((prompt.QUERY_MAX_BYTES - 10) // 5)
    query = prompt.search_query(filler + secret + " and more text after it")
    assert len(query.encode()) <= prompt.QUERY_MAX_BYTES
    assert secret[4:10] not in query  # not even its first characters


def test_a_secret_cut_by_the_redaction_window_is_never_sent() -> None:
    """A long private key masked early shortens the text, so the query could reach the end of the
    window the redactor saw; the window's last WINDOW_EDGE_CHARS, where a cut secret may be, are dropped."""
    rng = random.Random(13)
    body = "\n".join(_token(rng, 64) for _ in range(70))
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\n"
    secret = "ghp_" + _token(rng, 36)
    filler = "x" * (prompt.REDACT_WINDOW_BYTES - len(pem) - 20)
    text = pem + filler + " " + secret + " tail " * 400
    assert len(text.encode()) > prompt.REDACT_WINDOW_BYTES
    query = prompt.search_query(text)
    assert "[REDACTED:private_key]" in query and body[:64] not in query
    assert secret[4:10] not in query

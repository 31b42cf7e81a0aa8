"""The redactor masks every kind of secret, leaves everything else byte-identical, and stays linear.

Fixtures live in tests/fixtures/redaction (see its README): positives are templates filled with
seeded random characters here, so the repository stores no secret-shaped strings.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bli_memory.redact import Redaction, redact
from tests.helpers import REDACTION_CHARSETS, fill_redaction_template, redaction_rows

WINDOW_CHARS = 16
SEEDS = (1, 7, 1337)

POSITIVES = redaction_rows("positives.json")
NEGATIVES = redaction_rows("negatives.json")
_fill = fill_redaction_template


def _survives(secret: str, prefix: str, redacted: str) -> bool:
    material = secret[len(prefix) :] if prefix and secret.startswith(prefix) else secret
    if secret in redacted:
        return True
    if len(material) < WINDOW_CHARS:
        return material in redacted
    return any(material[i : i + WINDOW_CHARS] in redacted for i in range(len(material) - WINDOW_CHARS + 1))


def _positive_cases() -> list[Any]:
    return [pytest.param(row, seed, id=f"{row['id']}-{seed}") for row in POSITIVES for seed in SEEDS]


@pytest.mark.parametrize(("row", "seed"), _positive_cases())
def test_every_secret_kind_is_masked_with_its_typed_mask(row: dict[str, Any], seed: int) -> None:
    text, secret = _fill(row["template"], random.Random(seed))
    result = redact(text)
    assert not _survives(secret, row["prefix"], result.text), result.text
    assert row["kind"] in result.kinds, result
    assert result.masked == sum(result.kinds.values()) >= 1
    assert f"[REDACTED:{row['kind']}]" in result.text


@pytest.mark.parametrize("row", NEGATIVES, ids=[row["id"] for row in NEGATIVES])
def test_text_without_secrets_comes_back_byte_identical(row: dict[str, Any]) -> None:
    result = redact(row["text"])
    assert result == Redaction(row["text"], 0, {})


@pytest.mark.parametrize(("row", "seed"), _positive_cases())
def test_redaction_is_idempotent(row: dict[str, Any], seed: int) -> None:
    text, _ = _fill(row["template"], random.Random(seed))
    once = redact(text)
    twice = redact(once.text)
    assert twice.text == once.text
    assert twice.masked == 0


def test_masks_keep_the_structure_around_the_secret() -> None:
    rng = random.Random(3)
    token = "ghp_" + "".join(rng.choice(REDACTION_CHARSETS["alnum"]) for _ in range(36))
    assert redact(f"export GITHUB_TOKEN={token}").text == "export GITHUB_TOKEN=ghp_[REDACTED:github_token]"
    assert (
        redact("postgres://app:Hunter2Hunter2@db:5432/app").text
        == "postgres://app:[REDACTED:password]@db:5432/app"
    )
    assert redact('{"password": "Peppercobalt7326+"}').text == '{"password": "[REDACTED:password]"}'
    pem_text, _ = _fill(
        "-----BEGIN RSA PRIVATE KEY-----\n[[{b64:64}]]\n{b64:64}\n-----END RSA PRIVATE KEY-----", rng
    )
    assert (
        redact(pem_text).text
        == "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED:private_key]\n-----END RSA PRIVATE KEY-----"
    )


def test_counts_one_mask_per_secret_and_reports_kinds() -> None:
    rng = random.Random(5)
    text = "\n".join(_fill(row["template"], rng)[0] for row in POSITIVES[:6])
    result = redact(text)
    assert result.masked == sum(result.kinds.values())
    assert result.kinds.get("aws_access_key", 0) >= 2
    assert result.kinds.get("github_token", 0) >= 3


MINTED_TOKENS = 300


def test_every_device_token_the_door_mints_is_masked_keeping_its_prefix(tmp_path: Path) -> None:
    """Tokens from the door's own minting code, in the shapes a turn shows them in."""
    from bli_memory.door.model import TOKEN_PREFIX
    from bli_memory.door.store.sqlite import SqliteStore

    store = SqliteStore(tmp_path / "door.db")
    try:
        tokens = [store.create_device(person=f"p{i}", admin=i == 0)[1] for i in range(MINTED_TOKENS)]
    finally:
        store.close()
    assert all(token.startswith(TOKEN_PREFIX) for token in tokens)
    for token in tokens:
        for shape in (
            "her new device token is {} - use it",
            "BLI_MEMORY_DEVICE_TOKEN={}",
            '{{"device_token": "{}"}}',
            "Authorization: Bearer {}",
            "pair printed:\\n{}\\n",
        ):
            text = shape.format(token)
            out = redact(text)
            assert token[len(TOKEN_PREFIX) :] not in out.text, out.text
            assert not _survives(token, TOKEN_PREFIX, out.text), out.text
            assert "bli_[REDACTED:bli_token]" in out.text, out.text


@pytest.mark.parametrize(
    "text",
    [
        "bli_memory",
        "bli_memory.door",
        "from bli_memory.door.store.sqlite import TOKEN_PREFIX",
        "bli_" + "memory_hooks_transcript_lines_backwards_xyz",  # 43 characters, an identifier
        "BLI_" + "MEMORY_HOOKS_TRANSCRIPT_LINES_BACKWARDS_XYZ",
        "bli_" + "A1b2C3d4E5f6G7h8I9j0" * 2 + "K1",  # 42 characters: not what the door mints
        "bli_" + "A1b2C3d4E5f6G7h8I9j0" * 2 + "K1l2",  # 44 characters: nor this
    ],
)
def test_our_module_names_and_other_lengths_are_not_device_tokens(text: str) -> None:
    assert redact(text).text == text


def test_empty_text() -> None:
    assert redact("") == Redaction("", 0, {})


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

_PLAIN_ALPHABET = st.characters(exclude_categories=["Cs"])
_NEGATIVE_TEXTS = [row["text"] for row in NEGATIVES]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_PLAIN_ALPHABET, max_size=400))
def test_random_text_is_unchanged(text: str) -> None:
    assert redact(text).text == text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(_NEGATIVE_TEXTS), min_size=1, max_size=6), st.sampled_from(["\n", "\n\n", " \n"])
)
def test_combined_texts_without_secrets_are_unchanged(parts: list[str], sep: str) -> None:
    text = sep.join(parts)
    assert redact(text).text == text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(POSITIVES + NEGATIVES), min_size=1, max_size=6),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_redaction_is_idempotent_on_mixed_text(rows: list[dict[str, Any]], seed: int) -> None:
    rng = random.Random(seed)
    text = "\n".join(_fill(row["template"], rng)[0] if "template" in row else row["text"] for row in rows)
    once = redact(text)
    assert redact(once.text).text == once.text
    for row in rows:
        if "template" in row:
            assert "[REDACTED:" in once.text


# ---------------------------------------------------------------------------------------------
# Linear time on hostile input
# ---------------------------------------------------------------------------------------------

ADVERSARIAL_BYTES = 1 << 20
QUARTER_BYTES = ADVERSARIAL_BYTES // 4
# Linear work grows 4x from a quarter to the whole; quadratic work grows 16x.
MAX_GROWTH = 9.0
# Against a plain tokenising ``re`` scan of the same input (the redactor runs dozens of scans).
MAX_RATIO_TO_PLAIN_SCAN = 80.0
_PLAIN_SCAN = re.compile(r"\w+|[^\w\s]")

ADVERSARIAL_UNITS = {
    "one_long_run": "a",
    "keyword_values": "password=",
    "weak_keyword_values": "token=",
    "yaml_keys": "key: ",
    "unclosed_quotes": 'password="',
    "json_escaped_quotes": '\\"password\\": \\"',
    "pem_headers": "-----BEGIN RSA PRIVATE KEY-----\n",
    "url_userinfo": "://a:b",
    "auth_headers": "Authorization: ",
    "short_flags": " -u a -p ",
    "telegram_shape": "12345678:AA",
    "jwt_shape": "eyJaaaaaaaaa.",
}


def _cpu_seconds(fn: Any, arg: str) -> float:
    start = time.process_time()
    fn(arg)
    return max(time.process_time() - start, 1e-3)


@pytest.mark.parametrize("unit", list(ADVERSARIAL_UNITS.values()), ids=list(ADVERSARIAL_UNITS))
def test_hostile_megabyte_costs_linear_time(unit: str) -> None:
    text = (unit * (ADVERSARIAL_BYTES // len(unit) + 1))[:ADVERSARIAL_BYTES]
    quarter = text[:QUARTER_BYTES]
    first_quarter_s = _cpu_seconds(redact, quarter)  # also compiles what this input needs
    whole_s = _cpu_seconds(redact, text)
    quarter_s = min(first_quarter_s, _cpu_seconds(redact, quarter))
    plain_s = _cpu_seconds(lambda s: sum(1 for _ in _PLAIN_SCAN.finditer(s)), text)
    assert whole_s <= MAX_GROWTH * quarter_s + 0.05, (whole_s, quarter_s)
    assert whole_s <= MAX_RATIO_TO_PLAIN_SCAN * plain_s + 0.05, (whole_s, plain_s)

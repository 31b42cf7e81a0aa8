"""Every redactor rule stays linear on 100 KB of input built against it.

Python's `re` has no timeout, so a rule that rescans a run from each of its starts turns a long run into
minutes (200 KB of `eyJ` took 12 s in the JWT rule). Each case is one rule's own prefix repeated, or
the prefix before a long body that never reaches the rule's terminator; each must cost well under a
second of CPU (a quadratic rule costs several seconds at this size, a linear one tens of ms).
"""

from __future__ import annotations

import time

import pytest

from bli_memory import redact as redactor

HOSTILE_CHARS = 100 * 1024
MAX_CPU_S = 1.5  # a slow CI machine runs each case in ~0.1 s; the quadratic JWT rule took ~5 s


def _prefix_cases() -> list[str]:
    """For each vendor prefix: runs of the prefix, and the prefix before a long body with a bad end."""
    cases: list[str] = []
    for _kind, literals, _source in redactor._PREFIX_RULES:
        for literal in literals:
            cases += [literal, literal + "-", literal + "aB3_" * (HOSTILE_CHARS // 4) + "!"]
    return cases


STRUCTURED_CASES = [
    "eyJ",
    "-eyJ",
    "eyJaaaaaaaaa.",
    "eyJaaaaaaaaa.eyJ",
    "eyJaaaaaaaaa.eyJbbbbbbbb.",
    "12345678:AA",
    "Maaaaaaaaaaaaaaaaaaaaaaaa.bbbbbb.",
    "-----BEGIN RSA PRIVATE KEY-----\n",
    "-----BEGIN PRIVATE KEY-----\n" + " " * HOSTILE_CHARS + "x",
    "-----BEGIN PRIVATE KEY-----\n" + "1\u2192" * HOSTILE_CHARS,
    "-----END PRIVATE KEY-----\n",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n",
    "MIIE" + "A" * HOSTILE_CHARS,
    "aws_secret_access_key ",
    "aws" + " " * HOSTILE_CHARS,
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "A1b2" * (HOSTILE_CHARS // 4),
]
CONTEXT_CASES = [
    "password=",
    'password="',
    "secret='",
    "secret=`",
    'secret="""',
    "token=" + "aB3/" * (HOSTILE_CHARS // 4),
    "password=" + "=" * HOSTILE_CHARS + "a",
    "Authorization: Bearer" + " " * HOSTILE_CHARS + "\n",
    "bearer ",
    "://a:b",
    "postgres://u:",
    "://a:" + "@" * HOSTILE_CHARS,
    " -u a -p ",
    " -ux -p",
    "--password" + " " * HOSTILE_CHARS + "\n",
    "<password>" + "x" * HOSTILE_CHARS,
    "machine x" + " " * HOSTILE_CHARS + "y",
    "my password is a1",
    "password=$",
    "password=my_",
    "password=the-",
    "password=$a.",
    "password: $this->",
    "://u:$a@",
    "-----END RSA PRIVATE KEY-----\n",
    "AAAAAAAAAAAAAAAAAAAA\n",
    "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0\n",
    ("B" * 64 + "\n") * (HOSTILE_CHARS // 65) + "-----END RSA PRIVATE KEY-----",
]


def _hostile(unit: str) -> str:
    """`unit` repeated to 100 KB, or a long unit as it is."""
    if len(unit) >= HOSTILE_CHARS:
        return unit
    return (unit * (HOSTILE_CHARS // len(unit) + 1))[:HOSTILE_CHARS]


@pytest.mark.parametrize("unit", _prefix_cases() + STRUCTURED_CASES + CONTEXT_CASES)
def test_hostile_100kb_costs_well_under_a_second(unit: str) -> None:
    text = _hostile(unit)
    redactor.redact(text[:1024])  # compiles what this input needs
    start = time.process_time()
    redactor.redact(text)
    spent = time.process_time() - start
    assert spent < MAX_CPU_S, (unit[:40], spent)


def test_a_token_after_a_dash_inside_a_longer_run_is_still_a_jwt() -> None:
    """The JWT rule measures a run once for all its starts; a token may still start after a ``-``."""
    token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlX3BhcnQ"
    result = redactor.redact(f"value xeyJxyz-{token} end")
    assert "eyJzdWIiOiIxMjM0NTY3ODkwIn0" not in result.text, result.text
    assert result.kinds == {"jwt": 1}

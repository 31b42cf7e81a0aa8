"""What both scans for secrets read the same way: the redactor (`redact.py`) and the prompt hook's
pre-scan (`secret_scan.py`), which must flag every text the redactor would change.

Standard library only and imports nothing: the pre-scan runs in the prompt hook, where every module
loaded is cold-start time.
"""

from __future__ import annotations

_A_TO_Z = {code: code + 32 for code in range(65, 91)}

#: the request headers whose value is a secret, lower case: the redactor masks their values, and the
#: pre-scan flags a text naming one
SECRET_HEADER_NAMES = (
    "authorization",
    "api-key",
    "x-auth-token",
    "private-token",
    "x-access-token",
    "subscription-key",
)


def ascii_lower(text: str) -> str:
    """A lower-cased copy with the same indices, for literal-first case-insensitive scans.

    `str.lower` may change a text's length ("İ" becomes two characters); then only A-Z are lowered,
    so an index found in the copy is an index in the text."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return text.translate(_A_TO_Z)


def at_word_start(text: str, start: int) -> bool:
    """Whether `start` begins a word: a word boundary."""
    return start == 0 or not (text[start - 1].isalnum() or text[start - 1] == "_")


def at_token_start(text: str, start: int) -> bool:
    """Whether a token may start at `start`: a word boundary, or right after a JSON-escaped line break
    or tab (`\\n`, `\\r`, `\\t` written out, as a transcript's JSON holds them)."""
    if at_word_start(text, start):
        return True
    return start >= 2 and text[start - 2] == "\\" and text[start - 1] in "nrt"

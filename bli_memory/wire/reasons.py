"""The closed set of reasons a hook receipt may name, and the one place exceptions become reasons.

Why a closed set: a receipt line (`[bli-memory] prompt failed {"reason": ...}`) is read by people and
counted by scripts, so its `reason` must be one of a few literals everyone knows, never a stack trace,
never the door's own error text, never a prompt, a memory, a path or a token. A failure nobody has
taught `to_log_reason` about becomes `unknown_internal:<ClassName>` rather than being folded into a
plausible-looking network reason, so a new kind of breakage stays visible instead of being counted as
an outage it is not.

This module imports nothing: it runs on every hook.
"""

from __future__ import annotations

# The network reasons. `http_<status>` is a family (http_401, http_500, ...) and is recognised by
# `is_known_reason`; build one with `http_reason(status)`.
NETWORK_REASONS: tuple[str, ...] = ("timeout", "dashboard_unreachable", "bad_response")
HTTP_REASON_PREFIX = "http_"

# A malformed payload from the host never touched the network, so each stdin failure is its own
# literal and is never folded into bad_response.
STDIN_REASONS: tuple[str, ...] = (
    "no_stdin",
    "stdin_empty",
    "stdin_timeout",
    "stdin_too_large",
    "stdin_unreadable",
    "stdin_malformed",
)

# Local skips and failures: unpaired machine, nothing to search for, and the Stop-only ones.
# `bad_config`: the door URL this machine is set up with cannot be used (not http(s), no host, a bad
# port, user info in it); `unknown_event`: the host ran `hook <name>` with a name this version does
# not know (an installer of another version), which must still exit 0 (exit 2 erases the prompt).
LOCAL_REASONS: tuple[str, ...] = (
    "unpaired",
    "bad_config",
    "unknown_event",
    "no_prompt",
    "trivial_prompt",
    "reentrant",
    "no_transcript",
    "redaction_failed",
)

UNKNOWN_INTERNAL_PREFIX = "unknown_internal:"

_FIXED_REASONS = frozenset(NETWORK_REASONS + STDIN_REASONS + LOCAL_REASONS)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
_MAX_NAME_CHARS = 64


def http_reason(status: int) -> str:
    """The reason for a door that answered with a non-2xx status, e.g. `http_503`."""
    return f"{HTTP_REASON_PREFIX}{status}"


def is_known_reason(reason: str) -> bool:
    """True for a member of the closed set, including `http_<status>` for a 3-digit status 100..599."""
    if reason in _FIXED_REASONS:
        return True
    if reason.startswith(HTTP_REASON_PREFIX):
        digits = reason[len(HTTP_REASON_PREFIX) :]
        return len(digits) == 3 and digits.isascii() and digits.isdigit() and 100 <= int(digits) <= 599
    return False


def _safe_name(name: str) -> str:
    """Keep only identifier-like characters so an unknown reason can never smuggle text into a log."""
    kept = "".join(c for c in name if c in _NAME_CHARS)[:_MAX_NAME_CHARS]
    return kept or "unnamed"


def to_log_reason(exc_or_reason: BaseException | str) -> str:
    """Map an exception or a reason string to a member of the closed set, or `unknown_internal:<name>`.

    An exception is taught by carrying a `reason` attribute that is a known reason (the wire errors,
    `DoorCallError`, the hooks' stdin failures do) or an `unknown_internal:<name>` it chose itself;
    anything else is named by its class. A string is returned unchanged when known (and
    `unknown_internal:<name>` strings pass through, sanitised); any other string becomes
    `unknown_internal:<sanitised token>`.
    """
    if isinstance(exc_or_reason, BaseException):
        reason = getattr(exc_or_reason, "reason", None)
        if isinstance(reason, str) and is_known_reason(reason):
            return reason
        if isinstance(reason, str) and reason.startswith(UNKNOWN_INTERNAL_PREFIX):
            return to_log_reason(reason)  # it already named itself (e.g. DoorCallError from a local fault)
        return UNKNOWN_INTERNAL_PREFIX + _safe_name(type(exc_or_reason).__name__)
    if is_known_reason(exc_or_reason):
        return exc_or_reason
    token = exc_or_reason
    if token.startswith(UNKNOWN_INTERNAL_PREFIX):
        token = token[len(UNKNOWN_INTERNAL_PREFIX) :]
    return UNKNOWN_INTERNAL_PREFIX + _safe_name(token)

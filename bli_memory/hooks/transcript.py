"""The last user/assistant exchange of a session, read from the END of its transcript.

A transcript grows for the whole session (tens of MB is normal), and Stop runs on every turn, so it
is read backwards in blocks from the end (`lines_backwards`) and parsing stops at the last real user
prompt: a 40 MB file costs what a small one does. The search is bounded by `SEARCH_MAX_BYTES`; a turn
whose prompt lies further back than that (hundreds of tool results) is saved without its prompt.

Which lines count (research/host-contracts.md, "Transcript JSONL"): only `user`/`assistant` lines;
not sidechains, meta, compact summaries or API error lines; a user line that carries a tool result,
a slash-command echo or a "session is being continued" preamble is not a prompt. Codex rollout
lines (`response_item` messages) are read the same way. Parsing (`exchange_from_lines`) is pure;
only `lines_backwards` touches the file.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Iterable, Iterator

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:
    from typing import BinaryIO

READ_BLOCK_BYTES = 64 * 1024
SEARCH_MAX_BYTES = 4 * 1024 * 1024
#: what the hook sends: the exchange, UTF-8, at most this long (12 KB: a turn's gist, never a log dump)
EXCHANGE_MAX_BYTES = 12 * 1024
USER_MAX_BYTES = 4 * 1024
ELISION = "\n[…]\n"
#: the Stop hook masks a part whole before `compose` clips it; a part longer than twice this is first cut
#: to its head and tail of this many characters (`redaction_span`): far more than `compose` keeps, so
#: every kept byte is judged with this much context, and a 4 MB reply costs what 512 K characters do
REDACT_SPAN_CHARS = 256 * 1024

_SKIP_FLAGS = ("isSidechain", "isMeta", "isCompactSummary", "isApiErrorMessage", "isVisibleInTranscriptOnly")
_NOT_A_PROMPT_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<local-command-",
    "<command-stdout>",
    "This session is being continued",
    "Caveat: The messages below were generated",
    "<environment_context>",
    "<user_instructions>",
    "<turn_aborted>",
    "[Request interrupted",
)


class Exchange:
    """The last prompt and the reply that followed it; either may be empty."""

    __slots__ = ("assistant", "user")

    def __init__(self, user: str, assistant: str) -> None:
        self.user = user
        self.assistant = assistant

    def __repr__(self) -> str:
        return f"Exchange(user={len(self.user)} chars, assistant={len(self.assistant)} chars)"


def lines_backwards(path: str, *, max_bytes: int = SEARCH_MAX_BYTES) -> Iterator[bytes]:
    """The file's lines, last first, reading at most `max_bytes` from the end.

    Raises OSError when the file cannot be opened or is not a regular file. A line longer than the
    search window is dropped.
    """
    with _open_regular(path) as handle:
        handle.seek(0, 2)
        position = handle.tell()
        carry = b""
        read_bytes = 0
        while position > 0 and read_bytes < max_bytes:
            size = min(READ_BLOCK_BYTES, position)
            position -= size
            handle.seek(position)
            block = handle.read(size) + carry
            read_bytes += size
            pieces = block.split(b"\n")
            carry = pieces[0]
            for piece in reversed(pieces[1:]):
                if piece.strip():
                    yield piece
        if position == 0 and carry.strip():
            yield carry


def _open_regular(path: str) -> BinaryIO:
    """`path` opened for reading, if it is a regular file; else OSError, at once.

    The path comes from the host's payload. A FIFO there would block a plain `open` until a writer
    appears (the whole Stop deadline), and a device or a directory is no transcript: the type is
    checked before opening, the open itself never waits (`O_NONBLOCK`), and the type is checked again
    on what was opened, in case the path was swapped in between.
    """
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(errno.EINVAL, "not a regular file", path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _text_of(content: object, text_types: tuple[str, ...]) -> tuple[str, bool]:
    """(joined text, has_tool_result) of a message `content` (a string or a list of blocks)."""
    if isinstance(content, str):
        return content, False
    if not isinstance(content, list):
        return "", False
    parts: list[str] = []
    tool_result = False
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in ("tool_result", "function_call_output"):
            tool_result = True
        elif kind in text_types and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts), tool_result


def _message(line: bytes) -> tuple[str, str, bool] | None:
    """(role, text, is_prompt) of a transcript line, or None for a line that is no part of a turn."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if not isinstance(entry, dict) or any(entry.get(flag) for flag in _SKIP_FLAGS):
        return None
    kind = entry.get("type")
    if kind in ("user", "assistant"):
        message = entry.get("message")
        role = kind
        content = message.get("content") if isinstance(message, dict) else None
    elif kind == "response_item":  # Codex rollout
        payload = entry.get("payload")
        if not isinstance(payload, dict) or payload.get("type") != "message":
            return None
        role = str(payload.get("role"))
        content = payload.get("content")
        if role not in ("user", "assistant"):
            return None
    else:
        return None
    text, tool_result = _text_of(content, ("text", "input_text", "output_text"))
    if role == "assistant":
        return role, text, False
    stripped = text.lstrip()
    is_prompt = bool(stripped) and not tool_result and not stripped.startswith(_NOT_A_PROMPT_PREFIXES)
    return role, text, is_prompt


def exchange_from_lines(lines_last_first: Iterable[bytes]) -> Exchange:
    """The last real user prompt and the assistant text after it, from lines given last first."""
    replies: list[str] = []
    for line in lines_last_first:
        message = _message(line)
        if message is None:
            continue
        role, text, is_prompt = message
        if role == "assistant":
            if text.strip():
                replies.append(text)
        elif is_prompt:
            return Exchange(text.strip(), "\n".join(reversed(replies)).strip())
    return Exchange("", "\n".join(reversed(replies)).strip())


def clip_utf8(text: str, max_bytes: int, *, keep_tail: bool = False) -> str:
    """`text` cut to `max_bytes` of UTF-8 on a character boundary; with `keep_tail`, head + tail."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    if not keep_tail:
        return raw[:max_bytes].decode("utf-8", "ignore")
    budget = max_bytes - len(ELISION.encode("utf-8"))
    head = raw[: budget // 2].decode("utf-8", "ignore")
    tail = raw[len(raw) - (budget - budget // 2) :].decode("utf-8", "ignore")
    return head + ELISION + tail


def redaction_span(text: str, span: int = REDACT_SPAN_CHARS) -> str:
    """What of a part the Stop hook redacts: all of it, or its head and tail of `span` characters
    when it is longer than twice that (the middle is never sent: `compose` keeps at most 12 KB)."""
    if len(text) <= 2 * span:
        return text
    return text[:span] + ELISION + text[-span:]


def compose(exchange: Exchange, *, max_bytes: int = EXCHANGE_MAX_BYTES) -> str:
    """The text to save: `User: …` then `Assistant: …`, at most `max_bytes` of UTF-8 in all.

    The prompt keeps its head (the question); the reply keeps head and tail (the conclusion).
    """
    parts: list[str] = []
    used = 0
    if exchange.user:
        user = "User: " + clip_utf8(exchange.user, USER_MAX_BYTES)
        parts.append(user)
        used = len(user.encode("utf-8")) + 2
    if exchange.assistant:
        label = "Assistant: "
        room = max_bytes - used - len(label)
        if room > 0:
            parts.append(label + clip_utf8(exchange.assistant, room, keep_tail=True))
    return "\n\n".join(parts)


#: how much of the reply's end must be found in the transcript to show the transcript has caught up
REPLY_MATCH_CHARS = 256


def _flat(text: str) -> str:
    return " ".join(text.split())


def _holds(text: str, part: str) -> bool:
    """True when `part`'s last REPLY_MATCH_CHARS (whitespace aside) occur in `text`."""
    tail = _flat(part)[-REPLY_MATCH_CHARS:]
    return bool(tail) and tail in _flat(text)


def last_exchange(
    transcript_path: object, last_assistant_message: object, remembered_prompt: str | None = None
) -> Exchange:
    """The exchange for Stop. Missing parts are empty; a part that cannot be shown to belong to this
    turn is left out rather than paired with the wrong one.

    The reply: the payload's `last_assistant_message` when there is one (the transcript is written
    asynchronously and may lag the turn), else the transcript's. The prompt: the one the prompt hook
    remembered for this session (`hooks.last_prompt`) when there is one; else the transcript's, but
    only when the transcript already holds this reply after it (or no reply at all after it yet): a
    transcript that ends with another reply may end with the previous turn, prompt included.
    """
    exchange = Exchange("", "")
    if isinstance(transcript_path, str) and transcript_path:
        with contextlib.suppress(OSError):
            exchange = exchange_from_lines(lines_backwards(transcript_path))
    reply = last_assistant_message.strip() if isinstance(last_assistant_message, str) else ""
    if remembered_prompt and remembered_prompt.strip():
        caught_up = _holds(exchange.user, remembered_prompt)
        if not reply and not caught_up:
            exchange.assistant = ""  # the transcript's reply answers an earlier prompt
        exchange.user = remembered_prompt.strip()
    elif reply and exchange.assistant and not _holds(exchange.assistant, reply):
        exchange.user = ""  # lagging (prompt A + reply A, reply B in the payload) or mid-turn: unknown
    if reply:
        exchange.assistant = reply
    return exchange

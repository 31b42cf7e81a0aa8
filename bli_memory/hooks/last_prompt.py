"""The prompt of the turn in progress, per session, so Stop pairs the reply with ITS prompt.

The transcript is written asynchronously and may lag (research/host-contracts.md §1.2, §1.7): at Stop
it can still end with the previous turn (prompt A, reply A) while the payload's
`last_assistant_message` is already reply B, and taking the transcript's prompt would save
"User: A … Assistant: B". So the prompt hook remembers every prompt it is given (trivial ones too:
"continue" is this turn's prompt), keyed by `session_id` (and Codex's `turn_id`), and Stop takes it:
reads it and removes it, so a prompt is never paired with a later turn's reply.

One small file per session under `~/.local/state/bli-cockpit/memory-prompts/` (0700 folder, 0600
files, replaced atomically): parallel sessions never share a file, so there is no lock. Stop prunes
files older than KEEP_S (sessions that ended without a Stop). The text stays here only between a
prompt and its Stop, clipped to PROMPT_MAX_BYTES, readable by the same user as the host's own
transcript, which holds it anyway. Imports only `os`, `time` and `wire.tinyjson`: it runs on every prompt.
"""

from __future__ import annotations

import os
import time

from bli_memory.paths import state_dir
from bli_memory.wire import tinyjson

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:
    from collections.abc import Mapping

FOLDER_NAME = "memory-prompts"
DIR_MODE = 0o700
FILE_MODE = 0o600
#: twice what Stop sends of a prompt (transcript.USER_MAX_BYTES): Stop masks the prompt before it clips
#: it, so a secret that straddles the clip is whole when the redactor sees it
PROMPT_MAX_BYTES = 8 * 1024
#: a file this old belongs to a session that ended without a Stop
KEEP_S = 24 * 3600.0
FILE_MAX_BYTES = 64 * 1024
_SESSION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_SESSION_MAX_CHARS = 128


def folder(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(state_dir(env), FOLDER_NAME)


def _path(session_id: object, env: Mapping[str, str] | None) -> str | None:
    """The session's file; None for an id that is not a plain token (it names a file: no paths)."""
    if not isinstance(session_id, str) or not 0 < len(session_id) <= _SESSION_MAX_CHARS:
        return None
    if not set(session_id) <= _SESSION_CHARS:
        return None
    return os.path.join(folder(env), session_id + ".json")


def remember(payload: Mapping[str, object], env: Mapping[str, str] | None = None) -> bool:
    """Keep this prompt as its session's turn in progress; False when it could not be kept."""
    path = _path(payload.get("session_id"), env)
    if path is None:
        return False
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        try:  # noqa: SIM105 - contextlib costs an import on every prompt
            os.unlink(path)  # no prompt this turn: an older one must not stand in for it
        except OSError:
            pass
        return False
    turn_id = payload.get("turn_id")
    entry = {
        "prompt": prompt.strip().encode("utf-8")[:PROMPT_MAX_BYTES].decode("utf-8", "ignore"),
        "turnId": turn_id if isinstance(turn_id, str) else None,
    }
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=DIR_MODE, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
        try:
            os.write(fd, tinyjson.dumps(entry, ensure_ascii=False).encode("utf-8"))
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError:
        return False
    return True


def take(
    session_id: object,
    turn_id: object = None,
    env: Mapping[str, str] | None = None,
    *,
    now_s: float | None = None,
) -> str | None:
    """The session's remembered prompt, removed as it is read; None when there is none we can trust
    (absent, older than KEEP_S, unreadable, or of another Codex turn)."""
    path = _path(session_id, env)
    if path is None:
        return None
    now_s = time.time() if now_s is None else now_s
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            age_s = now_s - os.fstat(fd).st_mtime
            raw = os.read(fd, FILE_MAX_BYTES)
        finally:
            os.close(fd)
        os.unlink(path)
    except OSError:
        return None
    try:
        entry = tinyjson.loads(raw.decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(entry, dict) or not 0 <= age_s < KEEP_S:
        return None
    stored_turn = entry.get("turnId")
    if isinstance(turn_id, str) and isinstance(stored_turn, str) and turn_id != stored_turn:
        return None
    prompt = entry.get("prompt")
    return prompt if isinstance(prompt, str) and prompt.strip() else None


def prune(env: Mapping[str, str] | None = None, *, now_s: float | None = None) -> int:
    """Remove the files of sessions idle for KEEP_S or more; how many went."""
    now_s = time.time() if now_s is None else now_s
    where = folder(env)
    removed = 0
    try:
        names = os.listdir(where)
    except OSError:
        return 0
    for name in names:
        path = os.path.join(where, name)
        try:
            if now_s - os.lstat(path).st_mtime >= KEEP_S:
                os.unlink(path)
                removed += 1
        except OSError:
            continue
    return removed

"""Where the client finds its door and its token.

The session file ``~/.config/bli-cockpit/session.json`` holds ``{"dashboard_url", "device_token"}``
(mode 0600, in a 0700 folder); environment variables override it. Standard library only: this runs
on every hook. The door's own ``serve`` writes the same file when it pairs the local user, so the two
programs agree on one format by sharing this module.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Mapping

from bli_memory.paths import config_dir

ENV_TOKEN = "BLI_MEMORY_DEVICE_TOKEN"
ENV_URL = "BLI_MEMORY_DASHBOARD_URL"
ENV_CONTAINER_TAG = "BLI_MEMORY_CONTAINER_TAG"
ENV_ISOLATE_WORKTREES = "BLI_MEMORY_ISOLATE_WORKTREES"
ENV_DAEMON = "BLI_MEMORY_DAEMON"

SESSION_FILE_NAME = "session.json"
SESSION_DIR_MODE = 0o700
SESSION_FILE_MODE = 0o600
#: a session file is a few hundred bytes; anything far larger is not ours.
SESSION_FILE_MAX_BYTES = 64 * 1024

UNPAIRED_MESSAGE = (
    "bli-memory: this machine is not paired with a memory door; run `bli-memory-door serve` "
    "(pairs the local user) or `bli-memory-mcp login --url URL --token-stdin`."
)


class SessionFileError(Exception):
    """The session file exists but cannot be read, parsed, or written privately."""


class Settings:
    """What the client needs to reach its door. A plain slotted class: `dataclasses` would import
    `inspect` on every hook run (10-20 ms measured by the hooks' import-time test)."""

    __slots__ = ("container_tag", "daemon_enabled", "door_url", "isolate_worktrees", "token")

    def __init__(
        self,
        door_url: str | None,
        token: str | None,
        container_tag: str | None,
        isolate_worktrees: bool,
        daemon_enabled: bool,
    ) -> None:
        self.door_url = door_url
        self.token = token
        self.container_tag = container_tag
        self.isolate_worktrees = isolate_worktrees
        self.daemon_enabled = daemon_enabled

    @property
    def paired(self) -> bool:
        return bool(self.door_url and self.token)

    def __repr__(self) -> str:  # never the token
        token = "set" if self.token else None
        return f"Settings(door_url={self.door_url!r}, token={token}, container_tag={self.container_tag!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Settings):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]


def session_file(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(config_dir(env), SESSION_FILE_NAME)


def read_session(path: str) -> dict[str, str]:
    """The session file's fields; an absent file is an empty dict, a broken one a SessionFileError."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(SESSION_FILE_MAX_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SessionFileError(f"cannot read {path}: {exc.strerror}") from None
    if len(raw) > SESSION_FILE_MAX_BYTES:
        raise SessionFileError(f"{path} is larger than {SESSION_FILE_MAX_BYTES} bytes")
    try:
        data = json.loads(raw)
    except ValueError:
        raise SessionFileError(f"{path} is not valid JSON") from None
    if not isinstance(data, dict):
        raise SessionFileError(f"{path} does not hold a JSON object")
    return {key: value for key, value in data.items() if isinstance(key, str) and isinstance(value, str)}


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Settings from the session file and the environment (the environment wins).

    A broken session file counts as unpaired rather than raising: hooks must stay silent.
    """
    env = os.environ if env is None else env
    try:
        session = read_session(session_file(env))
    except SessionFileError:
        session = {}
    return Settings(
        door_url=(env.get(ENV_URL) or session.get("dashboard_url") or None),
        token=(env.get(ENV_TOKEN) or session.get("device_token") or None),
        container_tag=env.get(ENV_CONTAINER_TAG) or None,
        isolate_worktrees=env.get(ENV_ISOLATE_WORKTREES) == "1",
        daemon_enabled=env.get(ENV_DAEMON, "1") != "0",
    )


def unpaired_message(env: Mapping[str, str] | None = None) -> str:
    """Why this machine counts as unpaired, naming the missing half when only one is set.

    A token without a URL (or the reverse) is a half-done setup, usually one variable exported and
    the other forgotten: the message says which variable (or session-file field) is missing.
    """
    env = os.environ if env is None else env
    try:
        session = read_session(session_file(env))
    except SessionFileError:
        session = {}
    has_url = bool(env.get(ENV_URL) or session.get("dashboard_url"))
    has_token = bool(env.get(ENV_TOKEN) or session.get("device_token"))
    if has_token and not has_url:
        origin = ENV_TOKEN if env.get(ENV_TOKEN) else session_file(env)
        missing = f"{ENV_URL} is not set (nor a door URL in {session_file(env)})"
        return f"bli-memory: not paired: a device token comes from {origin} but {missing}; set {ENV_URL}, e.g. http://127.0.0.1:8787."
    if has_url and not has_token:
        origin = ENV_URL if env.get(ENV_URL) else session_file(env)
        missing = f"{ENV_TOKEN} is not set (nor a device token in {session_file(env)})"
        return f"bli-memory: not paired: a door URL comes from {origin} but {missing}; set {ENV_TOKEN}."
    return UNPAIRED_MESSAGE


def write_session(door_url: str, token: str, env: Mapping[str, str] | None = None) -> str:
    """Write the session file atomically with mode 0600 in a 0700 folder; returns its path.

    Refuses (SessionFileError) when the folder cannot be made private, e.g. it belongs to someone else.
    """
    path = session_file(env)
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=SESSION_DIR_MODE, exist_ok=True)
        os.chmod(folder, SESSION_DIR_MODE)
        info = os.stat(folder)
    except OSError as exc:
        raise SessionFileError(f"cannot make {folder} private: {exc.strerror}") from None
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise SessionFileError(f"cannot make {folder} private")
    temporary = f"{path}.{os.getpid()}.tmp"
    body = json.dumps({"dashboard_url": door_url, "device_token": token}, indent=2) + "\n"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SESSION_FILE_MODE)
        try:
            os.write(fd, body.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise SessionFileError(f"cannot write {path}: {exc.strerror}") from None
    return path


def remove_session(env: Mapping[str, str] | None = None) -> bool:
    """Delete the session file; True when there was one."""
    try:
        os.unlink(session_file(env))
    except FileNotFoundError:
        return False
    return True

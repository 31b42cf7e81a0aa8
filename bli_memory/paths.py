"""Where this user's files live: the home folder, and the client's state and config folders under it.

One place for `$HOME` (falling back to the password database when it is unset or empty), so every
module finds the same folders. Standard library only, and only `os`: the hooks import it (for their
stats, the daemon's socket, the session file), and the door imports it for its default database folder.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:
    from collections.abc import Mapping

#: the folder name the client's state and config live under: an older name of ours, kept as a
#: contract so that existing installs keep their state (docs/architecture.md, glossary: door)
APP_FOLDER = "bli-cockpit"


def home_dir(env: Mapping[str, str] | None = None) -> str:
    """`$HOME`, or the user's home from the password database when HOME is unset or empty."""
    env = os.environ if env is None else env
    return env.get("HOME") or os.path.expanduser("~")


def state_dir(env: Mapping[str, str] | None = None) -> str:
    """`~/.local/state/bli-cockpit`: the daemon's socket, lock and stamps, the hook stats, last prompts."""
    return os.path.join(home_dir(env), ".local", "state", APP_FOLDER)


def config_dir(env: Mapping[str, str] | None = None) -> str:
    """`~/.config/bli-cockpit`: the session file."""
    return os.path.join(home_dir(env), ".config", APP_FOLDER)


def data_home(env: Mapping[str, str] | None = None) -> str:
    """`$XDG_DATA_HOME`, else `~/.local/share` (where the door keeps its database by default)."""
    env = os.environ if env is None else env
    return env.get("XDG_DATA_HOME") or os.path.join(home_dir(env), ".local", "share")

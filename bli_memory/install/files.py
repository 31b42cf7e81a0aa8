"""The four files install edits, and writing one of them safely.

`Paths` names them (`$CLAUDE_CONFIG_DIR` and `$CODEX_HOME` honoured). A `FileChange` is one file's
plan: its text now and after. `apply_change` reads the file again first (a host that rewrote it since
the plan must not lose its write), backs it up once (`<file>.bli-memory.bak`) before its first change,
and writes it atomically: a temp file and a rename in the same folder, the file's mode kept, a
symlink's target written rather than the link replaced.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field

from bli_memory.paths import home_dir

BACKUP_SUFFIX = ".bli-memory.bak"
#: the skill's file under a host's skills root: `skills/<name>/SKILL.md` (see `install.skill`)
SKILL_NAME = "bli-memory"
SKILL_PATH = ("skills", SKILL_NAME, "SKILL.md")
#: config files hold tokens (Claude's OAuth state lives in ~/.claude.json): new ones are private.
NEW_FILE_MODE = 0o600


class InstallError(Exception):
    """A file cannot be changed safely; the message is one line and names the file."""


@dataclass(frozen=True)
class Paths:
    claude_json: str
    claude_settings: str
    codex_config: str
    codex_hooks: str
    #: the bli-memory skill's SKILL.md in each host's personal skills folder (`install.skill`)
    claude_skill: str = ""
    codex_skill: str = ""
    #: hooks.json as Codex names it in its hook-state keys (`codex_state_folder`)
    codex_state_hooks: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Paths:
        home = home_dir(env)
        claude_dir = env.get("CLAUDE_CONFIG_DIR")
        codex_dir = env.get("CODEX_HOME") or os.path.join(home, ".codex")
        if claude_dir:
            claude_json = os.path.join(claude_dir, ".claude.json")
            claude_settings = os.path.join(claude_dir, "settings.json")
        else:
            claude_json = os.path.join(home, ".claude.json")
            claude_settings = os.path.join(home, ".claude", "settings.json")
        return cls(
            claude_json=claude_json,
            claude_settings=claude_settings,
            codex_config=os.path.join(codex_dir, "config.toml"),
            codex_hooks=os.path.join(codex_dir, "hooks.json"),
            claude_skill=os.path.join(claude_dir or os.path.join(home, ".claude"), *SKILL_PATH),
            codex_skill=os.path.join(home, ".agents", *SKILL_PATH),
            codex_state_hooks=os.path.join(codex_state_folder(env), "hooks.json"),
        )


def codex_state_folder(env: Mapping[str, str]) -> str:
    """The folder Codex keys its hook state by: $CODEX_HOME resolved, else $HOME/.codex as written
    (Codex resolves the one and not the other)."""
    codex_home = env.get("CODEX_HOME")
    if codex_home:
        return os.path.realpath(codex_home)
    return os.path.normpath(os.path.join(os.path.abspath(home_dir(env)), ".codex"))


@dataclass
class FileChange:
    """One file's plan: its text now (None: absent) and after (None: delete it)."""

    path: str
    old_text: str | None
    new_text: str | None
    actions: list[str] = field(default_factory=list)
    #: back the file up before its first change (a host's config); False for a file that is all ours
    backup: bool = True
    #: after deleting the file, remove its folder too if nothing else is left in it
    prune_dir: bool = False
    #: False for a file of ours in a folder of ours (the skill): neither may be a symbolic link, so a
    #: link planted there can never make install write, or uninstall delete, anything outside
    follow_links: bool = True

    @property
    def changed(self) -> bool:
        return self.old_text != self.new_text


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise InstallError(f"{show_path(path)} is not UTF-8 text; left it untouched") from None
    except OSError as exc:
        raise InstallError(f"cannot read {show_path(path)}: {exc.strerror}") from None


def linked_part(path: str) -> str | None:
    """`path` or its folder, whichever is a symbolic link (the file first), or None when neither is."""
    for part in (path, os.path.dirname(path)):
        if os.path.islink(part):
            return part
    return None


def show_path(path: str) -> str:
    """The path as the person would type it: `~/...` under HOME."""
    home = home_dir()
    if home and home != "/" and (path == home or path.startswith(home.rstrip("/") + "/")):
        return "~" + path[len(home.rstrip("/")) :]
    return path


def write_atomic(path: str, text: str) -> None:
    """Replace the file in one rename, keeping its mode; a symlink's target is what gets written."""
    import tempfile  # ~4 ms, paid only by a run that writes (not --dry-run, not "already registered")

    real = os.path.realpath(path)
    folder = os.path.dirname(real)
    os.makedirs(folder, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    descriptor, temp = tempfile.mkstemp(prefix=f".{os.path.basename(real)}.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(descriptor, mode)
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def backup_path(path: str) -> str:
    return os.path.realpath(path) + BACKUP_SUFFIX


def apply_change(change: FileChange) -> str | None:
    """Write one planned change; returns the backup made, if any.

    The file is read again just before writing: a host that rewrote it since we planned (Claude Code
    rewrites ~/.claude.json while it runs) must not lose its write to ours.
    """
    if not change.follow_links:
        link = linked_part(change.path)
        if link is not None:
            raise InstallError(
                f"{show_path(link)} became a symbolic link while installing; nothing written to it"
            )
    if read_text(change.path) != change.old_text:
        raise InstallError(
            f"{show_path(change.path)} changed while installing; nothing written to it; run again"
        )
    made = None
    backup = backup_path(change.path)
    # a file planned for deletion is one install created (it has no backup): nothing to keep
    if (
        change.backup
        and change.old_text is not None
        and change.new_text is not None
        and not os.path.exists(backup)
    ):
        write_atomic(backup, change.old_text)
        os.chmod(backup, stat.S_IMODE(os.stat(os.path.realpath(change.path)).st_mode))
        made = backup
    if change.new_text is None:
        target = os.path.realpath(change.path) if change.follow_links else change.path
        os.unlink(target)
        if change.prune_dir:
            with contextlib.suppress(OSError):  # not empty: someone else's files stay, and so does it
                os.rmdir(os.path.dirname(target))
    else:
        write_atomic(change.path, change.new_text)
    return made

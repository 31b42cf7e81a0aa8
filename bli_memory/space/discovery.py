"""Git's repository discovery, read from git's own files: which repository holds a folder."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

#: a config, HEAD or .git file larger than this is not one we should parse on a hook.
GIT_FILE_MAX_BYTES = 1024 * 1024


class GitRepository:
    """Where discovery found a repository: its work tree (None when bare), git dir and common dir."""

    __slots__ = ("common_dir", "git_dir", "top_level")

    def __init__(self, top_level: str | None, git_dir: str, common_dir: str) -> None:
        self.top_level = top_level
        self.git_dir = git_dir
        self.common_dir = common_dir

    @property
    def is_linked_worktree(self) -> bool:
        return self.git_dir != self.common_dir

    @property
    def main_root(self) -> str:
        """The main repository's root, shared by every worktree (git worktree list's first entry)."""
        if self.top_level is not None and not self.is_linked_worktree:
            return self.top_level
        if self.common_dir.endswith("/.git"):
            return self.common_dir[: -len("/.git")] or "/"
        return self.common_dir

    def __repr__(self) -> str:
        return f"GitRepository({self.top_level!r}, {self.git_dir!r}, {self.common_dir!r})"


def read_small(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(GIT_FILE_MAX_BYTES + 1)
    except OSError:
        return None
    if len(data) > GIT_FILE_MAX_BYTES:
        return None
    return data.decode("utf-8", "replace")


def read_regular_small(path: str) -> str | None:
    """`read_small` for a file named by a person's environment or config (GIT_CONFIG_GLOBAL, an
    include): None unless it is a regular file. Opened non-blocking and checked on the descriptor,
    so a FIFO or a device answers None at once instead of holding the reader until a writer comes
    (and a swap between a check and the open cannot get past it)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                return None
            data = handle.read(GIT_FILE_MAX_BYTES + 1)
        except OSError:
            return None
    if len(data) > GIT_FILE_MAX_BYTES:
        return None
    return data.decode("utf-8", "replace")


def _common_dir(git_dir: str) -> str:
    text = read_small(os.path.join(git_dir, "commondir"))
    if text is None or not text.strip():
        return git_dir
    return os.path.realpath(os.path.join(git_dir, text.strip()))


def _is_git_directory(path: str) -> bool:
    """git's is_git_directory(): a HEAD here, objects/ and refs/ in the common dir."""
    if not os.path.lexists(os.path.join(path, "HEAD")):
        return False
    common = _common_dir(path)
    return os.path.isdir(os.path.join(common, "objects")) and os.path.isdir(os.path.join(common, "refs"))


class _BrokenGitFile(Exception):
    """A `.git` file git cannot follow: discovery stops there, as git's does."""


def _repository_at(folder: str) -> GitRepository | None:
    dot_git = os.path.join(folder, ".git")
    if os.path.isfile(dot_git):
        text = read_small(dot_git)
        if text is None or not text.startswith("gitdir:"):
            raise _BrokenGitFile(dot_git)
        target = os.path.realpath(os.path.join(folder, text[len("gitdir:") :].strip()))
        if not _is_git_directory(target):
            raise _BrokenGitFile(dot_git)
        return GitRepository(folder, target, _common_dir(target))
    if os.path.isdir(dot_git) and _is_git_directory(dot_git):
        git_dir = os.path.realpath(dot_git)
        return GitRepository(folder, git_dir, _common_dir(git_dir))
    if _is_git_directory(folder):
        # Inside a git dir: the `.git` of a work tree (its parent is the work tree), else a bare repo.
        top = os.path.dirname(folder) if os.path.basename(folder) == ".git" else None
        return GitRepository(top, folder, _common_dir(folder))
    return None


def truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


def _ceilings(env: Mapping[str, str]) -> set[str]:
    out: set[str] = set()
    for entry in (env.get("GIT_CEILING_DIRECTORIES") or "").split(":"):
        if os.path.isabs(entry):
            out.add(os.path.realpath(entry))
    return out


def find_repository(real_folder: str, env: Mapping[str, str]) -> GitRepository | None:
    """The repository holding ``real_folder`` (already a real path), as git's discovery finds it."""
    ceilings = _ceilings(env)
    across = truthy(env.get("GIT_DISCOVERY_ACROSS_FILESYSTEM"))
    try:
        device = os.stat(real_folder).st_dev
    except OSError:
        return None
    current = real_folder
    while True:
        try:
            repo = _repository_at(current)
        except _BrokenGitFile:
            return None
        if repo is not None:
            return repo
        parent = os.path.dirname(current)
        if parent == current or parent in ceilings:
            return None
        if not across:
            try:
                if os.stat(parent).st_dev != device:
                    return None
            except OSError:
                return None
        current = parent

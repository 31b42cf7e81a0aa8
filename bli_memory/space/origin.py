"""The origin remote's URL, as `git remote get-url origin` prints it, from git's config."""

from __future__ import annotations

from collections.abc import Mapping

from bli_memory.space.discovery import GitRepository
from bli_memory.space.gitconfig import SCOPE_LOCAL, SCOPE_WORKTREE, read_config

#: scopes whose remotes count as "configured in the repository" for `git remote get-url`.
REPO_SCOPES = frozenset({SCOPE_LOCAL, SCOPE_WORKTREE})


def origin_url(repo: GitRepository, env: Mapping[str, str]) -> str | None:
    """What `git remote get-url origin` prints in ``repo``; None when it has no origin.

    Raises GitConfigError where git itself would stop on a malformed config.
    """
    entries = read_config(repo, env)
    urls: list[str] = []
    configured_in_repo = False
    rewrites: dict[str, list[str]] = {}
    for entry in entries:
        if entry.section == "remote" and entry.subsection == "origin":
            configured_in_repo = configured_in_repo or entry.scope in REPO_SCOPES
            if entry.key == "url" and entry.value is not None:
                urls.append(entry.value)
        elif entry.section == "url" and entry.subsection is not None and entry.key == "insteadof":
            if entry.value is None:  # a bare `insteadOf` key is an error to git; skip it
                continue
            rewrites.setdefault(entry.subsection, []).append(entry.value)
    if not configured_in_repo:
        return None
    url = urls[0] if urls else "origin"
    return _apply_instead_of(url, rewrites)


def _apply_instead_of(url: str, rewrites: dict[str, list[str]]) -> str:
    """remote.c alias_url(): the longest matching insteadOf prefix wins, the first seen on a tie."""
    best_base: str | None = None
    best_length = 0
    for base, prefixes in rewrites.items():
        for prefix in prefixes:
            if len(prefix) > best_length and url.startswith(prefix):
                best_base, best_length = base, len(prefix)
    return url if best_base is None else best_base + url[best_length:]

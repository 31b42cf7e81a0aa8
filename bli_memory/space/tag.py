"""The tag: the name of the space a folder's memories land in, and how it was derived."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

from bli_memory.space.discovery import find_repository
from bli_memory.space.gitconfig import GitConfigError
from bli_memory.space.origin import origin_url
from bli_memory.space.remote import normalise_remote

# `typing` costs milliseconds cold; mypy honours a TYPE_CHECKING of any origin.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from bli_memory.settings import Settings

REPO_PREFIX = "repo_"
DIR_PREFIX = "dir_"
HASH_HEX_CHARS = 16
NAME_MAX_CHARS = 72
UNKNOWN_NAME = "unknown"


def _load_sha256() -> Callable[[bytes], str]:
    """sha256 hex digest without importing hashlib when possible (hashlib loads OpenSSL, ~6 ms cold)."""
    try:
        if sys.version_info >= (3, 12):
            from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
        else:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:  # a build without the built-in module
        from hashlib import sha256  # type: ignore[assignment,unused-ignore]

    def digest(data: bytes) -> str:
        result: str = sha256(data).hexdigest()
        return result

    return digest


_sha256_hex = _load_sha256()


KIND_REMOTE = "remote"  # hashed from the normalised origin remote
KIND_REPO_PATH = "repo-path"  # a repository without origin, or an isolated worktree: hashed from its root
KIND_FOLDER = "folder"  # not in a git repository: hashed from the folder
KIND_OVERRIDE = "override"  # BLI_MEMORY_CONTAINER_TAG


class Space:
    """A folder's tag and what it was computed from (``identity`` is the string that was hashed).

    ``identity`` never holds credentials: normalisation drops a URL's user:password and query.
    """

    __slots__ = ("identity", "kind", "tag")

    def __init__(self, tag: str, kind: str, identity: str | None) -> None:
        self.tag = tag
        self.kind = kind
        self.identity = identity

    def __repr__(self) -> str:
        return f"Space({self.tag!r}, {self.kind!r}, {self.identity!r})"


def space_of(folder: str, *, isolate_worktrees: bool = False, env: Mapping[str, str] | None = None) -> Space:
    """The space of ``folder`` and how it was derived; raises NotADirectoryError for a non-directory."""
    env = os.environ if env is None else env
    if not os.path.isdir(folder):
        raise NotADirectoryError(f"not a directory: {folder}")
    real = os.path.realpath(folder)
    repo = find_repository(real, env)
    remote: str | None = None
    if repo is not None:
        try:
            remote = origin_url(repo, env)
        except GitConfigError:
            repo = None  # git stops on a malformed config: to the vendor this was not a repository
    if repo is None:
        return _space(DIR_PREFIX, os.path.basename(real), KIND_FOLDER, "path:" + real)
    own_root = repo.top_level or repo.main_root
    if remote is None:
        root = own_root if isolate_worktrees else repo.main_root
        return _space(REPO_PREFIX, os.path.basename(root), KIND_REPO_PATH, "path:" + root)
    name = remote_name(remote, fallback=os.path.basename(repo.main_root))
    if isolate_worktrees:
        return Space(make_tag(REPO_PREFIX, name, "path:" + own_root), KIND_REPO_PATH, "path:" + own_root)
    identity = normalise_remote(remote, base_dir=repo.main_root)
    return Space(make_tag(REPO_PREFIX, name, identity), KIND_REMOTE, identity)


def container_tag(
    folder: str, *, isolate_worktrees: bool = False, env: Mapping[str, str] | None = None
) -> str:
    """The space tag of ``folder``; raises NotADirectoryError when it is not a directory."""
    return space_of(folder, isolate_worktrees=isolate_worktrees, env=env).tag


def resolve_space_of(settings: Settings, cwd: str, env: Mapping[str, str] | None = None) -> Space:
    """Like resolve_space, with how the tag was derived (for `space --json` and `status`)."""
    if settings.container_tag:
        return Space(_masked_override(settings.container_tag), KIND_OVERRIDE, None)
    try:
        return space_of(cwd, isolate_worktrees=settings.isolate_worktrees, env=env)
    except OSError:
        path = os.path.abspath(cwd)
        return _space(DIR_PREFIX, os.path.basename(path), KIND_FOLDER, "path:" + path)


def resolve_space(settings: Settings, cwd: str) -> str:
    """The space for a hook or a command run in ``cwd``: BLI_MEMORY_CONTAINER_TAG wins.

    Never raises: a vanished ``cwd`` still gets the ``dir_`` tag of its path, so a hook stays quiet.
    """
    return resolve_space_of(settings, cwd).tag


def _masked_override(tag: str) -> str:
    """A space named by BLI_MEMORY_CONTAINER_TAG, its secrets masked as everything sent to the door
    is (a token pasted there by mistake would otherwise travel with every call). The pre-scan
    (never "no" for a text the redactor would change) spares a hook the redactor's import for a tag
    of plain words."""
    from bli_memory.secret_scan import might_hold_secret

    if not might_hold_secret(tag):
        return tag
    from bli_memory.redact import redact

    return redact(tag).text


def _space(prefix: str, raw_name: str, kind: str, identity: str) -> Space:
    return Space(make_tag(prefix, sanitise_name(raw_name), identity), kind, identity)


def make_tag(prefix: str, name: str, identity: str) -> str:
    """``<prefix><name>__`` and the first 16 hex digits of the sha256 of ``identity``."""
    return f"{prefix}{name}__{_sha256_hex(identity.encode('utf-8'))[:HASH_HEX_CHARS]}"


def sanitise_name(raw: str) -> str:
    """Lowercase; every run outside [a-z0-9] becomes one `_`; trimmed of `_`; at most 72 characters."""
    out: list[str] = []
    for char in raw.lower():
        if ("a" <= char <= "z") or ("0" <= char <= "9"):
            out.append(char)
        elif not out or out[-1] != "_":
            out.append("_")
    name = "".join(out).strip("_")[:NAME_MAX_CHARS]
    return name or UNKNOWN_NAME


def remote_name(remote: str, *, fallback: str) -> str:
    """The last `/` or `:` segment of the raw remote without trailing slashes and `.git`, sanitised."""
    raw = remote.rstrip("/")
    if raw.lower().endswith(".git"):
        raw = raw[: -len(".git")]
    segment = raw[max(raw.rfind("/"), raw.rfind(":")) + 1 :]
    return sanitise_name(segment or fallback)

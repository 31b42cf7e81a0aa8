"""The space (container tag) a folder's memories land in.

``repo_<name>__<sha256(normalised origin remote)[0:16]>`` for a git repository, computed exactly as the
vendor's Claude Code plugin did so a repository keeps the memories it already has (DESIGN.md, "The
space a memory lands in"); ``path:`` + the main repository root when there is no ``origin``; and
``dir_<name>__…`` for a folder outside git.

Asking git or reading its files
-------------------------------
This runs on every hook, so it reads git's files itself instead of spawning ``git``. Measured with
``scripts/bench_space.py`` (git 2.39, Python 3.11, a linked worktree whose origin comes through a
``url.<base>.insteadOf`` rewrite; medians of 300 in-process calls and 40 interleaved fresh runs, on a
2-core container that other test suites kept at load ~9, which inflates every wall time)::

    way                                    in-process   fresh: wall   fresh: CPU
    read the files (bli_memory.space)         0.98 ms      237.5 ms      68.0 ms
    ask git (rev-parse + remote get-url)     21.2  ms      317.8 ms      89.0 ms
    python -c pass (same interpreter)            -         224.8 ms      64.7 ms

CPU time (the interpreter plus every git it waited for) is the column that holds still under load:
reading adds ~3 ms of CPU to an empty interpreter, asking git ~24 ms (two spawns of git, plus
``subprocess``, ~11 ms cold and banned on the hook path). Module import is ~2 ms with bytecode
cached; sha256 comes from the built-in ``_sha2`` / ``_sha256`` module because ``hashlib`` loads
OpenSSL (~6 ms cold). So reading wins by a wide margin — and is allowed only because it gives git's
answer: ``tests/test_space.py`` checks it against ``git rev-parse`` and ``git remote get-url origin``
on real repositories for every case below. No cache is needed at ~1 ms per answer.

What "git's answer" covers here, from git's own setup.c / config.c / remote.c:

- discovery walks up from the folder's real path: a ``.git`` directory, a ``.git`` file
  (``gitdir: …``, linked worktrees and submodules), or a bare repository; it stops at a file-system
  boundary unless ``GIT_DISCOVERY_ACROSS_FILESYSTEM`` and at ``GIT_CEILING_DIRECTORIES``; a broken
  ``.git`` file stops it (git dies there too).
- a linked worktree's ``commondir`` leads to the main repository: its config, and its root
  (``git worktree list``'s first entry: the common dir without ``/.git``).
- config is read in git's order — system (``GIT_CONFIG_SYSTEM`` or ``/etc/gitconfig``, skipped with
  ``GIT_CONFIG_NOSYSTEM``), global (``GIT_CONFIG_GLOBAL``, else ``$XDG_CONFIG_HOME/git/config`` then
  ``~/.gitconfig``), the repository's ``config``, ``config.worktree`` when
  ``extensions.worktreeConfig`` is on, then ``GIT_CONFIG_PARAMETERS`` / ``GIT_CONFIG_COUNT`` — with
  git's value syntax (quotes, escapes, comments, continuations) and ``include.path`` /
  ``includeIf.gitdir[/i]:|onbranch:|hasconfig:remote.*.url:`` includes (depth 10).
- ``remote.origin.url``: the first value, and only when the remote is configured in the repository
  itself (git's ``get-url`` says "No such remote" otherwise); a remote with no url is its own name.
- ``url.<base>.insteadOf``: the longest matching prefix wins, the first one seen on a tie.

Not modelled, and why it is acceptable: a system config outside ``/etc/gitconfig`` (git's build
prefix, e.g. Homebrew's ``/opt/homebrew/etc/gitconfig``); ``GIT_DIR`` / ``GIT_WORK_TREE`` in the
environment (the space is that of the folder asked about); ``core.worktree``; ``safe.directory``
(git refuses a repository owned by someone else, we read it anyway — a better answer, not a
different space). A malformed or unreadable config makes every git command fail, so the folder
counts as outside git, as it did for the vendor's plugin.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping

# `typing` costs milliseconds cold; mypy honours a TYPE_CHECKING of any origin.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from bli_memory.settings import Settings

REPO_PREFIX = "repo_"
DIR_PREFIX = "dir_"
HASH_HEX_CHARS = 16
NAME_MAX_CHARS = 72
UNKNOWN_NAME = "unknown"
#: git's own limit on nested config includes.
INCLUDE_MAX_DEPTH = 10
#: a config, HEAD or .git file larger than this is not one we should parse on a hook.
GIT_FILE_MAX_BYTES = 1024 * 1024
#: WHATWG URL default ports; a non-special scheme such as ssh:// has none, so ssh's :22 stays.
WHATWG_DEFAULT_PORTS: dict[str, int] = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
WHATWG_SPECIAL_SCHEMES = frozenset({*WHATWG_DEFAULT_PORTS, "file"})
#: characters the WHATWG path percent-encode set escapes (besides controls and non-ASCII).
WHATWG_PATH_ESCAPES = frozenset(' "<>`{}')

#: what git's isspace() accepts (ASCII only: a no-break space is part of a value to git).
GIT_SPACE = frozenset(" \t\n\v\f\r")

SCOPE_SYSTEM = "system"
SCOPE_GLOBAL = "global"
SCOPE_LOCAL = "local"
SCOPE_WORKTREE = "worktree"
SCOPE_COMMAND = "command"
#: scopes whose remotes count as "configured in the repository" for `git remote get-url`.
REPO_SCOPES = frozenset({SCOPE_LOCAL, SCOPE_WORKTREE})


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


class GitConfigError(Exception):
    """A config file git itself would refuse to parse."""


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


# ---------------------------------------------------------------------------------------------------
# The tag


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
        return Space(_tag(REPO_PREFIX, name, "path:" + own_root), KIND_REPO_PATH, "path:" + own_root)
    identity = normalise_remote(remote, base_dir=repo.main_root)
    return Space(_tag(REPO_PREFIX, name, identity), KIND_REMOTE, identity)


def container_tag(
    folder: str, *, isolate_worktrees: bool = False, env: Mapping[str, str] | None = None
) -> str:
    """The space (container tag) of ``folder``; raises NotADirectoryError when it is not a directory."""
    return space_of(folder, isolate_worktrees=isolate_worktrees, env=env).tag


def resolve_space_of(settings: Settings, cwd: str, env: Mapping[str, str] | None = None) -> Space:
    """Like resolve_space, with how the tag was derived (for `space --json` and `status`)."""
    if settings.container_tag:
        return Space(settings.container_tag, KIND_OVERRIDE, None)
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


def _space(prefix: str, raw_name: str, kind: str, identity: str) -> Space:
    return Space(_tag(prefix, _sanitise_name(raw_name), identity), kind, identity)


def _tag(prefix: str, name: str, identity: str) -> str:
    return f"{prefix}{name}__{_sha256_hex(identity.encode('utf-8'))[:HASH_HEX_CHARS]}"


def _sanitise_name(raw: str) -> str:
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
    return _sanitise_name(segment or fallback)


# ---------------------------------------------------------------------------------------------------
# Remote normalisation


def normalise_remote(url: str, *, base_dir: str) -> str:
    """The string whose sha256 names a repository's space (DESIGN.md, "Normalisation").

    ``base_dir`` anchors a relative local path (git resolves it from the top of the work tree; we use
    the main repository's root so every worktree agrees).
    """
    core = _scheme_url_core(url)
    if core is None:
        if _is_scp_like(url):
            host, _, path = url.partition(":")
            core = host.rpartition("@")[2].lower() + "/" + path
        else:
            core = "file:" + os.path.normpath(os.path.join(base_dir, url))
    for mark in ("?", "#"):
        cut = core.find(mark)
        if cut >= 0:
            core = core[:cut]
    core = core.rstrip("/")
    if core.lower().endswith(".git"):
        core = core[: -len(".git")]
    while "//" in core:
        core = core.replace("//", "/")
    return core.lower()


def _is_scheme(text: str) -> bool:
    if not text or not text[0].isascii() or not text[0].isalpha():
        return False
    return all(char.isascii() and (char.isalnum() or char in "+-.") for char in text)


def _is_scp_like(url: str) -> bool:
    """git's rule: a colon before any slash is `[user@]host:path` (connect.c, not on Windows drives)."""
    colon = url.find(":")
    slash = url.find("/")
    return colon > 0 and (slash < 0 or colon < slash)


def _scheme_url_core(url: str) -> str | None:
    """``host[:port]/path`` of a ``scheme://`` URL the way a WHATWG parser sees it; None otherwise."""
    mark = url.find("://")
    if mark <= 0 or not _is_scheme(url[:mark]):
        return None
    scheme = url[:mark].lower()
    rest = url[mark + 3 :]
    if scheme in WHATWG_SPECIAL_SCHEMES:
        rest = rest.replace("\\", "/")
    end = len(rest)
    for stop in "/?#":
        found = rest.find(stop)
        if 0 <= found < end:
            end = found
    authority, tail = rest[:end], rest[end:]
    if scheme == "file":
        return "file:" + _percent_decode(_remove_dot_segments(_split_path_tail(tail)[0]))
    host_port = authority.rpartition("@")[2]
    host, port = host_port, ""
    bracket = host_port.rfind("]")
    colon = host_port.rfind(":")
    if colon > bracket:
        host, port = host_port[:colon], host_port[colon + 1 :]
    if not host and scheme in WHATWG_SPECIAL_SCHEMES:
        return None
    port_text = ""
    if port:
        if not (port.isascii() and port.isdigit()) or int(port) > 65535:
            return None
        if int(port) != WHATWG_DEFAULT_PORTS.get(scheme):
            port_text = f":{int(port)}"
    path, query = _split_path_tail(tail)
    path = _remove_dot_segments(_percent_encode_path(path))
    return host.lower() + port_text + "/" + path.lstrip("/") + query


def _split_path_tail(tail: str) -> tuple[str, str]:
    for index, char in enumerate(tail):
        if char in "?#":
            return tail[:index], tail[index:]
    return tail, ""


def _percent_encode_path(path: str) -> str:
    out: list[str] = []
    for char in path:
        if char in WHATWG_PATH_ESCAPES or ord(char) < 0x21 or ord(char) > 0x7E:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
        else:
            out.append(char)
    return "".join(out)


def _percent_decode(text: str) -> str:
    if "%" not in text:
        return text
    raw = bytearray()
    index = 0
    while index < len(text):
        chunk = text[index : index + 3]
        if len(chunk) == 3 and chunk[0] == "%" and all(c in "0123456789abcdefABCDEF" for c in chunk[1:]):
            raw.append(int(chunk[1:], 16))
            index += 3
        else:
            raw.extend(text[index].encode("utf-8"))
            index += 1
    return raw.decode("utf-8", "replace")


def _remove_dot_segments(path: str) -> str:
    """WHATWG drops `.` and resolves `..` path segments (also spelled %2e)."""
    if "." not in path:
        return path
    segments: list[str] = []
    parts = path.split("/")
    for index, part in enumerate(parts):
        lowered = part.lower()
        last = index == len(parts) - 1
        if lowered in ("..", ".%2e", "%2e.", "%2e%2e"):
            if len(segments) > 1:
                segments.pop()
            if last:
                segments.append("")
        elif lowered in (".", "%2e"):
            if last:
                segments.append("")
        else:
            segments.append(part)
    return "/".join(segments)


# ---------------------------------------------------------------------------------------------------
# Discovery


def _read_small(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(GIT_FILE_MAX_BYTES + 1)
    except OSError:
        return None
    if len(data) > GIT_FILE_MAX_BYTES:
        return None
    return data.decode("utf-8", "replace")


def _common_dir(git_dir: str) -> str:
    text = _read_small(os.path.join(git_dir, "commondir"))
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
        text = _read_small(dot_git)
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


def _truthy(value: str | None) -> bool:
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
    across = _truthy(env.get("GIT_DISCOVERY_ACROSS_FILESYSTEM"))
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


# ---------------------------------------------------------------------------------------------------
# Config


class ConfigEntry:
    """One `section.subsection.key = value` line, with the scope of the file it came from."""

    __slots__ = ("key", "scope", "section", "subsection", "value")

    def __init__(self, section: str, subsection: str | None, key: str, value: str | None, scope: str) -> None:
        self.section = section
        self.subsection = subsection
        self.key = key
        self.value = value
        self.scope = scope


class _ConfigReader:
    """git's config.c parser and include rules, over the files of one repository."""

    def __init__(self, repo: GitRepository, env: Mapping[str, str], remote_urls: list[str] | None) -> None:
        self.repo = repo
        self.env = env
        # None while collecting remote urls for `hasconfig:` (those includes then count as false).
        self.remote_urls = remote_urls
        self.entries: list[ConfigEntry] = []

    def home(self) -> str:
        return self.env.get("HOME") or os.path.expanduser("~")

    def read_all(self) -> list[ConfigEntry]:
        env = self.env
        if not _truthy(env.get("GIT_CONFIG_NOSYSTEM")):
            self.read_file(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig", SCOPE_SYSTEM, 0)
        if "GIT_CONFIG_GLOBAL" in env:
            if env["GIT_CONFIG_GLOBAL"]:
                self.read_file(env["GIT_CONFIG_GLOBAL"], SCOPE_GLOBAL, 0)
        else:
            xdg = env.get("XDG_CONFIG_HOME") or os.path.join(self.home(), ".config")
            self.read_file(os.path.join(xdg, "git", "config"), SCOPE_GLOBAL, 0)
            self.read_file(os.path.join(self.home(), ".gitconfig"), SCOPE_GLOBAL, 0)
        start = len(self.entries)
        self.read_file(os.path.join(self.repo.common_dir, "config"), SCOPE_LOCAL, 0)
        local = self.entries[start:]
        if any(
            e.section == "extensions"
            and e.subsection is None
            and e.key == "worktreeconfig"
            and _bool(e.value)
            for e in local
        ):
            self.read_file(os.path.join(self.repo.git_dir, "config.worktree"), SCOPE_WORKTREE, 0)
        for key, value in _command_line_config(env):
            self.add_dotted(key, value, SCOPE_COMMAND, None, 0)
        return self.entries

    def read_file(self, path: str, scope: str, depth: int) -> None:
        if depth > INCLUDE_MAX_DEPTH:
            raise GitConfigError(f"exceeded maximum include depth ({INCLUDE_MAX_DEPTH})")
        if not os.path.exists(path):
            return
        text = _read_small(path)
        if text is None:
            if depth == 0 and not os.access(path, os.R_OK):
                return  # git skips an unreadable system or user config (ACCESS_EACCES_OK)
            raise GitConfigError(f"cannot read {path}")
        for section, subsection, key, value in _parse_config(text, path):
            self.add(ConfigEntry(section, subsection, key, value, scope), path, depth)

    def add_dotted(self, dotted: str, value: str | None, scope: str, path: str | None, depth: int) -> None:
        first, last = dotted.find("."), dotted.rfind(".")
        if first <= 0 or last == len(dotted) - 1:
            raise GitConfigError(f"bad config key {dotted!r}")
        subsection = dotted[first + 1 : last] if last > first else None
        entry = ConfigEntry(dotted[:first].lower(), subsection, dotted[last + 1 :].lower(), value, scope)
        self.add(entry, path, depth)

    def add(self, entry: ConfigEntry, path: str | None, depth: int) -> None:
        self.entries.append(entry)
        if entry.key != "path" or entry.value is None:
            return
        plain = entry.section == "include" and entry.subsection is None
        conditional = entry.section == "includeif" and entry.subsection is not None
        if plain or (conditional and self.condition_holds(entry.subsection or "", path)):
            self.include(entry.value, entry.scope, path, depth)

    def include(self, target: str, scope: str, path: str | None, depth: int) -> None:
        if target.startswith("~/"):
            target = os.path.join(self.home(), target[2:])
        if not os.path.isabs(target):
            if path is None:
                raise GitConfigError("relative config includes must come from files")
            target = os.path.join(os.path.dirname(path), target)
        self.read_file(target, scope, depth + 1)

    def condition_holds(self, condition: str, path: str | None) -> bool:
        for prefix, casefold in (("gitdir:", False), ("gitdir/i:", True)):
            if condition.startswith(prefix):
                return self.gitdir_matches(condition[len(prefix) :], path, casefold)
        if condition.startswith("onbranch:"):
            branch = _current_branch(self.repo.git_dir)
            pattern = condition[len("onbranch:") :]
            if pattern.endswith("/"):
                pattern += "**"
            return branch is not None and _wildmatch(pattern, branch, casefold=False)
        if condition.startswith("hasconfig:remote.*.url:"):
            pattern = condition[len("hasconfig:remote.*.url:") :]
            urls = self.remote_urls or []
            return any(_wildmatch(pattern, url, casefold=False) for url in urls)
        return False

    def gitdir_matches(self, pattern: str, path: str | None, casefold: bool) -> bool:
        if pattern.startswith("~/"):
            pattern = os.path.join(self.home(), pattern[2:])
        elif pattern.startswith("./"):
            if path is None:
                raise GitConfigError("relative config include conditionals must come from files")
            pattern = os.path.join(os.path.dirname(os.path.realpath(path)), pattern[2:])
        elif not os.path.isabs(pattern):
            pattern = "**/" + pattern
        if pattern.endswith("/"):
            pattern += "**"
        git_dir = self.repo.git_dir
        return _wildmatch(pattern, os.path.realpath(git_dir), casefold=casefold) or _wildmatch(
            pattern, os.path.abspath(git_dir), casefold=casefold
        )


def _bool(value: str | None) -> bool:
    return value is None or _truthy(value)


def _current_branch(git_dir: str) -> str | None:
    text = _read_small(os.path.join(git_dir, "HEAD"))
    if text is None or not text.startswith("ref:"):
        return None
    ref = text[len("ref:") :].strip()
    return ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else None


def _wildmatch(pattern: str, text: str, *, casefold: bool) -> bool:
    """git's wildmatch with WM_PATHNAME: `*`, `?`, `[...]` stay within a segment, `**/` and `/**` span."""
    import re  # only configs with includeIf conditions get here

    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "*":
            double = pattern.startswith("**", index)
            before_ok = index == 0 or pattern[index - 1] == "/"
            after = index + 2
            if double and before_ok and (after == len(pattern) or pattern[after] == "/"):
                if after == len(pattern):
                    out.append(".*")
                    index = after
                else:
                    out.append("(?:.*/)?")
                    index = after + 1
                continue
            while index < len(pattern) and pattern[index] == "*":
                index += 1
            out.append("[^/]*")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            close = pattern.find("]", index + 2)
            if close < 0:
                out.append(re.escape(char))
            else:
                body = pattern[index + 1 : close]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                body = body.replace("\\", "\\\\")
                out.append(f"[^/{body}]" if negate else f"(?!/)[{body}]")
                index = close
        elif char == "\\" and index + 1 < len(pattern):
            index += 1
            out.append(re.escape(pattern[index]))
        else:
            out.append(re.escape(char))
        index += 1
    flags = re.IGNORECASE if casefold else 0
    return re.fullmatch("".join(out), text, flags | re.DOTALL) is not None


def _command_line_config(env: Mapping[str, str]) -> Iterator[tuple[str, str | None]]:
    """`git -c` (GIT_CONFIG_PARAMETERS) and GIT_CONFIG_COUNT/KEY_n/VALUE_n pairs, in git's order."""
    params = env.get("GIT_CONFIG_PARAMETERS")
    if params:
        yield from _parse_config_parameters(params)
    count_text = env.get("GIT_CONFIG_COUNT")
    if count_text:
        if not count_text.isdigit():
            raise GitConfigError("bogus GIT_CONFIG_COUNT")
        for index in range(int(count_text)):
            key = env.get(f"GIT_CONFIG_KEY_{index}")
            value = env.get(f"GIT_CONFIG_VALUE_{index}")
            if key is None or value is None:
                raise GitConfigError(f"missing config key or value {index}")
            yield key, value


def _parse_config_parameters(text: str) -> Iterator[tuple[str, str | None]]:
    """Single-quoted words: `'key'='value'` (new form) or `'key=value'` (old form), space-separated."""
    index = 0

    def quoted() -> str:
        nonlocal index
        if index >= len(text) or text[index] != "'":
            raise GitConfigError("bogus format in GIT_CONFIG_PARAMETERS")
        out: list[str] = []
        index += 1
        while True:
            close = text.find("'", index)
            if close < 0:
                raise GitConfigError("bogus format in GIT_CONFIG_PARAMETERS")
            out.append(text[index:close])
            index = close + 1
            if text.startswith("\\''", index):  # '\'' is an escaped quote inside a word
                out.append("'")
                index += 3
            else:
                return "".join(out)

    while True:
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            return
        key = quoted()
        if index < len(text) and text[index] == "=":
            index += 1
            value: str | None = quoted() if index < len(text) and text[index] == "'" else None
            yield key, value
        else:
            name, sep, value_text = key.partition("=")
            yield name, (value_text if sep else None)


def _parse_config(text: str, path: str) -> Iterator[tuple[str, str | None, str, str | None]]:
    """(section, subsection, key, value) of each variable, with config.c's syntax and escapes."""
    text = text.replace("\r\n", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    length = len(text)
    index = 0
    section: str | None = None
    subsection: str | None = None

    def fail(what: str) -> GitConfigError:
        line = text.count("\n", 0, index) + 1
        return GitConfigError(f"bad config line {line} in {path}: {what}")

    while index < length:
        char = text[index]
        if char in GIT_SPACE:
            index += 1
            continue
        if char in "#;":
            end = text.find("\n", index)
            index = length if end < 0 else end
            continue
        if char == "[":
            index += 1
            name: list[str] = []
            subsection = None
            while True:
                if index >= length:
                    raise fail("unterminated section header")
                char = text[index]
                index += 1
                if char == "]":
                    break
                if char in GIT_SPACE:
                    while index < length and text[index] in " \t":
                        index += 1
                    if index >= length or text[index] != '"':
                        raise fail("bad section header")
                    index += 1
                    sub: list[str] = []
                    while True:
                        if index >= length or text[index] == "\n":
                            raise fail("unterminated subsection")
                        char = text[index]
                        index += 1
                        if char == '"':
                            break
                        if char == "\\":
                            if index >= length or text[index] == "\n":
                                raise fail("unterminated subsection")
                            char = text[index]
                            index += 1
                        sub.append(char)
                    if index >= length or text[index] != "]":
                        raise fail("bad section header")
                    index += 1
                    subsection = "".join(sub)
                    break
                if not (char.isascii() and (char.isalnum() or char in "-.")):
                    raise fail("bad section name")
                name.append(char.lower())
            full = "".join(name)
            if subsection is None and "." in full:  # deprecated [section.subsection]
                full, _, subsection = full.partition(".")
            section = full
            continue
        if not (char.isascii() and char.isalpha()):
            raise fail("bad variable name")
        start = index
        while index < length and text[index].isascii() and (text[index].isalnum() or text[index] == "-"):
            index += 1
        key = text[start:index].lower()
        while index < length and text[index] in " \t":
            index += 1
        value: str | None = None
        if index < length and text[index] != "\n":
            if text[index] != "=":
                raise fail("bad variable line")
            index, value = _parse_value(text, index + 1, fail)
        if section is None:
            raise fail("variable outside a section")
        yield section, subsection, key, value


#: a value with none of these on its line needs no character-by-character parse.
_VALUE_SPECIALS = frozenset('"\\;#')
_SPACES_TO_BLANK = str.maketrans("\t\v\f\r", "    ")


def _parse_value(text: str, index: int, fail: Callable[[str], GitConfigError]) -> tuple[int, str]:
    end = text.find("\n", index)
    end = len(text) if end < 0 else end
    line = text[index:end]
    if _VALUE_SPECIALS.isdisjoint(line):  # the common case: git keeps inner blanks, one space each
        return end + 1, line.strip(" \t\v\f\r").translate(_SPACES_TO_BLANK)
    out: list[str] = []
    quote = comment = False
    spaces = 0
    length = len(text)
    while True:
        if index >= length:
            if quote:
                raise fail("unterminated quote")
            return index, "".join(out)
        char = text[index]
        index += 1
        if char == "\n":
            if quote:
                raise fail("unterminated quote")
            return index, "".join(out)
        if comment:
            continue
        if char in GIT_SPACE and not quote:
            if out:
                spaces += 1
            continue
        if not quote and char in ";#":
            comment = True
            continue
        out.extend(" " * spaces)
        spaces = 0
        if char == "\\":
            if index >= length:
                raise fail("bad escape")
            char = text[index]
            index += 1
            escapes = {"\n": "", "t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}
            if char not in escapes:
                raise fail("bad escape")
            out.append(escapes[char])
            continue
        if char == '"':
            quote = not quote
            continue
        out.append(char)


# ---------------------------------------------------------------------------------------------------
# The origin remote


def read_config(repo: GitRepository, env: Mapping[str, str]) -> list[ConfigEntry]:
    """Every config entry git would see in ``repo``, includes expanded; GitConfigError when git would fail."""
    first = _ConfigReader(repo, env, None).read_all()
    if not any(e.section == "includeif" and (e.subsection or "").startswith("hasconfig:") for e in first):
        return first
    urls = [e.value for e in first if e.section == "remote" and e.key == "url" and e.value is not None]
    return _ConfigReader(repo, env, urls).read_all()


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

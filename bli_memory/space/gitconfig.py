"""Git's config as git reads it: file order, syntax and escapes, and `include` / `includeIf` rules."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping

from bli_memory.paths import home_dir
from bli_memory.space.discovery import GitRepository, read_regular_small, read_small, truthy

#: git's own limit on nested config includes.
INCLUDE_MAX_DEPTH = 10

#: what git's isspace() accepts (ASCII only: a no-break space is part of a value to git).
GIT_SPACE = frozenset(" \t\n\v\f\r")

SCOPE_SYSTEM = "system"
SCOPE_GLOBAL = "global"
SCOPE_LOCAL = "local"
SCOPE_WORKTREE = "worktree"
SCOPE_COMMAND = "command"


class GitConfigError(Exception):
    """A config file git itself would refuse to parse."""


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
        return home_dir(self.env)

    def read_all(self) -> list[ConfigEntry]:
        env = self.env
        if not truthy(env.get("GIT_CONFIG_NOSYSTEM")):
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
        text = read_regular_small(path)
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
    return value is None or truthy(value)


def _current_branch(git_dir: str) -> str | None:
    text = read_small(os.path.join(git_dir, "HEAD"))
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


def read_config(repo: GitRepository, env: Mapping[str, str]) -> list[ConfigEntry]:
    """Every config entry git would see in ``repo``, includes expanded; GitConfigError when git would fail."""
    first = _ConfigReader(repo, env, None).read_all()
    if not any(e.section == "includeif" and (e.subsection or "").startswith("hasconfig:") for e in first):
        return first
    urls = [e.value for e in first if e.section == "remote" and e.key == "url" and e.value is not None]
    return _ConfigReader(repo, env, urls).read_all()

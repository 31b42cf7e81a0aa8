"""Registration with Claude Code and Codex, and the install contract they are built from.

`--print-config[=claude|codex]` prints the `bli-memory-install-config.v1` contract (seed README) or
the Codex `config.toml` block, with the bare bin name. `install` resolves the absolute command of the
program that is running (so it registers itself, not whatever else is on PATH) and writes:

- Claude Code: `mcpServers.bli-memory` in `~/.claude.json`; one matcher group per hook under
  `hooks.<Event>` plus `permissions.allow: mcp__bli-memory__search_memory` in `~/.claude/settings.json`
  (both under `$CLAUDE_CONFIG_DIR` when that is set).
- Codex: `[mcp_servers.bli-memory]` (`command`, `args`) in `~/.codex/config.toml`, and the three
  hooks in `~/.codex/hooks.json` (same shape as Claude's; `$CODEX_HOME` honoured). A Codex without
  hook support never reads hooks.json, so writing it is harmless there; builds that gate hooks
  behind `[features] codex_hooks = true` are left to the person (we never flip feature flags), and
  Codex runs a new or changed hook only once the person trusts it (`/hooks`): install says so while
  that is pending, and `status` reads whether it is done (`codex_trust`). Install never writes that
  trust itself: it is the person's review.

Codex hook output (decided here; the hooks honour it). Codex validates hook JSON with
`additionalProperties: false` and treats plain text on Stop as an error (older builds also fail on an
empty Stop stdout), so the Codex hook commands carry an explicit argument:
`bli-memory-mcp hook session-start --host codex`, `... hook prompt --host codex`,
`... hook stop --host codex`. With `--host codex`:

- session-start and prompt print exactly what they print for Claude: nothing, or one plain-text
  block. Codex takes plain stdout (not starting with `{`) as additional context, like Claude.
- stop prints exactly one JSON object line, always: `{}` on every branch, or
  `{"systemMessage": "..."}` when the save failed. No `hookSpecificOutput`, no other key.

Without `--host` (Claude Code) the hooks behave as the seed README says. An unknown `--host` value
is treated as Claude. The argument is decided by the installer, never guessed from the payload.

The MCP server is registered only when the python that would run it can import `mcp` (checked by
running that interpreter, `can_run_server`). The zipapp on a bare python3 has none: install then
registers the hooks (which need nothing but the standard library), leaves the server entries as they
are, and says on stderr, in one line, how to get the server (install the package into a venv and run
that venv's `bli-memory-mcp install`). Registering a server that cannot start would show a broken
MCP server in every session; refusing would withhold the hooks, which work.

Every edit is idempotent (a second run writes nothing), atomic (temp file + rename in the same
folder, the file's mode kept, symlinks followed), keeps every other byte (JSON: only the changed
members and elements are rewritten, in the file's own style, `splice_json`; TOML: only our table), and backs the file up once
(`<file>.bli-memory.bak`) before the first change. All files are planned before any is written: a
malformed file is reported in one line and nothing is written anywhere (exit 1).
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import stat
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SERVER_ID = "bli-memory"
BIN_NAME = "bli-memory-mcp"
ZIPAPP_NAME = "bli-memory-mcp.pyz"
MODULE_NAME = "bli_memory"
CONTRACT_SCHEMA = "bli-memory-install-config.v1"
PERMISSION = f"mcp__{SERVER_ID}__search_memory"
CODEX_HOST_ARGS = ("--host", "codex")
BACKUP_SUFFIX = ".bli-memory.bak"
#: config files hold tokens (Claude's OAuth state lives in ~/.claude.json): new ones are private.
NEW_FILE_MODE = 0o600


@dataclass(frozen=True)
class HookSpec:
    event: str
    subcommand: str
    timeout_s: int


#: the host timeouts sit above each hook's own deadline (8 s / 2 s / 15 s): the seed README.
HOOKS: tuple[HookSpec, ...] = (
    HookSpec("SessionStart", "session-start", 30),
    HookSpec("UserPromptSubmit", "prompt", 5),
    HookSpec("Stop", "stop", 30),
)
HOOK_SUBCOMMANDS = frozenset(spec.subcommand for spec in HOOKS)

PRINT_CONFIG_HELP = """\
usage: bli-memory-mcp --print-config[=claude|codex]

Print what each host needs, with the bare bin name `bli-memory-mcp` (install substitutes the
absolute path it resolves on this machine):
  --print-config          both blocks, with headings
  --print-config=claude   the install contract (bli-memory-install-config.v1, JSON)
  --print-config=codex    the block for ~/.codex/config.toml
"""

INSTALL_HELP = """\
usage: bli-memory-mcp {verb} [--dry-run] [--host claude|codex]

{what}
  Claude Code: ~/.claude.json (mcpServers.bli-memory) and ~/.claude/settings.json
               (hooks SessionStart / UserPromptSubmit / Stop, permission {permission})
  Codex:       ~/.codex/config.toml ([mcp_servers.bli-memory]) and ~/.codex/hooks.json
$CLAUDE_CONFIG_DIR and $CODEX_HOME are honoured. Other keys are kept as they are; each file is
backed up once to <file>{backup} before its first change; running it twice changes nothing.

options:
  --dry-run            show what would change and write nothing
  --host claude|codex  only this host (default: both)
  --help               show this help
"""


class InstallError(Exception):
    """A file cannot be changed safely; the message is one line and names the file."""


# --------------------------------------------------------------------------- the contract


def hook_command(prefix: Sequence[str], spec: HookSpec, *, codex: bool = False) -> str:
    """The shell command a host runs for one hook (hosts run it through `sh -c`)."""
    argv = [*prefix, "hook", spec.subcommand]
    if codex:
        argv += CODEX_HOST_ARGS
    return shlex.join(argv)


def install_contract(prefix: Sequence[str] = (BIN_NAME,)) -> dict[str, Any]:
    """The `bli-memory-install-config.v1` contract, with `prefix` as the command in every string."""
    return {
        "schema": CONTRACT_SCHEMA,
        "server_id": SERVER_ID,
        "mcp_server": {"command": prefix[0], "args": list(prefix[1:]), "env": {}},
        "hooks": [
            {"event": spec.event, "command": hook_command(prefix, spec), "timeout_seconds": spec.timeout_s}
            for spec in HOOKS
        ],
        "permissions_allow": [PERMISSION],
    }


def toml_string(value: str) -> str:
    """A TOML basic string: quote, backslash and control characters escaped, nothing else."""
    named = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
    out = []
    for char in value:
        if char in named:
            out.append(named[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def codex_server_lines(prefix: Sequence[str]) -> tuple[str, str]:
    """The two keys this installer owns in `[mcp_servers.bli-memory]`."""
    args = ", ".join(toml_string(arg) for arg in prefix[1:])
    return f"command = {toml_string(prefix[0])}", f"args = [{args}]"


def codex_toml_block(prefix: Sequence[str] = (BIN_NAME,)) -> str:
    command, args = codex_server_lines(prefix)
    return f"[mcp_servers.{SERVER_ID}]\n{command}\n{args}\n"


def print_config_main(args: list[str]) -> int:
    """`--print-config[=claude|codex]`, also `--print-config --claude|--codex`."""
    host = "both"
    for arg in args:
        if arg in ("--help", "-h"):
            sys.stdout.write(PRINT_CONFIG_HELP)
            return 0
        if arg == "--print-config":
            continue
        value = arg.split("=", 1)[1] if arg.startswith("--print-config=") else arg.lstrip("-")
        if value not in ("claude", "codex") or host != "both":
            sys.stderr.write(f"bli-memory-mcp: --print-config takes claude or codex, not {arg!r}\n")
            return 2
        host = value
    contract = json.dumps(install_contract(), indent=2)
    if host == "claude":
        sys.stdout.write(contract + "\n")
    elif host == "codex":
        sys.stdout.write(codex_toml_block())
    else:
        sys.stdout.write(f"# Claude Code: {CONTRACT_SCHEMA} (install writes it into ~/.claude.json and\n")
        sys.stdout.write("# ~/.claude/settings.json with the absolute path of the bin)\n")
        sys.stdout.write(contract + "\n\n")
        sys.stdout.write("# Codex: ~/.codex/config.toml\n")
        sys.stdout.write(codex_toml_block())
    return 0


# --------------------------------------------------------------------------- which program am I


def resolve_command(
    argv0: str | None = None, executable: str | None = None, which: Callable[[str], str | None] | None = None
) -> list[str]:
    """The absolute argv prefix that runs this very program.

    In order: the console script that is running (argv[0] named `bli-memory-mcp`), the zipapp that is
    running (`python3 /abs/x.pyz`), the console script next to this interpreter (`python -m
    bli_memory` from a venv), the console script on PATH, and last `python -m bli_memory`.
    """
    import shutil

    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = os.path.abspath(sys.executable if executable is None else executable)
    which = shutil.which if which is None else which
    base = os.path.basename(argv0)
    if base == BIN_NAME and os.path.isfile(argv0):
        return [os.path.abspath(argv0)]
    if base.endswith(".pyz") and os.path.isfile(argv0):
        return [executable, os.path.abspath(argv0)]
    sibling = os.path.join(os.path.dirname(executable), BIN_NAME)
    if os.path.isfile(sibling) and os.access(sibling, os.X_OK):
        return [sibling]
    on_path = which(BIN_NAME)
    if on_path:
        return [os.path.abspath(on_path)]
    return [executable, "-m", MODULE_NAME]


#: the probe an interpreter runs to say whether it can import the SDK the MCP server needs (exit 0: yes).
MCP_PROBE = "import importlib.util, sys; sys.exit(importlib.util.find_spec('mcp') is None)"
MCP_PROBE_TIMEOUT_S = 20.0
SERVER_SKIPPED_NOTE = (
    "MCP server not registered: {python} cannot import the `mcp` package, so the server could not "
    "start (the hooks are registered and work without it). For the server, install bli-memory into a "
    "venv (python3 -m venv V && V/bin/pip install bli-memory, or pipx) and run V/bin/bli-memory-mcp install."
)


def server_interpreter(prefix: Sequence[str]) -> str:
    """The python that runs the registered MCP server command.

    `python x.pyz` and `python -m bli_memory` name it first; a console script names it in its
    shebang (`#!/venv/bin/python`, or `#!/usr/bin/env python3`, looked up on PATH).
    """
    import shutil

    if len(prefix) > 1:
        return prefix[0]
    try:
        with open(prefix[0], "rb") as handle:
            first = handle.readline(4096)
    except OSError:
        return sys.executable
    if not first.startswith(b"#!"):
        return sys.executable
    words = first[2:].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [word for word in words[1:] if not word.startswith("-")]
        found = shutil.which(words[0]) if words else None
        return found or sys.executable
    return words[0] if words else sys.executable


def can_run_server(prefix: Sequence[str]) -> bool:
    """True when the interpreter of `prefix` can import `mcp` (install registers the server only then).

    The zipapp runs on whatever python3 is at hand, which usually has no `mcp`; registering a server
    that cannot start would show the person a broken MCP server in every session.
    """
    import subprocess

    try:
        done = subprocess.run(
            [server_interpreter(prefix), "-c", MCP_PROBE],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=MCP_PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def is_our_hook_command(command: object, own: Sequence[str] = ()) -> bool:
    """True for any command string that runs one of our hooks, whatever path or host argument it has.

    Recognising ours by shape (not by the exact string) lets install replace a registration made by
    an older install from another path, and uninstall remove it. `own` is the running program's
    prefix, so a zipapp under any file name also knows its own registrations.
    """
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for index in range(1, len(words) - 1):
        if words[index] != "hook" or words[index + 1] not in HOOK_SUBCOMMANDS:
            continue
        before = words[:index]
        if own and before[-len(own) :] == list(own):
            return True
        program = os.path.basename(before[-1])
        if program in (BIN_NAME, ZIPAPP_NAME) or before[-2:] in (["-m", MODULE_NAME], ["-c", HOOK_LAUNCH]):
            return True
    return False


def _is_our_handler(handler: object, own: Sequence[str]) -> bool:
    return isinstance(handler, dict) and is_our_hook_command(handler.get("command"), own)


# --------------------------------------------------------------------------- files


@dataclass(frozen=True)
class Paths:
    claude_json: str
    claude_settings: str
    codex_config: str
    codex_hooks: str

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Paths:
        home = env.get("HOME") or os.path.expanduser("~")
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
        )


@dataclass
class FileChange:
    """One file's plan: its text now (None: absent) and after (None: delete it)."""

    path: str
    old_text: str | None
    new_text: str | None
    actions: list[str] = field(default_factory=list)

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
        raise InstallError(f"{_show(path)} is not UTF-8 text; left it untouched") from None
    except OSError as exc:
        raise InstallError(f"cannot read {_show(path)}: {exc.strerror}") from None


def _show(path: str) -> str:
    home = os.environ.get("HOME") or os.path.expanduser("~")
    if home and home != "/" and (path == home or path.startswith(home.rstrip("/") + "/")):
        return "~" + path[len(home.rstrip("/")) :]
    return path


def write_atomic(path: str, text: str) -> None:
    """Replace the file in one rename, keeping its mode; a symlink's target is what gets written."""
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
        with _suppress_oserror():
            os.unlink(temp)
        raise


class _suppress_oserror:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, value: object, traceback: object) -> bool:
        return isinstance(value, OSError)


def backup_path(path: str) -> str:
    return os.path.realpath(path) + BACKUP_SUFFIX


def apply_change(change: FileChange) -> str | None:
    """Write one planned change; returns the backup made, if any.

    The file is read again just before writing: a host that rewrote it since we planned (Claude Code
    rewrites ~/.claude.json while it runs) must not lose its write to ours.
    """
    if read_text(change.path) != change.old_text:
        raise InstallError(f"{_show(change.path)} changed while installing; nothing written to it; run again")
    made = None
    backup = backup_path(change.path)
    # a file planned for deletion is one install created (it has no backup): nothing to keep
    if change.old_text is not None and change.new_text is not None and not os.path.exists(backup):
        write_atomic(backup, change.old_text)
        os.chmod(backup, stat.S_IMODE(os.stat(os.path.realpath(change.path)).st_mode))
        made = backup
    if change.new_text is None:
        os.unlink(os.path.realpath(change.path))
    else:
        write_atomic(change.path, change.new_text)
    return made


# --------------------------------------------------------------------------- JSON files


def load_json_object(path: str, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f" (line {exc.lineno}, column {exc.colno})"
        raise InstallError(f"{_show(path)} is not valid JSON{where}; left it untouched") from None
    if not isinstance(data, dict):
        raise InstallError(f"{_show(path)} does not hold a JSON object; left it untouched")
    return data


def _child(path: str, parent: dict[str, Any], key: str, kind: type, label: str) -> Any:
    value = parent.get(key)
    if value is not None and not isinstance(value, kind):
        raise InstallError(f"{_show(path)}: {label} is not a JSON {kind.__name__}; left it untouched")
    return value


def _finish_json(path: str, old_text: str | None, data: dict[str, Any], actions: list[str]) -> FileChange:
    """The planned text for a JSON file; an empty object in a file we created means: delete it."""
    if not actions:
        return FileChange(path, old_text, old_text)
    if not data and old_text is not None and not os.path.exists(backup_path(path)):
        return FileChange(path, old_text, None, actions)
    if not data and old_text is None:
        return FileChange(path, old_text, old_text)
    try:
        new_text = splice_json(old_text, data)
    except ValueError:
        raise InstallError(
            f"{_show(path)}: the edit would change more than our keys; left it untouched"
        ) from None
    return FileChange(path, old_text, new_text, actions)


def plan_claude_json(path: str, prefix: Sequence[str] | None) -> FileChange:
    """`mcpServers.bli-memory` in ~/.claude.json; prefix None removes it."""
    old_text = read_text(path)
    data = load_json_object(path, old_text)
    servers = _child(path, data, "mcpServers", dict, "mcpServers")
    actions: list[str] = []
    if prefix is None:
        if servers is not None and SERVER_ID in servers:
            del servers[SERVER_ID]
            if not servers:
                del data["mcpServers"]
            actions.append(f"remove mcpServers.{SERVER_ID}")
        return _finish_json(path, old_text, data, actions)
    if servers is None:
        servers = data["mcpServers"] = {}
    current = servers.get(SERVER_ID)
    entry = dict(current) if isinstance(current, dict) else {}
    entry.update({"type": "stdio", "command": prefix[0], "args": list(prefix[1:])})
    if not isinstance(entry.get("env"), dict):
        entry["env"] = {}
    if entry != current:
        servers[SERVER_ID] = entry
        verb = "update" if current is not None else "add"
        actions.append(f"{verb} mcpServers.{SERVER_ID} ({shlex.join(prefix)})")
    return _finish_json(path, old_text, data, actions)


def _edit_hook_groups(
    path: str,
    data: dict[str, Any],
    wanted: dict[str, dict[str, Any]] | None,
    actions: list[str],
    own: Sequence[str],
) -> None:
    """Make `hooks.<Event>` hold exactly one group of ours per event (wanted), or none (wanted None)."""
    hooks = _child(path, data, "hooks", dict, "hooks")
    if hooks is None:
        if wanted is None:
            return
        hooks = data["hooks"] = {}
    touched = False
    for spec in HOOKS:
        groups = _child(path, hooks, spec.event, list, f"hooks.{spec.event}")
        group = None if wanted is None else wanted[spec.event]
        ours = [
            handler
            for g in groups or []
            if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for handler in g["hooks"]
            if _is_our_handler(handler, own)
        ]
        if group is not None and len(ours) == 1 and groups is not None and group in groups:
            continue
        if group is None and not ours:
            continue
        kept = []
        for g in groups or []:
            if not (isinstance(g, dict) and isinstance(g.get("hooks"), list)):
                kept.append(g)
                continue
            handlers = [h for h in g["hooks"] if not _is_our_handler(h, own)]
            if len(handlers) == len(g["hooks"]):
                kept.append(g)
            elif handlers:
                kept.append({**g, "hooks": handlers})
        touched = True
        if group is not None:
            kept.append(group)
            actions.append(f"{'replace' if ours else 'add'} hook {spec.event}")
        else:
            actions.append(f"remove hook {spec.event}")
        if kept:
            hooks[spec.event] = kept
        else:
            del hooks[spec.event]
    if touched and not hooks:
        del data["hooks"]


#: what a registered hook runs instead of the console script: pip's generated `bli-memory-mcp` script
#: imports `re` before our code (~16 ms on every hook; the trivial-prompt path's whole budget is the
#: interpreter floor + 50 %), `python -c` with this line does not.
HOOK_LAUNCH = "import sys; from bli_memory.cli import main; sys.exit(main())"


def hook_prefix(prefix: Sequence[str]) -> list[str]:
    """The argv prefix registered hooks run: the console script's own interpreter with `-c HOOK_LAUNCH`
    when `prefix` is a console script, else `prefix` itself (a zipapp, or `python -m bli_memory`)."""
    if len(prefix) == 1 and os.path.basename(prefix[0]) == BIN_NAME:
        python = server_interpreter(prefix)
        if os.path.isabs(python) and os.access(python, os.X_OK):
            return [python, "-c", HOOK_LAUNCH]
    return list(prefix)


def _hook_groups(prefix: Sequence[str], *, codex: bool) -> dict[str, dict[str, Any]]:
    prefix = hook_prefix(prefix)
    return {
        spec.event: {
            "hooks": [
                {
                    "type": "command",
                    "command": hook_command(prefix, spec, codex=codex),
                    "timeout": spec.timeout_s,
                }
            ]
        }
        for spec in HOOKS
    }


def plan_hooks_json(
    path: str, prefix: Sequence[str] | None, *, codex: bool, own: Sequence[str] = ()
) -> FileChange:
    """The three hooks in a Claude settings.json or a Codex hooks.json, and the Claude permission."""
    old_text = read_text(path)
    data = load_json_object(path, old_text)
    actions: list[str] = []
    wanted = None if prefix is None else _hook_groups(prefix, codex=codex)
    _edit_hook_groups(path, data, wanted, actions, own)
    if not codex:
        _edit_permission(path, data, add=prefix is not None, actions=actions)
    return _finish_json(path, old_text, data, actions)


def _edit_permission(path: str, data: dict[str, Any], *, add: bool, actions: list[str]) -> None:
    permissions = _child(path, data, "permissions", dict, "permissions")
    allow = _child(path, permissions or {}, "allow", list, "permissions.allow")
    if add:
        if allow is not None and PERMISSION in allow:
            return
        if permissions is None:
            permissions = data["permissions"] = {}
        if allow is None:
            allow = permissions["allow"] = []
        allow.append(PERMISSION)
        actions.append(f"allow {PERMISSION}")
        return
    if permissions is None or allow is None or PERMISSION not in allow:
        return
    allow[:] = [entry for entry in allow if entry != PERMISSION]
    if not allow:
        del permissions["allow"]
    if not permissions:
        del data["permissions"]
    actions.append(f"remove permission {PERMISSION}")


# --------------------------------------------------------------------------- JSON text splicing
#
# Claude Code and the person both edit these files; install must change its own keys and leave every
# other byte where it was (DESIGN.md: "keeps every other key of those files byte-for-byte"). So the new
# text is not a re-serialisation: the old text is parsed into spans, compared with the wanted data, and
# only the members and elements that differ are rewritten. Whatever is new is written in the file's own
# style (its indent unit, `": "` or `":"`, `", "` or `","`), so install then uninstall gives back the
# same bytes. A file we create gets JSON.stringify(x, null, 2), what Claude Code writes.

_JSON_WHITESPACE = " \t\r\n"
NEW_JSON_INDENT = 2


@dataclass
class _Span:
    """A JSON value at text[start:end]; containers list their members as (key, member start, value)."""

    start: int
    end: int
    kind: str  # "object" | "array" | "scalar"
    items: list[tuple[str | None, int, _Span]] = field(default_factory=list)


class _SpanParser:
    """Positions of the values of a text `json.loads` already accepted (so it need not re-validate)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def skip(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] in _JSON_WHITESPACE:
            pos += 1
        return pos

    def string_end(self, pos: int) -> int:
        index = pos + 1
        while self.text[index] != '"':
            index += 2 if self.text[index] == "\\" else 1
        return index + 1

    def value(self, pos: int) -> _Span:
        pos = self.skip(pos)
        char = self.text[pos]
        if char in "{[":
            return self.container(pos)
        if char == '"':
            return _Span(pos, self.string_end(pos), "scalar")
        end = pos
        while end < len(self.text) and self.text[end] not in _JSON_WHITESPACE + ",]}":
            end += 1
        return _Span(pos, end, "scalar")

    def container(self, pos: int) -> _Span:
        is_object = self.text[pos] == "{"
        close = "}" if is_object else "]"
        span = _Span(pos, pos, "object" if is_object else "array")
        index = self.skip(pos + 1)
        while self.text[index] != close:
            start = index
            key = None
            if is_object:
                key_end = self.string_end(index)
                key = json.loads(self.text[index:key_end])
                index = self.skip(key_end) + 1  # past ':'
            value = self.value(index)
            span.items.append((key, start, value))
            index = self.skip(value.end)
            if self.text[index] == ",":
                index = self.skip(index + 1)
        span.end = index + 1
        return span


@dataclass(frozen=True)
class _JsonStyle:
    indent: str | None  # one level of indentation; None for a file on one line
    key_sep: str  # between a key and its value
    inline_sep: str  # between items of a container written on one line
    newline: str = "\n"  # "\r\n" in a file written with CRLF line ends


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _json_style(text: str, root: _Span) -> _JsonStyle:
    indent: str | None = None
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            indent = line[: len(line) - len(stripped)]
            break
    key_sep, inline_sep = ": ", ", "
    stack = [root]
    found_key = found_inline = False
    while stack and not (found_key and found_inline):
        span = stack.pop()
        for number, (key, start, value) in enumerate(span.items):
            if key is not None and not found_key:
                key_end = _SpanParser(text).string_end(start)
                key_sep = text[key_end : value.start]
                found_key = True
            if number and not found_inline:
                between = text[span.items[number - 1][2].end : start]
                if "\n" not in between:
                    inline_sep = between.strip(_JSON_WHITESPACE) + between.split(",", 1)[1]
                    found_inline = True
            stack.append(value)
    return _JsonStyle(indent, key_sep, inline_sep, "\r\n" if "\r\n" in text else "\n")


def _line_indent(text: str, pos: int) -> str:
    line = text[text.rfind("\n", 0, pos) + 1 : pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _dump(value: Any, style: _JsonStyle, base_indent: str, multiline: bool) -> str:
    if multiline and style.indent is not None:
        rendered = json.dumps(value, indent=style.indent, ensure_ascii=False)
        return rendered.replace("\n", style.newline + base_indent)
    return json.dumps(value, ensure_ascii=False, separators=(style.inline_sep, style.key_sep))


def _splice(text: str, span: _Span, old: Any, new: Any, style: _JsonStyle) -> str:
    """The text for `new` where `span` (holding `old`) was: old text wherever old and new agree."""
    if _canonical(old) == _canonical(new):
        return text[span.start : span.end]
    if span.kind == "object" and isinstance(old, dict) and isinstance(new, dict):
        return _splice_object(text, span, old, new, style)
    if span.kind == "array" and isinstance(old, list) and isinstance(new, list):
        return _splice_array(text, span, old, new, style)
    return _dump(new, style, _line_indent(text, span.start), multiline=True)


def _splice_object(
    text: str, span: _Span, old: dict[str, Any], new: dict[str, Any], style: _JsonStyle
) -> str:
    last = {key: number for number, (key, _, _) in enumerate(span.items)}
    pieces: list[tuple[int | None, str]] = []
    for number, (key, start, value) in enumerate(span.items):
        assert key is not None
        if key not in new:
            continue
        if last[key] != number:  # an earlier duplicate: json.loads ignores it, so do we
            pieces.append((number, text[start : value.end]))
            continue
        pieces.append((number, text[start : value.start] + _splice(text, value, old[key], new[key], style)))
    added = [key for key in new if key not in old]
    multiline = _is_multiline(text, span, style)
    item_indent = _item_indent(text, span, style)
    key_sep = _key_sep(text, span, style)
    for key in added:
        rendered = _dump(new[key], style, item_indent, multiline)
        pieces.append((None, json.dumps(key, ensure_ascii=False) + key_sep + rendered))
    return _join(text, span, pieces, style)


def _splice_array(text: str, span: _Span, old: list[Any], new: list[Any], style: _JsonStyle) -> str:
    import difflib

    matcher = difflib.SequenceMatcher(
        None, [_canonical(v) for v in old], [_canonical(v) for v in new], autojunk=False
    )
    multiline = _is_multiline(text, span, style)
    item_indent = _item_indent(text, span, style)
    pieces: list[tuple[int | None, str]] = []
    for op, old_from, old_to, new_from, new_to in matcher.get_opcodes():
        if op == "equal" or (op == "replace" and old_to - old_from == new_to - new_from):
            for offset in range(old_to - old_from):
                _, _, value = span.items[old_from + offset]
                spliced = _splice(text, value, old[old_from + offset], new[new_from + offset], style)
                pieces.append((old_from + offset, spliced))
            continue
        for number in range(new_from, new_to):
            pieces.append((None, _dump(new[number], style, item_indent, multiline)))
    return _join(text, span, pieces, style)


def _is_multiline(text: str, span: _Span, style: _JsonStyle) -> bool:
    """Items of this container sit on lines of their own (an empty one: when the file is indented)."""
    if span.items:
        return "\n" in text[span.start + 1 : span.items[0][1]]
    return style.indent is not None


def _item_indent(text: str, span: _Span, style: _JsonStyle) -> str:
    if span.items:
        return _line_indent(text, span.items[0][1])
    return _line_indent(text, span.start) + (style.indent or "")


def _key_sep(text: str, span: _Span, style: _JsonStyle) -> str:
    if span.items:
        _, start, value = span.items[0]
        return text[_SpanParser(text).string_end(start) : value.start]
    return style.key_sep


def _join(text: str, span: _Span, pieces: list[tuple[int | None, str]], style: _JsonStyle) -> str:
    """Reassemble a container: kept neighbours keep the bytes between them; new joints copy the
    container's own separator (or, for a container that had at most one item, the file's)."""
    open_char, close_char = text[span.start], text[span.end - 1]
    if not pieces:
        return open_char + close_char
    items = span.items
    if items:
        lead = text[span.start + 1 : items[0][1]]
        trail = text[items[-1][2].end : span.end - 1]
        if len(items) > 1:
            default_sep = text[items[0][2].end : items[1][1]]
        elif "\n" in lead:
            default_sep = "," + lead
        else:
            default_sep = style.inline_sep
    elif style.indent is not None:
        outer = _line_indent(text, span.start)
        lead, trail = style.newline + outer + style.indent, style.newline + outer
        default_sep = "," + lead
    else:
        lead = trail = ""
        default_sep = style.inline_sep
    out = [open_char, lead]
    for number, (origin, piece) in enumerate(pieces):
        if number:
            before = pieces[number - 1][0]
            if before is not None and origin == before + 1:
                out.append(text[items[before][2].end : items[origin][1]])
            else:
                out.append(default_sep)
        out.append(piece)
    out += [trail, close_char]
    return "".join(out)


def splice_json(old_text: str | None, data: dict[str, Any]) -> str:
    """The new text of a JSON file holding `data`, changing only what differs from `old_text`.

    Raises ValueError if the splice would not read back as `data` (a safety net: the caller reports
    the file and leaves it untouched).
    """
    if old_text is None or not old_text.strip():
        return json.dumps(data, indent=NEW_JSON_INDENT, ensure_ascii=False) + "\n"
    old = json.loads(old_text)
    parser = _SpanParser(old_text)
    root = parser.value(0)
    style = _json_style(old_text, root)
    body = _splice(old_text, root, old, data, style)
    new_text = old_text[: root.start] + body + old_text[root.end :]
    if _canonical(json.loads(new_text)) != _canonical(data):
        raise ValueError("the splice does not read back as the wanted data")
    return new_text


# --------------------------------------------------------------------------- TOML (one table)


@dataclass(frozen=True)
class TomlStatement:
    """One logical statement of a TOML file: lines [start, end) and the key path it defines."""

    kind: str  # "header" | "keyval" | "trivia"
    start: int
    end: int
    path: tuple[str, ...] = ()
    array: bool = False
    table: tuple[str, ...] = ()  # the table a keyval sits in


_BARE_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\", "e": "\x1b"}


class TomlShapeError(ValueError):
    """The text is not TOML this editor can read safely."""


def _parse_key(text: str, pos: int) -> tuple[tuple[str, ...], int]:
    """A dotted key starting at pos (after whitespace); returns its parts and the position after it."""
    parts: list[str] = []
    while True:
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos >= len(text):
            raise TomlShapeError("key expected")
        char = text[pos]
        if char == '"':
            value, pos = _parse_basic_string(text, pos)
        elif char == "'":
            end = text.find("'", pos + 1)
            if end < 0 or "\n" in text[pos:end]:
                raise TomlShapeError("unterminated literal key")
            value, pos = text[pos + 1 : end], end + 1
        else:
            start = pos
            while pos < len(text) and text[pos] in _BARE_KEY_CHARS:
                pos += 1
            if pos == start:
                raise TomlShapeError("key expected")
            value = text[start:pos]
        parts.append(value)
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos < len(text) and text[pos] == ".":
            pos += 1
            continue
        return tuple(parts), pos


def _parse_basic_string(text: str, pos: int) -> tuple[str, int]:
    out: list[str] = []
    index = pos + 1
    while index < len(text):
        char = text[index]
        if char == '"':
            return "".join(out), index + 1
        if char == "\n":
            break
        if char == "\\":
            code = text[index + 1 : index + 2]
            if code in _ESCAPES:
                out.append(_ESCAPES[code])
                index += 2
                continue
            width = {"u": 4, "U": 8, "x": 2}.get(code)
            digits = text[index + 2 : index + 2 + (width or 0)]
            if not width or len(digits) != width:
                raise TomlShapeError("bad escape")
            try:
                out.append(chr(int(digits, 16)))
            except ValueError:
                raise TomlShapeError("bad escape") from None
            index += 2 + width
            continue
        out.append(char)
        index += 1
    raise TomlShapeError("unterminated string")


def _skip_value(lines: Sequence[str], line: int, pos: int) -> int:
    """Scan a value that starts at (line, pos); returns the index one past its last line.

    Tracks strings (basic, literal, multi-line) and bracket nesting, so a `[` inside a string or a
    multi-line array is never taken for a table header.
    """
    stack: list[str] = []
    text = lines[line]
    multi: str | None = None
    while True:
        if pos >= len(text):
            if multi is None and not stack:
                return line + 1
            line += 1
            if line >= len(lines):
                raise TomlShapeError("unterminated value at end of file")
            text, pos = lines[line], 0
            continue
        char = text[pos]
        if multi is not None:
            if multi == '"""' and char == "\\":
                pos += 2
                continue
            if text.startswith(multi, pos):
                pos += 3
                while pos < len(text) and text[pos] == multi[0]:
                    pos += 1
                multi = None
                continue
            pos += 1
            continue
        if char == "#":
            pos = len(text)
        elif text.startswith('"""', pos) or text.startswith("'''", pos):
            multi = text[pos : pos + 3]
            pos += 3
        elif char == '"':
            _, pos = _parse_basic_string(text, pos)
        elif char == "'":
            end = text.find("'", pos + 1)
            if end < 0:
                raise TomlShapeError("unterminated literal string")
            pos = end + 1
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
            pos += 1
        elif char in "]}":
            if not stack or stack.pop() != char:
                raise TomlShapeError("unbalanced brackets")
            pos += 1
        else:
            pos += 1


def scan_toml(text: str) -> list[TomlStatement]:
    """Split TOML text into statements, with full key paths; raises TomlShapeError on what it cannot read."""
    lines = text.splitlines(keepends=True)
    statements: list[TomlStatement] = []
    table: tuple[str, ...] = ()
    index = 0
    while index < len(lines):
        line = lines[index]
        body = line.lstrip(" \t")
        offset = len(line) - len(body)
        if not body.strip() or body.startswith("#"):
            statements.append(TomlStatement("trivia", index, index + 1))
            index += 1
            continue
        if body.startswith("["):
            array = body.startswith("[[")
            path, pos = _parse_key(line, offset + (2 if array else 1))
            closing = "]]" if array else "]"
            if not line.startswith(closing, pos):
                raise TomlShapeError(f"bad table header on line {index + 1}")
            rest = line[pos + len(closing) :].strip()
            if rest and not rest.startswith("#"):
                raise TomlShapeError(f"text after a table header on line {index + 1}")
            table = path
            statements.append(TomlStatement("header", index, index + 1, path, array))
            index += 1
            continue
        key, pos = _parse_key(line, offset)
        if not line.startswith("=", pos):
            raise TomlShapeError(f"'=' expected on line {index + 1}")
        end = _skip_value(lines, index, pos + 1)
        statements.append(TomlStatement("keyval", index, end, table + key, table=table))
        index = end
    return statements


def _toml_loads(text: str) -> dict[str, Any] | None:
    """Parse with tomllib where the interpreter has it (3.11+); None on 3.10, where the scanner is the guard."""
    if sys.version_info >= (3, 11):
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise TomlShapeError(str(exc)) from None
    return None


def edit_codex_toml(text: str, prefix: Sequence[str] | None) -> tuple[str, list[str]]:
    """Set (or, prefix None, remove) `[mcp_servers.bli-memory]`; every other byte stays as it was."""
    ours = ("mcp_servers", SERVER_ID)
    newline = "\r\n" if "\r\n" in text else "\n"
    statements = scan_toml(text)
    lines = text.splitlines(keepends=True)
    headers = [s for s in statements if s.kind == "header"]
    main = [s for s in headers if s.path == ours and not s.array]
    for statement in statements:
        inside_ours_header = statement.table[:2] == ours
        defines_ours = statement.path[:2] == ours and not (statement.kind == "keyval" and inside_ours_header)
        shadows_ours = statement.kind == "keyval" and len(statement.path) < 2 and statement.path == ours[:1]
        if (defines_ours and (statement.kind == "keyval" or statement.array)) or shadows_ours:
            raise TomlShapeError(f"mcp_servers.{SERVER_ID} is written in a form this installer does not edit")
        if statement.kind == "header" and statement.array and statement.path == ours[:1]:
            raise TomlShapeError("mcp_servers is an array of tables")
    if len(main) > 1:
        raise TomlShapeError(f"[mcp_servers.{SERVER_ID}] is defined twice")

    if prefix is None:
        blocks = [s for s in headers if s.path[:2] == ours]
        if not blocks:
            return text, []
        drop: set[int] = set()
        for header in blocks:
            end = _block_end(statements, header)
            drop.update(range(header.start, end))
            # undo the blank line install put before the table (or, at the top, the one after it)
            if header.start > 0 and not lines[header.start - 1].strip():
                drop.add(header.start - 1)
            elif header.start == 0 and end < len(lines) and not lines[end].strip():
                drop.add(end)
        kept = [line for number, line in enumerate(lines) if number not in drop]
        return "".join(kept), [f"remove [mcp_servers.{SERVER_ID}]"]

    command, args = codex_server_lines(prefix)
    if not main:
        head = text
        if head and not head.endswith(("\n", "\r")):
            head += newline
        if head.strip() and not head.endswith(newline * 2):
            head += newline
        block = f"[mcp_servers.{SERVER_ID}]{newline}{command}{newline}{args}{newline}"
        return head + block, [f"add [mcp_servers.{SERVER_ID}] ({shlex.join(prefix)})"]

    header = main[0]
    end = _block_end(statements, header)
    body = [s for s in statements if header.start < s.start < end and s.kind == "keyval"]
    new_lines = list(lines)
    wanted = {("command",): command, ("args",): args}
    missing = []
    changed = False
    for key, rendered in wanted.items():
        found = [s for s in body if s.path[2:] == key]
        if not found:
            missing.append(rendered + newline)
            continue
        first = found[0]
        old = "".join(lines[first.start : first.end])
        if old.strip() != rendered:
            changed = True
            new_lines[first.start] = rendered + newline
            for number in range(first.start + 1, first.end):
                new_lines[number] = ""
    if missing:
        changed = True
        header_line = new_lines[header.start]
        if not header_line.endswith(("\n", "\r")):  # the header was the file's last line
            header_line += newline
        new_lines[header.start] = header_line + "".join(missing)
    if not changed:
        return text, []
    return "".join(new_lines), [f"update [mcp_servers.{SERVER_ID}] ({shlex.join(prefix)})"]


def _block_end(statements: Sequence[TomlStatement], header: TomlStatement) -> int:
    """One past the last key line of a table; trailing comments and blanks belong to what follows."""
    end = header.end
    for statement in statements:
        if statement.start < header.end:
            continue
        if statement.kind == "header":
            break
        if statement.kind == "keyval":
            end = statement.end
    return end


def _expected_after(old: dict[str, Any], prefix: Sequence[str] | None) -> dict[str, Any]:
    expected = copy.deepcopy(old)
    servers = expected.setdefault("mcp_servers", {})
    if prefix is None:
        servers.pop(SERVER_ID, None)
        if not servers:
            del expected["mcp_servers"]
    else:
        servers.setdefault(SERVER_ID, {}).update({"command": prefix[0], "args": list(prefix[1:])})
    return expected


def plan_codex_toml(path: str, prefix: Sequence[str] | None) -> FileChange:
    old_text = read_text(path)
    if old_text is None and prefix is None:
        return FileChange(path, None, None)
    text = old_text or ""
    try:
        before = _toml_loads(text)
        new_text, actions = edit_codex_toml(text, prefix)
        after = _toml_loads(new_text)
    except TomlShapeError as exc:
        raise InstallError(
            f"{_show(path)} is not TOML this installer can edit ({exc}); left it untouched"
        ) from None
    if before is not None and after is not None:
        expected = _expected_after(before, prefix)
        if prefix is None and "mcp_servers" in after and "mcp_servers" not in expected:
            expected["mcp_servers"] = {}
        if after != expected:
            raise InstallError(f"{_show(path)}: the edit would change more than our table; left it untouched")
    if not actions:
        return FileChange(path, old_text, old_text)
    if not new_text.strip() and old_text is not None and not os.path.exists(backup_path(path)):
        return FileChange(path, old_text, None, actions)
    return FileChange(path, old_text, new_text, actions)


# --------------------------------------------------------------------------- install / uninstall


def plan(
    paths: Paths,
    prefix: Sequence[str] | None,
    hosts: Sequence[str],
    own: Sequence[str] = (),
    *,
    with_server: bool = True,
) -> list[FileChange]:
    """Every file's change, computed before any is written; InstallError names the first bad file.

    prefix None plans an uninstall; `own` is the running program's prefix (see is_our_hook_command).
    `with_server` False leaves the MCP server entries as they are (install of a program whose python
    has no `mcp`): a file is still read, so a malformed one is still reported.
    """
    server_prefix = prefix if with_server or prefix is None else None
    changes: list[FileChange] = []
    if "claude" in hosts:
        change = plan_claude_json(paths.claude_json, server_prefix)
        changes.append(change if server_prefix is not None or prefix is None else _unchanged(change))
        changes.append(plan_hooks_json(paths.claude_settings, prefix, codex=False, own=own))
    if "codex" in hosts:
        change = plan_codex_toml(paths.codex_config, server_prefix)
        changes.append(change if server_prefix is not None or prefix is None else _unchanged(change))
        changes.append(plan_hooks_json(paths.codex_hooks, prefix, codex=True, own=own))
    return changes


def _unchanged(change: FileChange) -> FileChange:
    return FileChange(change.path, change.old_text, change.old_text)


@dataclass(frozen=True)
class Options:
    dry_run: bool
    hosts: tuple[str, ...]


def parse_options(verb: str, argv: Sequence[str]) -> Options | int:
    """The flags, or an exit code (0 after --help, 2 after a usage error already reported)."""
    dry_run = False
    hosts: tuple[str, ...] = ("claude", "codex")
    words = list(argv)
    while words:
        word = words.pop(0)
        if word in ("--help", "-h"):
            what = (
                "Register the MCP server, the three hooks and the permission with Claude Code and Codex."
                if verb == "install"
                else "Remove what install registered, and nothing else."
            )
            sys.stdout.write(
                INSTALL_HELP.format(verb=verb, what=what, permission=PERMISSION, backup=BACKUP_SUFFIX)
            )
            return 0
        if word == "--dry-run":
            dry_run = True
            continue
        if word == "--host" or word.startswith("--host="):
            value = word.split("=", 1)[1] if "=" in word else (words.pop(0) if words else "")
            if value not in ("claude", "codex"):
                sys.stderr.write(f"bli-memory-mcp {verb}: --host takes claude or codex\n")
                return 2
            hosts = (value,)
            continue
        sys.stderr.write(
            f"bli-memory-mcp {verb}: unknown argument {word!r}; see `bli-memory-mcp {verb} --help`\n"
        )
        return 2
    return Options(dry_run=dry_run, hosts=hosts)


def run(verb: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    options = parse_options(verb, argv)
    if isinstance(options, int):
        return options
    env = os.environ if env is None else env
    paths = Paths.from_env(env)
    own = resolve_command()
    prefix = own if verb == "install" else None
    with_server = prefix is None or can_run_server(prefix)
    try:
        changes = plan(paths, prefix, options.hosts, own, with_server=with_server)
    except InstallError as exc:
        sys.stderr.write(f"bli-memory-mcp {verb}: {exc}\n")
        return 1
    server_files = (paths.claude_json, paths.codex_config)
    status = 0
    for change in changes:
        shown = _show(change.path)
        if not change.changed:
            if not with_server and change.path in server_files:
                state = "MCP server not registered (see below)"
            else:
                state = "already registered" if verb == "install" else "nothing of ours"
            sys.stdout.write(f"{shown}: {state}\n")
            continue
        summary = "; ".join(change.actions)
        if change.new_text is None:
            summary += "; delete the file (install created it)"
        if options.dry_run:
            sys.stdout.write(f"{shown}: would {summary}\n")
            continue
        try:
            backup = apply_change(change)
        except InstallError as exc:
            sys.stderr.write(f"bli-memory-mcp {verb}: {exc}\n")
            status = 1
            continue
        except OSError as exc:
            sys.stderr.write(f"bli-memory-mcp {verb}: cannot write {shown}: {exc.strerror}\n")
            status = 1
            continue
        note = f" (backup {_show(backup)})" if backup else ""
        sys.stdout.write(f"{shown}: {summary}{note}\n")
    if not with_server and prefix is not None:
        sys.stderr.write(SERVER_SKIPPED_NOTE.format(python=server_interpreter(prefix)) + "\n")
    if options.dry_run:
        sys.stdout.write("dry run: nothing written\n")
    elif verb == "install" and status == 0 and "codex" in options.hosts:
        trust_note = codex_trust_note(env)
        if trust_note:
            sys.stdout.write(trust_note + "\n")
    return status


def codex_trust_note(env: Mapping[str, str]) -> str | None:
    """One line after install while Codex would not run our hooks yet: they wait for the person's trust."""
    from bli_memory.codex_trust import TRUST_HINT, check

    if check(env).state != "untrusted":
        return None
    return (
        f"Codex runs these hooks only once you trust them: {TRUST_HINT}; "
        "`bli-memory-mcp status` shows whether it does."
    )


def install_main(argv: list[str]) -> int:
    # `install --print-config` reads as naturally as `--print-config`: the contract, nothing written
    if any(arg == "--print-config" or arg.startswith("--print-config=") for arg in argv):
        return print_config_main(argv)
    return run("install", argv)


def uninstall_main(argv: list[str]) -> int:
    return run("uninstall", argv)

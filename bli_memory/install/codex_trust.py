"""Does Codex trust the hooks `install` registered? Read from Codex's own files, without running Codex.

Codex runs a hook from `~/.codex/hooks.json` only after the person trusts it (the `/hooks` review in
the Codex TUI; `--dangerously-bypass-hook-trust` skips the check for one run). A hook nobody trusted
never fires and nothing says so, so `bli-memory-mcp status` reads what Codex recorded. Codex (0.171)
keeps that record in its `config.toml`, one table per hook:

    [hooks.state."/home/me/.codex/hooks.json:session_start:0:0"]
    trusted_hash = "sha256:02a88c91..."

- the key is the hooks.json path, the event's snake_case label, the matcher group's index and the
  handler's index in it. The folder is `$CODEX_HOME` with symlinks resolved, else `$HOME/.codex` as
  written (Codex resolves the one and not the other).
- the hash is `sha256:` + the hex SHA-256 of compact JSON with sorted keys, non-ASCII kept as UTF-8:
  `{"event_name": <label>, "matcher": ..., "hooks": [<handler>]}`, where `matcher` is there only when
  the group has one and the event uses matchers (SessionStart does; UserPromptSubmit and Stop ignore
  theirs), and the handler is `{"type": "command", "command", "timeout", "async"}` (timeout 600 when
  unset and at least 1, async false when unset), plus `statusMessage` when set and
  `additionalContextLimit` when set on an event that can add context.
- a hook is trusted when the stored hash equals the hash of the hook as it stands now. A stored hash
  that differs means the hook changed since it was trusted (reinstalling from another path does that)
  and Codex does not run it until it is trusted again. `enabled = false` in the same table turns one
  hook off; `[features] hooks = false` (or the older `codex_hooks = false`) turns them all off.

The end-to-end tests hold this against the real Codex CLI: its own `hooks/list` hashes, its own trust
write, and whether `codex exec` runs our hooks before and after.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bli_memory.install.contract import HOOKS, is_our_hook_command
from bli_memory.install.files import Paths, codex_state_folder
from bli_memory.install.tomledit import TomlShapeError, parse_basic_string, parse_key, scan_toml, toml_loads

#: Codex's labels in hook-state keys, for the events install registers.
EVENT_LABELS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit", "Stop": "stop"}
#: of those, the events whose matcher Codex applies (and so hashes).
EVENTS_WITH_MATCHER = frozenset({"SessionStart"})
#: of those, the events that can add context, where `additionalContextLimit` counts.
EVENTS_WITH_CONTEXT = frozenset({"SessionStart", "UserPromptSubmit"})
#: Codex's timeout for a command hook that sets none.
DEFAULT_TIMEOUT_S = 600
FEATURE_FLAGS = ("hooks", "codex_hooks")
TRUST_HINT = "run codex, open /hooks and trust them"


@dataclass(frozen=True)
class HookTrust:
    """One of our hooks in hooks.json and what Codex recorded for it."""

    event: str
    key: str
    status: str  # "trusted" | "untrusted" | "modified" | "disabled"


@dataclass(frozen=True)
class CodexTrust:
    """The verdict: `state` is "trusted", "untrusted", "not-installed", "off" or "unknown"."""

    state: str
    hooks: tuple[HookTrust, ...] = ()
    missing: tuple[str, ...] = ()  # our events with no hook of ours in hooks.json
    reason: str | None = None
    files: Mapping[str, str] = field(default_factory=dict)

    def count(self, status: str) -> int:
        return sum(1 for hook in self.hooks if hook.status == status)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "state": self.state,
            "trusted": self.count("trusted"),
            "hooks": [{"event": h.event, "key": h.key, "status": h.status} for h in self.hooks],
            "missing": list(self.missing),
        }
        if self.reason:
            data["reason"] = self.reason
        data.update(self.files)
        return data


@dataclass(frozen=True)
class CodexConfig:
    """What config.toml says about hooks: per-key state tables, whether hooks are off, and the
    `[plugins."<name>@<marketplace>"]` tables Codex writes when a plugin is added (`plugin_state`)."""

    states: Mapping[str, Mapping[str, object]]
    hooks_off: bool
    plugins: Mapping[str, Mapping[str, object]] = field(default_factory=dict)


# --------------------------------------------------------------------------- Codex's identity of a hook


def hook_key(hooks_path: str, event: str, group_index: int, handler_index: int) -> str:
    return f"{hooks_path}:{EVENT_LABELS[event]}:{group_index}:{handler_index}"


def hook_hash(event: str, matcher: object, handler: Mapping[str, Any]) -> str:
    """Codex's `trusted_hash` for one command handler of `event` in a group with `matcher`."""
    timeout = handler.get("timeout")
    timeout_s = DEFAULT_TIMEOUT_S if timeout is None else timeout
    normal: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": max(timeout_s, 1) if isinstance(timeout_s, int) else timeout_s,
        "async": handler.get("async", False),
    }
    if handler.get("statusMessage") is not None:
        normal["statusMessage"] = handler["statusMessage"]
    if event in EVENTS_WITH_CONTEXT and handler.get("additionalContextLimit") is not None:
        normal["additionalContextLimit"] = handler["additionalContextLimit"]
    identity: dict[str, Any] = {"event_name": EVENT_LABELS[event], "hooks": [normal]}
    if event in EVENTS_WITH_MATCHER and matcher is not None:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def codex_folder(env: Mapping[str, str]) -> str:
    """The folder Codex keys hook state by: $CODEX_HOME resolved, else $HOME/.codex as written."""
    return codex_state_folder(env)


# --------------------------------------------------------------------------- reading Codex's files


def our_handlers(hooks_doc: object) -> list[tuple[str, int, int, object, Mapping[str, Any]]]:
    """(event, group index, handler index, matcher, handler) of every hook of ours in a hooks.json."""
    found: list[tuple[str, int, int, object, Mapping[str, Any]]] = []
    events = hooks_doc.get("hooks") if isinstance(hooks_doc, dict) else None
    if not isinstance(events, dict):
        return found
    for event in EVENT_LABELS:
        groups = events.get(event)
        for group_index, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler_index, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if (
                    isinstance(handler, dict)
                    and handler.get("type") == "command"
                    and is_our_hook_command(handler.get("command"))
                ):
                    found.append((event, group_index, handler_index, group.get("matcher"), handler))
    return found


def our_state_keys(hooks_text: str | None, hooks_path: str) -> list[str]:
    """The hook-state keys Codex gives our hooks in a hooks.json's text (keyed by `hooks_path`): the
    `[hooks.state."…"]` tables Codex writes when the person trusts (or turns off) one of them, which
    `uninstall` removes with the hooks; none for an absent or unreadable file."""
    try:
        hooks_doc = json.loads(hooks_text) if hooks_text else None
    except (ValueError, RecursionError):  # not JSON, or nested too deep to read: nothing of ours
        return []
    return [
        hook_key(hooks_path, event, group, handler) for event, group, handler, _, _ in our_handlers(hooks_doc)
    ]


def parse_config(text: str, *, use_tomllib: bool = True) -> CodexConfig:
    """The hook state tables and feature flags of a Codex config.toml; TomlShapeError when unreadable."""
    data = toml_loads(text) if use_tomllib else None
    if data is None:
        data = _scan_hook_settings(text)
    hooks = data.get("hooks")
    states = hooks.get("state") if isinstance(hooks, dict) else None
    features = data.get("features")
    hooks_off = isinstance(features, dict) and any(features.get(flag) is False for flag in FEATURE_FLAGS)
    clean = {
        key.strip(): value
        for key, value in (states.items() if isinstance(states, dict) else ())
        if isinstance(value, dict)
    }
    plugins = data.get("plugins")
    plugin_tables = {
        key: value
        for key, value in (plugins.items() if isinstance(plugins, dict) else ())
        if isinstance(value, dict)
    }
    return CodexConfig(states=clean, hooks_off=hooks_off, plugins=plugin_tables)


def _scan_hook_settings(text: str) -> dict[str, Any]:
    """Without tomllib (Python 3.10): the `hooks.state.*`, `features.*` and `plugins.*` values, read
    line by line."""
    lines = text.splitlines(keepends=True)
    data: dict[str, Any] = {}
    for statement in scan_toml(text):
        path = statement.path
        if statement.kind != "keyval" or not path or path[0] not in ("hooks", "features", "plugins"):
            continue
        line = lines[statement.start]
        _, pos = parse_key(line, len(line) - len(line.lstrip(" \t")))
        value = _scalar_or_table(line, pos + 1)
        if value is None:
            continue
        node = data
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[path[-1]] = value
    return data


def _scalar_or_table(line: str, pos: int) -> object:
    """A one-line value: basic or literal string, true/false, or an inline table of those; else None."""
    rest = line[pos:].strip()
    if rest.startswith("{") and rest.rstrip().endswith("}"):
        table: dict[str, object] = {}
        body = rest[1:-1]
        index = 0
        while index < len(body):
            if body[index] in " \t,":
                index += 1
                continue
            key, index = parse_key(body, index)
            if not body.startswith("=", index):
                return None
            value = _scalar_or_table(body, index + 1)
            if value is None:
                return None
            table[key[-1]] = value
            index = _scalar_end(body, index + 1)
        return table
    if rest.startswith('"'):
        return parse_basic_string(rest, 0)[0]
    if rest.startswith("'"):
        end = rest.find("'", 1)
        return rest[1:end] if end > 0 else None
    word = rest.split("#", 1)[0].split(",", 1)[0].strip()
    return {"true": True, "false": False}.get(word)


def _scalar_end(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    if text.startswith('"', pos):
        return parse_basic_string(text, pos)[1]
    if text.startswith("'", pos):
        return text.find("'", pos + 1) + 1
    while pos < len(text) and text[pos] != ",":
        pos += 1
    return pos


# --------------------------------------------------------------------------- the verdict


def hook_status(state: Mapping[str, object] | None, current_hash: str) -> str:
    if state is not None and state.get("enabled") is False:
        return "disabled"
    trusted_hash = state.get("trusted_hash") if state is not None else None
    if not isinstance(trusted_hash, str):
        return "untrusted"
    return "trusted" if trusted_hash == current_hash else "modified"


def judge(hooks_doc: object, hooks_path: str, config: CodexConfig) -> CodexTrust:
    """The verdict for one parsed hooks.json (keyed by `hooks_path`) and config.toml (pure)."""
    if config.hooks_off:
        return CodexTrust("off", reason="hooks are turned off in config.toml ([features] hooks = false)")
    found = our_handlers(hooks_doc)
    if not found:
        return CodexTrust("not-installed")
    hooks = tuple(
        HookTrust(
            event,
            key := hook_key(hooks_path, event, group_index, handler_index),
            hook_status(config.states.get(key), hook_hash(event, matcher, handler)),
        )
        for event, group_index, handler_index, matcher, handler in found
    )
    present = {hook.event for hook in hooks}
    missing = tuple(spec.event for spec in HOOKS if spec.event not in present)
    state = "trusted" if all(hook.status == "trusted" for hook in hooks) else "untrusted"
    return CodexTrust(state, hooks, missing)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text") from None
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None


def check(env: Mapping[str, str]) -> CodexTrust:
    """Read Codex's hooks.json and config.toml (read-only) and judge; a bad file gives "unknown"."""
    paths = Paths.from_env(env)
    hooks_file, config_file = paths.codex_hooks, paths.codex_config
    files = {"hooksFile": hooks_file, "configFile": config_file}
    try:
        hooks_text = _read(hooks_file)
        config_text = _read(config_file)
    except ValueError as exc:
        return CodexTrust("unknown", reason=str(exc), files=files)
    if hooks_text is None:
        return CodexTrust("not-installed", files=files)
    try:
        hooks_doc = json.loads(hooks_text)
    except ValueError:
        return CodexTrust("unknown", reason=f"{hooks_file} is not valid JSON", files=files)
    except RecursionError:
        return CodexTrust("unknown", reason=f"{hooks_file} nests too deep to read", files=files)
    try:
        config = parse_config(config_text or "")
    except TomlShapeError as exc:
        return CodexTrust("unknown", reason=f"{config_file} is not valid TOML ({exc})", files=files)
    hooks_path = os.path.join(codex_folder(env), "hooks.json")
    verdict = judge(hooks_doc, hooks_path, config)
    return CodexTrust(verdict.state, verdict.hooks, verdict.missing, verdict.reason, files)


def describe(trust: CodexTrust, hooks_shown: str, config_shown: str) -> str:
    """The one-line text after `codex:` in `bli-memory-mcp status`."""
    if trust.state == "not-installed":
        return f"not installed (no bli-memory hooks in {hooks_shown})"
    if trust.state == "off":
        return f"hooks turned off in {config_shown} ([features] hooks = false)"
    if trust.state == "unknown":
        return f"cannot tell ({trust.reason})"
    total = len(trust.hooks)
    missing = ""
    if trust.missing:
        missing = f"; {', '.join(trust.missing)} not registered: run `bli-memory-mcp install --host codex`"
    if trust.state == "trusted":
        return f"hooks trusted ({total} of {total}){missing}"
    details = [f"{trust.count('trusted')} of {total} trusted"]
    if trust.count("modified"):
        details.append(f"{trust.count('modified')} changed since trusted")
    if trust.count("disabled"):
        details.append(f"{trust.count('disabled')} turned off in /hooks")
    return f"hooks installed but not trusted ({'; '.join(details)}) — {TRUST_HINT}{missing}"

"""What each host's files should become: every file's change, planned before any is written.

- Claude Code: `mcpServers.bli-memory` in `~/.claude.json`; one matcher group per hook under
  `hooks.<Event>` plus `permissions.allow: mcp__bli-memory__search_memory` in
  `~/.claude/settings.json`.
- Codex: `[mcp_servers.bli-memory]` (`command`, `args`) in `~/.codex/config.toml`, and the three
  hooks in `~/.codex/hooks.json` (same shape as Claude's).

A JSON file's new text comes from `splice_json` (only the changed members are rewritten, in the
file's own style), the TOML's from `edit_codex_toml`, checked against tomllib where the interpreter
has it: an edit that would change more than our keys is refused. A file install created that holds
nothing but ours is deleted by uninstall. A file that cannot be changed safely raises InstallError
naming it, and then nothing is written anywhere.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Sequence
from typing import Any

from bli_memory.install.contract import HOOKS, PERMISSION, SERVER_ID, hook_command, is_our_handler
from bli_memory.install.files import FileChange, InstallError, Paths, backup_path, read_text, show_path
from bli_memory.install.jsonsplice import splice_json
from bli_memory.install.probe import hook_prefix
from bli_memory.install.tomledit import (
    TomlShapeError,
    edit_codex_toml,
    expected_after,
    remove_hook_states,
    toml_loads,
    without_hook_states,
)

# --------------------------------------------------------------------------- the JSON files


#: deeper than any host's config file nests (theirs are a handful of levels); a deeper file is refused
#: before it is parsed, as json and the splicer would both recurse past Python's limit on it.
JSON_MAX_DEPTH = 100
#: a JSON string (its brackets are text, not nesting; one left open runs to the end, so no text
#: makes the scan start over) or one bracket
_JSON_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


def json_depth(text: str) -> int:
    """How deep `text`'s arrays and objects nest, counted in one linear pass (strings skipped)."""
    depth = deepest = 0
    for found in _JSON_STRING_OR_BRACKET.finditer(text):
        mark = found.group()
        if mark in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif mark in ("]", "}"):
            depth -= 1
    return deepest


def load_json_object(path: str, text: str | None) -> dict[str, Any]:
    """The object a JSON file holds ({} for an absent or empty file); InstallError otherwise."""
    if text is None or not text.strip():
        return {}
    if json_depth(text) > JSON_MAX_DEPTH:
        raise InstallError(f"{show_path(path)} nests deeper than {JSON_MAX_DEPTH} levels; left it untouched")
    try:
        data = json.loads(text)
    except RecursionError:
        raise InstallError(f"{show_path(path)} nests too deep to read; left it untouched") from None
    except json.JSONDecodeError as exc:
        where = f" (line {exc.lineno}, column {exc.colno})"
        raise InstallError(f"{show_path(path)} is not valid JSON{where}; left it untouched") from None
    if not isinstance(data, dict):
        raise InstallError(f"{show_path(path)} does not hold a JSON object; left it untouched")
    return data


def _child(path: str, parent: dict[str, Any], key: str, kind: type, label: str) -> Any:
    value = parent.get(key)
    if value is not None and not isinstance(value, kind):
        raise InstallError(f"{show_path(path)}: {label} is not a JSON {kind.__name__}; left it untouched")
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
            f"{show_path(path)}: the edit would change more than our keys; left it untouched"
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
            if is_our_handler(handler, own)
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
            handlers = [h for h in g["hooks"] if not is_our_handler(h, own)]
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


# --------------------------------------------------------------------------- the TOML file


def plan_codex_toml(path: str, prefix: Sequence[str] | None, states: Sequence[str] = ()) -> FileChange:
    """`[mcp_servers.bli-memory]` in Codex's config.toml; prefix None removes it, and with it the
    `[hooks.state."…"]` tables of `states` (Codex's trust of our hooks, `codex_trust.our_state_keys`)."""
    old_text = read_text(path)
    if old_text is None and prefix is None:
        return FileChange(path, None, None)
    text = old_text or ""
    try:
        before = toml_loads(text)
        new_text, actions = edit_codex_toml(text, prefix)
        removed: list[str] = []
        if prefix is None and states:
            new_text, removed = remove_hook_states(new_text, states)
            actions += [f"remove Codex's trust of our hook {key}" for key in removed]
        after = toml_loads(new_text)
    except TomlShapeError as exc:
        raise InstallError(
            f"{show_path(path)} is not TOML this installer can edit ({exc}); left it untouched"
        ) from None
    if before is not None and after is not None:
        expected = expected_after(before, prefix)
        if prefix is None and "mcp_servers" in after and "mcp_servers" not in expected:
            expected["mcp_servers"] = {}
        if removed:
            expected, after = without_hook_states(expected, removed), without_hook_states(after, ())
        if after != expected:
            raise InstallError(
                f"{show_path(path)}: the edit would change more than our table; left it untouched"
            )
    if not actions:
        return FileChange(path, old_text, old_text)
    if not new_text.strip() and old_text is not None and not os.path.exists(backup_path(path)):
        return FileChange(path, old_text, None, actions)
    return FileChange(path, old_text, new_text, actions)


# --------------------------------------------------------------------------- every file


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
        states = _our_codex_states(paths) if prefix is None else []
        change = plan_codex_toml(paths.codex_config, server_prefix, states)
        changes.append(change if server_prefix is not None or prefix is None else _unchanged(change))
        changes.append(plan_hooks_json(paths.codex_hooks, prefix, codex=True, own=own))
    changes += _skill_changes(paths, prefix is not None, hosts)
    return changes


def _our_codex_states(paths: Paths) -> list[str]:
    """The hook-state keys Codex gives the hooks of ours that hooks.json holds now (before uninstall
    removes them): their trust goes with them, and no other hook's."""
    from bli_memory.install.codex_trust import our_state_keys

    return our_state_keys(read_text(paths.codex_hooks), paths.codex_state_hooks or paths.codex_hooks)


def _skill_changes(paths: Paths, install: bool, hosts: Sequence[str]) -> list[FileChange]:
    """The bli-memory skill in each host's skills folder (`install.skill`), after the hosts' files."""
    from bli_memory.install.skill import plan_skill

    wanted = {"claude": paths.claude_skill, "codex": paths.codex_skill}
    return [
        plan_skill(wanted[host], install) for host in ("claude", "codex") if host in hosts and wanted[host]
    ]


def _unchanged(change: FileChange) -> FileChange:
    return FileChange(change.path, change.old_text, change.old_text)

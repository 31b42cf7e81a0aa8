"""Is the bli-memory plugin installed and enabled in Claude Code or Codex? Read from the hosts' own files.

The plugin and `install` are two routes to the same three hooks. Where both are present every hook
would run twice, so `install` leaves a host whose plugin is enabled alone (unless `--force`), and
`status` says which route is active for each host and warns when both are. Neither command runs a
host to find out: each host records its plugins in files, read here read-only.

- Claude Code (`claude plugin install bli-memory@<marketplace>`, user scope): the key is listed in
  `~/.claude/plugins/installed_plugins.json` (`plugins."<name>@<marketplace>"`, one entry per scope
  with `installPath` and `version`) and enabled in `~/.claude/settings.json`
  (`enabledPlugins."<name>@<marketplace>": true`; `claude plugin disable` writes false). Both under
  `$CLAUDE_CONFIG_DIR` when that is set.
- Codex (`codex plugin add bli-memory@<marketplace>`): `[plugins."<name>@<marketplace>"]` with
  `enabled = true` in `$CODEX_HOME/config.toml`, and the copy Codex runs in
  `$CODEX_HOME/plugins/cache/<marketplace>/<name>/<version>/`. With several version folders there
  (a leftover beside the new one) Codex runs `local` if present, else the highest by semantic-version
  order (0.10.0 after 0.9.0; names that are not versions by bytes): `codex_active_version`, the
  same rule the plugin's MCP server command (`.codex-mcp.json`) applies in sh.

The plugin's Codex hooks are trusted like any other (`codex_trust`), under keys
`<name>@<marketplace>:hooks/codex-hooks.json:<event>:<group>:<handler>`. Codex stores two hashes per
plugin hook: `trusted_hash`, the hook's identity (its command as written, with `${PLUGIN_ROOT}`),
computed here as for install's hooks, and `trusted_content_hash`, a fingerprint of the whole plugin
folder that changes with every plugin upgrade and is not recomputed here: after an upgrade Codex asks
for the trust again, which `status` cannot see and says.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bli_memory.install.files import Paths

if TYPE_CHECKING:
    from bli_memory.install.codex_trust import CodexConfig

PLUGIN_NAME = "bli-memory"
#: the plugin's Codex hooks file, relative to its root (`.codex-plugin/plugin.json` names it)
CODEX_PLUGIN_HOOKS = "hooks/codex-hooks.json"
HOSTS = ("claude", "codex")
#: the hosts as a person names them
HOST_NAMES = {"claude": "Claude Code", "codex": "Codex"}
#: the version folder Codex prefers to any other: a plugin whose manifest names no version
CODEX_LOCAL_VERSION = "local"
#: what Codex accepts as a version folder's name
_VERSION_NAME = re.compile(r"[0-9A-Za-z_.+-]+")
_SEMVER = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?"
)


@dataclass(frozen=True)
class PluginState:
    """The plugin in one host: `key` is `bli-memory@<marketplace>` when installed, else None."""

    host: str
    key: str | None = None
    enabled: bool = False
    version: str | None = None
    root: str | None = None
    reason: str | None = None  # a host file that could not be read

    @property
    def active(self) -> bool:
        return self.key is not None and self.enabled

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"installed": self.key is not None, "enabled": self.active}
        if self.key:
            data.update(key=self.key, version=self.version, root=self.root)
        if self.reason:
            data["reason"] = self.reason
        return data


def _is_ours(key: object) -> bool:
    return isinstance(key, str) and key.partition("@")[0] == PLUGIN_NAME and "@" in key


def _read_json(path: str) -> Any:
    """The parsed file, None when absent; ValueError (one line) when unreadable."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        raise ValueError(f"cannot read {path}") from None


def _read_codex_config(path: str) -> CodexConfig | None:
    """Codex's parsed config.toml, None when absent; ValueError (one line) when unreadable."""
    from bli_memory.install.codex_trust import parse_config
    from bli_memory.install.tomledit import TomlShapeError

    try:
        with open(path, encoding="utf-8") as handle:
            return parse_config(handle.read())
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, TomlShapeError):
        raise ValueError(f"cannot read {path}") from None


def claude_plugin(env: Mapping[str, str]) -> PluginState:
    """The plugin as Claude Code recorded it (user scope)."""
    settings_path = Paths.from_env(env).claude_settings
    installed_path = os.path.join(os.path.dirname(settings_path), "plugins", "installed_plugins.json")
    try:
        installed = _read_json(installed_path)
        settings = _read_json(settings_path)
    except ValueError as exc:
        return PluginState("claude", reason=str(exc))
    plugins = installed.get("plugins") if isinstance(installed, dict) else None
    enabled_map = settings.get("enabledPlugins") if isinstance(settings, dict) else None
    enabled_map = enabled_map if isinstance(enabled_map, dict) else {}
    found: PluginState | None = None
    for key, entries in plugins.items() if isinstance(plugins, dict) else ():
        if not _is_ours(key) or not isinstance(entries, list):
            continue
        user = [
            entry for entry in entries if isinstance(entry, dict) and entry.get("scope", "user") == "user"
        ]
        if not user:
            continue
        entry = user[0]
        state = PluginState(
            "claude",
            key=key,
            enabled=enabled_map.get(key) is True,
            version=entry.get("version") if isinstance(entry.get("version"), str) else None,
            root=entry.get("installPath") if isinstance(entry.get("installPath"), str) else None,
        )
        if found is None or (state.enabled and not found.enabled):
            found = state
    return found or PluginState("claude")


def _order(left: Any, right: Any) -> int:
    return int(left > right) - int(left < right)


def _prerelease_order(left: str, right: str) -> int:
    """Semantic-version precedence of two pre-release tags ("" is a release, above any tag)."""
    if not left or not right:
        return _order(not left, not right)
    lefts, rights = left.split("."), right.split(".")
    for a, b in zip(lefts, rights, strict=False):
        if a.isdigit() and b.isdigit():
            found = _order(int(a), int(b))
        elif a.isdigit() or b.isdigit():
            found = -1 if a.isdigit() else 1  # numeric identifiers sort below alphanumeric ones
        else:
            found = _order(a, b)
        if found:
            return found
    return _order(len(lefts), len(rights))


def codex_version_order(left: str, right: str) -> int:
    """-1, 0 or 1 as Codex orders two version folders: `local` above all, two semantic versions by
    precedence (build metadata ignored), anything else by bytes."""
    if CODEX_LOCAL_VERSION in (left, right):
        return _order(left == CODEX_LOCAL_VERSION, right == CODEX_LOCAL_VERSION)
    a, b = _SEMVER.fullmatch(left), _SEMVER.fullmatch(right)
    if a is None or b is None:
        return _order(left.encode(), right.encode())
    core = _order(tuple(int(a[i]) for i in (1, 2, 3)), tuple(int(b[i]) for i in (1, 2, 3)))
    return core or _prerelease_order(a[4] or "", b[4] or "")


def codex_active_version(names: Iterable[str]) -> str | None:
    """The version folder Codex runs among `names`, None when none is a valid one: lexical order
    would take 0.9.0 over 0.10.0, and hooks and MCP server must run the same copy."""
    best: str | None = None
    for name in sorted(names):
        if not _VERSION_NAME.fullmatch(name) or name in (".", ".."):
            continue
        if best is None or codex_version_order(name, best) > 0:
            best = name
    return best


def _preferred(state: PluginState, found: PluginState) -> bool:
    """Whether `state` is the Codex copy to report rather than `found`: an enabled one over a
    disabled one, and among enabled ones (several marketplaces) the highest version, the copy the
    plugin's MCP server command starts."""
    if state.enabled != found.enabled:
        return state.enabled
    return state.enabled and codex_version_order(state.version or "", found.version or "") > 0


def codex_plugin(env: Mapping[str, str]) -> PluginState:
    """The plugin as Codex recorded it: its config table and the cached copy it runs."""
    return _codex_plugin_and_config(env)[0]


def _codex_plugin_and_config(env: Mapping[str, str]) -> tuple[PluginState, CodexConfig | None]:
    """The plugin's state and Codex's config.toml it was read from (None when absent or unreadable),
    so that its hooks' trust is judged on the same reading of the file."""
    paths = Paths.from_env(env)
    codex_dir = os.path.dirname(paths.codex_config)
    try:
        config = _read_codex_config(paths.codex_config)
    except ValueError as exc:
        return PluginState("codex", reason=str(exc)), None
    if config is None:
        return PluginState("codex"), None
    found: PluginState | None = None
    for key in sorted(config.plugins):  # marketplaces in the order the server's command globs them
        table = config.plugins[key]
        if not _is_ours(key):
            continue
        marketplace = key.partition("@")[2]
        base = os.path.join(codex_dir, "plugins", "cache", marketplace, PLUGIN_NAME)
        try:
            version = codex_active_version(
                name for name in os.listdir(base) if os.path.isdir(os.path.join(base, name))
            )
        except OSError:
            version = None
        if version is None:
            continue  # configured but not in Codex's cache: Codex reports it "not installed"
        state = PluginState(
            "codex",
            key=key,
            enabled=table.get("enabled", True) is not False,
            version=version,
            root=os.path.join(base, version),
        )
        if found is None or _preferred(state, found):
            found = state
    return found or PluginState("codex"), config


def plugin_state(host: str, env: Mapping[str, str]) -> PluginState:
    return claude_plugin(env) if host == "claude" else codex_plugin(env)


# --------------------------------------------------------------------------- the plugin's Codex hook trust


@dataclass(frozen=True)
class PluginTrust:
    trusted: int
    total: int
    modified: int = 0
    disabled: int = 0


def codex_plugin_trust(state: PluginState, config: CodexConfig) -> PluginTrust | None:
    """How many of the plugin's Codex hooks carry the person's trust for their current identity, as
    `config` (Codex's config.toml) records it.

    None when the plugin is not installed or its hooks file cannot be read. A hook counts as trusted
    when Codex's `trusted_hash` equals the hook's identity hash; the folder fingerprint beside it is
    Codex's own check (see the module's docstring).
    """
    from bli_memory.install.codex_trust import EVENT_LABELS, hook_hash, hook_status

    if state.key is None or state.root is None:
        return None
    try:
        hooks_doc = _read_json(os.path.join(state.root, CODEX_PLUGIN_HOOKS))
    except ValueError:
        return None
    events = hooks_doc.get("hooks") if isinstance(hooks_doc, dict) else None
    statuses: list[str] = []
    for event, label in EVENT_LABELS.items():
        groups = events.get(event) if isinstance(events, dict) else None
        for group_index, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler_index, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if not isinstance(handler, dict) or handler.get("type") != "command":
                    continue
                key = f"{state.key}:{CODEX_PLUGIN_HOOKS}:{label}:{group_index}:{handler_index}"
                current = hook_hash(event, group.get("matcher"), handler)
                statuses.append(hook_status(config.states.get(key), current))
    if not statuses:
        return None
    return PluginTrust(
        trusted=statuses.count("trusted"),
        total=len(statuses),
        modified=statuses.count("modified"),
        disabled=statuses.count("disabled"),
    )


# --------------------------------------------------------------------------- which route is active


def install_hooks_present(host: str, env: Mapping[str, str]) -> bool:
    """Whether install's hooks are registered for `host` (Claude's settings.json, Codex's hooks.json)."""
    from bli_memory.install.codex_trust import our_handlers

    paths = Paths.from_env(env)
    try:
        doc = _read_json(paths.claude_settings if host == "claude" else paths.codex_hooks)
    except ValueError:
        return False
    return bool(our_handlers(doc))


def hook_routes(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """For each host, where its hooks come from: `route` is "plugin", "install", "both" (every hook
    runs twice) or "none", with the plugin's state and, for Codex, its hooks' trust."""
    routes: dict[str, dict[str, Any]] = {}
    for host in HOSTS:
        codex_config = None
        if host == "codex":
            state, codex_config = _codex_plugin_and_config(env)
        else:
            state = plugin_state(host, env)
        install = install_hooks_present(host, env)
        routes_by = {(True, True): "both", (True, False): "plugin", (False, True): "install"}
        route = routes_by.get((state.active, install), "none")
        plugin = state.as_json()
        if codex_config is not None:
            trust = codex_plugin_trust(state, codex_config)
            if trust is not None:
                plugin["hooks"] = {
                    "trusted": trust.trusted,
                    "total": trust.total,
                    "modified": trust.modified,
                    "disabled": trust.disabled,
                }
        routes[host] = {"route": route, "install": install, "plugin": plugin}
    return routes

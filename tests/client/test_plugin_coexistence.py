"""`install`, `uninstall` and `status` beside the bli-memory plugin, with the real Claude Code and Codex CLIs.

The hosts record a plugin in their own files (`bli_memory.install.plugin_state`); these tests let the
real CLIs write them (`claude plugin marketplace add` / `plugin install`, `codex plugin marketplace
add` / `plugin add`) under a temporary HOME, offline, then hold the rules: install leaves a host with
an enabled plugin alone unless `--force`; status names the route of each host's hooks and warns when
both are active; uninstall leaves the plugin installed and enabled; removing the plugin leaves
install's entries. The Claude plugin here is a minimal one of the same name (its contents are the
plugin tests' business; what matters is how Claude Code records it); the Codex one is this
repository's, with the stand-in launcher.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bli_memory.install import codex_trust
from tests.client.helpers import (
    codex_hooks,
    codex_run,
    plugin_marketplace,
    run_in_home,
    trust_like_codex,
)
from tests.helpers import REPO

CLAUDE_CLI_ENV = "BLI_MEMORY_CLAUDE_CLI"
DEFAULT_CLAUDE_CLI = REPO / ".venv" / "claude-code" / "node_modules" / ".bin" / "claude"
CLAUDE_RUN_TIMEOUT_S = 60.0
KEY = "bli-memory@bli-memory"


def claude_cli() -> str:
    path = os.environ.get(CLAUDE_CLI_ENV) or str(DEFAULT_CLAUDE_CLI)
    if not os.access(path, os.X_OK):
        pytest.fail(f"no Claude Code CLI at {path}: run scripts/test or set {CLAUDE_CLI_ENV}")
    return path


def claude(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One `claude plugin …` command under `home`, with no network beyond a closed loopback port."""
    nowhere = "http://127.0.0.1:9"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HTTP_PROXY": nowhere,
        "HTTPS_PROXY": nowhere,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    return subprocess.run(
        [claude_cli(), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=str(home),
        timeout=CLAUDE_RUN_TIMEOUT_S,
    )


def claude_marketplace(folder: Path) -> Path:
    """A marketplace `bli-memory` with one plugin `bli-memory` (version 0.1.0) and nothing in it."""
    (folder / ".claude-plugin").mkdir(parents=True)
    (folder / ".claude-plugin" / "marketplace.json").write_text(
        json.dumps(
            {
                "name": "bli-memory",
                "owner": {"name": "bli-memory tests"},
                "plugins": [
                    {"name": "bli-memory", "source": "./plugins/bli-memory", "description": "memory"}
                ],
            }
        )
    )
    manifest = folder / "plugins" / "bli-memory" / ".claude-plugin" / "plugin.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"name": "bli-memory", "version": "0.1.0", "description": "memory"}))
    return folder


def cli(home: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    extra = {"BLI_MEMORY_DAEMON": "0"}
    if path is not None:
        extra["PATH"] = path
    result = run_in_home(home, *args, extra_env=extra)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def status_of(home: Path, **kwargs: Any) -> tuple[dict[str, str], dict[str, Any]]:
    text = cli(home, "status", **kwargs).stdout
    lines = {line.split(":", 1)[0]: line for line in text.splitlines() if ":" in line}
    return lines, json.loads(cli(home, "status", "--json", **kwargs).stdout)


def our_claude_hooks(home: Path) -> int:
    path = home / ".claude" / "settings.json"
    return len(codex_trust.our_handlers(json.loads(path.read_text()))) if path.is_file() else 0


# --------------------------------------------------------------------------- Claude Code


def add_claude_plugin(home: Path, folder: Path) -> None:
    assert claude(home, "plugin", "marketplace", "add", str(claude_marketplace(folder))).returncode == 0
    assert claude(home, "plugin", "install", KEY).returncode == 0


def test_claude_install_leaves_an_enabled_plugin_alone_unless_forced(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    add_claude_plugin(home, tmp_path / "m")

    lines, data = status_of(home)
    assert lines["claude"] == f"claude:  hooks from the plugin {KEY} 0.1.0"
    assert data["hooks"]["claude"]["route"] == "plugin"

    skipped = cli(home, "install", "--host", "claude")
    assert skipped.returncode == 0, skipped.stderr
    assert skipped.stdout.startswith(f"Claude Code: the bli-memory plugin ({KEY}) is installed and enabled")
    assert our_claude_hooks(home) == 0 and not (home / ".claude" / "skills").exists()
    assert "mcpServers" not in json.loads((home / ".claude.json").read_text())

    forced = cli(home, "install", "--host", "claude", "--force")
    assert forced.returncode == 0, forced.stderr
    assert our_claude_hooks(home) == 3
    lines, data = status_of(home)
    assert data["hooks"]["claude"]["route"] == "both"
    assert lines["claude"] == (
        f"claude:  hooks from the plugin {KEY} and from install (~/.claude/settings.json): every hook runs "
        "twice — keep one: `bli-memory-mcp uninstall --host claude` (the plugin stays)"
    )


def test_claude_uninstall_keeps_the_plugin_and_removing_the_plugin_keeps_install(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    add_claude_plugin(home, tmp_path / "m")
    assert cli(home, "install", "--host", "claude", "--force").returncode == 0

    removed = cli(home, "uninstall", "--host", "claude")
    assert removed.returncode == 0, removed.stderr
    assert f"Claude Code: the bli-memory plugin ({KEY}) stays installed" in removed.stdout
    assert our_claude_hooks(home) == 0
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["enabledPlugins"] == {KEY: True}
    listed = claude(home, "plugin", "list").stdout
    assert re.search(rf"{KEY}\n(.*\n)*?\s*Status: ✔ enabled", listed), listed

    assert cli(home, "install", "--host", "claude", "--force").returncode == 0
    assert claude(home, "plugin", "uninstall", KEY).returncode == 0
    assert our_claude_hooks(home) == 3  # the plugin's removal left install's hooks
    assert "bli-memory" in json.loads((home / ".claude.json").read_text())["mcpServers"]
    lines, data = status_of(home)
    assert data["hooks"]["claude"]["route"] == "install"
    assert lines["claude"] == "claude:  hooks from install (~/.claude/settings.json)"


def test_a_disabled_claude_plugin_does_not_hold_install_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    add_claude_plugin(home, tmp_path / "m")
    assert claude(home, "plugin", "disable", KEY).returncode == 0
    installed = cli(home, "install", "--host", "claude")
    assert installed.returncode == 0 and "installed and enabled" not in installed.stdout
    assert our_claude_hooks(home) == 3
    lines, _ = status_of(home)
    assert lines["claude"] == (
        f"claude:  hooks from install (~/.claude/settings.json); the plugin {KEY} is installed but disabled"
    )


# --------------------------------------------------------------------------- Codex


def add_codex_plugin(home: Path, folder: Path) -> None:
    assert codex_run(home, "plugin", "marketplace", "add", str(plugin_marketplace(folder))).returncode == 0
    assert codex_run(home, "plugin", "add", KEY).returncode == 0


def test_codex_install_leaves_an_enabled_plugin_alone_unless_forced(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    add_codex_plugin(home, tmp_path / "m")
    skipped = cli(home, "install", "--host", "codex")
    assert skipped.returncode == 0, skipped.stderr
    assert skipped.stdout.startswith(f"Codex: the bli-memory plugin ({KEY}) is installed and enabled")
    assert not (home / ".codex" / "hooks.json").exists()
    assert "mcp_servers" not in (home / ".codex" / "config.toml").read_text()

    assert cli(home, "install", "--host", "codex", "--force").returncode == 0
    lines, data = status_of(home)
    assert data["hooks"]["codex"]["route"] == "both"
    assert lines["codex"].startswith(
        f"codex:   hooks from the plugin {KEY} and from install (~/.codex/hooks.json)"
    )
    sources = sorted(hook["source"] for hook in codex_hooks(home))
    assert sources == ["plugin"] * 3 + ["user"] * 3  # what Codex would run: each hook twice


def test_codex_uninstall_keeps_the_plugin_and_its_trust_and_removing_the_plugin_keeps_install(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    add_codex_plugin(home, tmp_path / "m")
    assert cli(home, "install", "--host", "codex", "--force").returncode == 0
    trust_like_codex(home, codex_hooks(home))  # the plugin's three and install's three

    removed = cli(home, "uninstall", "--host", "codex")
    assert removed.returncode == 0, removed.stderr
    assert f"Codex: the bli-memory plugin ({KEY}) stays installed" in removed.stdout
    config = codex_trust.parse_config((home / ".codex" / "config.toml").read_text())
    assert sorted(config.states) == sorted(
        f"{KEY}:hooks/codex-hooks.json:{label}:0:0"
        for label in ("session_start", "user_prompt_submit", "stop")
    )
    assert config.plugins == {KEY: {"enabled": True}}
    assert [(hook["source"], hook["trustStatus"]) for hook in codex_hooks(home)] == [
        ("plugin", "trusted")
    ] * 3
    listed = codex_run(home, "plugin", "list").stdout
    assert re.search(rf"^{KEY}\s+installed, enabled\s", listed, re.M), listed

    assert cli(home, "install", "--host", "codex", "--force").returncode == 0
    gone = codex_run(home, "plugin", "remove", KEY)
    assert gone.returncode == 0, gone.stderr
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())
    assert len(codex_trust.our_handlers(hooks)) == 3
    assert "[mcp_servers.bli-memory]" in (home / ".codex" / "config.toml").read_text()
    lines, data = status_of(home)
    assert data["hooks"]["codex"]["route"] == "install"
    assert lines["codex"] == (
        "codex:   hooks installed but not trusted (0 of 3 trusted) — run codex, open /hooks and trust them"
    )


# --------------------------------------------------------------------------- the unpaired plugin user


def test_status_tells_an_unpaired_plugin_user_how_to_get_a_door(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    add_codex_plugin(home, tmp_path / "m")
    result = cli(home, "status", path="/usr/bin:/bin")  # a plugin user: no bli-memory-mcp on PATH
    assert result.returncode == 1
    launcher = (
        home / ".codex" / "plugins" / "cache" / "bli-memory" / "bli-memory" / "0.1.0" / "bin" / "bli-memory"
    )
    (paired,) = [line for line in result.stdout.splitlines() if line.startswith("paired:")]
    assert paired == (
        "paired:  no — for a door on this machine run `scripts/quickstart` in a clone of bli-memory "
        f"(it pairs you), or log in to your team's: `{launcher} login --url URL --token-stdin`"
    )
    (skill,) = [line for line in result.stdout.splitlines() if line.startswith("skill:")]
    assert skill == "skill:   from the plugin for Codex (`bli-memory-mcp install` writes it)"

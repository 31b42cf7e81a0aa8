"""The Codex plugin: its files, and the real Codex CLI adding, listing, trusting and running it.

`.agents/plugins/marketplace.json` (the marketplace file Codex reads first) names the plugin folder
`plugins/bli-memory/`, whose `.codex-plugin/plugin.json` points Codex at `hooks/codex-hooks.json` (the
three hooks with `--host codex`, through `${PLUGIN_ROOT}/bin/bli-memory`) and `.codex-mcp.json` (the
MCP server). The end-to-end tests copy the marketplace into a temporary folder with a stand-in for the
launcher (`tests.client.helpers.STAND_IN_LAUNCHER`: this checkout's package under this venv's
python), run the real Codex CLI (`$BLI_MEMORY_CODEX_CLI`, pinned in scripts/test) under a temporary
HOME, offline: `codex exec` against a loopback model API that refuses every request.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bli_memory import __version__
from bli_memory.install.contract import HOOKS
from bli_memory.settings import write_session
from tests.client.helpers import (
    AppServer,
    RefusingModelApi,
    codex_exec,
    codex_hooks,
    codex_run,
    hook_runs,
    plugin_marketplace,
    run_in_home,
    trust_like_codex,
)
from tests.helpers import REPO

PLUGIN = REPO / "plugins" / "bli-memory"
KEY = "bli-memory@bli-memory"


@pytest.fixture
def model_api() -> Iterator[RefusingModelApi]:
    api = RefusingModelApi()
    yield api
    api.close()


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- the files


def test_the_codex_manifest_names_the_hooks_and_server_files_it_carries() -> None:
    manifest = load(PLUGIN / ".codex-plugin" / "plugin.json")
    assert manifest["name"] == "bli-memory" and manifest["version"] == __version__
    for field in ("hooks", "mcpServers"):
        assert manifest[field].startswith("./") and (PLUGIN / manifest[field]).is_file(), field
    # its own hooks file: Codex would otherwise load hooks/hooks.json, whose commands are Claude's
    assert manifest["hooks"] == "./hooks/codex-hooks.json"
    assert manifest["interface"]["displayName"] == "bli-memory"


def test_the_marketplace_codex_reads_points_at_the_plugin_folder() -> None:
    marketplace = load(REPO / ".agents" / "plugins" / "marketplace.json")
    (entry,) = marketplace["plugins"]
    assert marketplace["name"] == "bli-memory" and entry["name"] == "bli-memory"
    assert entry["source"] == {"source": "local", "path": "./plugins/bli-memory"}
    assert (REPO / entry["source"]["path"] / ".codex-plugin" / "plugin.json").is_file()


def test_the_plugin_hooks_are_installs_three_through_the_launcher_with_the_codex_argument() -> None:
    events = load(PLUGIN / "hooks" / "codex-hooks.json")["hooks"]
    assert list(events) == [spec.event for spec in HOOKS]
    for spec in HOOKS:
        ((handler,),) = [group["hooks"] for group in events[spec.event]]
        assert handler == {
            "type": "command",
            "command": f'"${{PLUGIN_ROOT}}/bin/bli-memory" hook {spec.subcommand} --host codex',
            "timeout": spec.timeout_s,
        }


def test_the_mcp_server_runs_the_launcher_of_the_installed_copy_in_the_project_folder() -> None:
    (server,) = load(PLUGIN / ".codex-mcp.json")["mcpServers"].values()
    # Codex starts a plugin's MCP server without ${PLUGIN_ROOT} (neither expanded nor exported) and,
    # given a cwd, in the plugin folder rather than the project: the command finds the installed copy
    assert server["command"] == "sh" and "cwd" not in server
    assert "/plugins/cache/*/bli-memory/*/" in server["args"][1]
    assert server["env_vars"] == ["CODEX_HOME"]
    # where a python3 without the mcp package gets its venv built, as ${CLAUDE_PLUGIN_DATA} under Claude Code
    assert (
        'BLI_MEMORY_PLUGIN_DATA="${BLI_MEMORY_PLUGIN_DATA:-$home/plugins/data/bli-memory}"'
        in server["args"][1]
    )


# --------------------------------------------------------------------------- the real Codex CLI


def add_plugin(home: Path, marketplace: Path) -> None:
    added = codex_run(home, "plugin", "marketplace", "add", str(marketplace))
    assert added.returncode == 0, added.stderr
    assert "Added marketplace `bli-memory`" in added.stdout
    listed = codex_run(home, "plugin", "list")
    assert re.search(rf"^{KEY}\s+not installed\s", listed.stdout, re.M), listed.stdout
    installed = codex_run(home, "plugin", "add", KEY)
    assert installed.returncode == 0, installed.stderr


def codex_line(home: Path) -> tuple[str, dict[str, Any]]:
    text = run_in_home(home, "status", extra_env={"BLI_MEMORY_DAEMON": "0"})
    data = run_in_home(home, "status", "--json", extra_env={"BLI_MEMORY_DAEMON": "0"})
    assert "Traceback" not in text.stderr + data.stderr
    (line,) = [line for line in text.stdout.splitlines() if line.startswith("codex:")]
    return line, json.loads(data.stdout)["hooks"]["codex"]


def test_codex_lists_the_plugin_and_runs_its_hooks_once_trusted(
    tmp_path: Path, model_api: RefusingModelApi
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    add_plugin(home, plugin_marketplace(tmp_path / "marketplace"))
    listed = codex_run(home, "plugin", "list")
    assert re.search(rf"^{KEY}\s+installed, enabled\s+{re.escape(__version__)}\s", listed.stdout, re.M)

    line, route = codex_line(home)
    assert route["route"] == "plugin" and route["plugin"]["hooks"]["trusted"] == 0
    assert line == (
        f"codex:   hooks from the plugin {KEY} {__version__}, not trusted (0 of 3 trusted)"
        " — run codex, open /hooks and trust them"
    )

    hooks = codex_hooks(home)
    root = str(home / ".codex" / "plugins" / "cache" / "bli-memory" / "bli-memory" / __version__)
    assert [(hook["source"], hook["pluginId"], hook["trustStatus"]) for hook in hooks] == [
        ("plugin", KEY, "untrusted")
    ] * 3
    assert [hook["command"] for hook in hooks] == [
        f'"{root}/bin/bli-memory" hook {spec.subcommand} --host codex' for spec in HOOKS
    ]
    untrusted = codex_exec(home, model_api)
    assert model_api.requests, untrusted.stderr
    assert hook_runs(home) == {}, untrusted.stderr

    trust_like_codex(home, hooks)
    assert [hook["trustStatus"] for hook in codex_hooks(home)] == ["trusted"] * 3
    line, route = codex_line(home)
    assert line == (
        f"codex:   hooks from the plugin {KEY} {__version__}, trusted (3 of 3; "
        "Codex asks again after each plugin upgrade)"
    )
    trusted = codex_exec(home, model_api)
    assert hook_runs(home) == {"session-start": 1, "prompt": 1}, trusted.stderr


@pytest.mark.parametrize("elsewhere", [False, True], ids=["home-codex", "codex-home"])
def test_codex_starts_the_plugins_mcp_server_with_its_tools(tmp_path: Path, elsewhere: bool) -> None:
    home = tmp_path / "home"
    home.mkdir()
    codex_home = tmp_path / "codex-home" if elsewhere else None
    if codex_home is not None:
        codex_home.mkdir()
    # the server starts only on a paired machine; listing its tools never reaches the door
    write_session("http://127.0.0.1:9", "bli_test_token", env={"HOME": str(home)})
    added = codex_run(
        home, "plugin", "marketplace", "add", str(plugin_marketplace(tmp_path / "m")), codex_home=codex_home
    )
    assert added.returncode == 0, added.stderr
    assert codex_run(home, "plugin", "add", KEY, codex_home=codex_home).returncode == 0
    server = AppServer(home, codex_home)
    try:
        servers = server.call("mcpServerStatus/list", {})["data"]
    finally:
        server.close()
    (ours,) = [entry for entry in servers if entry["name"] == "bli-memory"]
    assert ours["pluginId"] == KEY and ours.get("toolsError") is None, ours.get("toolsError")
    assert "search_memory" in ours["tools"]
    # with $CODEX_HOME elsewhere there is no ~/.codex: the server found the copy through the variable
    assert (home / ".codex").exists() is not elsewhere
    env = {"BLI_MEMORY_DAEMON": "0", **({"CODEX_HOME": str(codex_home)} if codex_home else {})}
    status = json.loads(run_in_home(home, "status", "--json", extra_env=env).stdout)
    assert status["hooks"]["codex"]["route"] == "plugin"


def test_an_upgrade_runs_the_new_copy_and_codex_asks_for_the_trust_again(
    tmp_path: Path, model_api: RefusingModelApi
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    marketplace = plugin_marketplace(tmp_path / "marketplace")
    add_plugin(home, marketplace)
    trust_like_codex(home, codex_hooks(home))

    plugin_marketplace(marketplace, version="9.9.9")
    upgraded = codex_run(home, "plugin", "add", KEY)
    assert upgraded.returncode == 0, upgraded.stderr
    cache = home / ".codex" / "plugins" / "cache" / "bli-memory" / "bli-memory"
    assert sorted(path.name for path in cache.iterdir()) == ["9.9.9"]  # nothing refers to the old folder
    hooks = codex_hooks(home)
    assert all("/9.9.9/bin/bli-memory" in hook["command"] for hook in hooks)
    assert [hook["trustStatus"] for hook in hooks] == ["modified"] * 3  # Codex fingerprints the folder
    line, route = codex_line(home)
    assert route["plugin"]["version"] == "9.9.9" and "Codex asks again after each plugin upgrade" in line

    trust_like_codex(home, hooks)
    ran = codex_exec(home, model_api)
    assert hook_runs(home) == {"session-start": 1, "prompt": 1}, ran.stderr


#: the launcher of a copy Codex does not run: were the MCP server started from it, it would fail
WRONG_COPY = "#!/bin/sh\necho 'bli-memory: started from a copy Codex does not run' >&2\nexit 3\n"


def test_the_mcp_server_runs_the_copy_codex_runs_the_hooks_from(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    write_session("http://127.0.0.1:9", "bli_test_token", env={"HOME": str(home)})
    add_plugin(home, plugin_marketplace(tmp_path / "marketplace", version="0.10.0"))
    cache = home / ".codex" / "plugins" / "cache"
    ours = cache / "bli-memory" / "bli-memory" / "0.10.0"
    # a leftover 0.9.0 beside it, last in a glob's (lexical) order
    shutil.copytree(ours, ours.parent / "0.9.0")
    (ours.parent / "0.9.0" / "bin" / "bli-memory").write_text(WRONG_COPY)
    # a second marketplace's copy, higher and globbed last, added and then disabled
    team = plugin_marketplace(tmp_path / "team", version="1.0.0")
    listing = team / ".agents" / "plugins" / "marketplace.json"
    listing.write_text(json.dumps({**load(listing), "name": "zz-team"}))
    (team / "plugins" / "bli-memory" / "bin" / "bli-memory").write_text(WRONG_COPY)
    assert codex_run(home, "plugin", "marketplace", "add", str(team)).returncode == 0
    assert codex_run(home, "plugin", "add", "bli-memory@zz-team").returncode == 0
    assert (cache / "zz-team" / "bli-memory" / "1.0.0" / "bin" / "bli-memory").read_text() == WRONG_COPY
    server = AppServer(home)
    try:
        edit = {"keyPath": 'plugins."bli-memory@zz-team".enabled', "value": False, "mergeStrategy": "replace"}
        assert server.call("config/batchWrite", {"edits": [edit], "reloadUserConfig": True})["status"] == "ok"
    finally:
        server.close()

    # Codex runs the hooks from 0.10.0 (semantic-version order, the enabled marketplace) ...
    hooks = [hook for hook in codex_hooks(home) if hook["pluginId"] == KEY]
    assert [hook["command"] for hook in hooks] == [
        f'"{ours}/bin/bli-memory" hook {spec.subcommand} --host codex' for spec in HOOKS
    ]
    # ... and the MCP server Codex starts comes from the same copy: from another it would fail
    server = AppServer(home)
    try:
        servers = server.call("mcpServerStatus/list", {})["data"]
    finally:
        server.close()
    (found,) = [entry for entry in servers if entry["name"] == "bli-memory"]
    assert found["pluginId"] == KEY and found.get("toolsError") is None, found.get("toolsError")
    assert "search_memory" in found["tools"]
    status = json.loads(run_in_home(home, "status", "--json", extra_env={"BLI_MEMORY_DAEMON": "0"}).stdout)
    assert status["hooks"]["codex"]["plugin"]["root"] == str(ours)

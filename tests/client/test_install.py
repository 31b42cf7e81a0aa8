"""Registration with Claude Code and Codex, driven as a person runs it: a subprocess on a temporary HOME."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bli_memory.install import contract, jsonsplice, probe, tomledit
from tests.client.helpers import run_in_home
from tests.helpers import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # the tests read TOML back; on 3.10 the dev extra's tomli stands in
    import tomli as tomllib  # type: ignore[import-not-found]

HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")
TIMEOUTS_S = {"SessionStart": 30, "UserPromptSubmit": 5, "Stop": 30}

#: a Codex config with every shape that could fool a line editor: comments, a multi-line string that
#: contains our header, a multi-line array with brackets in strings, sub-tables, quoted keys.
CODEX_CONFIG = '''\
# my codex settings
model = "gpt-5"
notes = """
[mcp_servers.bli-memory]
command = "not a table, a string"
"""

[features]
hooks = true

[mcp_servers.other]
command = "/usr/bin/other"  # trailing comment
args = [
  "--flag=[x]",
  'lit]eral',
]

# comment that belongs to the next table
[mcp_servers.other.env]
"QUOTED.KEY" = "v"
'''

CLAUDE_JSON: dict[str, Any] = {
    "numStartups": 42,
    "theme": "dark",
    "oauthAccount": {"emailAddress": "a@example.com"},
    "mcpServers": {"other": {"type": "stdio", "command": "/usr/bin/other", "args": ["x"], "env": {"K": "v"}}},
    "projects": {"/w/p": {"mcpServers": {"bli-memory": {"command": "project-scoped, not ours"}}}},
    "unicode": "żółw ✓",
}

CLAUDE_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "/usr/local/bin/notify done", "timeout": 10}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}],
    },
    "permissions": {"allow": ["Bash(ls:*)"], "deny": ["Read(./.env)"]},
}


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root with its bytes and mode, to prove what changed and what did not."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(root))] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return out


def seed_home(home: Path) -> None:
    (home / ".claude").mkdir()
    (home / ".codex").mkdir()
    (home / ".claude.json").write_text(
        json.dumps(CLAUDE_JSON, indent=2, ensure_ascii=False), encoding="utf-8"
    )
    (home / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_SETTINGS, indent=2) + "\n")
    (home / ".codex" / "config.toml").write_text(CODEX_CONFIG)
    (home / ".claude" / "settings.json").chmod(0o644)


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def our_handlers(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [
        handler
        for group in settings.get("hooks", {}).get(event, [])
        for handler in group["hooks"]
        if contract.is_our_hook_command(handler.get("command"))
    ]


# --------------------------------------------------------------------------- --print-config


def test_print_config_claude_is_the_v1_contract_with_the_bare_bin_name(tmp_path: Path) -> None:
    result = run_in_home(tmp_path, "--print-config=claude")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "schema": "bli-memory-install-config.v1",
        "server_id": "bli-memory",
        "mcp_server": {"command": "bli-memory-mcp", "args": [], "env": {}},
        "hooks": [
            {"event": "SessionStart", "command": "bli-memory-mcp hook session-start", "timeout_seconds": 30},
            {"event": "UserPromptSubmit", "command": "bli-memory-mcp hook prompt", "timeout_seconds": 5},
            {"event": "Stop", "command": "bli-memory-mcp hook stop", "timeout_seconds": 30},
        ],
        "permissions_allow": ["mcp__bli-memory__search_memory"],
    }
    assert run_in_home(tmp_path, "--print-config", "--claude").stdout == result.stdout


def test_print_config_codex_is_a_config_toml_block(tmp_path: Path) -> None:
    result = run_in_home(tmp_path, "--print-config=codex")
    assert result.returncode == 0, result.stderr
    assert tomllib.loads(result.stdout) == {
        "mcp_servers": {"bli-memory": {"command": "bli-memory-mcp", "args": []}}
    }


def test_print_config_without_host_prints_both_with_headings(tmp_path: Path) -> None:
    result = run_in_home(tmp_path, "--print-config")
    assert result.returncode == 0
    assert "# Claude Code" in result.stdout and "# Codex" in result.stdout
    assert "bli-memory-install-config.v1" in result.stdout and "[mcp_servers.bli-memory]" in result.stdout


def test_print_config_rejects_an_unknown_host_in_one_line(tmp_path: Path) -> None:
    result = run_in_home(tmp_path, "--print-config=vim")
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


# --------------------------------------------------------------------------- install


def test_fresh_install_registers_server_hooks_and_permission_with_both_hosts(tmp_path: Path) -> None:
    result = run_in_home(tmp_path, "install")
    assert result.returncode == 0, result.stderr
    claude = load(tmp_path / ".claude.json")["mcpServers"]["bli-memory"]
    assert claude["type"] == "stdio" and os.path.isabs(claude["command"]) and claude["env"] == {}
    settings = load(tmp_path / ".claude" / "settings.json")
    codex_hooks = load(tmp_path / ".codex" / "hooks.json")
    for event in HOOK_EVENTS:
        (handler,) = our_handlers(settings, event)
        assert handler["timeout"] == TIMEOUTS_S[event] and handler["type"] == "command"
        # hooks skip the console script (it imports `re` first): its interpreter runs the launcher file
        launcher = probe.hook_prefix([claude["command"]])
        assert launcher[1:] == [probe.launcher_path()] and launcher[1].endswith("/launch/bli_memory_mcp.py")
        assert handler["command"].startswith(shlex.join(launcher) + " hook ")
        assert "--host" not in handler["command"]
        (codex_handler,) = our_handlers(codex_hooks, event)
        assert codex_handler["command"] == handler["command"] + " --host codex"
        assert codex_handler["timeout"] == TIMEOUTS_S[event]
    assert settings["permissions"]["allow"] == ["mcp__bli-memory__search_memory"]
    toml = tomllib.loads((tmp_path / ".codex" / "config.toml").read_text())
    assert toml == {"mcp_servers": {"bli-memory": {"command": claude["command"], "args": claude["args"]}}}
    for name in (".claude.json", ".claude/settings.json", ".codex/config.toml", ".codex/hooks.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600
    assert not list(tmp_path.rglob("*.bli-memory.bak")), "nothing existed, so nothing is backed up"


def test_registered_command_runs_this_program(tmp_path: Path) -> None:
    assert run_in_home(tmp_path, "install", "--host", "claude").returncode == 0
    server = load(tmp_path / ".claude.json")["mcpServers"]["bli-memory"]
    result = subprocess.run([server["command"], *server["args"], "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("bli-memory-mcp ")


def test_second_install_changes_nothing_byte_for_byte(tmp_path: Path) -> None:
    seed_home(tmp_path)
    assert run_in_home(tmp_path, "install").returncode == 0
    before = snapshot(tmp_path)
    result = run_in_home(tmp_path, "install")
    assert result.returncode == 0
    assert snapshot(tmp_path) == before
    assert result.stdout.count("already registered") == 6  # four host files and two skill copies


def test_install_keeps_every_other_key(tmp_path: Path) -> None:
    seed_home(tmp_path)
    assert run_in_home(tmp_path, "install").returncode == 0
    claude = load(tmp_path / ".claude.json")
    ours = claude["mcpServers"].pop("bli-memory")
    assert ours["command"] and claude == CLAUDE_JSON
    settings = load(tmp_path / ".claude" / "settings.json")
    assert (
        settings["model"] == "opus"
        and settings["hooks"]["PreToolUse"] == CLAUDE_SETTINGS["hooks"]["PreToolUse"]
    )
    assert settings["hooks"]["Stop"][0] == CLAUDE_SETTINGS["hooks"]["Stop"][0], "their Stop hook stays first"
    assert settings["permissions"] == {
        "allow": ["Bash(ls:*)", "mcp__bli-memory__search_memory"],
        "deny": ["Read(./.env)"],
    }
    text = (tmp_path / ".codex" / "config.toml").read_text()
    assert text.startswith(CODEX_CONFIG), "the Codex config is only appended to"
    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"].pop("bli-memory")["command"] == ours["command"]
    assert parsed == tomllib.loads(CODEX_CONFIG)


def test_install_keeps_mode_and_writes_through_a_symlink(tmp_path: Path) -> None:
    seed_home(tmp_path)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "settings.json"
    (tmp_path / ".claude" / "settings.json").rename(real)
    (tmp_path / ".claude" / "settings.json").symlink_to(real)
    assert run_in_home(tmp_path, "install").returncode == 0
    assert (tmp_path / ".claude" / "settings.json").is_symlink()
    assert stat.S_IMODE(real.stat().st_mode) == 0o644
    assert our_handlers(load(real), "Stop")


def test_backup_is_made_once_before_the_first_change(tmp_path: Path) -> None:
    seed_home(tmp_path)
    originals = {name: (tmp_path / name).read_bytes() for name in (".claude.json", ".codex/config.toml")}
    result = run_in_home(tmp_path, "install")
    assert "backup" in result.stdout
    assert run_in_home(tmp_path, "uninstall").returncode == 0
    assert run_in_home(tmp_path, "install").returncode == 0
    for name, original in originals.items():
        assert (tmp_path / (name + ".bli-memory.bak")).read_bytes() == original
    assert stat.S_IMODE((tmp_path / ".claude/settings.json.bli-memory.bak").stat().st_mode) == 0o644


def test_install_replaces_a_stale_registration_of_ours_instead_of_adding_a_second(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".codex").mkdir()
    stale = {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/old/bin/bli-memory-mcp hook stop"}]}]}
    }
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(stale))
    (tmp_path / ".codex" / "config.toml").write_text(
        '[mcp_servers.bli-memory]\ncommand = "/old/bin/bli-memory-mcp"\nstartup_timeout_sec = 20\n'
    )
    assert run_in_home(tmp_path, "install").returncode == 0
    (handler,) = our_handlers(load(tmp_path / ".claude" / "settings.json"), "Stop")
    assert not handler["command"].startswith("/old/")
    table = tomllib.loads((tmp_path / ".codex" / "config.toml").read_text())["mcp_servers"]["bli-memory"]
    assert table["startup_timeout_sec"] == 20, "a key the person added to our table stays"
    assert table["command"] != "/old/bin/bli-memory-mcp" and table["args"] == []


@pytest.mark.parametrize(
    ("name", "content"),
    [
        (".claude.json", '{"numStartups": 3,'),
        (".claude/settings.json", "{'hooks': {}}"),
        (".claude/settings.json", '{"hooks": []}'),
        (".claude/settings.json", '["not", "an", "object"]'),
        (".codex/config.toml", 'model = "unterminated\n'),
        (".codex/config.toml", "[mcp_servers\n"),
        (".codex/config.toml", 'mcp_servers = { bli-memory = { command = "x" } }\n'),
        (".codex/hooks.json", '{"hooks": {"Stop": {}}}'),
    ],
)
def test_a_malformed_file_is_reported_in_one_line_and_nothing_is_written(
    tmp_path: Path, name: str, content: str
) -> None:
    seed_home(tmp_path)
    (tmp_path / name).write_text(content)
    before = snapshot(tmp_path)
    for verb in ("install", "uninstall"):
        result = run_in_home(tmp_path, verb)
        assert result.returncode == 1
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert os.path.basename(name) in result.stderr and "untouched" in result.stderr
        assert snapshot(tmp_path) == before


def test_dry_run_shows_the_changes_and_writes_nothing(tmp_path: Path) -> None:
    seed_home(tmp_path)
    before = snapshot(tmp_path)
    result = run_in_home(tmp_path, "install", "--dry-run")
    assert result.returncode == 0
    assert snapshot(tmp_path) == before and not (tmp_path / ".codex" / "hooks.json").exists()
    assert "would add mcpServers.bli-memory" in result.stdout and "nothing written" in result.stdout
    assert run_in_home(tmp_path, "install").returncode == 0
    installed = snapshot(tmp_path)
    result = run_in_home(tmp_path, "uninstall", "--dry-run")
    assert "would remove" in result.stdout and snapshot(tmp_path) == installed


def test_uninstall_restores_the_files_byte_for_byte(tmp_path: Path) -> None:
    seed_home(tmp_path)
    before = snapshot(tmp_path)
    assert run_in_home(tmp_path, "install").returncode == 0
    result = run_in_home(tmp_path, "uninstall")
    assert result.returncode == 0, result.stderr
    after = {
        name: value for name, value in snapshot(tmp_path).items() if not name.endswith(".bli-memory.bak")
    }
    assert after == before, "only ours removed; files install created are gone"


def test_uninstall_removes_only_ours_from_a_shared_group(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    theirs = {"type": "command", "command": "/usr/bin/their-hook"}
    ours = {"type": "command", "command": "'/opt/my tools/bli-memory-mcp' hook prompt", "timeout": 5}
    settings = {"hooks": {"UserPromptSubmit": [{"hooks": [theirs, ours]}]}}
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(settings))
    result = run_in_home(tmp_path, "uninstall", "--host", "claude")
    assert result.returncode == 0, result.stderr
    assert load(tmp_path / ".claude" / "settings.json") == {
        "hooks": {"UserPromptSubmit": [{"hooks": [theirs]}]}
    }
    assert not (tmp_path / ".claude.json").exists()


def test_uninstall_on_an_empty_home_changes_nothing(tmp_path: Path) -> None:
    result = run_in_home(tmp_path, "uninstall")
    assert result.returncode == 0 and result.stdout.count("nothing of ours") == 6
    assert snapshot(tmp_path) == {}


def _hook_state(key: str, *lines: str) -> str:
    """One hook-state table as Codex appends it to config.toml when the person trusts a hook."""
    return "\n" + f"[hooks.state.{json.dumps(key)}]\n" + "".join(line + "\n" for line in lines)


def test_uninstall_removes_codex_s_trust_of_our_hooks_and_no_one_else_s(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    hooks_json = tmp_path / ".codex" / "hooks.json"
    theirs = {"type": "command", "command": "/usr/bin/their-stop-hook", "timeout": 10}
    hooks_json.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [theirs]}]}}, indent=2) + "\n")
    # the person trusted their own hook, and a project's hooks.json elsewhere, before installing us
    foreign = _hook_state(f"{hooks_json}:stop:0:0", 'trusted_hash = "sha256:' + "a" * 64 + '"')
    foreign += _hook_state("/w/project/.codex/hooks.json:session_start:0:0", "enabled = false")
    config = tmp_path / ".codex" / "config.toml"
    config.write_text(CODEX_CONFIG + foreign)
    assert run_in_home(tmp_path, "install", "--host", "codex").returncode == 0
    installed = load(hooks_json)["hooks"]
    assert installed["Stop"][0]["hooks"] == [theirs]  # ours come after theirs: Stop group 1
    ours = [
        f"{hooks_json}:session_start:0:0",
        f"{hooks_json}:user_prompt_submit:0:0",
        f"{hooks_json}:stop:1:0",
    ]
    trusted = [_hook_state(key, 'trusted_hash = "sha256:' + "b" * 64 + '"') for key in ours[:2]]
    trusted.append(_hook_state(ours[2], "enabled = false", 'trusted_hash = "sha256:' + "c" * 64 + '"'))
    with config.open("a") as handle:  # the person trusts our hooks in Codex's /hooks
        handle.write("".join(trusted))
    assert set(tomllib.loads(config.read_text())["hooks"]["state"]) == {
        *ours,
        f"{hooks_json}:stop:0:0",
        "/w/project/.codex/hooks.json:session_start:0:0",
    }

    result = run_in_home(tmp_path, "uninstall", "--host", "codex")
    assert result.returncode == 0, result.stderr
    assert config.read_text() == CODEX_CONFIG + foreign  # ours gone, byte for byte; theirs kept
    assert load(hooks_json) == {"hooks": {"Stop": [{"hooks": [theirs]}]}}
    assert result.stdout.count("remove Codex's trust of our hook") == 3, result.stdout

    again = run_in_home(tmp_path, "uninstall", "--host", "codex")
    assert again.returncode == 0 and again.stdout.count("nothing of ours") == 3, again.stdout
    assert config.read_text() == CODEX_CONFIG + foreign


def test_host_flag_limits_install_to_one_host(tmp_path: Path) -> None:
    assert run_in_home(tmp_path, "install", "--host=codex").returncode == 0
    assert (tmp_path / ".codex" / "config.toml").exists()
    assert not (tmp_path / ".claude.json").exists() and not (tmp_path / ".claude").exists()


def test_config_dir_variables_are_honoured(tmp_path: Path) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cc"), "CODEX_HOME": str(tmp_path / "cx")}
    assert run_in_home(tmp_path, "install", extra_env=env).returncode == 0
    assert sorted(snapshot(tmp_path)) == [
        ".agents/skills/bli-memory/SKILL.md",  # Codex's user skills live beside, not in, CODEX_HOME
        "cc/.claude.json",
        "cc/settings.json",
        "cc/skills/bli-memory/SKILL.md",
        "cx/config.toml",
        "cx/hooks.json",
    ]


@pytest.mark.parametrize("args", [["--bogus"], ["--host"], ["--host", "vim"]])
def test_bad_arguments_get_one_line_and_exit_2(tmp_path: Path, args: list[str]) -> None:
    result = run_in_home(tmp_path, "install", *args)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and snapshot(tmp_path) == {}


def test_help_names_the_files_and_flags(tmp_path: Path) -> None:
    for verb in ("install", "uninstall"):
        result = run_in_home(tmp_path, verb, "--help")
        assert (
            result.returncode == 0
            and "--dry-run" in result.stdout
            and "~/.codex/config.toml" in result.stdout
        )
    assert snapshot(tmp_path) == {}


# --------------------------------------------------------------------------- pieces


def test_resolve_command_prefers_the_running_program(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "bli-memory-mcp"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    pyz = tmp_path / "bli-memory-mcp.pyz"
    pyz.write_bytes(b"PK")
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    none = lambda _name: None  # noqa: E731
    assert probe.resolve_command(str(script), "/usr/bin/python3", none) == [str(script)]
    assert probe.resolve_command(str(pyz), "/usr/bin/python3", none) == ["/usr/bin/python3", str(pyz)]
    assert probe.resolve_command("-m", str(python), lambda _n: str(script)) == [str(script)]
    assert probe.resolve_command("-m", str(python), none) == [str(python), "-m", "bli_memory"]
    sibling = python.parent / "bli-memory-mcp"
    sibling.write_text("#!/bin/sh\n")
    sibling.chmod(0o755)
    assert probe.resolve_command("-m", str(python), none) == [str(sibling)]


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("bli-memory-mcp hook prompt", True),
        ("/a/b/bli-memory-mcp hook stop --host codex", True),
        ("'/my dir/bli-memory-mcp' hook session-start", True),
        ("/usr/bin/python3 /x/bli-memory-mcp.pyz hook prompt", True),
        ("/v/bin/python -m bli_memory hook stop", True),
        ("bli-memory-mcp hook nonsense", False),
        ("bli-memory-mcp search hook prompt", False),
        ("other-tool hook prompt", False),
        ("echo 'unbalanced", False),
        (None, False),
    ],
)
def test_our_hook_commands_are_recognised_by_shape(command: object, ours: bool) -> None:
    assert contract.is_our_hook_command(command) is ours


TRICKY_TOML = [
    "",
    "a = 1",
    "a = 1\n",
    "[mcp_servers]\n",
    CODEX_CONFIG,
    '[mcp_servers.bli-memory]\ncommand = "old"\n\n# keep me\n[next]\nx = 1\n',
    '[mcp_servers."bli-memory"]\ncommand = "old"\nargs = [\n "a",\n]\n[mcp_servers.bli-memory.env]\nK = "v"\n',
    "key = '''\n[mcp_servers.bli-memory]\n'''\r\nother = 2\r\n",
    'x = { a = [1, "]"], b = "}" }  # c\n[t]\ny = """\\""""\n',
    "a = 1\n[mcp_servers.bli-memory]",
]


@pytest.mark.parametrize("text", TRICKY_TOML)
def test_codex_toml_edit_sets_only_our_table_and_is_idempotent(text: str) -> None:
    prefix = ["/opt/bin/bli-memory-mcp"]
    installed, _ = tomledit.edit_codex_toml(text, prefix)
    parsed = tomllib.loads(installed)
    assert parsed["mcp_servers"]["bli-memory"]["command"] == prefix[0]
    assert tomledit.edit_codex_toml(installed, prefix) == (installed, [])
    expected = tomledit.expected_after(tomllib.loads(text), prefix)
    assert parsed == expected
    removed, _ = tomledit.edit_codex_toml(installed, None)
    assert "bli-memory" not in tomllib.loads(removed).get("mcp_servers", {})
    if "bli-memory" not in text:
        restored = text if not text or text.endswith("\n") else text + "\n"
        assert removed == restored, "install then uninstall gives back the same bytes (plus a final newline)"


@pytest.mark.parametrize(
    "text",
    ['a = "unterminated\n', "a = [1,\n", 'a = """never closed\n', "[t\n", "[t] junk\n", "= 1\n", "a 1\n"],
)
def test_the_toml_scanner_alone_refuses_what_it_cannot_read(text: str) -> None:
    """On Python 3.10 there is no tomllib: the scanner must refuse these by itself."""
    with pytest.raises(tomledit.TomlShapeError):
        tomledit.scan_toml(text)


def test_toml_strings_round_trip_through_tomllib() -> None:
    for value in ["plain", 'q"uote', "back\\slash", "tab\tnew\nline", "\x00\x7f", "ünï ✓"]:
        assert tomllib.loads(f"v = {tomledit.toml_string(value)}")["v"] == value


def test_the_server_interpreter_is_read_from_the_command_or_its_shebang(tmp_path: Path) -> None:
    direct = tmp_path / "direct"
    direct.write_text("#!/opt/venv/bin/python3.11\nimport x\n")
    via_env = tmp_path / "via-env"
    via_env.write_text("#!/usr/bin/env -S python3\n")
    assert probe.server_interpreter(["/usr/bin/python3", "/x/app.pyz"]) == "/usr/bin/python3"
    assert probe.server_interpreter(["/v/bin/python", "-m", "bli_memory"]) == "/v/bin/python"
    assert probe.server_interpreter([str(direct)]) == "/opt/venv/bin/python3.11"
    assert os.path.basename(probe.server_interpreter([str(via_env)])).startswith("python3")
    assert probe.can_run_server([sys.executable, "-m", "bli_memory"]) is True
    assert probe.can_run_server([str(tmp_path / "no-such-python"), "x.pyz"]) is False


# --------------------------------------------------------------------------- JSON kept as written

#: settings written by hand: 4-space indent, inline objects and arrays, a key order of the person's own.
HANDWRITTEN_SETTINGS = """\
{
    "model": "opus",
    "permissions": { "allow": ["Bash(ls:*)"], "deny": [] },
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]},
    "env": {"A": "1", "B": [1, 2.50, true]},
    "empty": {}
}
"""

#: ~/.claude.json as a tool may leave it: one line, no spaces, no final newline.
MINIFIED_CLAUDE_JSON = '{"numStartups":42,"tips":{"a":1,"b":[1,2]},"mcpServers":{"other":{"command":"x"}}}'

JSON_SHAPES = [
    HANDWRITTEN_SETTINGS,
    MINIFIED_CLAUDE_JSON,
    json.dumps(CLAUDE_JSON, indent=2, ensure_ascii=False),
    json.dumps(CLAUDE_SETTINGS, indent="\t") + "\n",
    json.dumps(CLAUDE_SETTINGS, indent=2).replace("\n", "\r\n") + "\r\n",
    json.dumps(CLAUDE_SETTINGS),
    "{}",
    "{}\n",
    '  {"a": "\\u00e9\\"}", "mcpServers": {"o": {}}, "hooks": {"PreToolUse": []}}  \n',
]
#: containers of ours that were there but empty: uninstall cannot tell them from ones install made,
#: so it removes them; the splice itself still keeps every other byte.
EMPTY_OURS = '{\n  "hooks": {},\n  "permissions": {\n    "allow": []\n  }, "mcpServers": {}\n}\n'


@pytest.mark.parametrize("text", JSON_SHAPES)
def test_install_then_uninstall_gives_back_the_same_bytes_whatever_the_json_style(
    tmp_path: Path, text: str
) -> None:
    (tmp_path / ".claude").mkdir()
    files = {tmp_path / ".claude.json": text, tmp_path / ".claude" / "settings.json": text}
    for path, content in files.items():
        path.write_bytes(content.encode())
    assert run_in_home(tmp_path, "install", "--host", "claude").returncode == 0
    for path, content in files.items():
        installed = path.read_text(encoding="utf-8")
        assert installed != content
        if "\n" not in content.strip():
            assert "\n" not in installed.strip(), "a one-line file stays on one line"
    assert run_in_home(tmp_path, "uninstall", "--host", "claude").returncode == 0
    for path, content in files.items():
        assert path.read_bytes() == content.encode()


def test_install_rewrites_only_its_own_subtrees(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(HANDWRITTEN_SETTINGS)
    (tmp_path / ".claude.json").write_text(MINIFIED_CLAUDE_JSON)
    assert run_in_home(tmp_path, "install", "--host", "claude").returncode == 0
    settings = (tmp_path / ".claude" / "settings.json").read_text()
    for line in (
        '    "model": "opus",\n',
        '    "env": {"A": "1", "B": [1, 2.50, true]},\n',
        '    "empty": {}\n',
    ):
        assert line in settings, "every other key keeps its bytes"
    assert (
        '"permissions": { "allow": ["Bash(ls:*)", "mcp__bli-memory__search_memory"], "deny": [] },'
        in settings
    )
    assert settings.startswith('{\n    "model"') and settings.endswith("}\n")
    assert load(tmp_path / ".claude" / "settings.json")["hooks"]["Stop"][0] == {
        "hooks": [{"type": "command", "command": "notify"}]
    }
    claude = (tmp_path / ".claude.json").read_text()
    assert claude.startswith(
        '{"numStartups":42,"tips":{"a":1,"b":[1,2]},"mcpServers":{"other":{"command":"x"},'
    )
    assert '"bli-memory":{"type":"stdio","command":' in claude and not claude.endswith("\n")


def test_a_file_install_creates_uses_two_space_indent(tmp_path: Path) -> None:
    assert run_in_home(tmp_path, "install", "--host", "claude").returncode == 0
    text = (tmp_path / ".claude.json").read_text()
    assert text == json.dumps(load(tmp_path / ".claude.json"), indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("text", [*JSON_SHAPES, EMPTY_OURS])
def test_splice_json_changes_only_what_differs(text: str) -> None:
    old = json.loads(text)
    assert jsonsplice.splice_json(text, old) == text
    new = json.loads(text)
    new.setdefault("mcpServers", {})["bli-memory"] = {"command": "/x", "args": [], "env": {}}
    new["added"] = {"nested": [1, {"k": "v"}]}
    spliced = jsonsplice.splice_json(text, new)
    assert json.loads(spliced) == new
    del new["added"]
    del new["mcpServers"]["bli-memory"]
    if not new["mcpServers"] and "mcpServers" not in old:
        del new["mcpServers"]
    assert jsonsplice.splice_json(spliced, new) == text


# --------------------------------------------------------------------------- the package


def _loaded_by(statement: str) -> list[str]:
    """The package's modules a fresh interpreter loads to run `statement`."""
    code = (
        f"import sys; before = set(sys.modules); {statement}; "
        "print(' '.join(sorted(m for m in set(sys.modules) - before if m.startswith('bli_memory'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_importing_the_package_loads_none_of_its_parts() -> None:
    assert _loaded_by("import bli_memory.install") == ["bli_memory", "bli_memory.install"]


def test_reading_codex_trust_loads_only_what_it_needs() -> None:
    """`status` reads Codex's trust through `codex_trust`: it must not pay for the plan, the JSON
    splicer, the probe or the commands."""
    assert _loaded_by("import bli_memory.install.codex_trust") == [
        "bli_memory",
        "bli_memory.install",
        "bli_memory.install.codex_trust",
        "bli_memory.install.contract",
        "bli_memory.install.files",
        "bli_memory.install.tomledit",
        "bli_memory.paths",
    ]


def test_a_failed_write_leaves_no_temp_file_and_reports_the_write_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bli_memory.install import files

    target = tmp_path / "settings.json"
    target.write_text("{}\n")

    def refuse(_source: str, _target: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        files.write_atomic(str(target), '{"a": 1}\n')
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"] and target.read_text() == "{}\n"

    def gone(_path: str) -> None:
        raise FileNotFoundError(2, "already gone")

    monkeypatch.setattr(files.os, "unlink", gone)
    with pytest.raises(OSError, match="No space left"):  # the cleanup's own failure never hides it
        files.write_atomic(str(target), '{"a": 1}\n')


def test_the_install_modules_say_what_they_mean_without_pointing_elsewhere() -> None:
    folder = REPO / "bli_memory" / "install"
    for path in sorted(folder.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for pointer in ("DESIGN.md", "seed README", "the seed", "../shared"):
            assert pointer not in text, f"{path.name} sends the reader to {pointer!r}"


# --------------------------------------------------------------------------- the bli-memory skill

SKILL_FILES = (".claude/skills/bli-memory/SKILL.md", ".agents/skills/bli-memory/SKILL.md")


def test_print_skill_is_the_packaged_skill_with_front_matter_hosts_load(tmp_path: Path) -> None:
    result = run_in_home(tmp_path, "--print-skill")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text == (REPO / "bli_memory" / "install" / "SKILL.md").read_text(encoding="utf-8")
    front, body = text.split("---\n")[1:3]
    fields = dict(line.split(": ", 1) for line in front.strip().splitlines())
    assert set(fields) == {"name", "description"} and fields["name"] == "bli-memory"
    assert len(fields["description"]) <= 1024  # what both hosts accept
    for tool in ("search_memory", "save_memory", "update_memory", "forget_memory", "pin_memory"):
        assert f"`{tool}" in body, tool
    for tool in ("list_pins", "unpin_memory", "memory_experience"):
        assert f"`{tool}" in body, tool
    assert snapshot(tmp_path) == {}  # printing writes nothing


def test_install_writes_the_skill_for_both_hosts_and_uninstall_removes_only_it(tmp_path: Path) -> None:
    other = tmp_path / ".claude" / "skills" / "pdf" / "SKILL.md"
    other.parent.mkdir(parents=True)
    other.write_text("---\nname: pdf\ndescription: someone else's\n---\nbody\n")
    plan = run_in_home(tmp_path, "install", "--dry-run")
    assert plan.returncode == 0, plan.stderr
    for path in SKILL_FILES:
        assert f"~/{path}: would add skill bli-memory" in plan.stdout
        assert not (tmp_path / path).exists()
    assert run_in_home(tmp_path, "install").returncode == 0
    printed = run_in_home(tmp_path, "--print-skill").stdout
    for path in SKILL_FILES:
        written = (tmp_path / path).read_text(encoding="utf-8")
        assert written.startswith(printed.rstrip("\n")) and "bli-memory-mcp uninstall` removes it" in written
        assert not list((tmp_path / path).parent.glob("*.bak"))  # our own file: no backup beside it
    before = snapshot(tmp_path)
    again = run_in_home(tmp_path, "install")
    assert snapshot(tmp_path) == before
    assert all(f"~/{path}: already registered" in again.stdout for path in SKILL_FILES)

    removed = run_in_home(tmp_path, "uninstall")
    assert removed.returncode == 0, removed.stderr
    for path in SKILL_FILES:
        assert f"~/{path}: remove skill bli-memory" in removed.stdout
        assert not (tmp_path / path).parent.exists()  # the folder went with it
    assert other.read_text().endswith("body\n")  # another skill is never touched
    assert run_in_home(tmp_path, "uninstall").stdout.count("nothing of ours") == 6


def test_an_older_copy_of_the_skill_is_updated_in_place(tmp_path: Path) -> None:
    assert run_in_home(tmp_path, "install", "--host", "claude").returncode == 0
    path = tmp_path / SKILL_FILES[0]
    path.write_text(path.read_text().replace("recall before you re-derive", "an older wording"))
    result = run_in_home(tmp_path, "install", "--host", "claude")
    assert f"~/{SKILL_FILES[0]}: update skill bli-memory" in result.stdout
    assert "an older wording" not in path.read_text() and not list(path.parent.glob("*.bak"))


def test_a_skill_of_the_same_name_that_is_not_ours_stops_install_and_survives_uninstall(
    tmp_path: Path,
) -> None:
    path = tmp_path / SKILL_FILES[1]
    path.parent.mkdir(parents=True)
    path.write_text("---\nname: bli-memory\ndescription: my own notes\n---\n")
    result = run_in_home(tmp_path, "install")
    assert result.returncode == 1
    assert result.stderr.strip().endswith("move it away to install the bli-memory skill)")
    assert len(result.stderr.splitlines()) == 1
    assert snapshot(tmp_path) == {SKILL_FILES[1]: (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))}
    assert run_in_home(tmp_path, "uninstall").returncode == 0
    assert path.read_text().endswith("my own notes\n---\n")

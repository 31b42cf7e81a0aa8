"""The two ways the client ships: a zipapp for a bare python3, and a wheel installed as pipx does."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from bli_memory import __version__
from bli_memory.cli import COMMANDS
from tests.helpers import REPO

TAG_PATTERN = re.compile(r"^dir_.+__[0-9a-f]{16}$")


@pytest.fixture(scope="module")
def zipapp_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # an unusual file name on purpose: install must still recognise its own registrations
    output = tmp_path_factory.mktemp("dist") / "memory-client.pyz"
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_zipapp"), "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return output


def bare(pyz: Path, *args: str, home: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run the zipapp as a bare python3 would: -S (no site-packages, so no mcp), -I (no user env)."""
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "BLI_MEMORY_DAEMON": "0"}
    return subprocess.run(
        [sys.executable, "-I", "-S", str(pyz), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=str(home),
        timeout=60,
    )


def test_zipapp_holds_the_client_without_the_door_or_caches(zipapp_path: Path) -> None:
    with zipfile.ZipFile(zipapp_path) as archive:
        names = set(archive.namelist())
    assert "__main__.py" in names and "bli_memory/cli.py" in names and "bli_memory/hooks/run.py" in names
    assert not [n for n in names if n.startswith("bli_memory/door/") or "__pycache__" in n]
    assert "bli_memory/hooks/run.pyc" in names, "bytecode beside each module: zipimport cannot cache"
    assert zipapp_path.read_bytes().startswith(b"#!/usr/bin/env python3\n")


def test_zipapp_runs_the_human_commands_on_a_bare_python(zipapp_path: Path, tmp_path: Path) -> None:
    version = bare(zipapp_path, "--version", home=tmp_path)
    assert version.returncode == 0 and version.stdout == f"bli-memory-mcp {__version__}\n"
    space = bare(zipapp_path, "space", home=tmp_path)
    assert space.returncode == 0 and TAG_PATTERN.match(space.stdout.strip()), space.stderr
    contract = bare(zipapp_path, "--print-config=claude", home=tmp_path)
    assert json.loads(contract.stdout)["schema"] == "bli-memory-install-config.v1"
    covered = 0
    for name, (module, _, _) in COMMANDS.items():
        if importlib.util.find_spec(module) is None:
            continue  # a command whose module has not landed yet (the daemon, at the time of writing)
        result = bare(zipapp_path, name, "--help", home=tmp_path)
        assert result.returncode == 0, (name, result.stderr)
        assert result.stdout.strip() and "Traceback" not in result.stderr, name
        covered += 1
    assert covered >= len(COMMANDS) - 1


@pytest.mark.parametrize("event", ["session-start", "prompt", "stop"])
def test_zipapp_runs_every_hook_on_a_bare_python(zipapp_path: Path, tmp_path: Path, event: str) -> None:
    payload = json.dumps({"session_id": "s", "hook_event_name": "x", "cwd": str(tmp_path), "prompt": "why?"})
    result = bare(zipapp_path, "hook", event, home=tmp_path, stdin=payload)
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr.startswith(f"[bli-memory] {event} ") and "Traceback" not in result.stderr
    codex = bare(zipapp_path, "hook", event, "--host", "codex", home=tmp_path, stdin=payload)
    assert codex.returncode == 0 and codex.stdout.strip() in ("", "{}")
    if event == "stop":
        assert json.loads(codex.stdout) == {}, "Codex: Stop prints one JSON object, never plain text"


def test_zipapp_server_says_it_needs_mcp_in_one_line(zipapp_path: Path, tmp_path: Path) -> None:
    result = bare(zipapp_path, home=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "`mcp` package" in result.stderr


def test_zipapp_install_registers_itself_and_uninstall_removes_it(zipapp_path: Path, tmp_path: Path) -> None:
    installed = bare(zipapp_path, "install", home=tmp_path)
    assert installed.returncode == 0, installed.stderr
    server = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["bli-memory"]
    assert server["command"] == sys.executable and server["args"] == [str(zipapp_path)]
    hooks = json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]
    command = hooks["Stop"][0]["hooks"][0]["command"]
    result = subprocess.run(command, shell=True, input="{}", capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr.startswith("[bli-memory] stop ")
    # four host files and the skill's two copies, read from the archive's own package data
    assert bare(zipapp_path, "install", home=tmp_path).stdout.count("already registered") == 6
    assert (
        (tmp_path / ".claude" / "skills" / "bli-memory" / "SKILL.md")
        .read_text()
        .startswith("---\nname: bli-memory\n")
    )
    assert bare(zipapp_path, "uninstall", home=tmp_path).returncode == 0
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert not [name for name in left if name.endswith((".json", ".toml"))], left


def load_script(name: str) -> ModuleType:
    """A script has no .py suffix; load it as a module to test its pieces."""
    path = REPO / "scripts" / name
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_"), str(path))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_check_wheel_notices_a_missing_file_and_a_missing_entry_point(tmp_path: Path) -> None:
    check_wheel = load_script("check_wheel")
    files = check_wheel.source_files()
    assert "bli_memory/cli.py" in files and "bli_memory/py.typed" in files
    good = "[console_scripts]\nbli-memory-mcp = bli_memory.cli:main\n"
    for dropped, entry_points, problem in [
        ("bli_memory/cli.py", good, "missing"),
        (None, "[console_scripts]\nother = x:y\n", "console script"),
    ]:
        wheel = tmp_path / f"w{len(problem)}.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            for name in files:
                if name != dropped:
                    archive.writestr(name, "")
            archive.writestr("bli_memory-0.dist-info/entry_points.txt", entry_points)
        with pytest.raises(check_wheel.CheckFailed, match=problem):
            check_wheel.check_contents(wheel)


def git_files_copy(target: Path) -> Path:
    """The files git tracks in this checkout (as they are in the work tree), copied to `target`:
    what a test may depend on, without a build/, dist/ or .venv a person's own commands left."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True, timeout=30
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def test_check_wheel_builds_installs_and_runs_the_bin(tmp_path: Path) -> None:
    """The whole script, without dependencies (the MCP handshake step needs them; CI runs it in full),
    run from a copy of git's files, so a build/ left in the checkout by a person's own `pip wheel .`
    neither fails this test nor hides one the script would leave."""
    checkout = git_files_copy(tmp_path / "checkout")
    before = sorted(str(path.relative_to(checkout)) for path in checkout.rglob("*"))
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary)}
    result = subprocess.run(
        [sys.executable, str(checkout / "scripts" / "check_wheel"), "--no-deps"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("check_wheel: ok: bli_memory-")
    assert list(temporary.iterdir()) == [], "the temporary folder is removed"
    after = sorted(str(path.relative_to(checkout)) for path in checkout.rglob("*"))
    assert after == before, "the build leaves nothing (no build/, no egg-info) in the checkout"


def test_zipapp_install_on_a_python_without_mcp_registers_the_hooks_but_no_server(
    zipapp_path: Path, tmp_path: Path
) -> None:
    venv = tmp_path / "plain-venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "BLI_MEMORY_DAEMON": "0"}
    installed = subprocess.run(
        [str(python), str(zipapp_path), "install"], capture_output=True, text=True, env=env, timeout=60
    )
    assert installed.returncode == 0, installed.stderr
    assert installed.stderr.count("\n") == 1 and "cannot import the `mcp` package" in installed.stderr
    assert "pip install" in installed.stderr and str(python) in installed.stderr
    assert not (home / ".claude.json").exists(), "no server entry that could not start"
    assert not (home / ".codex" / "config.toml").exists()
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert command.startswith(f"{python} {zipapp_path} hook stop")
    assert json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]["SessionStart"]
    again = subprocess.run(
        [str(python), str(zipapp_path), "install"], capture_output=True, text=True, env=env, timeout=60
    )
    # the two hook files and the skill's two copies; the two server files wait for `mcp`
    assert again.stdout.count("already registered") == 4 and again.stdout.count("not registered") == 2

"""What a newcomer meets in the first minutes outside the README's own blocks (tests/test_readme.py):
the option spelled where they type it, help that names the real default port, an unpaired machine
told which half of the pairing is missing, and a test suite that never reaches their own HOME."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bli_memory.door.cli.parser import DEFAULT_PORT
from bli_memory.settings import ENV_TOKEN, ENV_URL, UNPAIRED_MESSAGE, write_session

BIN = Path(sys.executable).parent / "bli-memory-mcp"
RUN_TIMEOUT_S = 60


def run(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {"HOME": str(home), "PATH": os.environ["PATH"], "BLI_MEMORY_DAEMON": "0"}
    return subprocess.run(
        [str(BIN), *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        cwd=str(home),
        timeout=RUN_TIMEOUT_S,
    )


@pytest.mark.parametrize("option", ["--print-config", "--print-config=claude", "--print-config=codex"])
def test_install_print_config_prints_what_the_bare_option_prints(tmp_path: Path, option: str) -> None:
    bare = run(tmp_path, option)
    after_install = run(tmp_path, "install", option)
    assert after_install.returncode == 0, after_install.stderr
    assert after_install.stdout == bare.stdout and bare.stdout.strip()
    assert list(tmp_path.iterdir()) == [], "printing the contract writes nothing"


def test_install_print_config_contract_is_the_v1_json(tmp_path: Path) -> None:
    result = run(tmp_path, "install", "--print-config", "--claude")
    assert json.loads(result.stdout)["schema"] == "bli-memory-install-config.v1"


def test_login_help_examples_use_the_door_default_port(tmp_path: Path) -> None:
    result = run(tmp_path, "login", "--help")
    assert result.returncode == 0
    ports = {
        line.split("127.0.0.1:", 1)[1][:4] for line in result.stdout.splitlines() if "127.0.0.1:" in line
    }
    assert ports == {str(DEFAULT_PORT)}, result.stdout


@pytest.mark.parametrize("command", [["save", "x"], ["search", "x"], ["status"]])
def test_a_token_without_a_url_names_the_missing_variable(tmp_path: Path, command: list[str]) -> None:
    result = run(tmp_path, *command, env={ENV_TOKEN: "bli_some_token"})
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()[-1]
    assert f"a device token comes from {ENV_TOKEN} but {ENV_URL} is not set" in message
    assert "bli_some_token" not in result.stderr + result.stdout


def test_a_session_token_without_a_url_names_the_file_and_the_variable(tmp_path: Path) -> None:
    path = write_session("", "bli_some_token", env={"HOME": str(tmp_path)})
    result = run(tmp_path, "save", "x")
    assert result.returncode == 1
    assert result.stderr == (
        f"bli-memory: not paired: a device token comes from {path} but {ENV_URL} is not set "
        f"(nor a door URL in {path}); set {ENV_URL}, e.g. http://127.0.0.1:{DEFAULT_PORT}.\n"
    )


def test_a_url_without_a_token_names_the_missing_variable(tmp_path: Path) -> None:
    result = run(tmp_path, "search", "x", env={ENV_URL: "http://127.0.0.1:9"})
    assert result.returncode == 1
    assert f"a door URL comes from {ENV_URL} but {ENV_TOKEN} is not set" in result.stderr


def test_neither_half_keeps_the_one_sentence(tmp_path: Path) -> None:
    assert run(tmp_path, "save", "x").stderr == UNPAIRED_MESSAGE + "\n"


def test_the_test_process_never_sees_the_real_home() -> None:
    """The guard in conftest.py: HOME and XDG folders of the test process's own, no personal settings."""
    home = Path(os.environ["HOME"])
    assert home != Path(pwd.getpwuid(os.getuid()).pw_dir) and home.is_dir() and Path.home() == home
    assert home.resolve().is_relative_to(Path(tempfile.gettempdir()).resolve())
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
        assert Path(os.environ[name]).is_relative_to(home), name
    # the ones kept: they name the Codex CLI and Claude Code scripts/test installs, no person's data
    kept = {name for name in os.environ if name.startswith("BLI_MEMORY_")}
    assert kept <= {"BLI_MEMORY_CODEX_CLI", "BLI_MEMORY_CLAUDE_CLI"}

"""What install registers as the hook command, as a person reviewing it in Codex's /hooks reads it:
the console script's interpreter running the package's launcher file, `hook <event>` and, for Codex,
`--host codex`; no `python -c` one-liner. Run as a subprocess on a temporary HOME, the way a host runs
it (`sh -c`), and replaced in place when an older install registered the one-liner."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from bli_memory.install import contract, probe
from tests.client.helpers import run_in_home

#: what installs before this one registered (`python -c` and a line of code)
OLD_LAUNCH = "import sys; from bli_memory.cli import main; sys.exit(main())"
EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "prompt", "Stop": "stop"}


def commands(path: Path) -> dict[str, list[str]]:
    """event -> the commands of every handler under it."""
    hooks = json.loads(path.read_text()).get("hooks", {})
    return {
        event: [h["command"] for group in groups for h in group["hooks"]] for event, groups in hooks.items()
    }


def test_codex_hooks_run_a_command_a_person_can_read(tmp_path: Path) -> None:
    assert run_in_home(tmp_path, "install", "--host", "codex").returncode == 0
    registered = commands(tmp_path / ".codex" / "hooks.json")
    for event, subcommand in EVENTS.items():
        (command,) = registered[event]
        python, launcher, *rest = shlex.split(command)
        assert rest == ["hook", subcommand, "--host", "codex"]
        assert " -c " not in command and "import" not in command
        assert os.path.isabs(python) and launcher == probe.launcher_path()
        assert launcher.endswith("/bli_memory/install/launch/bli_memory_mcp.py")
        assert "from bli_memory.cli import main" in Path(launcher).read_text()


def test_the_registered_command_runs_the_hook_as_the_host_does(tmp_path: Path) -> None:
    """Through `sh -c`, from a project folder that holds modules named like the standard library's:
    a script's folder (not the project's) is first on sys.path, so none of them is imported."""
    assert run_in_home(tmp_path, "install", "--host", "codex").returncode == 0
    (command,) = commands(tmp_path / ".codex" / "hooks.json")["UserPromptSubmit"]
    project = tmp_path / "project"
    project.mkdir()
    for name in ("socket", "select", "selectors", "json", "re", "hashlib", "base64", "fnmatch", "random"):
        (project / f"{name}.py").write_text(f"open({str(tmp_path / 'shadowed')!r}, 'a').write('{name}\\n')\n")
    payload = {"prompt": "how does the stop hook save a turn?", "cwd": str(project), "session_id": "s"}
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"], "BLI_MEMORY_DAEMON": "0"}
    done = subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("[bli-memory] prompt "), done.stderr
    assert not (tmp_path / "shadowed").exists(), (tmp_path / "shadowed").read_text()


def test_install_replaces_the_former_one_liner_and_uninstall_removes_both_forms(tmp_path: Path) -> None:
    """A hooks.json of an older install (`python -c '…'`) gets the new command in place of the old
    one: one handler per event, never two."""
    old = shlex.join([sys.executable, "-c", OLD_LAUNCH])
    (tmp_path / ".codex").mkdir()
    former = {
        "hooks": {
            event: [
                {"hooks": [{"type": "command", "command": f"{old} hook {sub} --host codex", "timeout": 5}]}
            ]
            for event, sub in EVENTS.items()
        }
    }
    (tmp_path / ".codex" / "hooks.json").write_text(json.dumps(former))
    done = run_in_home(tmp_path, "install", "--host", "codex")
    assert done.returncode == 0, done.stderr
    assert (
        "~/.codex/hooks.json: replace hook SessionStart; replace hook UserPromptSubmit; replace hook Stop"
        in done.stdout
    )
    for (command,) in commands(tmp_path / ".codex" / "hooks.json").values():
        assert shlex.split(command)[1] == probe.launcher_path()
        assert contract.is_our_hook_command(command)
    assert run_in_home(tmp_path, "uninstall", "--host", "codex").returncode == 0
    assert (
        not (tmp_path / ".codex" / "hooks.json").exists()
        or commands(tmp_path / ".codex" / "hooks.json") == {}
    )


def test_the_hooks_start_the_daemon_through_the_same_launcher() -> None:
    """via_daemon names the launcher file itself (the hook path must not import `contract`, which
    imports `re` through `shlex`); the two names are one file."""
    from bli_memory.hooks import via_daemon

    assert via_daemon.LAUNCHER_PARTS == contract.HOOK_LAUNCHER
    assert via_daemon._program_argv("/p/python", ["daemon"]) == ["/p/python", probe.launcher_path(), "daemon"]


def test_a_python_dash_m_install_registers_the_launcher_too() -> None:
    """`python -m bli_memory` (install's last resort when no bin is found) would run each hook with the
    project's folder first on sys.path: the hooks get the launcher file instead, the server keeps -m."""
    assert probe.hook_prefix([sys.executable, "-m", "bli_memory"]) == [sys.executable, probe.launcher_path()]
    zipapp = ["/usr/bin/python3", "/opt/bli-memory-mcp.pyz"]
    assert probe.hook_prefix(zipapp) == zipapp

"""The Claude Code plugin (plugins/bli-memory, listed by .claude-plugin/marketplace.json) in the real
Claude Code: validated, installed from a local marketplace with the CLI, its MCP server connected, a
`claude -p` session against the loopback stand-in of the Messages API (scripts/messages_standin.py)
whose request holds the session-start and recall blocks and whose Stop hook saves the turn, and the
same after an upgrade to a newer plugin version with the old version's folder gone.

Claude Code is the pinned npm build scripts/test installs into .venv/claude-code (or
$BLI_MEMORY_CLAUDE_CLI); a missing one fails the test. Every run has a temporary HOME and no network
beyond loopback (the stand-in is also the proxy, and refuses tunnels).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO

sys.path.insert(0, str(REPO / "scripts"))
from eval_capture import Door, deterministic_env
from eval_reach import CONTEXT_BLOCK, QUIET_HOST, RECALL_BLOCK, STANDIN_KEY, jobs
from messages_standin import MessagesStandIn

PLUGIN = REPO / "plugins" / "bli-memory"
MARKETPLACE_NAME = "bli-memory"
PLUGIN_ID = "bli-memory@bli-memory"
PLUGIN_TOOLS = "mcp__plugin_bli-memory_bli-memory__"
MARKET_URL = "https://git.example.invalid/bli-memory.git"
CLAUDE_DEFAULT = REPO / ".venv" / "claude-code" / "node_modules" / ".bin" / "claude"
CLI_TIMEOUT_S = 60.0
TURN_TIMEOUT_S = 90.0
JOB_DEADLINE_S = 30.0
#: pip with no configuration and an index on a refused loopback port: a venv build fails at once
NO_INDEX = {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple"}
FACT = "The nightly export job writes its parquet files to the bucket lantern-archive-7."
FIRST_PROMPT = "where does the nightly export job write its parquet files?"
SECOND_PROMPT = "which bucket holds the nightly export's parquet output?"


def claude_cli() -> str:
    path = os.environ.get("BLI_MEMORY_CLAUDE_CLI") or str(CLAUDE_DEFAULT)
    if not os.access(path, os.X_OK):
        pytest.fail(
            f"no Claude Code at {path}: run scripts/test (it installs it from npm) or set BLI_MEMORY_CLAUDE_CLI"
        )
    return path


def python_with_mcp_dir(tmp: Path) -> Path:
    """A folder whose `python3` is this interpreter, which has the `mcp` SDK: a script that runs it by
    its own path (a symbolic link elsewhere would not be this venv's python), first on the PATH."""
    folder = tmp / "python-bin"
    folder.mkdir()
    wrapper = folder / "python3"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return folder


def git_marketplace(home: Path, source: Path, version: str) -> str:
    """The repository's marketplace as GitHub would serve it: git's files of `.claude-plugin/`,
    `plugins/` and the package the plugin links to (as they are in the work tree, links kept as
    links), committed in `source` with the plugin's version set to `version`; Claude Code clones it
    from MARKET_URL, which `home`'s git configuration sends to that folder (never to a network)."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--", ".claude-plugin", "plugins", "bli_memory"],
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        origin, target = REPO / name, source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_symlink():
            target.symlink_to(os.readlink(origin))
        elif origin.is_file():
            shutil.copy2(origin, target)
    set_version(source, version)
    git(source, "init", "-q", "-b", "main")
    commit(source, version)
    for setting in ([f"url.{source.as_uri()}.insteadOf", MARKET_URL], ["protocol.file.allow", "always"]):
        subprocess.run(
            ["git", "config", "--global", *setting],
            env={"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            check=True,
            timeout=30,
        )
    return MARKET_URL


def git(folder: Path, *args: str) -> None:
    env = {"HOME": str(folder), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-C", str(folder), *args], env=env, check=True, capture_output=True, timeout=30)


def commit(folder: Path, version: str) -> None:
    git(folder, "add", "-A")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", version)


def set_version(market: Path, version: str) -> None:
    manifest = market / "plugins" / "bli-memory" / ".claude-plugin" / "plugin.json"
    data = json.loads(manifest.read_text())
    data["version"] = version
    manifest.write_text(json.dumps(data, indent=2) + "\n")
    listing = market / ".claude-plugin" / "marketplace.json"
    data = json.loads(listing.read_text())
    data["plugins"][0]["version"] = version
    listing.write_text(json.dumps(data, indent=2) + "\n")


class Claude:
    """The real Claude Code with a HOME of its own, talking to the stand-in only."""

    def __init__(self, home: Path, standin: MessagesStandIn, path_first: Path) -> None:
        self.program = claude_cli()
        self.home = home
        self.env = {
            "HOME": str(home),
            "PATH": f"{path_first}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "BLI_MEMORY_DAEMON": "0",
            "HTTPS_PROXY": standin.url,
            "HTTP_PROXY": standin.url,
            "NO_PROXY": "127.0.0.1,localhost",
            "GIT_CONFIG_NOSYSTEM": "1",
            "ANTHROPIC_BASE_URL": standin.url,
            "ANTHROPIC_API_KEY": STANDIN_KEY,
            **NO_INDEX,
            **QUIET_HOST,
        }

    def run(self, *args: str, cwd: Path | None = None, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.program, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=str(cwd or self.home),
            timeout=TURN_TIMEOUT_S,
            check=False,
        )

    def ok(self, *args: str, cwd: Path | None = None) -> str:
        done = self.run(*args, cwd=cwd)
        assert done.returncode == 0, f"claude {' '.join(args)}: {done.stdout}\n{done.stderr}"
        return done.stdout + done.stderr

    def install_path(self) -> Path:
        installed = json.loads((self.home / ".claude" / "plugins" / "installed_plugins.json").read_text())
        return Path(installed["plugins"][PLUGIN_ID][0]["installPath"])

    def launcher(self, *args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
        """The installed plugin's launcher, as the hooks run it."""
        return subprocess.run(
            [str(self.install_path() / "bin" / "bli-memory"), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=str(cwd),
            timeout=CLI_TIMEOUT_S,
            check=False,
        )


@pytest.fixture
def standin() -> Iterator[MessagesStandIn]:
    server = MessagesStandIn()
    try:
        yield server
    finally:
        server.close()


def test_the_plugin_and_the_marketplace_pass_strict_validation(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), **QUIET_HOST}
    for target in (PLUGIN, REPO):
        done = subprocess.run(
            [claude_cli(), "plugin", "validate", "--strict", str(target)],
            capture_output=True,
            text=True,
            env=env,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Validation passed" in done.stdout


def test_installing_from_a_clone_of_the_repository_copies_the_client_and_the_one_skill(
    tmp_path: Path,
) -> None:
    """The marketplace cloned with git, as `claude plugin marketplace add owner/repo` does: the clone
    keeps the plugin's symbolic links (lib/bli_memory to the package; the package's SKILL.md to the
    plugin's), and the installed copy under the version's folder holds real files in their place, so
    it runs with nothing beside it."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CONFIG_NOSYSTEM": "1",
        **QUIET_HOST,
    }
    url = git_marketplace(home, tmp_path / "market", "0.1.0")

    def claude(*args: str) -> None:
        done = subprocess.run(
            [claude_cli(), *args], capture_output=True, text=True, env=env, timeout=CLI_TIMEOUT_S, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr

    claude("plugin", "marketplace", "add", url)
    claude("plugin", "install", PLUGIN_ID)
    installed = json.loads((home / ".claude" / "plugins" / "installed_plugins.json").read_text())
    root = Path(installed["plugins"][PLUGIN_ID][0]["installPath"])
    assert home in root.parents and root.name == "0.1.0"
    client = root / "lib" / "bli_memory"
    assert client.is_dir() and not client.is_symlink() and (client / "cli.py").is_file()
    assert not any(path.is_symlink() for path in root.rglob("*"))
    skill = root / "skills" / "bli-memory" / "SKILL.md"
    printed = subprocess.run(
        [str(root / "bin" / "bli-memory"), "--print-skill"],
        capture_output=True,
        text=True,
        env={**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"},
        timeout=CLI_TIMEOUT_S,
        check=True,
    ).stdout
    assert skill.read_text() == printed == (REPO / "bli_memory" / "install" / "SKILL.md").read_text()


def wait_for_jobs(db: Path, done: int) -> dict[str, int]:
    deadline = time.monotonic() + JOB_DEADLINE_S
    while True:
        counts = jobs(db)
        if counts.get("done", 0) >= done or time.monotonic() >= deadline:
            return counts
        time.sleep(0.1)


def turn(claude: Claude, standin: MessagesStandIn, project: Path, prompt: str) -> str:
    """One `claude -p` turn; the text of its own request to the model."""
    standin.reply("Noted.")
    start = len(standin.requests)
    done = claude.run("-p", "--output-format", "json", cwd=project, stdin=prompt)
    assert done.returncode == 0, done.stdout + done.stderr
    made = standin.since(start)
    assert [request.path for request in made if request.method == "CONNECT"] == []
    own = [request for request in made if request.is_turn(prompt)]
    assert own, f"no request held the prompt; paths: {[request.path for request in made]}"
    return own[-1].text()


def test_a_session_with_the_installed_plugin_recalls_saves_and_survives_an_upgrade(
    tmp_path: Path, standin: MessagesStandIn
) -> None:
    door = Door(tmp_path / "door", "onnx", deterministic_env(os.environ))
    try:
        home = tmp_path / "home"
        home.mkdir()
        claude = Claude(home, standin, python_with_mcp_dir(tmp_path))
        market = tmp_path / "market"
        claude.ok("plugin", "marketplace", "add", git_marketplace(home, market, "0.1.0"))
        claude.ok("plugin", "install", PLUGIN_ID)
        first_root = claude.install_path()
        assert first_root.name == "0.1.0" and home in first_root.parents

        project = tmp_path / "lantern"
        project.mkdir()
        for command in (
            ["git", "init", "-q"],
            ["git", "remote", "add", "origin", "https://git.example.invalid/lantern.git"],
        ):
            subprocess.run(command, cwd=project, env=claude.env, check=True, capture_output=True)
        login = claude.launcher(
            "login", "--url", door.url, "--token-stdin", cwd=project, stdin=door.token + "\n"
        )
        assert login.returncode == 0, login.stderr
        saved = claude.launcher("save", FACT, cwd=project)
        assert saved.returncode == 0, saved.stderr

        listed = claude.ok("mcp", "list", cwd=project)
        line = next(row for row in listed.splitlines() if "bli-memory" in row)
        assert "Connected" in line and str(first_root / "bin" / "bli-memory") in line, listed

        request = turn(claude, standin, project, FIRST_PROMPT)
        # a plugin's MCP tools are named mcp__plugin_<plugin>_<server>__<tool>
        assert f"{PLUGIN_TOOLS}search_memory" in request, "the real MCP server's tools reach the model"
        assert "lantern-archive-7" in "".join(CONTEXT_BLOCK.findall(request))
        assert "lantern-archive-7" in "".join(RECALL_BLOCK.findall(request))
        assert wait_for_jobs(door.db, 1).get("done") == 1, "the Stop hook saved the turn"

        set_version(market, "0.1.1")
        commit(market, "0.1.1")
        claude.ok("plugin", "marketplace", "update", MARKETPLACE_NAME)
        claude.ok("plugin", "update", PLUGIN_ID)
        second_root = claude.install_path()
        assert second_root.name == "0.1.1" and second_root != first_root
        shutil.rmtree(first_root, ignore_errors=True)  # nothing may still need the old version's folder

        listed = claude.ok("mcp", "list", cwd=project)
        line = next(row for row in listed.splitlines() if "bli-memory" in row)
        assert "Connected" in line and str(second_root / "bin" / "bli-memory") in line, listed
        request = turn(claude, standin, project, SECOND_PROMPT)
        assert "lantern-archive-7" in "".join(CONTEXT_BLOCK.findall(request))
        assert "lantern-archive-7" in "".join(RECALL_BLOCK.findall(request))
        assert wait_for_jobs(door.db, 2).get("done") == 2, "the upgraded Stop hook saved the turn"
    finally:
        door.stop()


def readme_plugin_block() -> list[tuple[str, list[str]]]:
    """The `$ claude …` commands of the README's plugin section, each with the lines it shows."""
    text = (REPO / "README.md").read_text()
    section = text.split("## In Claude Code: the plugin", 1)[1].split("\n## ", 1)[0]
    block = section.split("```text\n", 1)[1].split("```", 1)[0]
    commands: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
    return [(command, shown) for command, shown in commands if command.startswith("claude ")]


def test_the_readme_plugin_commands_print_what_the_readme_shows(tmp_path: Path) -> None:
    """The README's plugin route, typed by `you` with a clone at ~/bli-memory (the quickstart is
    README-tested on its own): each `claude` command prints the README's lines, HOME being
    /home/you there."""
    home = tmp_path / "you"
    home.mkdir()
    git_marketplace(home, home / "bli-memory", "0.1.0")
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CONFIG_NOSYSTEM": "1",
        # `mcp list` starts the server; on a python3 without the SDK it starts the venv's build,
        # whose pip must reach no index
        **NO_INDEX,
        **QUIET_HOST,
    }
    commands = readme_plugin_block()
    assert [command.split()[:3] for command, _ in commands] == [
        ["claude", "plugin", "marketplace"],
        ["claude", "plugin", "install"],
        ["claude", "mcp", "list"],
    ]
    for command, shown in commands:
        args = [arg.replace("~", str(home), 1) if arg.startswith("~") else arg for arg in command.split()[1:]]
        done = subprocess.run(
            [claude_cli(), *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=str(home),
            timeout=CLI_TIMEOUT_S,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        printed = [
            line.rstrip() for line in (done.stdout + done.stderr).replace(str(home), "/home/you").splitlines()
        ]
        assert printed == [line.rstrip() for line in shown], command


def test_the_plugin_version_is_the_package_version() -> None:
    """One version for the plugin, its marketplace entry and the client it carries: an upgrade of the
    plugin is then an upgrade of the client, so a daemon started from the old version's folder
    stands down at the new hooks' first request (the daemon compares the client's version)."""
    from bli_memory import __version__

    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    listing = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    entry = next(plugin for plugin in listing["plugins"] if plugin["name"] == "bli-memory")
    assert manifest["version"] == entry["version"] == __version__
    assert entry["source"] == "./plugins/bli-memory"

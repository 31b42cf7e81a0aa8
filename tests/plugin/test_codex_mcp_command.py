"""The Codex plugin's MCP server command (`.codex-mcp.json`), run as Codex runs it against a made-up
`$CODEX_HOME`: which installed copy's `bin/bli-memory` it starts.

Codex starts a plugin's MCP server without telling it the plugin's folder, so the command finds the
copy itself among `$CODEX_HOME/plugins/cache/<marketplace>/bli-memory/<version>/`. It must be the copy
Codex runs the hooks from: an enabled `bli-memory@<marketplace>` in `config.toml`, and there the
version Codex picks (`local` first, then semantic-version order, so 0.10.0 after 0.9.0, which a glob
sorts last). Each copy's `bin/bli-memory` here is a stub printing its own path, its arguments and
`$BLI_MEMORY_PLUGIN_DATA`; tests/plugin/test_codex_plugin.py runs the real Codex over a real copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bli_memory.install.plugin_state import codex_active_version, codex_plugin
from tests.helpers import REPO

SERVER = json.loads((REPO / "plugins" / "bli-memory" / ".codex-mcp.json").read_text())["mcpServers"][
    "bli-memory"
]
TIMEOUT_S = 30.0
STUB = '#!/bin/sh\nprintf \'%s\\n\' "$0" "$*" "$BLI_MEMORY_PLUGIN_DATA"\n'
SHELLS = ["sh", "bash"]


def copy(codex_home: Path, marketplace: str, version: str) -> Path:
    """One installed copy of the plugin, as Codex lays it out, with the stub as its launcher."""
    root = codex_home / "plugins" / "cache" / marketplace / "bli-memory" / version
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "bli-memory").write_text(STUB)
    (root / "bin" / "bli-memory").chmod(0o755)
    return root


def configure(codex_home: Path, **enabled: bool) -> None:
    """config.toml as `codex plugin add` writes it, one table per marketplace (and a disabled one
    with `enabled = false`, as Codex's plugin toggle leaves it)."""
    tables = [
        f'[plugins."bli-memory@{market}"]\nenabled = {"true" if on else "false"}\n'
        for market, on in enabled.items()
    ]
    (codex_home / "config.toml").write_text(
        '[marketplaces.bli-memory]\nsource_type = "local"\n\n' + "\n".join(tables)
    )


def start(
    tmp_path: Path, *, shell: str = "sh", codex_home: Path | None = None, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The server's command and arguments from the JSON file, as Codex spawns it (plus one argument
    of ours), in a project folder, with $CODEX_HOME set when given (and `path` as $PATH)."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    env = {"PATH": path or os.environ["PATH"], "HOME": str(tmp_path / "home")}
    if codex_home is not None:
        env["CODEX_HOME"] = str(codex_home)
    command = shell if SERVER["command"] == "sh" else SERVER["command"]
    return subprocess.run(
        [command, *SERVER["args"], "serve"],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(project),
        timeout=TIMEOUT_S,
    )


def started(result: subprocess.CompletedProcess[str]) -> str:
    """The launcher the command ran (its path, as it was exec'd)."""
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[0]


def launcher(root: Path) -> str:
    return f"{root}/bin/bli-memory"


@pytest.mark.parametrize("shell", SHELLS)
def test_the_server_starts_0_10_0_not_the_lexically_last_0_9_0(tmp_path: Path, shell: str) -> None:
    codex_home = tmp_path / "codex home"  # a space in the path stays one argument
    copy(codex_home, "bli-memory", "0.9.0")
    newest = copy(codex_home, "bli-memory", "0.10.0")
    configure(codex_home, **{"bli-memory": True})
    result = start(tmp_path, shell=shell, codex_home=codex_home)
    assert result.stdout.splitlines() == [
        launcher(newest),
        "serve",
        str(codex_home / "plugins" / "data" / "bli-memory"),
    ]


#: the awks a machine may have as `awk`: Debian's default (mawk), GNU awk, BusyBox's (Alpine's);
#: `.ci/run` installs the last two.
AWKS = {"mawk": ["mawk"], "gawk": ["gawk"], "busybox": ["busybox", "awk"]}


def awk_first_on_path(tmp_path: Path, name: str) -> str:
    """$PATH with a folder first whose `awk` runs the awk `name`."""
    program = AWKS[name]
    found = shutil.which(program[0])
    assert found, f"{program[0]} is not installed (.ci/run installs it): this test runs the launcher with it"
    folder = tmp_path / f"awk-{name}"
    folder.mkdir()
    (folder / "awk").write_text(f'#!/bin/sh\n: > "{folder}/ran"\nexec {found} {" ".join(program[1:])} "$@"\n')
    (folder / "awk").chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


@pytest.mark.parametrize("awk", sorted(AWKS))
def test_every_common_awk_picks_the_version_codex_picks(tmp_path: Path, awk: str) -> None:
    """The launcher's version order is awk code: mawk, gawk and BusyBox must read it alike, numeric
    pre-release identifiers by number (rc.10 after rc.2), a disabled marketplace passed over."""
    codex_home = tmp_path / "codex"
    versions = ["0.9.0", "0.10.0", "1.0.0-rc.2", "1.0.0-rc.10"]
    for version in versions:
        copy(codex_home, "bli-memory", version)
    copy(codex_home, "other", "2.0.0")
    configure(codex_home, **{"bli-memory": True, "other": False})
    assert codex_active_version(versions) == "1.0.0-rc.10"
    result = start(tmp_path, codex_home=codex_home, path=awk_first_on_path(tmp_path, awk))
    assert (tmp_path / f"awk-{awk}" / "ran").exists()  # this awk, not another, read the versions
    assert started(result) == launcher(
        codex_home / "plugins" / "cache" / "bli-memory" / "bli-memory" / "1.0.0-rc.10"
    )


def test_a_disabled_marketplace_is_passed_over_whatever_its_version(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    ours = copy(codex_home, "bli-memory", "0.10.0")
    copy(codex_home, "bli-memory", "0.9.0")
    copy(codex_home, "zz-team", "1.0.0")  # globbed last, and the highest version
    configure(codex_home, **{"bli-memory": True, "zz-team": False})
    assert started(start(tmp_path, codex_home=codex_home)) == launcher(ours)


def test_a_copy_in_the_cache_without_its_config_table_is_not_run(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    ours = copy(codex_home, "bli-memory", "0.1.0")
    copy(codex_home, "leftover", "2.0.0")  # a marketplace's copy Codex no longer records
    configure(codex_home, **{"bli-memory": True})
    assert started(start(tmp_path, codex_home=codex_home)) == launcher(ours)


def test_two_enabled_marketplaces_run_the_higher_version(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    higher = copy(codex_home, "a-team", "0.10.0")
    copy(codex_home, "bli-memory", "0.9.0")
    configure(codex_home, **{"a-team": True, "bli-memory": True})
    assert started(start(tmp_path, codex_home=codex_home)) == launcher(higher)


def test_without_a_config_file_the_highest_copy_runs_from_home_codex(tmp_path: Path) -> None:
    codex_home = tmp_path / "home" / ".codex"  # no $CODEX_HOME: Codex's default folder
    copy(codex_home, "bli-memory", "0.9.0")
    newest = copy(codex_home, "bli-memory", "0.10.0")
    result = start(tmp_path)
    assert started(result) == launcher(newest)
    assert result.stdout.splitlines()[2] == str(codex_home / "plugins" / "data" / "bli-memory")


@pytest.mark.parametrize(
    ("versions", "expected"),
    [
        (["0.9.0", "0.10.0"], "0.10.0"),
        (["1.2.3", "1.10.0", "1.9.9"], "1.10.0"),
        (["0.10.0", "0.10.0-rc.2", "0.10.0-rc.10"], "0.10.0"),  # a release above its pre-releases
        (["1.0.0-rc.2", "1.0.0-rc.10", "1.0.0-beta"], "1.0.0-rc.10"),  # numeric parts by number
        (["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-1"], "1.0.0-alpha.1"),  # longer wins, numbers lowest
        (["2.0.0", "local", "9.9.9"], "local"),  # a plugin with no version in its manifest
        (["0.9.0", "dev", "0.10.0"], "dev"),  # not a version: bytes, as Codex compares it
        (["0.9.0", "0.10.0+build.1"], "0.10.0+build.1"),
    ],
)
def test_the_command_and_status_pick_the_version_codex_picks(
    tmp_path: Path, versions: list[str], expected: str
) -> None:
    codex_home = tmp_path / "codex"
    roots = {version: copy(codex_home, "bli-memory", version) for version in versions}
    configure(codex_home, **{"bli-memory": True})
    assert started(start(tmp_path, codex_home=codex_home)) == launcher(roots[expected])
    assert codex_active_version(versions) == expected
    state = codex_plugin({"HOME": str(tmp_path / "home"), "CODEX_HOME": str(codex_home)})
    assert (state.key, state.version, state.root) == ("bli-memory@bli-memory", expected, str(roots[expected]))


def test_status_reports_the_copy_the_server_runs_among_marketplaces(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    copy(codex_home, "bli-memory", "0.9.0")
    higher = copy(codex_home, "team", "0.10.0")
    copy(codex_home, "zz-off", "3.0.0")
    configure(codex_home, **{"bli-memory": True, "team": True, "zz-off": False})
    assert started(start(tmp_path, codex_home=codex_home)) == launcher(higher)
    state = codex_plugin({"HOME": str(tmp_path / "home"), "CODEX_HOME": str(codex_home)})
    assert (state.key, state.enabled, state.root) == ("bli-memory@team", True, str(higher))


def test_names_codex_would_not_take_as_versions_are_skipped() -> None:
    assert codex_active_version(["0.1.0", "bad name", "x/y"]) == "0.1.0"
    assert codex_active_version([]) is None


def test_with_no_installed_copy_the_command_says_so_in_one_line(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    result = start(tmp_path, codex_home=codex_home)
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr == f"bli-memory: no enabled copy of the plugin under {codex_home}/plugins/cache\n"

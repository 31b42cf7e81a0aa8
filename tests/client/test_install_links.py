"""install and uninstall against hostile files, as a person runs them (a subprocess on a temporary HOME):
symbolic links planted in the skills folders are never followed out of them, and a settings.json
nested far deeper than any host writes is one line, not a RecursionError."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.client.helpers import run_in_home

#: where install writes the skill, for Claude Code and for Codex
SKILL_FILES = (".claude/skills/bli-memory/SKILL.md", ".agents/skills/bli-memory/SKILL.md")


def our_copy(home: Path) -> str:
    """The text install writes as SKILL.md (the marker line included), read from a real install."""
    scratch = home.parent / "scratch-home"
    scratch.mkdir()
    assert run_in_home(scratch, "install", "--host", "claude").returncode == 0
    return (scratch / SKILL_FILES[0]).read_text()


def outside_folder(tmp_path: Path, text: str) -> Path:
    """A folder outside every skills folder holding a SKILL.md that looks like ours, and a note."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "SKILL.md").write_text(text)
    (outside / "notes.txt").write_text("mine\n")
    return outside


@pytest.mark.parametrize("linked", ["folder", "file"])
def test_links_in_the_skills_folders_are_never_followed(tmp_path: Path, linked: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    outside = outside_folder(tmp_path, our_copy(home))
    before = {path.name: path.read_bytes() for path in outside.iterdir()}
    for relative in SKILL_FILES:
        skill = home / relative
        if linked == "folder":
            skill.parent.parent.mkdir(parents=True)
            skill.parent.symlink_to(outside, target_is_directory=True)
        else:
            skill.parent.mkdir(parents=True)
            skill.symlink_to(outside / "SKILL.md")

    removed = run_in_home(home, "uninstall")
    assert removed.returncode == 0, removed.stderr
    assert {path.name: path.read_bytes() for path in outside.iterdir()} == before
    assert all((home / relative).exists() for relative in SKILL_FILES)  # the links stay too

    installed = run_in_home(home, "install")
    assert installed.returncode == 1 and "Traceback" not in installed.stderr
    assert len(installed.stderr.splitlines()) == 1
    assert "is a symbolic link install did not make; left it untouched" in installed.stderr
    assert {path.name: path.read_bytes() for path in outside.iterdir()} == before


@pytest.mark.parametrize(
    "text",
    [
        '{"a":' * 500 + "1" + "}" * 500,
        '{"hooks": ' + "[" * 500 + "]" * 500 + "}",
        '{"a": "' + "[" * 5000 + '"}',  # brackets in a string are text: a valid, shallow file
    ],
)
def test_a_settings_file_nested_500_deep_is_one_line(tmp_path: Path, text: str) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(text)
    for verb in ("install", "uninstall"):
        done = run_in_home(tmp_path, verb, "--host", "claude")
        assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr, done.stderr
        if text.startswith('{"a": "'):
            assert done.returncode == 0, done.stderr
            continue
        assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
        assert "~/.claude/settings.json nests deeper than 100 levels; left it untouched" in done.stderr
        assert settings.read_text() == text
    if text.startswith('{"a": "'):
        assert json.loads(settings.read_text())["a"] == "[" * 5000


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (".codex/hooks.json", '{"hooks": ' + "[" * 5000 + "]" * 5000 + "}"),
        (".codex/config.toml", "a = " + "[" * 5000 + "]" * 5000 + "\n"),
    ],
)
def test_codex_files_nested_past_the_recursion_limit_are_one_line(
    tmp_path: Path, name: str, text: str
) -> None:
    """install, uninstall and status read Codex's hooks.json and config.toml too: a file nested too deep
    to parse is one line naming it (status: "cannot tell"), never a RecursionError."""
    path = tmp_path / name
    path.parent.mkdir()
    path.write_text(text)
    for verb in ("install", "uninstall"):
        done = run_in_home(tmp_path, verb, "--host", "codex")
        assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr, done.stderr
        assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
        assert os.path.basename(name) in done.stderr and "left it untouched" in done.stderr
        assert path.read_text() == text
    if name.endswith(".toml"):  # status reads config.toml only when there are hooks to judge
        (tmp_path / ".codex" / "hooks.json").write_text('{"hooks": {}}')
    env_home = {"HOME": str(tmp_path)}
    status = subprocess.run(
        [sys.executable, "-m", "bli_memory", "status", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, **env_home, "BLI_MEMORY_DAEMON": "0"},
        cwd=tmp_path,
        timeout=30,
    )
    assert "Traceback" not in status.stderr, status.stderr
    codex = json.loads(status.stdout)["codex"]
    assert codex["state"] == "unknown" and os.path.basename(name) in codex["reason"], codex

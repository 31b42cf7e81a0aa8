"""The `bli-memory` skill: the SKILL.md that teaches an agent to use memory, and where install puts it.

The text ships as package data (`bli_memory/install/SKILL.md`); `bli-memory-mcp --print-skill`
prints it. `install` writes it as `<skills folder>/bli-memory/SKILL.md` into each host's personal
skills folder, where the host loads a skill by its folder and the `name`/`description` front matter:

- Claude Code: `~/.claude/skills/` (`$CLAUDE_CONFIG_DIR/skills/` when that is set);
- Codex: `~/.agents/skills/` (its user-level skills folder).

A written copy, not a link: a link into a venv dangles once the venv is gone, and the skill must
keep working for the hooks' lifetime. The copy ends with `SKILL_MARKER`, which is how install and
uninstall recognise it as theirs: a `bli-memory` folder holding anything else is never overwritten
or removed (install stops and names it), and no other skill's folder is ever read or written. Nor is
a symbolic link followed: a `bli-memory` folder or SKILL.md that is a link stops install the same way,
and uninstall leaves it and whatever it points at alone.
Uninstall deletes our SKILL.md and then the folder when nothing else is left in it.
"""

from __future__ import annotations

from collections.abc import Mapping

from bli_memory.install.files import (
    SKILL_NAME,
    FileChange,
    InstallError,
    Paths,
    linked_part,
    read_text,
    show_path,
)

SKILL_FILE = "SKILL.md"
#: the last line of the copy install writes; a SKILL.md without it is someone else's
SKILL_MARKER = "<!-- written by `bli-memory-mcp install`; `bli-memory-mcp uninstall` removes it -->"


def skill_text() -> str:
    """The packaged SKILL.md, exactly as `--print-skill` prints it."""
    from importlib.resources import files

    return files("bli_memory.install").joinpath(SKILL_FILE).read_text(encoding="utf-8")


def installed_text() -> str:
    """What install writes: the packaged text and the marker that makes it recognisably ours."""
    return skill_text().rstrip("\n") + "\n\n" + SKILL_MARKER + "\n"


def skill_paths(env: Mapping[str, str]) -> dict[str, str]:
    """host -> the SKILL.md path install writes for it (`Paths.claude_skill`, `Paths.codex_skill`)."""
    paths = Paths.from_env(env)
    return {"claude": paths.claude_skill, "codex": paths.codex_skill}


def is_ours(text: str | None) -> bool:
    return text is not None and SKILL_MARKER in text


def plan_skill(path: str, install: bool) -> FileChange:
    """Our SKILL.md at `path` written (install) or deleted (uninstall); InstallError when the folder
    holds a SKILL.md that is not ours, or when the file or its folder is a symbolic link: install
    never makes one, so it is someone else's, and following it would write (or delete) outside."""
    link = linked_part(path)
    if link is not None:
        if not install:
            return FileChange(path, None, None)  # nothing of ours is behind a link
        raise InstallError(
            f"{show_path(link)} is a symbolic link install did not make; left it untouched "
            "(move it away to install the bli-memory skill)"
        )
    old_text = read_text(path)
    if old_text is not None and not is_ours(old_text):
        if not install:
            return FileChange(path, old_text, old_text)  # someone else's: nothing of ours to remove
        raise InstallError(
            f"{show_path(path)} is a skill install did not write; left it untouched "
            "(move it away to install the bli-memory skill)"
        )
    if install:
        new_text = installed_text()
        if old_text == new_text:
            return FileChange(path, old_text, old_text)
        verb = "update" if old_text is not None else "add"
        return FileChange(
            path, old_text, new_text, [f"{verb} skill {SKILL_NAME}"], backup=False, follow_links=False
        )
    if old_text is None:
        return FileChange(path, None, None)
    return FileChange(
        path, old_text, None, [f"remove skill {SKILL_NAME}"], backup=False, prune_dir=True, follow_links=False
    )


def print_skill_main(args: list[str]) -> int:
    """`bli-memory-mcp --print-skill`: the SKILL.md on stdout, for a host install does not know."""
    import sys

    if any(arg in ("--help", "-h") for arg in args):
        sys.stdout.write(
            "usage: bli-memory-mcp --print-skill\n\n"
            "Print the bli-memory skill (SKILL.md), which teaches an agent when to recall, what to save,\n"
            "how update, forget and pins work, and how to log experience. `install` writes it to\n"
            "~/.claude/skills/bli-memory/ and ~/.agents/skills/bli-memory/; for another host, save it as\n"
            "<its skills folder>/bli-memory/SKILL.md.\n"
        )
        return 0
    sys.stdout.write(skill_text())
    return 0

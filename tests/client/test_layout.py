"""The client side's house rules, read from its source and from real hook runs.

- A hook run decides whether a prompt is trivial once and finishes its answer once (the receipt is
  stamped, cleaned and fitted to the host in one place), whichever route answered.
- Each fact is written once: the daemon events, the reasons a hook gives for not using the daemon,
  where HOME is read, how an exception becomes one log line.
- No dead code on the daemon client, class names that say which program they belong to, and
  docstrings that say what they mean instead of pointing at documents outside the repository.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import bli_memory
from tests.hooks.helpers import PROMPT, SESSION_START, counted_run

PACKAGE_ROOT = Path(bli_memory.__file__).parent
REPO = PACKAGE_ROOT.parent
#: another change is turning install.py into a package; its HOME lookups are its own for now
NOT_YET = ("install.py", "install/")


@pytest.mark.parametrize(
    ("event", "payload", "receipt", "skip_checks"),
    [
        (
            "prompt",
            {**PROMPT, "prompt": "ok"},
            '[bli-memory] prompt skipped {"reason":"trivial_prompt","via":"direct"}',
            1,
        ),
        (
            "prompt",
            {**PROMPT, "prompt": "how does the stop hook save the turn?"},
            '[bli-memory] prompt skipped {"reason":"unpaired","via":"direct"}',
            1,
        ),
        (
            "session-start",
            SESSION_START,
            '[bli-memory] session-start skipped {"reason":"unpaired","via":"direct"}',
            0,
        ),
    ],
)
def test_a_hook_run_decides_triviality_once_and_finishes_once(
    tmp_path: Path, event: str, payload: dict[str, object], receipt: str, skip_checks: int
) -> None:
    calls, line = counted_run(event, payload, tmp_path)
    assert line == receipt
    assert calls == {"skip_reason": skip_checks, "finish": 1}


def _sources() -> dict[str, str]:
    """Every module of the package: its path under the package → its text."""
    return {
        path.relative_to(PACKAGE_ROOT).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(PACKAGE_ROOT.rglob("*.py"))
    }


def _assigned_at_top(name: str) -> list[str]:
    """The modules that assign `name` at their top level."""
    found = []
    for path, text in _sources().items():
        for node in ast.parse(text).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            if any(isinstance(target, ast.Name) and target.id == name for target in targets):
                found.append(path)
    return found


def test_the_daemon_events_and_the_reasons_for_going_direct_are_written_once() -> None:
    assert _assigned_at_top("DAEMON_EVENTS") == ["hooks/answer.py"]
    holders = [path for path, text in _sources().items() if '"daemon_unavailable"' in text]
    assert holders == ["daemon_wire.py"]


def test_home_is_read_in_one_place() -> None:
    pattern = re.compile(r"""get\(\s*["']HOME["']\s*\)\s*or\s*os\.path\.expanduser""")
    readers = [
        path for path, text in _sources().items() if pattern.search(text) and not path.startswith(NOT_YET)
    ]
    assert readers == ["paths.py"]


def test_an_exception_becomes_one_log_line_in_one_place() -> None:
    writers = [path for path, text in _sources().items() if "splitlines()[0]" in text]
    assert writers == ["door/errors.py"]


def test_class_names_say_which_program_they_belong_to() -> None:
    workers: dict[str, list[str]] = {}
    for path, text in _sources().items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Worker"):
                workers.setdefault(node.name, []).append(path)
    assert "Worker" not in workers
    assert {name: paths for name, paths in workers.items() if len(paths) > 1} == {}
    assert workers["DaemonWorker"] == ["daemon.py"]


def _used_names() -> dict[str, int]:
    """How often each name is read across the package (as a name or an attribute)."""
    counts: dict[str, int] = {}
    for text in _sources().values():
        for node in ast.walk(ast.parse(text)):
            name = (
                node.id
                if isinstance(node, ast.Name)
                else node.attr
                if isinstance(node, ast.Attribute)
                else None
            )
            if name is not None:
                counts[name] = counts.get(name, 0) + 1
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    counts[alias.name] = counts.get(alias.name, 0) + 1
    return counts


@pytest.mark.parametrize(
    "module", ["hooks/via_daemon.py", "daemon_wire.py", "hooks/answer.py", "hooks/run.py"]
)
def test_every_function_of_the_hook_side_of_the_daemon_is_used(module: str) -> None:
    used = _used_names()
    tree = ast.parse((PACKAGE_ROOT / module).read_text(encoding="utf-8"))
    defined = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert [name for name in defined if name != "main" and not used.get(name)] == []


def test_the_receipt_module_says_what_it_imports() -> None:
    text = (PACKAGE_ROOT / "hooks" / "receipt.py").read_text(encoding="utf-8")
    tree = ast.parse(text)
    docstring = ast.get_docstring(tree) or ""
    imported: set[str] = set()  # each module of ours it imports, by its own name
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bli_memory."):
            folder = PACKAGE_ROOT.joinpath(*node.module.split(".")[1:])
            is_package = folder.is_dir()
            imported |= (
                {alias.name for alias in node.names} if is_package else {node.module.rsplit(".", 1)[-1]}
            )
    assert imported and "imports nothing" not in text
    assert [name for name in sorted(imported) if name not in docstring] == []


#: the files this layout touches; each says what it means in its own words
SELF_CONTAINED = [
    *(
        f"bli_memory/hooks/{name}.py"
        for name in ("__init__", "answer", "door", "last_prompt", "prompt", "receipt", "run")
    ),
    *(f"bli_memory/hooks/{name}.py" for name in ("session_start", "stats", "via_daemon")),
    "bli_memory/daemon.py",
    "bli_memory/daemon_wire.py",
    "bli_memory/paths.py",
    "bli_memory/render.py",
    *(path.relative_to(REPO).as_posix() for path in sorted((REPO / "bli_memory" / "wire").glob("*.py"))),
    *(path.relative_to(REPO).as_posix() for path in sorted((REPO / "bli_memory" / "commands").glob("*.py"))),
    "tests/hooks/test_imports.py",
    "tests/hooks/helpers.py",
    "scripts/bench_daemon.py",
]
ELSEWHERE = re.compile(r"DESIGN\.md|seed README|\bthe seed\b|\bseed's\b|\(seed[:,]")


def test_docstrings_and_comments_say_what_they_mean_without_pointing_elsewhere() -> None:
    pointing = {
        path: match.group(0)
        for path in SELF_CONTAINED
        for match in [ELSEWHERE.search((REPO / path).read_text(encoding="utf-8"))]
        if match
    }
    assert pointing == {}

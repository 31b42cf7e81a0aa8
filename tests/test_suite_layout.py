"""The test suite's own layout, read from its files with `ast`.

- It mirrors the package: tests/door/ (and tests/door/store/), tests/hooks/, tests/daemon/ and
  tests/client/, plus tests/plugin/ for the host plugins under plugins/, with the tests of the
  product as a whole at the top; every folder is a package (an
  `__init__.py`), so each module is imported as `tests.…` and tests/conftest.py applies to all.
- No module of the suite imports a test module (`test_*.py`) or a conftest: what tests share lives in
  a conftest (fixtures, found by pytest) or a helpers module (`tests/helpers.py`,
  `tests/<folder>/helpers.py`).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import TESTS

MIRRORED_FOLDERS = {"client", "daemon", "door", "door/store", "hooks", "plugin"}


def module_name(path: Path, root: Path) -> str:
    """The dotted name of a module under `root` (the folder that holds tests/)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path) -> set[str]:
    """Every module a file imports, at any depth, relative imports resolved; `from a import b` also
    names `a.b` (b may be a module)."""
    package = (
        module_name(path, root).rsplit(".", 1)[0] if path.name != "__init__.py" else module_name(path, root)
    )
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def imports_of_test_modules(tests: Path) -> dict[str, list[str]]:
    """For each module under `tests`, the test modules and conftests it imports (empty ones left out)."""
    root = tests.parent
    forbidden = {
        module_name(path, root)
        for path in tests.rglob("*.py")
        if path.name.startswith("test_") or path.name == "conftest.py"
    }
    found: dict[str, list[str]] = {}
    for path in sorted(tests.rglob("*.py")):
        wrong = sorted(imported_modules(path, root) & forbidden)
        if wrong:
            found[path.relative_to(root).as_posix()] = wrong
    return found


def test_no_module_of_the_suite_imports_a_test_module_or_a_conftest() -> None:
    assert imports_of_test_modules(TESTS) == {}


def test_the_check_sees_every_way_of_importing_a_test_module(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    (tests / "hooks").mkdir(parents=True)
    for name in ("__init__.py", "conftest.py", "helpers.py", "test_a.py", "hooks/__init__.py"):
        (tests / name).write_text("")
    (tests / "hooks" / "test_b.py").write_text("from tests.test_a import x\n")
    (tests / "hooks" / "test_c.py").write_text("def f():\n    from tests.hooks import test_b\n")
    (tests / "hooks" / "test_d.py").write_text("from . import test_c\nimport tests.conftest\n")
    (tests / "hooks" / "test_e.py").write_text("from tests.helpers import y\nfrom ..helpers import z\n")
    assert imports_of_test_modules(tests) == {
        "tests/hooks/test_b.py": ["tests.test_a"],
        "tests/hooks/test_c.py": ["tests.hooks.test_b"],
        "tests/hooks/test_d.py": ["tests.conftest", "tests.hooks.test_c"],
    }


def test_the_suite_mirrors_the_package_and_every_folder_is_a_package() -> None:
    folders = {
        path.relative_to(TESTS).as_posix()
        for path in TESTS.rglob("*")
        if path.is_dir() and any(path.glob("*.py"))
    }
    assert folders == MIRRORED_FOLDERS
    assert [folder for folder in sorted(folders) if not (TESTS / folder / "__init__.py").is_file()] == []
    assert (TESTS / "__init__.py").is_file() and (TESTS / "conftest.py").is_file()
    misnamed = [
        path.relative_to(TESTS).as_posix()
        for path in TESTS.rglob("*.py")
        if not path.name.startswith("test_") and path.name not in {"__init__.py", "conftest.py", "helpers.py"}
    ]
    assert misnamed == []

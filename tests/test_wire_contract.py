"""The names and limits the client and the door share are defined once, in `bli_memory/wire/contract.py`:
no other module of the package defines a name the contract defines (it imports it), so the two sides
cannot drift apart; and the contract imports nothing, since the hooks load it on their cold path."""

from __future__ import annotations

import ast
from pathlib import Path

from bli_memory.wire import contract
from tests.helpers import REPO

PACKAGE = REPO / "bli_memory"
CONTRACT = PACKAGE / "wire" / "contract.py"
#: modules that still define their own copy of a contract name, with the names; each copy must hold the
#: contract's value until the module imports it instead.
OWN_COPIES: dict[str, set[str]] = {}


def contract_names() -> set[str]:
    return {name for name in vars(contract) if not name.startswith("_") and name != "annotations"}


def defined_names(path: Path) -> set[str]:
    """The names a module binds at its top level by assignment, `def` or `class` (not by import)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def test_no_other_module_defines_a_name_of_the_contract() -> None:
    shared = contract_names()
    assert {"MAX_LIMIT", "MAX_PIN_CHARS", "FORGET_CLOSEST_MIN_SIMILARITY", "FACT_EXCHANGE_FIELD"} <= shared
    found = {
        path.relative_to(REPO).as_posix(): sorted(defined_names(path) & shared)
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != CONTRACT
    }
    found = {module: names for module, names in found.items() if names}
    assert found == {module: sorted(names) for module, names in OWN_COPIES.items()}


def test_a_copy_still_defined_elsewhere_holds_the_contracts_value() -> None:
    for module, names in OWN_COPIES.items():
        tree = ast.parse((REPO / module).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id in names:
                        assert node.value.value == getattr(contract, target.id), (module, target.id)


def test_the_hook_stats_schema_is_written_nowhere_else() -> None:
    """The schema string itself, not only its name, appears in no other module's code."""
    holders = sorted(
        path.relative_to(REPO).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path != CONTRACT
        and any(
            isinstance(node, ast.Constant) and node.value == contract.HOOK_STATS_SCHEMA
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        )
    )
    assert holders == []


def test_the_contract_imports_nothing() -> None:
    tree = ast.parse(CONTRACT.read_text(encoding="utf-8"))
    imports = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert [ast.unparse(node) for node in imports] == ["from __future__ import annotations"]


def test_a_duration_falls_in_the_bucket_its_edges_say() -> None:
    assert [contract.bucket_name(ms) for ms in (0, 50, 51, 15000, 15001)] == [
        "le_50",
        "le_50",
        "le_100",
        "le_15000",
        "gt_15000",
    ]

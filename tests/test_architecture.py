"""The package's layers, read from its import statements: no cycles, and the two programs apart.

- No import cycle among the package's modules (a lazy import inside a function counts too: it is
  still a dependency).
- The client side (hooks, commands, the MCP server, the daemon, the client core) never imports the
  door: a client install has none of the door's dependencies.
- The door never imports the client core. It may use four shared modules: `wire` (the HTTP/1.1
  client, through which the librarian reaches an LLM endpoint), `settings` (the session file the
  door writes when it pairs the local user), `paths` (the user's home and data folders) and
  `errors` (the command-line error both programs raise).
"""

from __future__ import annotations

import ast
from pathlib import Path

import bli_memory

PACKAGE_ROOT = Path(bli_memory.__file__).parent
#: the shared modules (and their submodules) the door may import; the root package gives `__version__`.
DOOR_MAY_IMPORT = ("bli_memory.wire", "bli_memory.settings", "bli_memory.paths", "bli_memory.errors")


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE_ROOT.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in PACKAGE_ROOT.rglob("*.py")}


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The package module an import names: the module itself, or the package holding a name."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for name in names:
            if name.startswith("bli_memory"):
                target = _resolve(name, known)
                if target is not None and target != module:
                    found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {module: _imports(module, path, known) for module, path in known.items()}


def _is_door(module: str) -> bool:
    return module == "bli_memory.door" or module.startswith("bli_memory.door.")


def test_the_graph_is_read_from_the_real_package() -> None:
    graph = _graph()
    assert "bli_memory.door.memories" in graph and "bli_memory.hooks.prompt" in graph
    assert "bli_memory.door.store.base" in graph["bli_memory.door.service.writer"]


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            # a module importing its own ancestor package (`from bli_memory import __version__`)
            # runs an __init__ that is already being imported: no cycle of modules
            if module.startswith(target + "."):
                continue
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif state.get(target) is None:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert cycles == []


def test_the_client_never_imports_the_door() -> None:
    graph = _graph()
    offenders = {
        module: sorted(target for target in targets if _is_door(target))
        for module, targets in graph.items()
        if not _is_door(module)
    }
    assert {module: targets for module, targets in offenders.items() if targets} == {}


def test_the_door_imports_only_the_shared_modules_of_the_client_side() -> None:
    graph = _graph()
    offenders = {
        module: sorted(
            target
            for target in targets
            if not _is_door(target)
            and target != "bli_memory"
            and not any(target == allowed or target.startswith(allowed + ".") for allowed in DOOR_MAY_IMPORT)
        )
        for module, targets in graph.items()
        if _is_door(module)
    }
    assert {module: targets for module, targets in offenders.items() if targets} == {}


#: the door's edges (the HTTP API and the command line) and its worker: they reach the store through the
#: service only, never a store module, but for the composition roots that open one.
DOOR_EDGES_AND_WORKER = ("bli_memory.door.api", "bli_memory.door.cli", "bli_memory.door.jobs")
#: the modules that open a store: `serve` builds the door, `cli.stores` opens the store a command names.
COMPOSITION_ROOTS = {"bli_memory.door.cli.serve", "bli_memory.door.cli.stores"}
#: what of door/store/ anyone may import: the role protocols (types) and the masking of a database URL.
STORE_MODULES_FOR_ALL = ("bli_memory.door.store.roles", "bli_memory.door.store.urls")


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def test_the_edges_and_the_worker_never_import_a_store_module() -> None:
    graph = _graph()
    offenders = {
        module: sorted(
            target
            for target in targets
            if _within(target, ("bli_memory.door.store",)) and not _within(target, STORE_MODULES_FOR_ALL)
        )
        for module, targets in graph.items()
        if _within(module, DOOR_EDGES_AND_WORKER) and module not in COMPOSITION_ROOTS
    }
    assert {module: targets for module, targets in offenders.items() if targets} == {}
    assert (
        "bli_memory.door.store.sqlite.files" in graph["bli_memory.door.cli.serve"]
    )  # the rule reads real imports


#: the door modules that touch `os.environ`: the command line hands it to the subcommand, whose
#: `DoorConfig.from_env` reads it once; the extraction child is started with the door's environment whole.
DOOR_ENVIRONMENT_READERS = {"bli_memory.door.cli", "bli_memory.door.extraction"}


def _reads_environment(path: Path) -> bool:
    """Whether a module names `os.environ`, `os.getenv` or `os.putenv` (a read by attribute or by import)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv", "putenv", "environb"}:
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "os"
            and any(alias.name in {"environ", "getenv", "environb"} for alias in node.names)
        ):
            return True
    return False


def test_the_door_reads_its_environment_in_one_place() -> None:
    readers = {module for module, path in _modules().items() if _is_door(module) and _reads_environment(path)}
    assert readers == DOOR_ENVIRONMENT_READERS


def _reaches_through_the_service(path: Path) -> list[int]:
    """The lines where a module reads `<something>.memories.store` or `memories.store`: the service's store
    taken from it, instead of asking the service."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr == "store":
            owner = node.value
            name = (
                owner.id
                if isinstance(owner, ast.Name)
                else owner.attr
                if isinstance(owner, ast.Attribute)
                else ""
            )
            if name == "memories":
                lines.append(node.lineno)
    return lines


def test_the_edges_and_the_worker_ask_the_service_not_its_store(tmp_path: Path) -> None:
    reaching = tmp_path / "reaching.py"
    reaching.write_text(
        "def f(self, memories):\n    memories.store.spaces(1)\n    self.memories.store.spaces(2)\n"
    )
    assert _reaches_through_the_service(reaching) == [2, 3]  # what the check finds
    modules = _modules()
    offenders = {
        module: lines
        for module, path in modules.items()
        if _within(module, DOOR_EDGES_AND_WORKER) and (lines := _reaches_through_the_service(path))
    }
    assert offenders == {}

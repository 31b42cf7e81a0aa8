"""scripts/check_wheel's door step: a door from the wheel must start with search by meaning.

The whole script (build, fresh venv, `pip install 'wheel[door]'`) runs in `scripts/test`; here its
door step runs against this environment's real door, once as installed and once told to serve
without a model, which the step must refuse.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import REPO

DOOR = Path(sys.executable).parent / "bli-memory-door"


def _check_wheel() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("check_wheel_door", str(REPO / "scripts" / "check_wheel"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("BLI_MEMORY_")}
    return {**env, "HOME": str(home), **extra}


def test_the_door_step_passes_a_door_that_serves_with_the_packaged_model(tmp_path: Path) -> None:
    check_wheel = _check_wheel()
    check_wheel.check_door(DOOR, tmp_path, _env(tmp_path), with_deps=True)
    assert (tmp_path / "door.db").exists(), "the door really started on its own database"


def test_the_door_step_fails_a_door_without_search_by_meaning(tmp_path: Path) -> None:
    check_wheel = _check_wheel()
    with pytest.raises(check_wheel.CheckFailed, match=r"no search by meaning.*embedder none"):
        check_wheel.check_door(DOOR, tmp_path, _env(tmp_path, BLI_MEMORY_EMBEDDER="none"), with_deps=True)

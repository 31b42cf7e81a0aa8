"""A newcomer's first commands: `-V`, the door without its extra, a wrong `--embedder`, and `--help`.

Every door here is the real `bli-memory-door` in a subprocess with a temporary HOME; the door without
its extra runs on a fresh venv that has no site-packages at all (fastapi, numpy, ... really absent).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from bli_memory import __version__
from tests.helpers import REPO

BIN = Path(sys.executable).parent
DOOR = str(BIN / "bli-memory-door")
MCP = str(BIN / "bli-memory-mcp")
RUN_TIMEOUT_S = 60
LISTENING = "bli-memory-door listening on "
EXTRA_LINE = "pip install 'bli-memory[door]'"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("BLI_MEMORY_", "XDG_")) and key != "HOME"
    }
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "share"), USER="dana", **extra)
    return env


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S, check=False)


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a refused command (exit 2, nothing on stdout, no traceback)."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.endswith("\n"), result.stderr
    assert result.stderr.startswith("bli-memory-door: ")
    return result.stderr


# ---------------------------------------------------------------------------------------- -V


@pytest.mark.parametrize(("binary", "name"), [(MCP, "bli-memory-mcp"), (DOOR, "bli-memory-door")])
def test_both_programs_print_their_version_for_dash_v_and_dash_dash_version(
    tmp_path: Path, binary: str, name: str
) -> None:
    for flag in ("-V", "--version"):
        result = _run([binary, flag], _env(tmp_path))
        assert (result.returncode, result.stdout, result.stderr) == (0, f"{name} {__version__}\n", "")


# ----------------------------------------------------------------- the door without its extra


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv's python with no third-party package; the checkout's package on PYTHONPATH."""
    venv = tmp_path_factory.mktemp("no-door-extra") / "venv"
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    probe = subprocess.run(
        [str(python), "-c", "import fastapi"], capture_output=True, timeout=RUN_TIMEOUT_S, check=False
    )
    assert probe.returncode != 0, "the bare venv must not see fastapi"
    return python


def _bare_door(python: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from bli_memory.door.cli import main; sys.exit(main())"
    return _run([str(python), "-c", code, *args], _env(home, PYTHONPATH=str(REPO)))


@pytest.mark.parametrize(
    "args",
    [("serve", "--port", "0"), ("pair", "--person", "dana"), ("tokens", "list")],
    ids=["serve", "pair", "tokens"],
)
def test_without_the_door_extra_a_door_command_names_the_install_line(
    bare_python: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    line = _one_error_line(_bare_door(bare_python, tmp_path, *args))
    assert EXTRA_LINE in line and "is not installed" in line
    assert not (tmp_path / "share").exists(), "nothing created before the refusal"


def test_without_the_door_extra_help_and_version_still_work(bare_python: Path, tmp_path: Path) -> None:
    version = _bare_door(bare_python, tmp_path, "-V")
    assert (version.returncode, version.stdout) == (0, f"bli-memory-door {__version__}\n")
    usage = _bare_door(bare_python, tmp_path, "serve", "--help")
    assert usage.returncode == 0 and "BLI_MEMORY_EMBEDDER" in usage.stdout


# --------------------------------------------------------------------- a wrong --embedder


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--embedder", "bogus"], {}, ["--embedder bogus", "unknown embedder 'bogus'"]),
        ([], {"BLI_MEMORY_EMBEDDER": "bogus"}, ["BLI_MEMORY_EMBEDDER=bogus", "unknown embedder"]),
        (["--embedder", "onnx:{missing}"], {}, ["--embedder onnx:", "does not exist"]),
        ([], {"BLI_MEMORY_MODEL_DIR": "{missing}"}, ["BLI_MEMORY_MODEL_DIR=", "does not exist"]),
        (["--embedder", "onnx"], {"BLI_MEMORY_MODEL_DIR": "{missing}"}, ["does not exist"]),
        (["--embedder", "openai"], {}, ["--embedder openai", "BLI_MEMORY_EMBED_URL is not set"]),
        (
            ["--embedder", "openai"],
            {"BLI_MEMORY_EMBED_URL": "http://127.0.0.1:9"},
            ["BLI_MEMORY_EMBED_MODEL is not set"],
        ),
        (
            ["--embedder", "openai:m"],
            {"BLI_MEMORY_EMBED_URL": "http://127.0.0.1:9", "BLI_MEMORY_EMBED_KEY": "sk-never-shown"},
            ["--embedder openai:m cannot be used", "endpoint unreachable"],
        ),
    ],
    ids=[
        "bogus",
        "bogus-from-env",
        "missing-folder",
        "missing-model-dir",
        "onnx-missing-model-dir",
        "openai-no-url",
        "openai-no-model",
        "openai-down",
    ],
)
def test_an_embedder_that_was_chosen_but_cannot_load_stops_the_door(
    tmp_path: Path, args: list[str], env: dict[str, str], expected: list[str]
) -> None:
    missing = str(tmp_path / "no-such-model")
    argv = [DOOR, "serve", "--port", "0", "--db", str(tmp_path / "m.db"), "--no-autopair"]
    argv += [arg.format(missing=missing) for arg in args]
    filled = {key: value.format(missing=missing) for key, value in env.items()}
    line = _one_error_line(_run(argv, _env(tmp_path, **filled)))
    for words in expected:
        assert words in line, line
    assert "--embedder none" in line, "the way out is named"
    assert "sk-never-shown" not in line
    assert not (tmp_path / "m.db").exists(), "no store opened for a door that will not serve"


def _http(url: str, body: dict[str, Any] | None, headers: dict[str, str]) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **headers})
    with urllib.request.urlopen(request, timeout=RUN_TIMEOUT_S) as response:
        return json.loads(response.read())


def test_the_default_model_missing_falls_back_to_keyword_with_one_warning(tmp_path: Path) -> None:
    """Nothing chosen and the default model unloadable: the door says so once and serves keyword +
    recency (a save and a keyword search work, with no similarity).

    The packaged tokenizer is pointed at a missing file in the door's own process: the one way to make
    the installed default model fail on demand."""
    code = (
        "import sys; from pathlib import Path; import bli_memory.door.embed as embed; "
        f"embed.PACKAGED_TOKENIZER = Path({str(tmp_path / 'gone.json')!r}); "
        "from bli_memory.door.cli import main; sys.exit(main())"
    )
    argv = [sys.executable, "-c", code, "serve", "--port", "0", "--db", str(tmp_path / "m.db")]
    argv += ["--no-autopair", "--no-worker"]
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    lines: list[str] = []
    listening = threading.Event()

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if line.startswith(LISTENING):
                listening.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        assert listening.wait(RUN_TIMEOUT_S), "".join(lines)
        url = next(line for line in lines if line.startswith(LISTENING))[len(LISTENING) :].strip()
        token = _run([DOOR, "pair", "--person", "dana", "--db", str(tmp_path / "m.db")], _env(tmp_path))
        assert token.returncode == 0, token.stderr
        auth = {"Authorization": f"Bearer {token.stdout.strip()}"}
        assert _http(url + "/healthz", None, {})["embedder"] == "none"
        memory = {"content": "Keyword search still works without a model", "containerTag": "repo_none"}
        _http(url + "/api/memory/save", memory, auth)
        found = _http(
            url + "/api/memory/search", {"q": "keyword search model", "containerTag": "repo_none"}, auth
        )
        assert [(r["content"], r["similarity"]) for r in found["results"]] == [(memory["content"], None)]
    finally:
        process.terminate()
        process.wait(RUN_TIMEOUT_S)
        reader.join(RUN_TIMEOUT_S)
    warnings = [line for line in lines if "unavailable" in line]
    assert len(warnings) == 1 and "lacks the model's tokenizer" in warnings[0], lines
    assert warnings[0].rstrip().endswith("serving keyword + recency")
    assert any(", embedder none" in line for line in lines), lines
    assert process.returncode == 0 and not any("Traceback" in line for line in lines)


# ---------------------------------------------------------------------------------- --help


def test_serve_help_documents_every_environment_variable_the_door_reads(tmp_path: Path) -> None:
    """Each BLI_MEMORY_EMBED*/LLM_*/MODEL_DIR name in the door's code is explained in `serve --help`."""
    import re

    read = set()
    for path in (REPO / "bli_memory" / "door").rglob("*.py"):
        read |= set(
            re.findall(r"BLI_MEMORY_(?:EMBED\w*|LLM_\w+|MODEL_DIR)", path.read_text(encoding="utf-8"))
        )
    assert {"BLI_MEMORY_EMBEDDER", "BLI_MEMORY_EMBED_URL", "BLI_MEMORY_LLM_URL"} <= read
    usage = _run([DOOR, "serve", "--help"], _env(tmp_path))
    assert usage.returncode == 0
    documented = set(re.findall(r"^\s+(BLI_MEMORY_\w+)\s+\S", usage.stdout, re.MULTILINE))
    assert read <= documented, sorted(read - documented)
    assert "librarian: deterministic" in usage.stdout and "by rules, no model" in usage.stdout

"""The plugin's MCP server on an interpreter without the `mcp` SDK (bli_memory/mcp_sdk.py,
bli_memory/mcp_placeholder.py), driven by the SDK's own client through the plugin's launcher: the
placeholder answers at once and says what is missing; the venv build runs in the background, fails
cleanly without a network and is not tried again until RETRY_AFTER_S has passed; a finished venv is
where the real server runs from.

The bare interpreter is a venv made without pip from this one's base: it cannot import `mcp`. pip
runs with no configuration file and an index on a refused loopback port, so no test reaches a network.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bli_memory.mcp_sdk import MCP_REQUIREMENT, RETRY_AFTER_S
from tests.helpers import REPO

LAUNCHER = REPO / "plugins" / "bli-memory" / "bin" / "bli-memory"
SESSION_TIMEOUT_S = 60.0
BUILD_DEADLINE_S = 120.0


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("bare") / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run(
        [base, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True, timeout=120
    )
    python = venv / "bin" / "python3"
    lacks = subprocess.run([str(python), "-c", "import mcp"], capture_output=True, timeout=30)
    assert lacks.returncode != 0, "the bare interpreter must not have the mcp SDK"
    return python


def environment(tmp_path: Path, bare: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "PATH": f"{bare.parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "BLI_MEMORY_DAEMON": "0",
        "BLI_MEMORY_PLUGIN_DATA": str(tmp_path / "data"),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_NO_CACHE_DIR": "1",
        **extra,
    }


def session(env: dict[str, str]) -> dict[str, Any]:
    """Start the plugin's MCP server with the SDK's client: its instructions, tools and one call's answer."""

    async def run() -> dict[str, Any]:
        params = StdioServerParameters(command=str(LAUNCHER), args=[], env=env)
        with anyio.fail_after(SESSION_TIMEOUT_S), open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                started = await client.initialize()
                tools = (await client.list_tools()).tools
                answer = None
                if [tool.name for tool in tools] == ["memory_status"]:
                    answer = await client.call_tool("memory_status", {})
                return {"instructions": started.instructions or "", "tools": tools, "answer": answer}

    return anyio.run(run)


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + BUILD_DEADLINE_S
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert path.exists(), f"{path} did not appear"


def wait_gone(path: Path) -> None:
    deadline = time.monotonic() + BUILD_DEADLINE_S
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not path.exists(), f"{path} is still there"


def test_without_the_sdk_the_agent_is_told_why_and_a_failed_build_waits_to_be_retried(
    tmp_path: Path, bare_python: Path
) -> None:
    env = environment(tmp_path, bare_python)
    sdk = tmp_path / "data" / "mcp-sdk"
    started = time.monotonic()
    first = session(env)
    assert time.monotonic() - started < SESSION_TIMEOUT_S / 2, "the first session never waits for the build"
    assert MCP_REQUIREMENT in first["instructions"] and "installing it" in first["instructions"]
    assert [tool.name for tool in first["tools"]] == ["memory_status"]
    assert MCP_REQUIREMENT in (first["tools"][0].description or "")
    assert first["answer"].is_error and "next session" in first["answer"].content[0].text

    wait_for(sdk / "failed")
    wait_gone(sdk / "lock")
    assert (
        not (sdk / "venv").exists() and not (sdk / "venv.partial").exists() and not (sdk / "stamp").exists()
    )
    log = (sdk / "build.log").read_text()
    assert "pip install" in log and "failed:" in log

    second = session(env)
    text = second["answer"].content[0].text
    assert "failed" in text and "pip install" in text and str(sdk / "build.log") in text
    assert not (sdk / "lock").exists() and (sdk / "build.log").read_text() == log, "no new build yet"

    old = time.time() - RETRY_AFTER_S - 1
    os.utime(sdk / "failed", (old, old))
    third = session(env)
    assert "installing it" in third["answer"].content[0].text, "a build is tried again after the wait"
    wait_gone(sdk / "lock")
    assert (sdk / "failed").stat().st_mtime > old + 1


def test_a_finished_venv_is_where_the_real_server_runs(tmp_path: Path, bare_python: Path) -> None:
    """A venv whose stamp names this interpreter is used: here its python is this test's interpreter
    (which has the SDK) behind a two-line script, and the tools listed are the real server's."""
    env = environment(
        tmp_path,
        bare_python,
        BLI_MEMORY_DASHBOARD_URL="http://127.0.0.1:9",
        BLI_MEMORY_DEVICE_TOKEN="bli_test_not_a_real_token",
    )
    sdk = tmp_path / "data" / "mcp-sdk"
    (sdk / "venv" / "bin").mkdir(parents=True)
    python = sdk / "venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    stamp = subprocess.run(
        [
            str(bare_python),
            "-c",
            "import sys; from bli_memory.mcp_sdk import stamp_text; sys.stdout.write(stamp_text())",
        ],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(REPO)},
        check=True,
        timeout=30,
    ).stdout
    (sdk / "stamp").write_text(stamp)
    names = [tool.name for tool in session(env)["tools"]]
    assert "search_memory" in names and "memory_status" not in names

    (sdk / "stamp").write_text(stamp.replace("python 3.", "python 2."))  # made for another interpreter
    names = [tool.name for tool in session(env)["tools"]]
    assert names == ["memory_status"]
    wait_gone(sdk / "lock")

    (sdk / "failed").unlink()
    (sdk / "stamp").write_text(stamp)
    python.write_text("#!/nonexistent/python\n")  # the venv's interpreter is gone
    names = [tool.name for tool in session(env)["tools"]]
    assert names == ["memory_status"] and not (sdk / "stamp").exists()
    wait_gone(sdk / "lock")


def test_before_any_pairing_the_plugins_server_says_how_to_pair(tmp_path: Path) -> None:
    """On an interpreter with the SDK and no door: the placeholder, naming the two ways to pair and
    the installed launcher to log in with (the server outside the plugin exits 1 instead)."""
    folder = tmp_path / "python-bin"
    folder.mkdir()
    wrapper = folder / "python3"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    env = environment(tmp_path, wrapper)
    answer = session(env)["answer"]
    assert answer is not None and answer.is_error
    text = answer.content[0].text
    assert "not paired" in text and "scripts/quickstart" in text
    assert f"{LAUNCHER} login --url URL --token-stdin" in text
    outside = subprocess.run(
        [sys.executable, "-m", "bli_memory"],
        input="",
        capture_output=True,
        text=True,
        env={**env, "BLI_MEMORY_PLUGIN_DATA": "", "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    assert outside.returncode == 1 and "not paired" in outside.stderr

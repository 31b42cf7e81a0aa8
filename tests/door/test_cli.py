"""`bli-memory-door`'s command line at its edges (`door/cli.py`): a bad port, a missing database, a
name with a newline, and autopair after the database was reset. Real subprocesses on a temporary HOME."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import BIN

DOOR = str(BIN / "bli-memory-door")


def _run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "share")}
    return subprocess.run([DOOR, *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_bad_port_is_one_line(tmp_path: Path, port: str) -> None:
    done = _run("serve", "--port", port, "--db", str(tmp_path / "m.db"), home=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "port" in done.stderr


def test_tokens_list_does_not_create_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "m.db"
    done = _run("tokens", "list", "--db", str(missing), home=tmp_path)
    assert done.returncode == 1 and "no memory database" in done.stderr
    assert not missing.parent.exists()


def test_pair_refuses_a_name_with_a_newline(tmp_path: Path) -> None:
    done = _run("pair", "--person", "a\nb", "--db", str(tmp_path / "m.db"), home=tmp_path)
    assert done.returncode == 2 and "one line" in done.stderr


def test_autopair_pairs_again_when_the_database_was_reset(tmp_path: Path) -> None:
    def serve_once(port: int) -> list[str]:
        env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "share"), "USER": "dana"}
        process = subprocess.Popen(
            [DOOR, "serve", "--port", str(port), "--embedder", "none"],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        lines = []
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if "listening on" in line:
                break
        process.terminate()
        process.wait(15)
        return lines

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    first = serve_once(port)
    session = tmp_path / ".config" / "bli-cockpit" / "session.json"
    token = json.loads(session.read_text())["device_token"]
    assert any("paired local user" in line for line in first)
    (tmp_path / "share" / "bli-memory" / "memory.db").unlink()
    for suffix in ("-wal", "-shm"):
        (tmp_path / "share" / "bli-memory" / f"memory.db{suffix}").unlink(missing_ok=True)
    time.sleep(0.2)
    second = serve_once(port)
    assert any("unknown to this database; pairing again" in line for line in second)
    assert json.loads(session.read_text())["device_token"] != token

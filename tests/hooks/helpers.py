"""Helpers shared by the hook and daemon tests: run a hook as the host does (a subprocess with a JSON
payload on stdin and a temporary HOME), the payloads of the three hooks, and a machine paired with
the real door."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bli_memory.hooks import stats
from bli_memory.settings import write_session
from tests.helpers import REPO, DoorProcess

BIN = str(Path(sys.executable).parent / "bli-memory-mcp")
RECEIPT_PREFIX = "[bli-memory] "
#: interpreter start, imports and teardown on a busy 2-core machine, on top of a hook's own deadline
MARGIN_S = 0.8
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


class Run:
    def __init__(self, returncode: int, stdout: str, stderr: str, elapsed_s: float) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed_s = elapsed_s

    @property
    def receipts(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith(RECEIPT_PREFIX)]

    def receipt(self) -> tuple[str, str, dict[str, object]]:
        """(hook, status, fields) of the one receipt line."""
        assert len(self.receipts) == 1, self.stderr
        _, hook, status, fields = self.receipts[0].split(" ", 3)
        return hook, status, json.loads(fields)


def hook_env(home: Path, **extra: str) -> dict[str, str]:
    """A host's bare environment, and PYTHONPATH on this checkout: the hook under test runs this
    checkout's package, not whichever one the venv's `bli-memory-mcp` was installed from."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "BLI_MEMORY_DAEMON": "0",
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(REPO),
    }
    env.update(extra)
    return env


def run_hook(
    event: str,
    payload: object,
    home: Path,
    *args: str,
    env: dict[str, str] | None = None,
    keep_stdin_open: bool = False,
    cwd: Path | None = None,
) -> Run:
    """Run `bli-memory-mcp hook EVENT` with `payload` (a dict is JSON-encoded; bytes go as they are)."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    started = time.monotonic()
    process = subprocess.Popen(
        [BIN, "hook", event, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env or hook_env(home),
        cwd=str(cwd or home),
    )
    try:
        if keep_stdin_open:
            stdout, stderr = _write_and_wait(process, data)
        else:
            stdout, stderr = process.communicate(data, timeout=40)
    finally:
        process.kill()
    elapsed = time.monotonic() - started
    return Run(process.returncode, stdout.decode(), stderr.decode(), elapsed)


def _write_and_wait(process: subprocess.Popen[bytes], data: bytes) -> tuple[bytes, bytes]:
    """Write the payload and leave stdin open until the hook has exited on its own."""
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    with contextlib.suppress(BrokenPipeError):
        process.stdin.write(data)
        process.stdin.flush()
    process.wait(timeout=40)
    out, err = process.stdout.read(), process.stderr.read()
    process.stdin.close()
    return out, err


def assert_one_block_or_nothing(stdout: str, tag: str) -> None:
    if not stdout:
        return
    lines = stdout.splitlines()
    assert lines[0] == f"<{tag}> [bli]" and lines[-1] == f"</{tag}> [bli]", stdout
    assert stdout.count(f"<{tag}>") == 1 and stdout.endswith("\n")
    assert all("[bli]" in line for line in lines)


def counts(home: Path, hook: str) -> dict[str, object]:
    row = stats.read_hour({"HOME": str(home)}).get("hooks", {})
    assert isinstance(row, dict)
    return row.get(hook, {})


PROMPT = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "how does the stop hook save?"}
SESSION_START = {"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"}
STOP = {
    "session_id": "s1",
    "hook_event_name": "Stop",
    "stop_hook_active": False,
    "last_assistant_message": "Done.",
}


def paired(home: Path, door: Any, tag: str) -> dict[str, str]:
    """A machine paired through the session file, in the test's own space."""
    write_session(door.url, door.token, env={"HOME": str(home)})
    return hook_env(home, BLI_MEMORY_CONTAINER_TAG=tag)


def job_done(door: Any, tag: str, needle: str, timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """Rows of the space once extraction has filed something containing `needle`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status, body = door.post("/api/memory/search", {"q": needle, "containerTag": tag, "limit": 20})
        assert status == 200
        rows = [row for row in body["results"] if needle in row["content"]]
        if rows:
            return rows
        time.sleep(0.2)
    raise AssertionError(f"nothing about {needle!r} was filed in {tag}")


def imports_without_site(event: str, payload: object, env: dict[str, str]) -> tuple[set[str], str, str]:
    """(modules imported, stderr, stdout) of a hook run as `install` registers it, but without `site`
    (no editable-install hook, which imports `re` itself), so only the hook's own imports are seen."""
    done = subprocess.run(
        [
            sys.executable,
            "-S",
            "-X",
            "importtime",
            "-c",
            "import sys; from bli_memory.cli import main; sys.exit(main())",
            "hook",
            event,
        ],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env={**env, "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    modules = {
        line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")
    }
    return modules, stderr, done.stdout.decode()


#: runs one hook as the host does (argv, stdin, exit status), counting the calls under test
COUNTING_HOOK = """
import json, os, sys
from bli_memory.hooks import prompt, run, trivial
calls = {"skip_reason": 0, "finish": 0}
skip_reason, finish = trivial.skip_reason, run.finish
def counted_skip_reason(text):
    calls["skip_reason"] += 1
    return skip_reason(text)
def counted_finish(*args, **kwargs):
    calls["finish"] += 1
    return finish(*args, **kwargs)
trivial.skip_reason = counted_skip_reason
if hasattr(prompt, "skip_reason"):
    prompt.skip_reason = counted_skip_reason
run.finish = counted_finish
status = run.main(sys.argv[1:])
os.write(2, ("calls " + json.dumps(calls) + "\\n").encode())
sys.exit(status)
"""


def counted_run(
    event: str, payload: dict[str, object], home: Path, env: dict[str, str] | None = None
) -> tuple[dict[str, int], str]:
    """(call counts, the receipt line) of one hook run in a subprocess (direct unless `env` says)."""
    done = subprocess.run(
        [sys.executable, "-c", COUNTING_HOOK, event],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env={**(env or hook_env(home)), "PYTHONPATH": str(REPO)},
        cwd=str(home),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.decode().splitlines()
    (calls,) = [json.loads(line[len("calls ") :]) for line in lines if line.startswith("calls ")]
    (receipt,) = [line for line in lines if line.startswith("[bli-memory] ")]
    return calls, receipt


MB = 1_000_000
BIG_CHARS = 4 * MB
#: linear work grows 4x from 1 MB to 4 MB, quadratic work 16x
MAX_GROWTH = 9.0


def cpu_s(fn: Callable[[Any], object], arg: Any) -> float:
    """The least CPU time of three calls (noise only ever adds): the pure parts are timed in CPU seconds,
    which a loaded machine barely moves, and compared on 1 MB and 4 MB."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        fn(arg)
        best = min(best, time.process_time() - start)
    return max(best, 1e-4)


def code_prompt(chars: int) -> str:
    """A prompt of pasted code and prose: quotes, backslashes, tabs, newlines, non-ASCII."""
    lines = [
        "def parse_args(argv: list[str]) -> dict[str, str]:\n",
        '\treturn {"path": "C:\\\\Users\\\\x", "name": f"{argv[0]!r}"}  # café, 東京\n',
        'Why does BLI-3580 break `parse_args` when the path has a quote (") in it?\n',
    ]
    unit = "".join(lines)
    return (unit * (chars // len(unit) + 1))[:chars]


def unblock_fifo_reader(path: Path) -> None:
    """Open the FIFO for writing (and close it), so a reader stuck in `open` is let go."""
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def person_home(tmp_path: Path, door: DoorProcess, tag: str) -> tuple[str, dict[str, str]]:
    """(token, hook environment) of a machine paired as a new person, in the test's own space."""
    home = tmp_path / "home"
    home.mkdir()
    token = door.pair(f"p{uuid.uuid4().hex[:10]}")
    write_session(door.url, token, env={"HOME": str(home)})
    return token, hook_env(home, BLI_MEMORY_CONTAINER_TAG=tag)


def post(door: DoorProcess, path: str, body: dict[str, Any], token: str) -> dict[str, Any]:
    """`door`'s answer to a POST as `token`, which must succeed."""
    status, answer = door.post(path, body, token)
    assert 200 <= status < 300, answer
    return dict(answer)

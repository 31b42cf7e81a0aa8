"""`bli-memory-mcp selftest` as a subprocess with a HOME of its own: against the real door it passes
every step and leaves no current memory behind; through a stand-in that relays to the real door but
breaks one endpoint (garbage, or no answer) it names the failed step, exits 1 and still forgets the
probe."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from bli_memory.settings import write_session
from tests.client.helpers import run_cli
from tests.helpers import DoorProcess, served_locally

#: how long the stand-in sits on a request it "hangs" (the selftest gives up after 1 s).
HANG_S = 3.0
STEP_LINE = re.compile(r"^  (ok  |FAIL)  (\w+) +(\d+) ms  (.*)$")


def relay(door_url: str, broken: str, mode: str) -> type[BaseHTTPRequestHandler]:
    """A handler that relays every request to the real door, except those whose path contains
    `broken`: `garbage` answers 200 with HTML instead of JSON without asking the door, `late-garbage`
    asks the door and then answers garbage, `hang` answers nothing for HANG_S."""

    class Relay(BaseHTTPRequestHandler):
        def _relay(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if broken in self.path and mode == "hang":
                time.sleep(HANG_S)
                return
            if broken in self.path and mode == "garbage":
                self._answer(200, b"<html>proxy error</html>", "text/html")
                return
            request = urllib.request.Request(door_url + self.path, data=body, method=self.command)
            for name in ("Authorization", "Content-Type"):
                if self.headers.get(name):
                    request.add_header(name, self.headers[name])
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    status, payload = response.status, response.read()
            except urllib.error.HTTPError as error:
                status, payload = error.code, error.read()
            if broken in self.path and mode == "late-garbage":
                self._answer(200, b"\x00\x01 not json", "application/json")
                return
            self._answer(status, payload, "application/json")

        def _answer(self, status: int, payload: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _relay

        def log_message(self, *args: object) -> None:
            pass

    return Relay


def selftest(home: Path, cwd: Path, url: str, token: str, *args: str) -> Any:
    write_session(url, token, env={"HOME": str(home)})
    return run_cli(str(home), str(cwd), "selftest", *args)


def scratch_space(stdout: str) -> str:
    found = re.search(r"\(scratch space (bli-selftest-[0-9a-f]+)\)", stdout)
    assert found, stdout
    return found.group(1)


def current_rows(door: DoorProcess, space: str) -> list[Any]:
    status, body = door.post("/api/memory/list", {"containerTag": space})
    assert status == 200, body
    return list(body["memories"])


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def test_a_healthy_door_passes_every_step_and_keeps_no_probe(
    door: DoorProcess, home: Path, tmp_path: Path
) -> None:
    done = selftest(home, tmp_path, door.url, door.token)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    steps = [STEP_LINE.match(line) for line in lines[1:-1]]
    assert all(steps), lines
    assert [(m.group(1), m.group(2)) for m in steps if m] == [
        ("ok  ", name) for name in ("health", "save", "search", "update", "history", "forget", "gone")
    ]
    assert re.fullmatch(r"PASS: 7 steps in \d+ ms", lines[-1]), lines[-1]
    assert current_rows(door, scratch_space(done.stdout)) == []

    as_json = selftest(home, tmp_path, door.url, door.token, "--json")
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["ok"] is True and report["failed"] is None and len(report["steps"]) == 7
    assert all(isinstance(step["ms"], int) for step in report["steps"])


@pytest.mark.parametrize(
    ("broken", "mode", "step"),
    [
        ("/api/memory/search", "garbage", "search"),
        ("/api/memory/update", "hang", "update"),
        ("/api/memory/update", "late-garbage", "update"),
        ("/history", "garbage", "history"),
    ],
)
def test_a_broken_endpoint_names_its_step_and_the_probe_is_still_forgotten(
    door: DoorProcess, home: Path, tmp_path: Path, broken: str, mode: str, step: str
) -> None:
    started = time.monotonic()
    with served_locally(relay(door.url, broken, mode)) as url:
        done = selftest(home, tmp_path, url, door.token, "--timeout", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == f"bli-memory-mcp selftest: FAILED at {step}\n"
    failed = [m for line in done.stdout.splitlines() if (m := STEP_LINE.match(line)) and m.group(1) == "FAIL"]
    assert [m.group(2) for m in failed] == [step]
    reason = "timeout" if mode == "hang" else "bad_response"
    assert failed[0].group(4).startswith(reason), failed[0].group(4)
    assert "  cleanup  forgot the probe mem_" in done.stdout
    assert done.stdout.splitlines()[-1].startswith(f"FAIL at {step}: ")
    assert current_rows(door, scratch_space(done.stdout)) == []
    assert time.monotonic() - started < 30


def test_a_door_that_is_down_fails_at_health_with_nothing_to_clean(home: Path, tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = selftest(home, tmp_path, f"http://127.0.0.1:{port}", "bli_unused", "--timeout", "1")
    assert done.returncode == 1 and done.stderr == "bli-memory-mcp selftest: FAILED at health\n"
    assert "dashboard_unreachable" in done.stdout and "cleanup" not in done.stdout
    assert "bli_unused" not in done.stdout + done.stderr


def test_bad_input_and_unpaired(home: Path, tmp_path: Path) -> None:
    bad = run_cli(str(home), str(tmp_path), "selftest", "--timeout", "0")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1
    unpaired = run_cli(str(home), str(tmp_path), "selftest")
    assert unpaired.returncode == 1 and len(unpaired.stderr.splitlines()) == 1


def test_gone_looks_for_the_probes_id_not_for_any_match(
    door_onnx: DoorProcess, home: Path, tmp_path: Path
) -> None:
    """A global memory of the same person is in scope of every space, and on a door that searches by
    meaning it answers any query, the probe's marker included: the "gone" step must ask whether the
    probe's own ids come back, not whether anything does."""
    neighbour = (
        "The selftest probe checks that this door saves, finds and updates a memory and keeps its history."
    )
    person = door_onnx.pair(f"selftest-{tmp_path.name}")  # a global space of its own: the door is shared
    status, body = door_onnx.post(
        "/api/memory/save", {"content": neighbour, "containerTag": "elsewhere", "scope": "global"}, person
    )
    assert status == 201, body
    done = selftest(home, tmp_path, door_onnx.url, person)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^  ok    gone +\d+ ms  search no longer finds it$", done.stdout, re.M), done.stdout

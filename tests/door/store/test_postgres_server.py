"""The tests' own PostgreSQL server (`tests.helpers.PostgresServer`, which scripts/test's pytest session
starts once) is stopped when the session stops it: no postmaster outlives `stop()`, not even after a
test restarted the server.

A restart makes a new postmaster; the old one is an orphan that a machine's init reaps at once. (Under
an init that reaps nothing, as in some containers, it stays a zombie, which looks "running" and hid the
fault.) The scenario therefore runs in a child Python that is its own subreaper and reaps orphans the
way a normal init does."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys

from tests.helpers import POSTGRES_URL_ENV, REPO

#: the child: a server of its own, restarted, orphans reaped, stopped; it prints the new postmaster's
#: pid, whether it still runs after stop(), and whether the data folder is gone.
SCENARIO = r"""
import ctypes, json, os
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def postmaster(folder):
    return int((folder / "postmaster.pid").read_text().split("\n", 1)[0])


from tests.helpers import PostgresServer

server = PostgresServer()
folder = Path(server.folder)
first = postmaster(folder)
server.restart()
restarted = postmaster(folder)
assert restarted != first and server.execute("SELECT 1") == [(1,)]
reap()
server.stop()
reap()
try:
    os.kill(restarted, 0)
    running = True
except ProcessLookupError:
    running = False
print(json.dumps({"pid": restarted, "running": running, "folder_left": folder.exists()}))
"""


def test_stop_ends_the_server_at_once_even_after_a_restart() -> None:
    env = {name: value for name, value in os.environ.items() if name != POSTGRES_URL_ENV}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-c", SCENARIO], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    if seen["running"]:  # the fault: end it here, so that this test leaves nothing behind either
        with contextlib.suppress(ProcessLookupError):
            os.kill(seen["pid"], signal.SIGKILL)
    assert seen == {"pid": seen["pid"], "running": False, "folder_left": False}

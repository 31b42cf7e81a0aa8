"""The librarian's extraction in a child process, under a CPU budget per job.

Why a child process: extraction is pure-Python text work (and `re`, which holds the GIL for a whole
match). Run on a thread of the door it competed with every request for the GIL, so searches slowed
down while a device's backlog ran; and nothing bounded a job whose text made the rules slow. In a
child of its own it runs on another core without touching the door's GIL, and its CPU is bounded
by the kernel: before each job the child arms `ITIMER_PROF` with the budget (CPU seconds, user and
system, fractions allowed) and leaves SIGPROF's default action, so a job over budget ends the child
at once, even inside one long `re` call. The door then fails that job with a clear reason (no retry:
the same text would do it again) and starts a fresh child for the next.

Protocol: one JSON object a line each way over the child's stdin/stdout. The door's first line is
the librarian's configuration, ``{"llm": {"url": ..., "model": ..., "key": ...}}`` (the key travels
on the pipe, never in argv); the child builds its extractor from it and says ``ready``. Then the door
sends ``{"text": ..., "cpu_s": ...}`` a job; the child answers ``{"facts": [...], "by": "llm"|"deterministic",
"fallback": reason|null}`` or ``{"error": one line}``.

The child reads no setting from its environment: the door's `DoorConfig` is read once, in `serve`,
and the child gets its part (`LlmConfig`) on the pipe and builds the same extractor
(`extractor_for`). The job's CPU budget (`BLI_MEMORY_JOB_CPU_S`) comes with each job.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bli_memory.door.config import DEFAULT_JOB_CPU_S, LlmConfig
from bli_memory.door.librarian import ExtractorName, extractor_for
from bli_memory.door.librarian.llm import LLM_TIMEOUT_S

#: a child that answers nothing this long after its budget plus the LLM's own deadline is stuck
#: (not computing: the CPU budget would have ended it) and is killed.
WALL_MARGIN_S = 10.0
#: how long a fresh child may take to import the librarian and say it is ready.
START_TIMEOUT_S = 60.0
READY = "ready"


class OverBudget(Exception):
    """The job's extraction used more than its CPU budget; the child was ended."""


class ChildFailed(Exception):
    """The child died or answered nonsense for another reason (one line, no text of the job)."""


class ExtractorProcess:
    """Extraction in a child process, one job at a time: `extract(text)` as the worker calls it.

    The child is started on first use and kept for the next jobs; one that died (a job over budget,
    a crash) is replaced at the next job."""

    def __init__(
        self,
        llm: LlmConfig,
        cpu_s: float = DEFAULT_JOB_CPU_S,
        on_fallback: Callable[[str], None] | None = None,
    ) -> None:
        self.llm = llm
        self.cpu_s = cpu_s
        self.on_fallback = on_fallback
        self._child: subprocess.Popen[bytes] | None = None
        self._pending = b""

    def __call__(self, text: str) -> tuple[list[str], ExtractorName]:
        """Facts of `text`. Raises OverBudget past the CPU budget, ChildFailed otherwise."""
        child = self._running_child()
        assert child.stdin is not None
        try:
            child.stdin.write(json.dumps({"text": text, "cpu_s": self.cpu_s}).encode("utf-8") + b"\n")
            child.stdin.flush()
        except OSError:
            self._end(child)
            raise ChildFailed("the extraction process went away") from None
        line = self._read_line(child, self.cpu_s + LLM_TIMEOUT_S + WALL_MARGIN_S)
        if line is None:
            returncode = self._end(child)
            if returncode == -signal.SIGPROF:
                raise OverBudget(f"extraction used more than {self.cpu_s:g} s of CPU")
            raise ChildFailed(f"the extraction process ended ({_ended(returncode)})")
        answer = json.loads(line)
        if "error" in answer:
            raise ChildFailed(str(answer["error"]))
        if answer.get("fallback") and self.on_fallback is not None:
            self.on_fallback(str(answer["fallback"]))
        by: ExtractorName = "llm" if answer.get("by") == "llm" else "deterministic"
        return [str(fact) for fact in answer["facts"]], by

    @property
    def pid(self) -> int | None:
        return None if self._child is None else self._child.pid

    def close(self) -> None:
        if self._child is not None:
            self._end(self._child)

    def _running_child(self) -> subprocess.Popen[bytes]:
        if self._child is not None and self._child.poll() is None:
            return self._child
        child = subprocess.Popen(
            [sys.executable, "-m", "bli_memory.door.extraction"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # the child answers its errors in its replies
            # the door's own environment, and its import path so that the child runs the same package
            env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, sys.path))},
            close_fds=True,
        )
        self._child = child
        self._pending = b""
        llm = {"url": self.llm.url, "model": self.llm.model, "key": self.llm.key}
        try:
            assert child.stdin is not None
            child.stdin.write(json.dumps({"llm": llm}).encode("utf-8") + b"\n")
            child.stdin.flush()
        except OSError:
            self._end(child)
            raise ChildFailed("the extraction process went away before it started") from None
        if self._read_line(child, START_TIMEOUT_S) != READY:
            returncode = self._end(child)
            raise ChildFailed(f"the extraction process did not start ({_ended(returncode)})")
        return child

    def _read_line(self, child: subprocess.Popen[bytes], timeout_s: float) -> str | None:
        """The child's next line, or None when it ended or said nothing within `timeout_s`."""
        assert child.stdout is not None
        fd = child.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return line.decode("utf-8")

    def _end(self, child: subprocess.Popen[bytes]) -> int:
        """Kill the child if it still runs; its return code."""
        if child.poll() is None:
            child.kill()
        returncode = child.wait()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if child is self._child:
            self._child = None
        return returncode


def _ended(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit {returncode}"


# ---------------------------------------------------------------------------- the child


def serve(stdin: Any, stdout: Any) -> None:
    """The child's loop: its configuration on the first line, then a job a line in, an answer a line
    out, until stdin closes."""
    fallback: list[str] = []
    first = stdin.readline()
    if not first:
        return
    llm = json.loads(first)["llm"]
    config = LlmConfig(url=str(llm["url"]), model=str(llm["model"]), key=llm["key"] or None)
    extract = extractor_for(config, on_fallback=fallback.append)
    stdout.write(READY + "\n")
    stdout.flush()
    for line in stdin:
        fallback.clear()
        try:
            request = json.loads(line)
            cpu_s = float(request["cpu_s"])
            signal.setitimer(signal.ITIMER_PROF, cpu_s)  # SIGPROF's default action ends the child
            try:
                facts, by = extract(str(request["text"]))
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            answer: dict[str, Any] = {"facts": facts, "by": by, "fallback": fallback[0] if fallback else None}
        except Exception as exc:  # one line back, never a traceback on the door's stderr
            answer = {"error": f"extraction failed ({type(exc).__name__})"}
        stdout.write(json.dumps(answer) + "\n")
        stdout.flush()


if __name__ == "__main__":
    signal.signal(signal.SIGPROF, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C to the door's group is the door's to handle
    serve(sys.stdin, sys.stdout)

"""Where the MCP server gets the `mcp` SDK when the interpreter running the client lacks it.

The plugin runs the client it carries on the user's own python3, which rarely has `mcp`; the hooks
need nothing beyond the standard library, so only the MCP server is concerned. When `mcp` cannot be
imported and the plugin's data folder is known (`BLI_MEMORY_PLUGIN_DATA`, which the plugin's
`.mcp.json` sets from `${CLAUDE_PLUGIN_DATA}`, a folder that outlives plugin upgrades):

1. a venv in `<data>/mcp-sdk/venv` holding the SDK, stamped with the requirement and the interpreter
   it was made from: the server runs itself again on that venv's python (`os.execv`);
2. otherwise the server starts building that venv in a detached process (one at a time, behind a
   lock file; a build that failed is not tried again for `RETRY_AFTER_S`), and this session gets the
   placeholder server (`mcp_placeholder.py`), whose one tool tells the agent what is missing and what
   is being done about it. The server never waits for the build: a first session starts at once.

The build is `python -m venv` and that venv's pip, bounded by `PIP_TIMEOUT_S` per connection and
`BUILD_TIMEOUT_S` in all, into a `.partial` folder renamed into place only when pip succeeded, and
the stamp written last: a venv without a stamp is never used. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping

#: the SDK requirement, the same as the package's own dependency in pyproject.toml
MCP_REQUIREMENT = "mcp>=2.3,<3"
SDK_FOLDER = "mcp-sdk"
DATA_ENV = "BLI_MEMORY_PLUGIN_DATA"
#: a failed build is retried by the first server started this long after it failed
RETRY_AFTER_S = 600
#: a lock older than this belongs to a build that died without removing it
LOCK_STALE_S = 900
BUILD_TIMEOUT_S = 600
VENV_TIMEOUT_S = 120
PIP_TIMEOUT_S = 15


def plugin_data_dir(env: Mapping[str, str]) -> str | None:
    """The plugin's own data folder, or None when the client does not run as the plugin."""
    for name in (DATA_ENV, "CLAUDE_PLUGIN_DATA"):
        value = env.get(name, "")
        if value and "${" not in value:  # an unexpanded placeholder is no folder
            return value
    return None


def sdk_dir(data: str) -> str:
    return os.path.join(data, SDK_FOLDER)


def venv_python(folder: str) -> str:
    if os.name == "nt":
        return os.path.join(folder, "Scripts", "python.exe")
    return os.path.join(folder, "bin", "python")


def stamp_text() -> str:
    """What a usable venv was made for: the requirement and this interpreter (a venv is bound to it)."""
    return f"{MCP_REQUIREMENT} python {sys.version_info[0]}.{sys.version_info[1]} {os.path.realpath(sys.executable)}\n"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return None


def ready_python(sdk: str) -> str | None:
    """The venv's python when the venv is complete and made for this interpreter, else None."""
    python = venv_python(os.path.join(sdk, "venv"))
    if _read(os.path.join(sdk, "stamp")) == stamp_text() and os.access(python, os.X_OK):
        return python
    return None


def _age_s(path: str) -> float | None:
    try:
        return time.time() - os.stat(path).st_mtime
    except OSError:
        return None


def _take_lock(sdk: str) -> bool:
    """Create the build's lock file; False when another live build holds it."""
    lock = os.path.join(sdk, "lock")
    age = _age_s(lock)
    if age is not None and age > LOCK_STALE_S:
        with contextlib.suppress(OSError):
            os.unlink(lock)
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError:
        return False
    os.write(fd, f"{os.getpid()}\n".encode())
    os.close(fd)
    return True


def start_build(sdk: str) -> str:
    """Start the venv's build in a detached process unless one runs or one failed lately.

    Returns what happened, for the placeholder's message: "started", "building" or "failed".
    """
    os.makedirs(sdk, exist_ok=True)
    failed_age = _age_s(os.path.join(sdk, "failed"))
    if failed_age is not None and failed_age < RETRY_AFTER_S:
        return "failed"
    if not _take_lock(sdk):
        return "building"
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": package_root}
    code = "import sys; from bli_memory.mcp_sdk import build; sys.exit(build(sys.argv[1]))"
    try:
        with open(os.path.join(sdk, "build.log"), "w", encoding="utf-8") as log:
            subprocess.Popen(
                [sys.executable, "-c", code, sdk],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
    except OSError as exc:
        _fail(sdk, f"could not start the build: {exc}")
        os.unlink(os.path.join(sdk, "lock"))
        return "failed"
    return "started"


def _fail(sdk: str, reason: str) -> None:
    with open(os.path.join(sdk, "failed"), "w", encoding="utf-8") as handle:
        handle.write(reason.rstrip() + "\n")


def _run(argv: list[str], timeout_s: float) -> str | None:
    """Run one build step with its output in the log; None when it worked, else why not."""
    sys.stdout.write("$ " + " ".join(argv) + "\n")
    sys.stdout.flush()
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return f"`{' '.join(argv[1:4])}` took longer than {timeout_s:.0f} s"
    except OSError as exc:
        return str(exc)
    return None if done.returncode == 0 else f"`{' '.join(argv[1:4])}` exited {done.returncode}"


def build(sdk: str) -> int:
    """The detached build: venv, pip install, rename into place, stamp. Holds the lock until done."""
    partial = os.path.join(sdk, "venv.partial")
    final = os.path.join(sdk, "venv")
    try:
        shutil.rmtree(partial, ignore_errors=True)
        python = venv_python(partial)
        why = _run([sys.executable, "-m", "venv", partial], VENV_TIMEOUT_S) or _run(
            [
                python,
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "--timeout",
                str(PIP_TIMEOUT_S),
                "--retries",
                "1",
                MCP_REQUIREMENT,
            ],
            BUILD_TIMEOUT_S,
        )
        if why is not None:
            shutil.rmtree(partial, ignore_errors=True)
            _fail(sdk, why)
            sys.stdout.write(f"failed: {why}\n")
            return 1
        shutil.rmtree(final, ignore_errors=True)
        os.replace(partial, final)
        with open(os.path.join(sdk, "stamp"), "w", encoding="utf-8") as handle:
            handle.write(stamp_text())
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(sdk, "failed"))
        sys.stdout.write("done\n")
        return 0
    finally:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(sdk, "lock"))


def serve_without_sdk() -> int:
    """The MCP server on an interpreter without `mcp`: the plugin's venv, else the placeholder."""
    data = plugin_data_dir(os.environ)
    if data is None:
        sys.stderr.write(
            "bli-memory-mcp: the MCP server needs the `mcp` package "
            f"(pip install '{MCP_REQUIREMENT}'); hooks and the other commands work without it\n"
        )
        return 1
    sdk = sdk_dir(data)
    python = ready_python(sdk)
    if python is not None:
        try:
            os.execv(python, [python, os.path.abspath(sys.argv[0])])
        except OSError as exc:  # the venv's interpreter is gone or broken: build it again
            sys.stderr.write(f"bli-memory-mcp: could not run {python}: {exc}\n")
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(sdk, "stamp"))
    try:
        state = start_build(sdk)
    except OSError as exc:
        state = "failed"
        sys.stderr.write(f"bli-memory-mcp: could not prepare {sdk}: {exc}\n")
    from bli_memory.mcp_placeholder import serve

    return serve(placeholder_message(sdk, state))


def placeholder_message(sdk: str, state: str) -> str:
    """What the agent is told while the SDK is missing: what, why, what is being done, what to run."""
    head = (
        f"bli-memory's memory tools need the Python package `{MCP_REQUIREMENT}`, which {sys.executable} "
        "does not have. Recall before each prompt and saving each turn work without it (they are hooks)."
    )
    log = os.path.join(sdk, "build.log")
    if state == "failed":
        reason = (_read(os.path.join(sdk, "failed")) or "unknown").strip()
        tail = (
            f" Installing it into {os.path.join(sdk, 'venv')} failed ({reason}; log: {log}); the plugin tries "
            f"again in a session started {RETRY_AFTER_S // 60} minutes or more after that. To install it by "
            f"hand: `{sys.executable} -m pip install --user '{MCP_REQUIREMENT}'` (or, on Debian and Ubuntu, "
            "`sudo apt install python3-venv` so the plugin can make its venv), then start a new session."
        )
    else:
        tail = (
            f" The plugin is installing it into {os.path.join(sdk, 'venv')} in the background (log: {log}); "
            "the tools are there from the next session on."
        )
    return head + tail

#!/usr/bin/env python3
"""Cold-start benchmark of the hook paths, side by side with the interpreter floor.

For each install (the built wheel in a fresh venv, as pipx installs it; with --dev-venv also this
checkout's editable venv; and `dist/bli-memory-mcp.pyz` on the bare base interpreter when that file
exists) it runs, round-robin so machine noise hits every case alike:

    python -c pass                     the floor
    hook prompt, trivial               "ok": no settings, no door
    hook prompt, recall                a real prompt against a local door with memories in the space
    hook session-start                 profile + recent context from the local door
    hook stop, 40 MB transcript        tail-read, redact, save with extract (202 queued)
    hook prompt, door down             a refused port: dashboard_unreachable

and reports the median wall time, its ratio to the floor, and the peak RSS of the child (from
`os.wait4`, so it is that process's own high-water mark, not the maximum over all children).
Targets: trivial path ≤ 1.5× the floor; peak memory under 25 MiB.

    .venv/bin/python scripts/bench_hooks.py [--rounds 15] [--embedder none|onnx] [--plugin]

With --plugin, each hook path is also run as the Claude Code plugin's hooks run it (its launcher,
`plugins/bli-memory/bin/bli-memory hook …`, on a copy of the plugin made as Claude Code installs it),
in the same round-robin as the wheel venv's command, so the two are measured under the same load.

It starts its own door on a temporary SQLite file (loopback, ephemeral port) and a temporary HOME,
and stops them at the end. Each case's last receipt is printed so the path measured is the path meant.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import local_door  # scripts/local_door.py

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
ZIPAPP = REPO / "dist" / "bli-memory-mcp.pyz"
PLUGIN = REPO / "plugins" / "bli-memory"
TRANSCRIPT_BYTES = 40 * 1024 * 1024
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
TAG = "repo_bench__0000000000000000"
#: names an identifier one memory holds: on a door without an embedder (no similarity to clear) the
#: hook keeps a keyword match only for such a name, so the recall case renders a block, as in use
RECALL_PROMPT = "how does hooks/stop.py save a turn?"
MEMORIES = [
    "The stop hook (hooks/stop.py) saves the last exchange in extract mode; the door answers 202 and distils later.",
    "The prompt hook skips trivial prompts such as ok, continue and slash commands.",
    "Session start prints the user profile and recent context inside bli-memory-context.",
    "The team ships the client as a zipapp that runs on a bare python3.",
    "Deadlines are 8 s, 2 s and 15 s for session-start, prompt and stop.",
]


#: run by the wheel venv's python (from a folder without a checkout): where its launcher file is
LAUNCHER_OF_INSTALLED = "from bli_memory.install.probe import launcher_path; print(launcher_path())"


def start_door(workdir: Path, embedder: str) -> tuple[subprocess.Popen[str], str, str]:
    db = workdir / "bench.db"
    home = workdir / "door-home"
    process, url = local_door.start_door(db, home, embedder, "bench_hooks", worker=True)
    token = subprocess.run(
        [str(VENV_BIN / "bli-memory-door"), "pair", "--person", "bench", "--db", str(db)],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(home)},
        check=True,
    ).stdout.strip()
    return process, url, token


def seed(url: str, token: str) -> None:
    sys.path.insert(0, str(REPO))
    from bli_memory.door_client import DoorClient

    with DoorClient(url, token) as client:
        for content in MEMORIES:
            client.save(content, TAG, deadline=time.monotonic() + 30)


def write_transcript(path: Path) -> None:
    filler = json.dumps(
        {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "tool_result", "content": "z" * 8000}]},
        }
    ).encode()
    tail = [
        {
            "type": "user",
            "message": {"role": "user", "content": "Why does the prompt hook time out on big repos?"},
        },
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "It spawned git; now it reads git files."}],
            },
        },
    ]
    with open(path, "wb") as handle:
        for _ in range(TRANSCRIPT_BYTES // (len(filler) + 1) + 1):
            handle.write(filler + b"\n")
        for entry in tail:
            handle.write(json.dumps(entry).encode() + b"\n")


def refused_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def run_once(argv: list[str], stdin: bytes, env: dict[str, str], cwd: str) -> tuple[float, int, str]:
    """(wall seconds, peak RSS KiB of that child, its receipt line).

    The peak comes from GNU time's `%M` when /usr/bin/time exists: Linux carries a forking parent's
    RSS high-water mark into the child, so `os.wait4` from this (larger) process would report ours.
    """
    with (
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryFile() as feed,
        tempfile.NamedTemporaryFile() as peak,
    ):
        feed.write(stdin)
        feed.seek(0)
        command = [GNU_TIME, "-f", "%M", "-o", peak.name, *argv] if GNU_TIME else argv
        started = time.perf_counter()
        process = subprocess.Popen(
            command, stdin=feed, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd
        )
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        receipts = [
            line
            for line in err.read().decode(errors="replace").splitlines()
            if line.startswith("[bli-memory]")
        ]
        peak_kib = int(Path(peak.name).read_text().split()[-1]) if GNU_TIME else usage.ru_maxrss
    if process.returncode != 0:
        raise SystemExit(f"bench_hooks: {argv} exited {process.returncode}")
    return elapsed, peak_kib, receipts[-1] if receipts else ""


def cases(
    home: Path, transcript: Path, door_down: str
) -> list[tuple[str, list[str], dict[str, object], dict[str, str]]]:
    """(label, hook argv tail, payload, extra env) for each hook path."""
    down = {"BLI_MEMORY_DASHBOARD_URL": door_down}
    return [
        ("hook prompt, trivial", ["hook", "prompt"], {"session_id": "b", "prompt": "ok"}, {}),
        (
            "hook prompt, recall",
            ["hook", "prompt"],
            {"session_id": "b", "prompt": RECALL_PROMPT},
            {},
        ),
        ("hook session-start", ["hook", "session-start"], {"session_id": "b", "source": "startup"}, {}),
        (
            "hook stop, 40 MB transcript",
            ["hook", "stop"],
            {"session_id": "b", "stop_hook_active": False, "transcript_path": str(transcript)},
            {},
        ),
        (
            "hook prompt, door down",
            ["hook", "prompt"],
            {"session_id": "b", "prompt": RECALL_PROMPT},
            down,
        ),
    ]


def bench(
    name: str,
    python: str,
    hook_argv: list[str],
    home: Path,
    transcript: Path,
    door_down: str,
    rounds: int,
    *,
    beside: tuple[str, list[str], str] | None = None,
) -> None:
    """One install's hook paths against the floor; with `beside` (a short name, another hook command
    and a folder put first on its PATH), each path of that command too, in the same round-robin."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "BLI_MEMORY_DAEMON": "0",
        "BLI_MEMORY_CONTAINER_TAG": TAG,
        "LANG": "C.UTF-8",
    }
    rows: list[tuple[str, list[str], bytes, dict[str, str]]] = [
        ("python -c pass", [python, "-c", "pass"], b"", env)
    ]
    for label, tail, payload, extra in cases(home, transcript, door_down):
        rows.append((label, hook_argv + tail, json.dumps(payload).encode(), {**env, **extra}))
        if beside is not None:
            tag, other_argv, path_first = beside
            other_env = {**env, **extra, "PATH": f"{path_first}{os.pathsep}{env['PATH']}"}
            rows.append((f"{label} [{tag}]", other_argv + tail, json.dumps(payload).encode(), other_env))
    walls: dict[str, list[float]] = {label: [] for label, *_ in rows}
    peaks: dict[str, list[int]] = {label: [] for label, *_ in rows}
    last: dict[str, str] = {}
    for _label, argv, stdin, run_env in rows:  # one warm-up each (page cache, .pyc)
        run_once(argv, stdin, run_env, str(home))
    for _ in range(rounds):
        for label, argv, stdin, run_env in rows:
            wall, peak, receipt = run_once(argv, stdin, run_env, str(home))
            walls[label].append(wall)
            peaks[label].append(peak)
            last[label] = receipt
    floor = statistics.median(walls["python -c pass"])
    memory = "GNU time %M" if GNU_TIME else "wait4, includes this process's RSS"
    print(f"\n{name}: {' '.join(hook_argv)}   ({rounds} rounds, round-robin; peak RSS by {memory})")
    if beside is not None:
        print(f"[{beside[0]}]: {' '.join(beside[1])}, python3 first on PATH from {beside[2]}")
    width = 40 if beside is not None else 30
    print(f"{'path':<{width}} {'median ms':>9} {'× floor':>8} {'peak MiB':>9}  last receipt")
    for label, *_ in rows:
        median = statistics.median(walls[label])
        peak_mib = max(peaks[label]) / 1024
        print(
            f"{label:<{width}} {median * 1000:9.1f} {median / floor:8.2f} {peak_mib:9.1f}  {last.get(label, '')}"
        )


def wheel_venv(workdir: Path) -> Path:
    """Build the wheel and install it (no dependencies: hooks need none) into a fresh venv, as pipx
    would; returns its bin folder. The editable install of a checkout adds an import hook to every
    start (~30 ms), which no installed user pays, so it is not what the hook bench should measure."""
    wheels = workdir / "wheels"
    source = workdir / "source"  # a copy: building in the checkout would leave build/ there
    source.mkdir()
    shutil.copytree(REPO / "bli_memory", source / "bli_memory", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    venv = workdir / "wheel-venv"
    base = shutil.which("python3", path=str(Path(sys.base_prefix) / "bin")) or sys.executable
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    (wheel,) = wheels.glob("bli_memory-*.whl")
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
    )
    return venv / "bin"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--embedder", default="none", choices=["none", "onnx"])
    parser.add_argument(
        "--dev-venv",
        action="store_true",
        help="also measure this checkout's editable install (its import hook costs ~30 ms no user pays)",
    )
    parser.add_argument(
        "--plugin",
        action="store_true",
        help="also the Claude Code plugin's hook command (plugins/bli-memory/bin/bli-memory), side by side",
    )
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-hooks-"))
    door, url, token = start_door(workdir, args.embedder)
    try:
        seed(url, token)
        home = workdir / "home"
        home.mkdir()
        sys.path.insert(0, str(REPO))
        from bli_memory.settings import write_session

        write_session(url, token, env={"HOME": str(home)})
        transcript = workdir / "big.jsonl"
        write_transcript(transcript)
        down = refused_url()
        print(f"door {url} (embedder {args.embedder}); {sys.version.split()[0]} on {os.cpu_count()} CPUs")
        if args.dev_venv:
            venv_python = str(VENV_BIN / "python")
            bench(
                "dev venv",
                venv_python,
                [str(VENV_BIN / "bli-memory-mcp")],
                home,
                transcript,
                down,
                args.rounds,
            )
        installed = wheel_venv(workdir)
        # what `bli-memory-mcp install` registers for hooks: the venv's python running the package's
        # launcher file (install/launch/bli_memory_mcp.py), found as that python finds the package
        launcher = subprocess.run(
            [str(installed / "python"), "-c", LAUNCHER_OF_INSTALLED],
            capture_output=True,
            text=True,
            check=True,
            cwd=workdir,
        ).stdout.strip()
        beside = None
        if args.plugin:
            # the plugin as Claude Code installs it: a copy of plugins/bli-memory with its links made
            # real, run through its launcher with the wheel venv's bin first on the PATH, so its
            # python3 is the same interpreter (same startup, same site) as the wheel venv's rows
            plugin = workdir / "plugin"
            shutil.copytree(PLUGIN, plugin, ignore=shutil.ignore_patterns("__pycache__"))
            beside = ("plugin", [str(plugin / "bin" / "bli-memory")], str(installed))
        bench(
            "wheel venv",
            str(installed / "python"),
            [str(installed / "python"), launcher],
            home,
            transcript,
            down,
            args.rounds,
            beside=beside,
        )
        if ZIPAPP.exists():
            base = shutil.which("python3", path=str(Path(sys.base_prefix) / "bin")) or sys.executable
            bench("zipapp", base, [base, str(ZIPAPP)], home, transcript, down, args.rounds)
        else:
            print(f"\n(no {ZIPAPP.relative_to(REPO)}: zipapp not measured)")
    finally:
        local_door.stop_door(door)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

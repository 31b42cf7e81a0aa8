#!/usr/bin/env python3
"""Cold-start cost of the client, side by side with `python -c pass` of the same interpreter.

Measures wall time from spawn to answer and the child's CPU time (median over --runs interleaved
rounds after --warmup rounds; CPU time is the stable number on a shared, loaded machine):
- `python -c pass` (the floor);
- `bli-memory-mcp --version` (entry point + dispatch);
- `bli-memory-mcp space` (the space of a folder; asks git);
- `bli-memory-mcp` as an MCP server: spawn -> `initialize` answered -> `tools/list` answered
  (what a host waits for before the tools show up). The server never calls the door on start-up,
  so a dummy pairing in the environment is enough and no door is needed.

Usage: .venv/bin/python scripts/bench_client.py [--runs 15] [--warmup 2] [--json]
A benchmark, not a test: numbers depend on the machine; nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

MCP_ANSWER_TIMEOUT_S = 30.0
PROTOCOL_VERSION = "2025-11-25"


def client_command() -> list[str]:
    """The installed `bli-memory-mcp` next to this interpreter, else `python -m bli_memory`."""
    script = Path(sys.executable).parent / "bli-memory-mcp"
    return [str(script)] if script.exists() else [sys.executable, "-m", "bli_memory"]


def bench_env(home: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("BLI_MEMORY_")}
    env.update(
        HOME=home,
        BLI_MEMORY_DEVICE_TOKEN="bli_bench_dummy",
        BLI_MEMORY_DASHBOARD_URL="http://127.0.0.1:9",
        BLI_MEMORY_DAEMON="0",
    )
    return env


def time_run(command: list[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(
            f"{command} exited {done.returncode}: {done.stderr.decode(errors='replace')[-400:]}"
        )
    return elapsed


def _read_answer(process: subprocess.Popen[bytes], request_id: int) -> dict[str, object]:
    assert process.stdout is not None
    while True:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("the MCP server closed stdout before answering")
        message = json.loads(line)
        if message.get("id") == request_id:
            if "error" in message:
                raise RuntimeError(f"the MCP server answered an error: {message['error']}")
            result: dict[str, object] = message["result"]
            return result


def time_mcp_handshake(command: list[str], env: dict[str, str], cwd: str) -> float:
    """Spawn the server, send initialize, initialized and tools/list; stop the clock at the tools."""

    def send(message: dict[str, object]) -> None:
        assert process.stdin is not None
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()

    start = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "bench_client", "version": "0"},
                },
            }
        )
        _read_answer(process, 0)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
        tools = _read_answer(process, 1)["tools"]
        elapsed = time.perf_counter() - start
        assert isinstance(tools, list) and len(tools) == 4, tools
        return elapsed
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(MCP_ANSWER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


Sample = tuple[float, float]  # (wall seconds, child CPU seconds)


def with_cpu(run: Callable[[], float]) -> Sample:
    """Wall time as `run` reports it, and the CPU the child used (user + system, whole process life)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = run()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(cases: list[tuple[str, Callable[[], float]]], runs: int, warmup: int) -> list[list[Sample]]:
    """Interleaved rounds (one run of every case per round), so a burst of load hits all cases alike."""
    samples: list[list[Sample]] = [[] for _ in cases]
    for round_index in range(warmup + runs):
        for index, (_, run) in enumerate(cases):
            sample = with_cpu(run)
            if round_index >= warmup:
                samples[index].append(sample)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command (default 15)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    client = client_command()
    with tempfile.TemporaryDirectory(prefix="bench_client_") as home:
        folder = os.path.join(home, "project")
        os.makedirs(folder)
        subprocess.run(["git", "init", "-q", folder], check=True)
        subprocess.run(
            ["git", "-C", folder, "remote", "add", "origin", "git@github.com:acme/Example.Project.git"],
            check=True,
        )
        env = bench_env(home)
        cases: list[tuple[str, Callable[[], float]]] = [
            ("python -c pass", lambda: time_run([sys.executable, "-c", "pass"], env, folder)),
            ("bli-memory-mcp --version", lambda: time_run([*client, "--version"], env, folder)),
            ("bli-memory-mcp space", lambda: time_run([*client, "space"], env, folder)),
            ("MCP spawn -> initialize + tools/list", lambda: time_mcp_handshake(client, env, folder)),
        ]
        samples = measure(cases, args.runs, args.warmup)
    names = [name for name, _ in cases]
    wall_ms = [statistics.median(w for w, _ in rows) * 1000 for rows in samples]
    cpu_ms = [statistics.median(c for _, c in rows) * 1000 for rows in samples]
    results = [
        {
            "command": name,
            "wall_median_ms": round(wall, 1),
            "wall_ratio": round(wall / wall_ms[0], 2),
            "cpu_median_ms": round(cpu, 1),
            "cpu_ratio": round(cpu / cpu_ms[0], 2) if cpu_ms[0] else None,
        }
        for name, wall, cpu in zip(names, wall_ms, cpu_ms, strict=True)
    ]
    load = os.getloadavg()[0]
    if args.json:
        print(
            json.dumps(
                {"python": sys.version.split()[0], "client": client, "load1": load, "results": results},
                indent=2,
            )
        )
        return 0
    print(
        f"python {sys.version.split()[0]} ({sys.executable}); client: {' '.join(client)}; "
        f"{args.runs} interleaved runs; load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    width = max(len(name) for name in names)
    print(f"{'command'.ljust(width)}  {'wall p50':>10}  {'ratio':>7}  {'CPU p50':>10}  {'ratio':>7}")
    for row in results:
        cpu_ratio = "-" if row["cpu_ratio"] is None else f"{row['cpu_ratio']:.2f}x"
        print(
            f"{str(row['command']).ljust(width)}  {row['wall_median_ms']:>8.1f}ms  {row['wall_ratio']:>6.2f}x"
            f"  {row['cpu_median_ms']:>8.1f}ms  {cpu_ratio:>7}"
        )
    print("ratio = against `python -c pass`; CPU counts the whole child process (MCP: including its exit).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Asking `git` for a folder's space versus reading git's files (the bli_memory.space package).

Builds a main repository and a linked worktree in a temporary folder, its origin reached through a
``url.<base>.insteadOf`` rewrite, checks that both ways give the same tag, then prints medians side by
side: the in-process cost of one answer, and the cost of a fresh interpreter that imports what it
needs and answers once (what a hook pays), next to ``python -c pass`` of the same interpreter.

    .venv/bin/python scripts/bench_space.py [--runs N] [--process-runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# The `git` way, as the vendor plugin asked: two spawns, then the same normalisation and hashing.
ASK_GIT_SOURCE = r"""
import os, subprocess, sys
from bli_memory.space import tag as space

def ask_git(folder):
    run = lambda *args: subprocess.run(["git", "-C", folder, *args], capture_output=True, text=True)
    facts = run("rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir", "--show-toplevel")
    real = os.path.realpath(folder)
    if facts.returncode != 0:
        return space.make_tag(space.DIR_PREFIX, space.sanitise_name(os.path.basename(real)), "path:" + real)
    git_dir, common, top = facts.stdout.splitlines()[:3]
    root = top if git_dir == common else (common[: -len("/.git")] if common.endswith("/.git") else common)
    remote = run("remote", "get-url", "origin")
    if remote.returncode != 0:
        return space.make_tag(space.REPO_PREFIX, space.sanitise_name(os.path.basename(root)), "path:" + root)
    url = remote.stdout.strip()
    name = space.remote_name(url, fallback=os.path.basename(root))
    return space.make_tag(space.REPO_PREFIX, name, space.normalise_remote(url, base_dir=root))
"""

READ_FILES_SNIPPET = "from bli_memory.space import container_tag; print(container_tag(sys.argv[1]))"
ASK_GIT_SNIPPET = ASK_GIT_SOURCE + "\nprint(ask_git(sys.argv[1]))"


def git(*args: str, cwd: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_worktree(root: str) -> str:
    """A main repository with one commit and a linked worktree; origin needs an insteadOf rewrite."""
    main = os.path.join(root, "Example.Project")
    os.makedirs(main)
    git("init", "-q", cwd=main)
    git("config", "user.email", "bench@example.invalid", cwd=main)
    git("config", "user.name", "bench", cwd=main)
    git("config", "url.git@github.com:.insteadOf", "gh:", cwd=main)
    git("remote", "add", "origin", "gh:acme/Example.Project.git", cwd=main)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=main)
    linked = os.path.join(root, "linked")
    git("worktree", "add", "-q", linked, cwd=main)
    return linked


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


def time_calls(call: object, folder: str, runs: int) -> float:
    assert callable(call)
    call(folder)  # warm the page cache and any lazy import
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call(folder)
        samples.append(time.perf_counter() - start)
    return median_ms(samples)


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_processes(commands: list[list[str]], env: dict[str, str], runs: int) -> list[tuple[float, float]]:
    """(median wall ms, median CPU ms) of each command, interleaved round by round.

    CPU time (user + system of the process and everything it waited for, git included) barely moves
    when other work shares the machine; wall time does, so both are shown.
    """
    for argv in commands:
        subprocess.run(argv, env=env, check=True, capture_output=True)  # writes the .pyc files once
    wall: list[list[float]] = [[] for _ in commands]
    cpu: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for index, argv in enumerate(commands):
            start, start_cpu = time.perf_counter(), children_cpu_s()
            subprocess.run(argv, env=env, check=True, capture_output=True)
            wall[index].append(time.perf_counter() - start)
            cpu[index].append(children_cpu_s() - start_cpu)
    return [(median_ms(w), median_ms(c)) for w, c in zip(wall, cpu, strict=True)]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=40, help="in-process repetitions (default 40)")
    parser.add_argument("--process-runs", type=int, default=20, help="fresh-interpreter runs (default 20)")
    args = parser.parse_args()
    if shutil.which("git") is None:
        sys.stderr.write("bench_space: git is not on PATH\n")
        return 1

    from bli_memory import space

    namespace: dict[str, object] = {}
    exec(compile(ASK_GIT_SOURCE, "<ask_git>", "exec"), namespace)
    ask_git = namespace["ask_git"]
    assert callable(ask_git)

    with tempfile.TemporaryDirectory(prefix="bench-space-") as root:
        folder = make_worktree(root)
        by_files, by_git = space.container_tag(folder), ask_git(folder)
        if by_files != by_git:
            sys.stderr.write(f"bench_space: answers differ: files {by_files} git {by_git}\n")
            return 1
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # a hook runs from compiled modules
        env["PYTHONPYCACHEPREFIX"] = os.path.join(root, "pycache")
        python = sys.executable
        fresh = time_processes(
            [
                [python, "-c", "import sys; " + READ_FILES_SNIPPET, folder],
                [python, "-c", ASK_GIT_SNIPPET, folder],
                [python, "-c", "pass"],
            ],
            env,
            args.process_runs,
        )
        rows = [
            (
                "read the files (bli_memory.space)",
                time_calls(space.container_tag, folder, args.runs),
                fresh[0],
            ),
            ("ask git (rev-parse + remote get-url)", time_calls(ask_git, folder, args.runs), fresh[1]),
            ("python -c pass (same interpreter)", None, fresh[2]),
        ]
    print(f"tag: {by_files}  (a linked worktree, origin through url.<base>.insteadOf)")
    print(
        f"python: {sys.version.split()[0]}  git: {_git_version()}  median of {args.runs} / {args.process_runs}"
    )
    print(f"{'way':<40} {'in-process':>11} {'fresh: wall':>12} {'fresh: CPU':>11}")
    for label, in_process, (fresh_wall, fresh_cpu) in rows:
        cell = "-" if in_process is None else f"{in_process:.2f} ms"
        print(f"{label:<40} {cell:>11} {fresh_wall:>9.1f} ms {fresh_cpu:>8.1f} ms")
    return 0


def _git_version() -> str:
    out = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    return out.strip().rpartition(" ")[2]


if __name__ == "__main__":
    raise SystemExit(main())

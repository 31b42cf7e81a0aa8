"""`bli-memory-mcp space [PATH] [--json]`: the space (its tag) memories of a folder land in.

Parsed by hand rather than with argparse: `space` is in the cold-start benchmark and its whole job is
one small file read, so it should not pay for argparse.
"""

from __future__ import annotations

import json
import os
import sys

from bli_memory.settings import ENV_CONTAINER_TAG, ENV_ISOLATE_WORKTREES, load_settings
from bli_memory.space import resolve_space_of

TYPE_CHECKING = False  # `typing` is not loaded on this path; mypy reads this constant as True
if TYPE_CHECKING:
    from bli_memory.errors import UsageError

EXIT_OK = 0

USAGE = "usage: bli-memory-mcp space [PATH] [--json]"
HELP = f"""{USAGE}

Print the space (container tag) that memories saved from PATH land in (default: the current folder).

A git repository's space is repo_<name>__<hash of its origin remote>, so every clone and every
worktree of one repository shares it; a repository without origin hashes its main root; a folder
outside git gets dir_<name>__<hash of its path>.

options:
  --json      print {{tag, kind, identity, path, isolateWorktrees}}; kind is remote, repo-path,
              folder or override; identity is the (credential-free) string that was hashed
  -h, --help  show this help

environment:
  {ENV_CONTAINER_TAG}=TAG     use TAG instead of computing one
  {ENV_ISOLATE_WORKTREES}=1   give each worktree its own space (hashes its own top level)
"""


def fail(message: str) -> UsageError:
    """The error for bad input: `raise fail(...)`. `bli_memory.errors` is imported on this path only."""
    from bli_memory.errors import UsageError

    return UsageError(f"bli-memory-mcp space: {message}")


def main(argv: list[str]) -> int:
    as_json = False
    paths: list[str] = []
    options_done = False
    for arg in argv:
        if options_done or not arg.startswith("-") or arg == "-":
            paths.append(arg)
        elif arg == "--":
            options_done = True
        elif arg in ("-h", "--help"):
            sys.stdout.write(HELP)
            return EXIT_OK
        elif arg == "--json":
            as_json = True
        else:
            raise fail(f"unknown option {arg!r}; see `bli-memory-mcp space --help`")
    if len(paths) > 1:
        raise fail("takes at most one PATH; see `bli-memory-mcp space --help`")
    try:
        folder = paths[0] if paths else os.getcwd()
    except OSError as exc:
        raise fail(f"cannot read the current folder: {exc.strerror}") from None
    if not os.path.isdir(folder):
        what = "no such folder" if not os.path.exists(folder) else "not a directory"
        raise fail(f"{what}: {folder}")
    settings = load_settings()
    found = resolve_space_of(settings, folder)
    if as_json:
        body = {
            "tag": found.tag,
            "kind": found.kind,
            "identity": found.identity,
            "path": os.path.realpath(folder),
            "isolateWorktrees": settings.isolate_worktrees,
        }
        sys.stdout.write(json.dumps(body) + "\n")
    else:
        sys.stdout.write(found.tag + "\n")
    return EXIT_OK

"""`bli-memory-mcp log` and `sync`: the agent-experience log (seed README, "Live A/B").

Not implemented yet: both commands say so in one line and exit 2, so a script cannot mistake them
for a recorded opinion.
"""

from __future__ import annotations

import sys

EXIT_NOT_IMPLEMENTED = 2


def _not_yet(name: str, argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        sys.stdout.write(
            f"usage: bli-memory-mcp {name} ...\n\nThe experience log is not implemented yet in this version.\n"
        )
        return 0
    sys.stderr.write(f"bli-memory-mcp {name}: the experience log is not implemented yet in this version\n")
    return EXIT_NOT_IMPLEMENTED


def log_main(argv: list[str]) -> int:
    return _not_yet("log", argv)


def sync_main(argv: list[str]) -> int:
    return _not_yet("sync", argv)

"""`bli-memory-mcp open [--print]`: sign in to the door's memory page without pasting a token.

The paired device asks its door for a one-time sign-in link (valid once, for a minute by default:
`bli-memory-door serve --login-link-ttl`) and opens the browser there; the door trades it for a
session cookie. `--print` prints the link instead (a headless machine, or a browser elsewhere: open
it there within the minute). The link is a secret until used: it is never logged, only printed when
asked for.

Exit status: 0 the link was opened or printed, 1 unpaired or the door refused/unreachable, 2 bad input.
"""

from __future__ import annotations

import sys
import time

from bli_memory.commands.base import new_parser, paired_door_client, parse
from bli_memory.errors import EXIT_FAILED, EXIT_OK, CliError

DOOR_DEADLINE_S = 10.0


def main(argv: list[str]) -> int:
    parser = new_parser(
        "open",
        "Open the door's memory page (browse, search, edit, forget, pin; the ops view) in a browser,\n"
        "signed in as this device through a one-time link that expires within a minute.",
        "exit status: 0 opened or printed, 1 unpaired or the door did not give a link, 2 bad input",
    )
    parser.add_argument(
        "--print", dest="print_only", action="store_true", help="print the link instead of opening a browser"
    )
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    from bli_memory.door_client import DoorCallError

    client = paired_door_client()
    try:
        link = client.login_link(deadline=time.monotonic() + DOOR_DEADLINE_S)
    except DoorCallError as exc:
        raise CliError(f"bli-memory-mcp open: the door gave no sign-in link ({exc})", EXIT_FAILED) from None
    finally:
        client.close()
    if args.print_only:
        sys.stdout.write(link + "\n")
        return EXIT_OK
    import webbrowser

    if not webbrowser.open(link):
        sys.stderr.write(
            "bli-memory-mcp open: no browser could be started; open this link within a minute:\n"
        )
        sys.stdout.write(link + "\n")
        return EXIT_OK
    sys.stdout.write("opened the memory page in your browser (the sign-in link works once)\n")
    return EXIT_OK

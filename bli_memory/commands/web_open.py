"""`bli-memory-mcp open [--print]`: sign in to the door's memory page without pasting a token.

The paired device asks its door for a one-time sign-in link (valid once, for a minute by default:
`bli-memory-door serve --login-link-ttl`) and has the browser open it; the door trades it for a
session cookie. `--print` prints the link instead (a headless machine, or a browser elsewhere: open
it there within the minute). The link is a secret until used: it is never logged, only printed when
asked for.

The link never goes on a command line: any local user can read a process's arguments
(`/proc/<pid>/cmdline`, `ps`), and one who read the link first could sign in as this device. The
browser is started on a private file instead (a folder of mode 0700, the file 0600) whose page sends
the code on to the door at once; the command deletes the file as soon as the browser has read it (or
after `READ_WAIT_S`, when the file system does not record reads).

Exit status: 0 the link was opened or printed, 1 unpaired or the door refused/unreachable, 2 bad input.
"""

from __future__ import annotations

import contextlib
import html
import os
import sys
import time

from bli_memory.commands.base import new_parser, paired_door_client, parse
from bli_memory.errors import EXIT_FAILED, EXIT_OK, CliError

DOOR_DEADLINE_S = 10.0
#: how long the sign-in file may wait to be read before it is deleted anyway (the link's default life)
READ_WAIT_S = 60.0
READ_POLL_S = 0.1
PAGE_NAME = "bli-memory-sign-in.html"

#: the page the browser opens: a form that sends the code to the door's /login at once (the script)
#: or at a click (no script). GET, as the link itself: the door's confirmation page follows.
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<title>bli-memory: signing in</title></head>
<body><form id="sign-in" method="get" action="{action}">
<input type="hidden" name="code" value="{code}">
<p>Opening the memory page of {door} <button type="submit">Continue</button></p>
</form>
<script>document.getElementById("sign-in").submit();</script></body></html>
"""


def main(argv: list[str]) -> int:
    parser = new_parser(
        "open",
        "Open the door's memory page (browse, search, edit, forget, pin; the ops view) in a browser,\n"
        "signed in as this device through a one-time link that expires within a minute. The link\n"
        "reaches the browser through a private file, never on a command line.",
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
    return _open_through_a_file(link)


def _open_through_a_file(link: str) -> int:
    """Start the browser on a private page that carries `link`; delete the page once it was read."""
    import tempfile
    import webbrowser
    from pathlib import Path

    folder = tempfile.mkdtemp(prefix="bli-memory-open-")  # mode 0700: only this user may list it
    page = os.path.join(folder, PAGE_NAME)
    try:
        _write_page(page, link)
        opened = webbrowser.open(Path(page).as_uri())
        if opened:
            sys.stdout.write("opened the memory page in your browser (the sign-in link works once)\n")
            sys.stdout.flush()
            _wait_until_read(page, time.monotonic() + READ_WAIT_S)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(page)
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    if not opened:
        sys.stderr.write(
            "bli-memory-mcp open: no browser could be started; open this link within a minute:\n"
        )
        sys.stdout.write(link + "\n")
    return EXIT_OK


def _write_page(path: str, link: str) -> None:
    """The page, private from its first byte, dated in the past so that a read shows in its atime."""
    from urllib.parse import parse_qs, urlsplit, urlunsplit

    parts = urlsplit(link)
    code = parse_qs(parts.query).get("code", [""])[0]
    action = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    door = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    text = PAGE.format(
        action=html.escape(action, quote=True), code=html.escape(code, quote=True), door=html.escape(door)
    )
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    past = time.time() - 60
    os.utime(path, (past, past))


def _wait_until_read(path: str, deadline: float) -> None:
    """Return once the browser has read the page (its atime moved past its mtime), or at `deadline`:
    a file system that records no reads (noatime) makes this wait the whole time."""
    while time.monotonic() < deadline:
        try:
            info = os.stat(path)
        except OSError:
            return
        if info.st_atime > info.st_mtime:
            return
        time.sleep(READ_POLL_S)

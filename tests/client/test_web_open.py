"""`bli-memory-mcp open`: the memory page's one-time sign-in link, as subprocesses on a temporary HOME
against the real door. The browser is the one `$BROWSER` names (the `webbrowser` module's own
setting): here a small script that writes down what it was given. The link must never be on its command
line (any local user can read one); a real chromium then follows the page it was given to sign in."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import urllib.request
from pathlib import Path

from bli_memory.door.api.signin import COOKIE_NAME
from bli_memory.settings import write_session
from tests.client.helpers import run_cli
from tests.helpers import DoorProcess

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
UI_TIMEOUT_MS = 10_000


def paired_home(tmp_path: Path, door: DoorProcess, token: str) -> str:
    home = tmp_path / "home"
    home.mkdir()
    write_session(door.url, token, env={"HOME": str(home)})
    return str(home)


#: a stand-in browser: writes down the arguments it was started with, what it found at the file URL it
#: was given (the page, its mode and its folder's mode), and keeps a copy of that page.
RECORDING_BROWSER = """#!{python}
import json, os, shutil, stat, sys
from urllib.parse import unquote, urlsplit
path = unquote(urlsplit(sys.argv[1]).path)
page = open(path, encoding="utf-8").read()
shutil.copyfile(path, {copy!r})
record = {{
    "argv": sys.argv,
    "cmdline": open(f"/proc/{{os.getpid()}}/cmdline", "rb").read().decode(errors="replace"),
    "mode": stat.S_IMODE(os.stat(path).st_mode),
    "folder_mode": stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode),
    "path": path,
    "page": page,
}}
open({seen!r}, "w").write(json.dumps(record))
"""


def recording_browser(tmp_path: Path) -> tuple[str, Path, Path]:
    """$BROWSER naming the stand-in, the file it records into, and where it copies the page."""
    seen, copy = tmp_path / "seen.json", tmp_path / "page-copy.html"
    browser = tmp_path / "browser"
    browser.write_text(RECORDING_BROWSER.format(python=sys.executable, copy=str(copy), seen=str(seen)))
    browser.chmod(browser.stat().st_mode | stat.S_IXUSR)
    return f"{browser} %s", seen, copy


def test_open_never_puts_the_code_on_a_command_line(tmp_path: Path, door: DoorProcess) -> None:
    """The browser gets a private file's URL; the code is in the file, never in any argv, and the file
    is gone when `open` is done. The code the file carries opens the door's confirmation page."""
    home = paired_home(tmp_path, door, door.pair("opener", team="open_team"))
    browser, seen, _ = recording_browser(tmp_path)
    done = run_cli(home, home, "open", env={"BROWSER": browser})
    assert done.returncode == 0, done.stderr
    record = json.loads(seen.read_text())
    found = re.search(r'name="code" value="([A-Za-z0-9_-]{20,})"', record["page"])
    assert found, record["page"]
    code = found.group(1)
    assert record["argv"][1].startswith("file:///") and record["argv"][1].endswith(".html")
    assert code not in record["cmdline"] and "code=" not in record["cmdline"]
    assert code not in done.stdout + done.stderr  # opened, never printed
    assert (record["mode"], record["folder_mode"]) == (0o600, 0o700)
    assert f'action="{door.url}/login"' in record["page"]
    assert not os.path.exists(record["path"]) and not os.path.exists(os.path.dirname(record["path"]))
    assert "opened the memory page" in done.stdout
    link = f"{door.url}/login?code={code}"
    with urllib.request.urlopen(urllib.request.Request(link), timeout=30) as page:  # the confirmation page
        assert page.status == 200 and page.url == link
        assert '<strong id="confirm-person">opener</strong>' in page.read().decode()
        assert "bli_session=" not in (page.headers.get("set-cookie") or "")  # opening it signs nobody in


def test_the_file_route_signs_in_in_a_real_browser(tmp_path: Path, door: DoorProcess) -> None:
    """Debian's chromium (through Playwright, as tests/door/test_web_page.py drives it) opens a copy of
    the page `open` gave the browser: it goes on to the door's confirmation page, and Sign in signs in."""
    from playwright.sync_api import sync_playwright

    home = paired_home(tmp_path, door, door.pair("filer", team="open_file_team"))
    browser, _, copy = recording_browser(tmp_path)
    assert run_cli(home, home, "open", env={"BROWSER": browser}).returncode == 0
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = chromium.new_context()
            page = context.new_page()
            page.set_default_timeout(UI_TIMEOUT_MS)
            page.goto(copy.as_uri())
            page.wait_for_url(f"{door.url}/login?code=*")
            assert page.locator("#confirm-person").inner_text() == "filer"
            with page.expect_navigation():
                page.click("#confirm-signin")
            page.wait_for_selector("body[data-ready='1']")
            assert page.url == door.url + "/"
            assert any(cookie["name"] == COOKIE_NAME for cookie in context.cookies())
        finally:
            chromium.close()


def test_open_print_gives_a_new_link_each_time(tmp_path: Path, door: DoorProcess) -> None:
    home = paired_home(tmp_path, door, door.pair("printer", team="open_team"))
    first = run_cli(home, home, "open", "--print")
    second = run_cli(home, home, "open", "--print")
    assert first.returncode == second.returncode == 0
    assert first.stdout != second.stdout
    assert first.stdout.startswith(door.url + "/login?code=")


def test_open_unpaired_or_refused_is_one_line_and_exit_1(tmp_path: Path, door: DoorProcess) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    unpaired = run_cli(str(empty), str(empty), "open", "--print")
    assert unpaired.returncode == 1 and len(unpaired.stderr.strip().splitlines()) == 1
    assert "Traceback" not in unpaired.stderr
    home = paired_home(tmp_path, door, "not-a-real-token")
    refused = run_cli(home, home, "open", "--print")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [refused.stderr.strip()]
    assert "401" in refused.stderr or "unauthorized" in refused.stderr
    assert "not-a-real-token" not in refused.stderr


def test_bad_arguments_are_a_usage_error(tmp_path: Path) -> None:
    done = run_cli(str(tmp_path), str(tmp_path), "open", "--bogus")
    assert done.returncode == 2 and "Traceback" not in done.stderr

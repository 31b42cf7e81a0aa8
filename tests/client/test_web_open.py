"""`bli-memory-mcp open`: the memory page's one-time sign-in link, as subprocesses on a temporary HOME
against the real door. The browser is the one `$BROWSER` names (the `webbrowser` module's own
setting): here a small script that writes down the link it was given."""

from __future__ import annotations

import stat
import sys
import urllib.request
from pathlib import Path

from bli_memory.settings import write_session
from tests.client.helpers import run_cli
from tests.helpers import DoorProcess


def paired_home(tmp_path: Path, door: DoorProcess, token: str) -> str:
    home = tmp_path / "home"
    home.mkdir()
    write_session(door.url, token, env={"HOME": str(home)})
    return str(home)


def test_open_starts_the_browser_on_a_one_time_link(tmp_path: Path, door: DoorProcess) -> None:
    home = paired_home(tmp_path, door, door.pair("opener", team="open_team"))
    seen = tmp_path / "seen.txt"
    browser = tmp_path / "browser"
    browser.write_text(f"#!{sys.executable}\nimport sys\nopen({str(seen)!r}, 'w').write(sys.argv[1])\n")
    browser.chmod(browser.stat().st_mode | stat.S_IXUSR)
    done = run_cli(home, home, "open", env={"BROWSER": f"{browser} %s"})
    assert done.returncode == 0, done.stderr
    link = seen.read_text()
    assert link.startswith(door.url + "/login?code=")
    assert link not in done.stdout + done.stderr  # opened, never printed
    assert "opened the memory page" in done.stdout
    with urllib.request.urlopen(urllib.request.Request(link), timeout=30) as page:  # the confirmation page
        assert page.status == 200 and page.url == link
        assert '<strong id="confirm-person">opener</strong>' in page.read().decode()
        assert "bli_session=" not in (page.headers.get("set-cookie") or "")  # opening it signs nobody in


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

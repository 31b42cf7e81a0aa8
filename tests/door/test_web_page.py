"""The memory page in a real browser: Debian's chromium, driven headless by Playwright, against the real
door. A person signs in through the one-time link `bli-memory-mcp open --print` gives (run as a
subprocess with a HOME of its own, paired to the door), then browses, searches, edits, forgets and
undoes, pins and unpins. Another team's person sees nothing of theirs; a state-changing request
without the CSRF token is refused; the link works once and expires; a revoked device's session ends.

No browser is downloaded: the executable is /usr/bin/chromium (`apt-get install chromium`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from bli_memory import door
from bli_memory.door.api.headers import CONTENT_SECURITY_POLICY
from bli_memory.door.api.signin import COOKIE_NAME, PRESESSION_COOKIE_NAME
from bli_memory.hooks import stats
from bli_memory.settings import write_session
from bli_memory.tools import SEARCH_MIN_SIMILARITY
from tests.helpers import BIN, DoorProcess

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: how long the page may take to answer a click or load a view (a loaded 2-core machine), in ms.
UI_TIMEOUT_MS = 10_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class Person:
    """A person of their own team: a paired client HOME and a browser context with console capture."""

    def __init__(self, door: DoorProcess, home: Path, browser: Browser) -> None:
        self.door = door
        self.team = f"team_{uuid.uuid4().hex[:10]}"
        self.name = f"person_{uuid.uuid4().hex[:6]}"
        self.token = door.pair(self.name, team=self.team)
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        write_session(door.url, self.token, env=self.env())
        self.context: BrowserContext = browser.new_context()
        self.page: Page = self.context.new_page()
        self.page.set_default_timeout(UI_TIMEOUT_MS)
        self.problems: list[str] = []
        self.page.on(
            "console",
            lambda message: (
                self.problems.append(f"{message.text} {message.location.get('url')}")
                if message.type == "error"
                else None
            ),
        )
        self.page.on("pageerror", lambda error: self.problems.append(str(error)))

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local/share"),
            "XDG_STATE_HOME": str(self.home / ".local/state"),
        }

    def login_link(self) -> str:
        done = subprocess.run(
            [str(BIN / "bli-memory-mcp"), "open", "--print"],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        link = done.stdout.strip()
        assert link.startswith(self.door.url + "/login?code="), link
        return link

    def sign_in(self, link: str | None = None) -> Any:
        """Open a sign-in link (a new one unless given), check whom its page names, press Sign in; the
        answer of the page it lands on."""
        opened = self.page.goto(link or self.login_link())
        assert opened is not None and opened.status == 200
        expect(self.page.locator("#confirm-person")).to_have_text(self.name)
        expect(self.page.locator("#confirm-team")).to_have_text(self.team)
        assert self.context.cookies() and all(c["name"] != COOKIE_NAME for c in self.context.cookies())
        with self.page.expect_navigation() as landed:
            self.page.click("#confirm-signin")
        self.page.wait_for_selector("body[data-ready='1']")
        return landed.value

    def save(self, tag: str, content: str, kind: str = "memory") -> str:
        status, answer = self.door.post(
            "/api/memory/save", {"containerTag": tag, "content": content, "kind": kind}, token=self.token
        )
        assert status == 201, answer
        return str(answer["id"])

    def fetch(self, method: str, path: str, body: Any = None, csrf: bool = True) -> dict[str, Any]:
        """One request from the page's own origin, with its cookie (and the CSRF token unless not)."""
        result: dict[str, Any] = self.page.evaluate(
            """async ([method, path, body, csrf]) => {
                const headers = {"Accept": "application/json"};
                if (body !== null) headers["Content-Type"] = "application/json";
                if (csrf) {
                    const session = await (await fetch("/api/web/session")).json();
                    headers["X-CSRF-Token"] = session.csrfToken;
                }
                const response = await fetch(path, {method, headers,
                    body: body === null ? undefined : JSON.stringify(body)});
                return {status: response.status, body: await response.json()};
            }""",
            [method, path, body, csrf],
        )
        return result

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def person(door: DoorProcess, tmp_path: Path, browser: Browser) -> Iterator[Callable[..., Person]]:
    made: list[Person] = []

    def make(on: DoorProcess | None = None) -> Person:
        one = Person(on or door, tmp_path / f"home{len(made)}", browser)
        made.append(one)
        return one

    yield make
    for one in made:
        one.close()


def test_a_person_browses_searches_edits_forgets_undoes_and_pins(person: Callable[..., Person]) -> None:
    alice = person()
    tag = f"repo_{uuid.uuid4().hex[:8]}"
    for number in range(24):
        alice.save(tag, f"note {number:02d}: the build uses make target {number}")
    alice.save(tag, "Deploys go out with the blue-green script on Fridays.")
    alice.save(tag, "Design document: the deploy pipeline has three stages.", kind="document")

    response = alice.sign_in()
    page = alice.page
    assert response is not None and response.url == alice.door.url + "/"
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    expect(page.locator("#who")).to_contain_text(alice.name)
    expect(page.locator("#space")).to_have_value(tag)

    # browse: newest first, a page of 20, then the rest
    items = page.locator("#memories > li")
    expect(items).to_have_count(20)
    expect(items.first).to_contain_text("Design document")
    page.click("#more")
    expect(items).to_have_count(26)
    expect(page.locator("#more")).to_be_hidden()

    # search: facts and documents labelled, the similarity as the API gives it
    page.fill("#q", "deploy")
    page.click("#search-form button[type=submit]")
    expect(page.locator("#list-title")).to_contain_text("found for")
    fact = items.filter(has_text="blue-green")
    document = items.filter(has_text="Design document")
    expect(fact.locator(".label.fact")).to_have_count(1)
    expect(document.locator(".label.document")).to_have_count(1)
    expect(fact.locator(".similarity")).to_contain_text("similarity")

    # edit: a new version; the history shows both
    fact.get_by_role("button", name="Edit").click()
    fact.locator("textarea").fill("Deploys go out with the blue-green script on Thursdays.")
    fact.get_by_role("button", name="Save").click()
    expect(page.locator("#notice")).to_contain_text("version 2")
    edited = items.filter(has_text="Thursdays")
    edited.get_by_role("button", name="History").click()
    versions = page.locator("#versions > li")
    expect(versions).to_have_count(2)
    expect(versions.first).to_contain_text("current")
    expect(versions.nth(1)).to_contain_text("superseded")
    expect(versions.nth(1)).to_contain_text("Fridays")
    page.click("#history-back")

    # forget, then undo: the text is back as a new memory
    edited.get_by_role("button", name="Forget").click()
    expect(page.locator("#notice")).to_have_text("Forgotten.")
    status, listed = alice.door.post(
        "/api/memory/list", {"containerTag": tag, "limit": 100}, token=alice.token
    )
    assert "Thursdays" not in str(listed["memories"])
    items.filter(has_text="Thursdays").get_by_role("button", name="Undo").click()
    expect(page.locator("#notice")).to_contain_text("Restored")
    status, listed = alice.door.post(
        "/api/memory/list", {"containerTag": tag, "limit": 100}, token=alice.token
    )
    assert [m["content"] for m in listed["memories"]].count(
        "Deploys go out with the blue-green script on Thursdays."
    ) == 1

    # pin a listed memory, then unpin it
    page.click("#clear-search")
    expect(items).to_have_count(20)
    items.filter(has_text="note 20:").get_by_role("button", name="Pin").click()
    pins = page.locator("#pin-list > li")
    expect(pins.filter(has_text="note 20:")).to_have_count(1)
    status, pinned = alice.door.post("/api/memory/pins", {"containerTag": tag}, token=alice.token)
    assert [pin["content"] for pin in pinned["pins"]] == ["note 20: the build uses make target 20"]
    pins.filter(has_text="note 20:").get_by_role("button", name="Unpin").click()
    expect(pins).to_have_count(0)
    status, pinned = alice.door.post("/api/memory/pins", {"containerTag": tag}, token=alice.token)
    assert pinned["pins"] == []

    # the person's global space is one pick away
    page.select_option("#space", label="my global space")
    expect(page.locator("#empty")).to_be_visible()
    page.fill("#pin-text", "I prefer tabs over spaces.")
    page.click("#pin-form button")
    expect(pins.filter(has_text="tabs over spaces")).to_have_count(1)
    expect(pins.locator(".label.global")).to_have_count(1)

    # the ops view: charts drawn from the experience log
    status, _ = alice.door.post(
        "/api/memory/experience",
        {"store": "bli", "verdict": "win", "reason": "found the deploy rule"},
        token=alice.token,
    )
    assert status == 201
    page.click("#show-ops")
    expect(page.locator("#charts svg")).to_have_count(2)
    expect(page.locator("#charts svg rect.bar-win").first).to_be_visible()
    expect(page.locator("#reasons")).to_contain_text("found the deploy rule")
    assert alice.problems == []


def test_search_lists_hits_in_the_order_of_the_figure_shown_above_the_cli_s_floor_with_code(
    person: Callable[..., Person], door_onnx: DoorProcess
) -> None:
    alice = person(door_onnx)
    tag = f"repo_{uuid.uuid4().hex[:8]}"
    alice.save(tag, "Release steps: run `make deploy` from the main branch, never `make deploy-force`.")
    alice.save(tag, "A deploy hook once printed `<img src=x onerror=window.pwned=1>` into the release notes.")
    alice.save(
        tag, "The release checklist ends with:\n```\nmake deploy\n<script>window.pwned=2</script>\n```"
    )
    for fact in (
        "The office plants are watered on Mondays.",
        "Lunch is ordered from the noodle place on Wednesdays.",
        "The team photo was taken in the atrium.",
        "Parking passes are renewed every January.",
        "The deploy pipeline has three stages: build, verify, release.",
        "Our mascot is a small green owl.",
    ):
        alice.save(tag, fact)
    query = "how do we deploy a release"
    status, everything = door_onnx.post(
        "/api/memory/search", {"q": query, "containerTag": tag, "limit": 20}, token=alice.token
    )
    assert status == 200
    below = [
        hit for hit in everything["results"] if hit["similarity"] is not None and hit["similarity"] < 0.25
    ]
    assert below, "the query must meet memories under the floor for this test to say anything"
    kept = [hit["id"] for hit in everything["results"] if hit not in below]

    alice.sign_in()
    page = alice.page
    page.fill("#q", query)
    page.click("#search-form button[type=submit]")
    expect(page.locator("#list-title")).to_contain_text("found for")
    items = page.locator("#memories > li")
    expect(items).to_have_count(len(kept))  # the CLI's floor: nothing under 0.25 cosine
    assert items.evaluate_all("items => items.map((item) => item.dataset.id)") == kept  # the door's order
    ranks = items.locator(".rank").all_text_contents()
    assert [rank.split(" · ")[0] for rank in ranks] == [f"#{n}" for n in range(1, len(kept) + 1)]
    scores = [float(rank.split("score ")[1]) for rank in ranks]
    assert scores == sorted(scores, reverse=True)  # the figure shown is the one the order follows
    for text in items.locator(".similarity").all_text_contents():
        value = text.removeprefix("cosine similarity ")
        assert value == "none (keyword match)" or float(value) >= 0.25, text

    # backticks are code; what they hold stays text, never markup
    steps = items.filter(has_text="Release steps")
    expect(steps.locator("code.inline")).to_have_text(["make deploy", "make deploy-force"])
    hostile = items.filter(has_text="A deploy hook")
    expect(hostile.locator("code.inline")).to_have_text("<img src=x onerror=window.pwned=1>")
    fenced = items.filter(has_text="checklist")
    expect(fenced.locator("code.block")).to_have_text("make deploy\n<script>window.pwned=2</script>\n")
    assert page.locator("#memories img, #memories script").count() == 0
    assert page.evaluate("window.pwned") is None
    assert alice.problems == []


def test_the_page_s_search_floor_is_the_cli_s() -> None:
    script = (Path(door.__file__).parent / "web" / "app.js").read_text("utf-8")
    [floor] = re.findall(r"^const SEARCH_MIN_SIMILARITY = ([0-9.]+);$", script, re.MULTILINE)
    assert float(floor) == SEARCH_MIN_SIMILARITY


def test_another_team_sees_nothing_of_the_first(person: Callable[..., Person]) -> None:
    alice, bob = person(), person()
    tag = f"repo_{uuid.uuid4().hex[:8]}"
    secret_id = alice.save(tag, "The staging database password rotates monthly.")
    bob.save(f"repo_{uuid.uuid4().hex[:8]}", "Bob's own note.")
    bob.sign_in()
    spaces = bob.page.locator("#space option").all_text_contents()
    assert tag not in spaces
    assert len(spaces) == 2  # bob's one space and his global space
    expect(bob.page.locator("#memories")).not_to_contain_text("staging database")
    assert bob.problems == []  # the requests below fail on purpose (the browser logs their 404s)
    listed = bob.fetch("POST", "/api/memory/list", {"containerTag": tag, "scope": "all"})
    assert listed == {"status": 200, "body": listed["body"]} and listed["body"]["memories"] == []
    assert bob.fetch("GET", f"/api/memory/{secret_id}/history")["status"] == 404
    forgotten = bob.fetch("POST", "/api/memory/forget", {"containerTag": tag, "id": secret_id})
    assert forgotten["status"] == 404
    found = bob.fetch("POST", "/api/memory/search", {"q": "staging database password", "containerTag": tag})
    assert found["body"]["results"] == []


def test_the_ops_view_charts_the_hook_figures_sync_sent(person: Callable[..., Person]) -> None:
    alice, bob = person(), person()
    now = time.time()
    runs: list[tuple[float, str, dict[str, object], int]] = [
        (now, "prompt", {"status": "ok", "via": "daemon"}, 150),
        (now, "prompt", {"status": "ok", "via": "daemon"}, 180),
        (now - 3600, "prompt", {"status": "skipped", "reason": "trivial_prompt", "via": "direct"}, 5),
        (now - 3600, "prompt", {"status": "failed", "reason": "timeout", "via": "direct"}, 2003),
        (now - 10 * 86_400, "session-start", {"status": "ok", "via": "daemon"}, 300),  # only in 30 days
    ]
    for when, hook, outcome, elapsed_ms in runs:
        assert stats.record(hook, outcome, elapsed_ms, env=alice.env(), now_s=when)
    synced = subprocess.run(
        [str(BIN / "bli-memory-mcp"), "sync"], capture_output=True, text=True, env=alice.env(), timeout=60
    )
    assert synced.returncode == 0 and "hook stats: sent 3 hours" in synced.stdout, synced.stderr

    alice.sign_in()
    page = alice.page
    page.click("#show-ops")
    week = page.locator("#hook-charts figure[data-hook='prompt'][data-days='7']")
    expect(week.locator("text.runs")).to_have_text("runs 4: ok 2, skipped 1, failed 1")
    expect(week.locator("text.quantiles")).to_have_text("p50 ≤ 200 ms · p95 ≤ 5000 ms · max 2003 ms")
    expect(week.locator("text.via")).to_have_text("via daemon 2, direct 2")
    expect(week.locator("rect.bar-ok")).to_have_count(1)
    expect(week.locator("rect.bucket.p50")).to_have_count(1)
    expect(page.locator("#hook-charts figure[data-days='7']")).to_have_count(1)
    month = page.locator("#hook-charts figure[data-hook='session-start'][data-days='30']")
    expect(month.locator("text.runs")).to_have_text("runs 1: ok 1, skipped 0, failed 0")
    # a row per window, the week first: its charts never interleave with the month's when rows wrap
    windows = page.locator("#hook-charts .hook-window")
    expect(windows).to_have_count(2)
    assert windows.evaluate_all("rows => rows.map((row) => row.dataset.days)") == ["7", "30"]
    expect(windows.nth(0).locator("h3")).to_have_text("Last 7 days")
    expect(windows.nth(1).locator("figure[data-days='30']")).to_have_count(2)
    expect(page.locator("#hook-charts .hook-window[data-days='30'] figure[data-days='7']")).to_have_count(0)
    expect(page.locator("#hook-note")).to_contain_text("from 1 machine(s)")
    assert alice.problems == []

    bob.sign_in()  # another team's page shows none of it
    bob.page.click("#show-ops")
    expect(bob.page.locator("#hook-charts")).to_contain_text("No hook figures sent yet")
    assert bob.problems == []


def test_a_request_without_the_csrf_token_is_refused(person: Callable[..., Person]) -> None:
    alice = person()
    tag = f"repo_{uuid.uuid4().hex[:8]}"
    alice.save(tag, "Keep this one.")
    alice.sign_in()
    cookie = next(c for c in alice.context.cookies() if c["name"] == "bli_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    assert cookie["expires"] > time.time()
    assert alice.page.evaluate("document.cookie") == ""  # HttpOnly: the page's script cannot read it
    body = {"containerTag": tag, "content": "Keep this one."}
    refused = alice.fetch("POST", "/api/memory/forget", body, csrf=False)
    assert refused["status"] == 403 and refused["body"]["error"] == "csrf"
    assert alice.fetch("POST", "/api/memory/forget", body)["status"] == 200
    # reading needs no token; signing out does, and ends the session
    assert alice.fetch("POST", "/api/web/logout", csrf=False)["status"] == 403
    alice.page.click("#logout")
    expect(alice.page.locator("#signin")).to_be_visible()
    assert alice.fetch("GET", "/api/web/session", csrf=False)["status"] == 401


def test_the_login_link_works_once(person: Callable[..., Person]) -> None:
    alice = person()
    link = alice.login_link()
    alice.sign_in(link)
    again = alice.context.browser.new_context()  # type: ignore[union-attr]
    try:
        page = again.new_page()
        response = page.goto(link)
        assert response is not None and response.status == 401
        page.wait_for_selector("body[data-ready='signin']", timeout=UI_TIMEOUT_MS)
        assert (
            "already used, opened in another browser, or has expired"
            in page.locator("#signin-reason").inner_text()
        )
        assert again.cookies() == []
    finally:
        again.close()


def test_the_login_link_expires(
    start_door: Callable[..., DoorProcess], person: Callable[..., Person]
) -> None:
    door = start_door("--embedder", "none", "--no-worker", "--login-link-ttl", "0.3")
    alice = person(door)
    link = alice.login_link()
    time.sleep(0.6)
    request = urllib.request.Request(link)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401
    assert refused.value.headers.get("set-cookie") is None


def test_a_revoked_devices_session_stops(person: Callable[..., Person]) -> None:
    alice = person()
    alice.sign_in()
    device = alice.fetch("GET", "/api/web/session", csrf=False)["body"]["device"]
    subprocess.run(
        [str(BIN / "bli-memory-door"), "tokens", "revoke", device, "--db", str(alice.door.db)],
        capture_output=True,
        env=alice.door.env(),
        timeout=60,
        check=True,
    )
    assert alice.fetch("GET", "/api/web/session", csrf=False)["status"] == 401
    assert alice.fetch("GET", "/api/memory/spaces", csrf=False)["status"] == 401


def test_a_session_cannot_mint_login_links(person: Callable[..., Person]) -> None:
    alice = person()
    alice.sign_in()
    asked = alice.fetch("POST", "/api/web/login-link")
    assert asked["status"] == 403


@pytest.mark.parametrize("path", ["/login", "/login?code=", "/login?code=made-up"])
def test_the_door_refuses_a_code_it_did_not_give(door: DoorProcess, path: str) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(door.url + path), timeout=30)
    assert refused.value.code == 401 and refused.value.headers.get("set-cookie") is None


def _session_cookie(person: Person) -> str:
    """A session cookie got the way a browser gets it: open the link (its page sets the pre-session
    cookie and holds the form), then post the form from the door's origin, without following the redirect."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any) -> None:
            return None

    with urllib.request.urlopen(person.login_link(), timeout=30) as opened:
        presession = opened.headers["set-cookie"]
        page = opened.read().decode()
    assert presession.startswith(PRESESSION_COOKIE_NAME + "=")
    action = page.split('<form method="post" action="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    opener = urllib.request.build_opener(NoRedirect)
    form = urllib.request.Request(
        person.door.url + action,
        data=b"",
        method="POST",
        headers={"Cookie": presession.split(";")[0], "Origin": person.door.url},
    )
    with pytest.raises(urllib.error.HTTPError) as redirected:
        opener.open(form, timeout=30)
    assert redirected.value.code == 303 and redirected.value.headers["location"] == "/"
    cookie = next(
        c for c in redirected.value.headers.get_all("set-cookie") if c.startswith(COOKIE_NAME + "=")
    )
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert "Secure" not in cookie  # served over plain http on loopback
    return str(cookie.split(";")[0])


def _call(
    door: DoorProcess, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any, Any]:
    """One request with exactly these headers (no token): (status, decoded JSON or None, headers)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(door.url + path, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            status, payload, got = answer.status, answer.read(), answer.headers
    except urllib.error.HTTPError as error:
        status, payload, got = error.code, error.read(), error.headers
    try:
        return status, json.loads(payload), got
    except ValueError:
        return status, None, got


def test_the_origin_check_still_guards_page_sessions(person: Callable[..., Person]) -> None:
    alice = person()
    cookie = _session_cookie(alice)
    status, session, _ = _call(alice.door, "GET", "/api/web/session", headers={"Cookie": cookie})
    assert status == 200 and session["person"] == alice.name
    headers = {"Cookie": cookie, "X-CSRF-Token": session["csrfToken"]}
    body = {"containerTag": f"repo_{uuid.uuid4().hex[:8]}", "content": "from the page"}
    status, answer, _ = _call(
        alice.door, "POST", "/api/memory/save", body, {**headers, "Origin": "http://evil.example"}
    )
    assert status == 403 and answer["error"] == "cross_origin"
    status, answer, _ = _call(
        alice.door, "POST", "/api/memory/save", body, {**headers, "Origin": alice.door.url}
    )
    assert status == 201, answer


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/", 200), ("/web/app.js", 200), ("/healthz", 200), ("/api/memory/spaces", 401), ("/nowhere", 404)],
)
def test_every_answer_carries_the_security_headers(door: DoorProcess, path: str, expected: int) -> None:
    status, _, headers = _call(door, "GET", path)
    assert status == expected
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"


def test_a_foreign_host_is_still_refused_with_the_headers(door: DoorProcess) -> None:
    status, answer, headers = _call(door, "GET", "/", headers={"Host": "rebound.example"})
    assert status == 403 and answer["error"] == "host_not_allowed"
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_a_page_session_expires(
    start_door: Callable[..., DoorProcess], person: Callable[..., Person]
) -> None:
    door = start_door("--embedder", "none", "--no-worker", "--web-session-ttl", "0.5")
    alice = person(door)
    cookie = _session_cookie(alice)
    assert _call(door, "GET", "/api/web/session", headers={"Cookie": cookie})[0] == 200
    time.sleep(0.8)
    status, answer, _ = _call(door, "GET", "/api/web/session", headers={"Cookie": cookie})
    assert status == 401 and answer["error"] == "unauthorized"

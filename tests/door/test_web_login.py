"""Signing in to the memory page through a one-time link, at the HTTP level against the real door: opening
the link (GET) signs nobody in — it shows a confirmation page naming who it would sign in as and sets a
pre-session cookie — and only the page's POST, carrying that cookie, its form token and a same-origin
Origin, signs in. So a link minted for someone else's device cannot sign a victim's browser in by
itself (login CSRF)."""

from __future__ import annotations

import http.client
import re
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from bli_memory.door.api import signin
from bli_memory.door.api.headers import CONTENT_SECURITY_POLICY
from tests.helpers import DoorProcess

ACTION = re.compile(r'<form method="post" action="(/login\?form=[^"]+)">')


class Answer:
    def __init__(self, response: http.client.HTTPResponse) -> None:
        self.status = response.status
        self.body = response.read()
        self.headers = response.headers
        self.cookies = {
            value.split("=", 1)[0]: value for value in response.headers.get_all("set-cookie") or []
        }

    def json(self) -> Any:
        import json

        return json.loads(self.body)


def call(door: DoorProcess, method: str, path: str, headers: dict[str, str] | None = None) -> Answer:
    """One request with exactly these headers (and an empty body for a POST, as a form with no field)."""
    parts = urlsplit(door.url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        sent = dict(headers or {})
        body = None
        if method == "POST":
            body = b""
            sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
        connection.request(method, path, body=body, headers=sent)
        return Answer(connection.getresponse())
    finally:
        connection.close()


def cookie_value(set_cookie: str) -> str:
    return set_cookie.split(";", 1)[0]


def mint(door: DoorProcess, token: str) -> str:
    status, answer = door.post("/api/web/login-link", token=token)
    assert status == 200, answer
    return str(answer["path"])


@pytest.fixture
def person(door: DoorProcess) -> tuple[str, str, str]:
    """(name, team, device token) of a new person in a new team."""
    name, team = f"mallory_{uuid.uuid4().hex[:6]}", f"team_{uuid.uuid4().hex[:6]}"
    return name, team, door.pair(name, team=team)


def open_link(door: DoorProcess, path: str, cookie: str | None = None) -> tuple[Answer, str, str]:
    """(the GET's answer, the pre-session cookie pair it set, the form's action)."""
    opened = call(door, "GET", path, {"Cookie": cookie} if cookie else None)
    assert opened.status == 200, opened.body
    found = ACTION.search(opened.body.decode())
    assert found is not None, opened.body
    return (
        opened,
        cookie_value(opened.cookies[signin.PRESESSION_COOKIE_NAME]),
        found.group(1).replace("&amp;", "&"),
    )


def test_opening_the_link_signs_nobody_in_and_names_who_it_would(
    door: DoorProcess, person: tuple[str, str, str]
) -> None:
    name, team, token = person
    opened, presession, _ = open_link(door, mint(door, token))
    assert set(opened.cookies) == {signin.PRESESSION_COOKIE_NAME}  # no session cookie
    cookie = opened.cookies[signin.PRESESSION_COOKIE_NAME]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/login" in cookie
    page = opened.body.decode()
    assert f'<strong id="confirm-person">{name}</strong>' in page
    assert f'<strong id="confirm-team">{team}</strong>' in page
    assert opened.headers["cache-control"] == "no-store"
    assert opened.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert opened.headers["referrer-policy"] == "strict-origin"  # a browser's form POST sends its Origin
    assert "<script" not in page and "style=" not in page and "<style" not in page
    # the pre-session cookie is no session
    assert call(door, "GET", "/api/web/session", {"Cookie": presession}).status == 401


@pytest.mark.parametrize(
    "what",
    ["no cookie", "no form token", "another form token", "foreign origin", "null origin", "no origin"],
)
def test_a_sign_in_without_its_cookie_form_token_or_own_origin_is_refused(
    door: DoorProcess, person: tuple[str, str, str], what: str
) -> None:
    _, _, token = person
    _, presession, action = open_link(door, mint(door, token))
    headers = {"Cookie": presession, "Origin": door.url}
    path = action
    if what == "no cookie":
        del headers["Cookie"]
    elif what == "no form token":
        path = signin.LOGIN_PATH
    elif what == "another form token":
        path = f"{signin.LOGIN_PATH}?form=not-the-one"
    elif what == "foreign origin":
        headers["Origin"] = "http://evil.example"
    elif what == "null origin":  # what a browser sends from a page whose Referrer-Policy is no-referrer
        headers["Origin"] = "null"
    else:
        del headers["Origin"]
    refused = call(door, "POST", path, headers)
    assert refused.status == 403, refused.body
    answer = refused.json()
    assert set(answer) >= {"error", "message"} and answer["message"]
    assert answer["error"] in ("login_confirmation", "cross_origin")
    assert signin.COOKIE_NAME not in refused.cookies
    # the refused attempt did not use the link up: the browser that opened it can still sign in
    signed = call(door, "POST", action, {"Cookie": presession, "Origin": door.url})
    assert signed.status == 303 and signin.COOKIE_NAME in signed.cookies


def test_the_code_signs_in_once(door: DoorProcess, person: tuple[str, str, str]) -> None:
    name, _, token = person
    link = mint(door, token)
    _, presession, action = open_link(door, link)
    signed = call(door, "POST", action, {"Cookie": presession, "Origin": door.url})
    assert signed.status == 303 and signed.headers["location"] == "/"
    session_cookie = signed.cookies[signin.COOKIE_NAME]
    assert "HttpOnly" in session_cookie and "SameSite=strict" in session_cookie and "Path=/" in session_cookie
    assert signed.cookies[signin.PRESESSION_COOKIE_NAME].startswith(
        f'{signin.PRESESSION_COOKIE_NAME}=""'
    )  # cleared
    session = call(door, "GET", "/api/web/session", {"Cookie": cookie_value(session_cookie)})
    assert session.status == 200 and session.json()["person"] == name
    again = call(door, "POST", action, {"Cookie": presession, "Origin": door.url})
    assert again.status == 401 and signin.COOKIE_NAME not in again.cookies
    reopened = call(door, "GET", link, {"Cookie": presession})
    assert reopened.status == 401 and not reopened.cookies


def test_a_link_opened_in_one_browser_cannot_sign_in_another(
    door: DoorProcess, person: tuple[str, str, str]
) -> None:
    _, _, token = person
    link = mint(door, token)
    _, first, action = open_link(door, link)
    elsewhere = call(door, "GET", link)  # a second browser (no cookie) opens the same link
    assert elsewhere.status == 401 and not elsewhere.cookies
    _, same, reloaded = open_link(door, link, first)  # the first browser reloads: a new form token
    assert same == first and reloaded != action
    assert call(door, "POST", action, {"Cookie": first, "Origin": door.url}).status == 403  # the old view's
    assert call(door, "POST", reloaded, {"Cookie": first, "Origin": door.url}).status == 303


def test_the_code_expires_even_after_it_was_opened(
    start_door: Callable[..., DoorProcess],
) -> None:
    door = start_door("--embedder", "none", "--no-worker", "--login-link-ttl", "1")
    token = door.pair("late", team="late_team")
    _, presession, action = open_link(door, mint(door, token))
    time.sleep(1.3)
    late = call(door, "POST", action, {"Cookie": presession, "Origin": door.url})
    assert late.status == 401 and late.json()["error"] == "login_expired"
    assert signin.COOKIE_NAME not in late.cookies
    unopened = mint(door, token)
    time.sleep(1.3)
    assert call(door, "GET", unopened).status == 401


def test_the_confirmation_page_escapes_the_names(door: DoorProcess) -> None:
    name = f'<b onmouseover="x">eve_{uuid.uuid4().hex[:4]}'
    token = door.pair(name, team="escape_team")
    opened, _, _ = open_link(door, mint(door, token))
    page = opened.body.decode()
    assert name not in page and "&lt;b onmouseover=&quot;x&quot;&gt;eve_" in page

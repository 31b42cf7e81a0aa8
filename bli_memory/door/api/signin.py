"""The memory page's sign-in: one-time link codes, pre-sessions and cookie sessions with a CSRF token.

The routes that use them are in `routes_page`; `caller` reads a session cookie when no bearer token is
sent.

How a person gets in without pasting a token into a page:

1. `bli-memory-mcp open` calls `POST /api/web/login-link` with its device token and gets a one-time
   code, valid for `LOGIN_LINK_TTL_S` seconds, as a link `/login?code=...`; it opens the browser there.
2. `GET /login?code=...` signs nobody in. It answers a confirmation page (`login.html`, filled in here:
   no script, no inline style) that names who the link signs in as — the person, the team, the device —
   with one Sign in button, and sets a pre-session cookie (`bli_login`: random, HttpOnly,
   SameSite=Strict, Path=/login, for the link's lifetime). The first browser to open a link reserves
   its code for that cookie: another browser opening the same link gets the "used or expired" page,
   and the same browser reloading gets the same reservation with a new form token.
3. The button posts `POST /login?form=<token>` (an empty form body). It signs in only with the
   pre-session cookie of the browser that opened the link, the form token of that browser's latest
   view of the page, and a same-origin `Origin` (which browsers send with a form POST; the request gate
   refuses a foreign one): 403 `login_confirmation` / `cross_origin` otherwise, 401 `login_expired`
   for a code used or expired. Only then is the code used up, and the session made: a random session
   id in a cookie (HttpOnly, SameSite=Strict, Path=/, Max-Age, Secure over https) and a random CSRF
   token; the answer redirects to `/`.
4. The page asks `GET /api/web/session` for who it is and the CSRF token, and sends that token as
   `X-CSRF-Token` on every state-changing request; one without it (or with another) is 403.

Why two steps: anyone paired can mint a link for their own device. If opening a link signed in at
once, an attacker could get a victim's browser to open one (a link in a message, an image URL) and the
victim would be silently signed in as the attacker, their edits and pins landing in the attacker's
account (login CSRF). Now a link opened by someone else's hand only shows a page naming the attacker,
and its button cannot be pressed from another site: the POST needs the pre-session cookie (strict,
only this browser has it) and the form token (only on the page, which no other origin can read or
frame).

The door keeps codes, pre-sessions and sessions in memory under the SHA-256 of their value (a door restart signs
everyone out), never the values themselves. A session acts as the device that asked for its link:
the same API, the same team and person isolation. A revoked device's sessions stop at their next
request (the device is looked up on each one).
"""

from __future__ import annotations

import hashlib
import hmac
import html
import secrets
import threading
import time
from dataclasses import dataclass, replace
from importlib import resources
from typing import TYPE_CHECKING, Any

from bli_memory.door.errors import Forbidden, Unauthorized
from bli_memory.door.model import Principal

if TYPE_CHECKING:
    from bli_memory.door.memories import MemoryService

#: how long a login link may wait before it is used, in seconds.
LOGIN_LINK_TTL_S = 60.0
#: how long a page session lasts from sign-in, in seconds (a working day).
SESSION_TTL_S = 12 * 3600.0
#: codes and sessions held at most for one device; past it that device's oldest go. Per device, so
#: a flood of links or sign-ins grows nothing without bound and voids only its own device's links and
#: pages, never another device's.
MAX_LOGIN_CODES_PER_DEVICE = 10
MAX_SESSIONS_PER_DEVICE = 20
COOKIE_NAME = "bli_session"
#: the cookie a browser gets when it opens a sign-in link, and must send back to sign in with it
PRESESSION_COOKIE_NAME = "bli_login"
LOGIN_PATH = "/login"
#: the query parameter of the sign-in POST naming the confirmation page's form token
FORM_TOKEN_PARAM = "form"
#: the confirmation page's own Referrer-Policy: under the door's `no-referrer`, a browser sends
#: `Origin: null` with the page's form POST, which the Origin check must refuse; `strict-origin` sends
#: the door's own origin (and, as Referer, only the origin: never the link's code)
LOGIN_REFERRER_POLICY = "strict-origin"
#: the confirmation page's template (not served as a file: the door fills it in)
LOGIN_TEMPLATE = "login.html"
CSRF_HEADER = "x-csrf-token"
#: the methods that change nothing: no CSRF token needed.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class WebSession:
    """One signed-in page: the device it acts as, its CSRF token and when it ends (monotonic s)."""

    principal: Principal
    csrf_token: str
    expires_at_s: float
    expires_at_wall_s: float


@dataclass
class _LoginCode:
    """A login code the door gave: its device, when it expires (monotonic s), and, once a browser has
    opened its link, the hash of that browser's pre-session id and the form token of its last view."""

    principal: Principal
    expires_at_s: float
    presession: str | None = None
    form_token: str | None = None


@dataclass(frozen=True)
class LoginView:
    """What the confirmation page of one opened link needs: who it signs in as, the pre-session id to
    set as a cookie in that browser, and the form token its Sign in button posts."""

    principal: Principal
    presession_id: str
    form_token: str


class WebSessions:
    """Login codes and page sessions, held under the hash of their value; thread-safe."""

    def __init__(
        self,
        login_link_ttl_s: float = LOGIN_LINK_TTL_S,
        session_ttl_s: float = SESSION_TTL_S,
    ) -> None:
        self.login_link_ttl_s = login_link_ttl_s
        self.session_ttl_s = session_ttl_s
        self._codes: dict[str, _LoginCode] = {}
        self._sessions: dict[str, WebSession] = {}
        self._lock = threading.Lock()

    def issue_code(self, principal: Principal) -> str:
        """A one-time login code for `principal`'s device, valid for `login_link_ttl_s`."""
        code = secrets.token_urlsafe(32)
        now = time.monotonic()
        with self._lock:
            self._drop_expired_codes(now)
            _drop_oldest_of(self._codes, principal.device_id, MAX_LOGIN_CODES_PER_DEVICE - 1)
            self._codes[_digest(code)] = _LoginCode(principal, now + self.login_link_ttl_s)
        return code

    def open_code(self, code: str, presession_id: str | None) -> LoginView | None:
        """Open a link: the confirmation page's view, or None for a code unknown, expired, or already
        opened by another browser. Signs nobody in and does not use the code up.

        The first browser to open a link reserves its code: the code is bound to a new pre-session id
        (a cookie only that browser holds), and only a POST carrying that cookie can use it. The same
        browser opening it again (`presession_id` is its cookie) gets the same pre-session and a new
        form token (the one of its latest view); any other browser gets None."""
        now = time.monotonic()
        with self._lock:
            found = self._codes.get(_digest(code))
            if found is None or found.expires_at_s <= now:
                return None
            if found.presession is not None:
                if presession_id is None or not hmac.compare_digest(found.presession, _digest(presession_id)):
                    return None
            else:
                presession_id = secrets.token_urlsafe(32)
                found.presession = _digest(presession_id)
            found.form_token = secrets.token_urlsafe(32)
            assert presession_id is not None
            return LoginView(found.principal, presession_id, found.form_token)

    def confirm(self, presession_id: str | None, form_token: str | None) -> tuple[str, WebSession]:
        """Sign in: the new session id and session for the code this browser opened, used up here.

        403 without the pre-session cookie or the form token, or with a form token of another view;
        401 when this browser holds no open link (used, expired, or never opened here)."""
        if not presession_id:
            raise Forbidden(
                "signing in needs the cookie the sign-in page set: open the link in this browser",
                code="login_confirmation",
            )
        if not form_token:
            raise Forbidden("signing in needs the sign-in page's form token", code="login_confirmation")
        now = time.monotonic()
        held = _digest(presession_id)
        with self._lock:
            self._drop_expired_codes(now)
            key = next((key for key, one in self._codes.items() if one.presession == held), None)
            if key is None:
                raise Unauthorized(
                    "this sign-in link was already used or has expired; run `bli-memory-mcp open` again",
                    code="login_expired",
                )
            found = self._codes[key]
            expected = found.form_token or ""
            if not hmac.compare_digest(form_token.encode("utf-8"), expected.encode("utf-8")):
                raise Forbidden(
                    "the form token is not the one of this browser's sign-in page", code="login_confirmation"
                )
            del self._codes[key]
            session_id = secrets.token_urlsafe(32)
            session = WebSession(
                principal=found.principal,
                csrf_token=secrets.token_urlsafe(32),
                expires_at_s=now + self.session_ttl_s,
                expires_at_wall_s=time.time() + self.session_ttl_s,
            )
            self._drop_expired_sessions(now)
            _drop_oldest_of(self._sessions, session.principal.device_id, MAX_SESSIONS_PER_DEVICE - 1)
            self._sessions[_digest(session_id)] = session
        return session_id, session

    def lookup(self, session_id: str) -> WebSession | None:
        now = time.monotonic()
        key = _digest(session_id)
        with self._lock:
            session = self._sessions.get(key)
            if session is not None and session.expires_at_s <= now:
                del self._sessions[key]
                return None
            return session

    def end(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(_digest(session_id), None)

    def _drop_expired_codes(self, now: float) -> None:
        for key in [key for key, one in self._codes.items() if one.expires_at_s <= now]:
            del self._codes[key]

    def _drop_expired_sessions(self, now: float) -> None:
        for key in [key for key, session in self._sessions.items() if session.expires_at_s <= now]:
            del self._sessions[key]


def _drop_oldest_of(held: dict[str, Any], device_id: str, keep: int) -> None:
    """Drop the oldest entries of `held` (codes or sessions, oldest first) that belong to `device_id`
    until at most `keep` of that device's are left; other devices' entries are never touched."""
    own = [key for key, one in held.items() if one.principal.device_id == device_id]
    for key in own[: max(0, len(own) - keep)]:
        del held[key]


def login_page(view: LoginView) -> bytes:
    """The confirmation page of an opened link: who it signs in as, and one Sign in button whose form
    posts the view's form token (no script, no inline style: the door's CSP holds)."""
    template = resources.files("bli_memory.door").joinpath("web").joinpath(LOGIN_TEMPLATE).read_text("utf-8")
    fields = {
        "{{person}}": view.principal.person,
        "{{team}}": view.principal.team,
        "{{device}}": view.principal.device_id,
        "{{action}}": f"{LOGIN_PATH}?{FORM_TOKEN_PARAM}={view.form_token}",
    }
    for marker, value in fields.items():
        template = template.replace(marker, html.escape(value, quote=True))
    return template.encode("utf-8")


def device_principal(memories: MemoryService, principal: Principal) -> Principal | None:
    """`principal` as its device stands now (its admin flag), or None once the device is revoked."""
    for device in memories.operations.devices():
        if device.get("id") == principal.device_id:
            if device.get("revoked_at") is not None:
                return None
            return replace(principal, admin=bool(device.get("admin")))
    return None


def session_principal(
    memories: MemoryService, sessions: WebSessions, session_id: str, method: str, csrf_token: str | None
) -> tuple[Principal, WebSession]:
    """The caller behind a session cookie: 401 for an unknown, expired or revoked one; 403 for a
    state-changing request without the session's CSRF token."""
    session = sessions.lookup(session_id)
    if session is None:
        raise Unauthorized("the page session is unknown or expired; run `bli-memory-mcp open` again")
    principal = device_principal(memories, session.principal)
    if principal is None:
        sessions.end(session_id)
        raise Unauthorized("this page's device was revoked; the session has ended")
    if method.upper() not in SAFE_METHODS:
        if not csrf_token:
            raise Forbidden(f"a page request that changes something must carry {CSRF_HEADER}", code="csrf")
        if not hmac.compare_digest(csrf_token.encode("utf-8"), session.csrf_token.encode("utf-8")):
            raise Forbidden(f"the {CSRF_HEADER} header does not match this session", code="csrf")
    return principal, session

"""The memory page's routes (docs/web-page.md): its files at `/` and `/web/*`, sign-in by a one-time
link (`/api/web/login-link`, `/login`), the session, logout, and the caller's spaces.

The sign-in codes and sessions themselves are kept by `signin.WebSessions`; the page's files ship in
the wheel under bli_memory/door/web/.
"""

from __future__ import annotations

import functools
import math
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from bli_memory.door.api import signin
from bli_memory.door.api.caller import Caller
from bli_memory.door.api.error_answers import error_responses
from bli_memory.door.errors import Forbidden, NotFound
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Principal, is_door_tag, iso

#: the page's files, shipped in the wheel under bli_memory/door/web/: name -> media type.
STATIC_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
#: spaces read to list a team's spaces (the store's most recently changed spaces, every team).
SPACES_READ_LIMIT = 10_000


def add_routes(api: FastAPI, memories: MemoryService, sessions: signin.WebSessions) -> None:
    """The memory page: its files, sign-in by a one-time link, the session, logout, and the caller's
    spaces; `sessions` holds the sign-in codes and the page sessions."""

    def static(name: str) -> Response:
        return Response(
            static_file(name),
            media_type=STATIC_FILES[name],
            headers={"cache-control": "no-cache"},
        )

    @api.get("/", include_in_schema=False)
    def page() -> Response:
        return static("index.html")

    @api.get("/web/{name}", include_in_schema=False)
    def page_file(name: str) -> Response:
        if name == "index.html" or name not in STATIC_FILES:
            raise NotFound("no such file")
        return static(name)

    @api.post("/api/web/login-link", responses=error_responses(401, 403))
    def login_link(request: Request, caller: Caller) -> dict[str, Any]:
        """A one-time sign-in link for the memory page, for the device whose token calls (a page
        session cannot ask for one)."""
        if request.headers.get("authorization") is None:
            raise Forbidden("a login link is asked for with a device token, not from the page")
        code = sessions.issue_code(caller)
        return {"path": f"/login?code={code}", "expiresInS": sessions.login_link_ttl_s}

    @api.get("/login", include_in_schema=False)
    def login(request: Request, code: str = "") -> Response:
        """The sign-in link's confirmation page: who it signs in as, and a Sign in button. Opening it
        signs nobody in (login CSRF: a link minted for another device must not sign a browser in by
        itself); it sets this browser's pre-session cookie, which the button's POST must carry."""
        view = sessions.open_code(code, request.cookies.get(signin.PRESESSION_COOKIE_NAME)) if code else None
        if view is None:
            return Response(
                static_file("index.html"),
                status_code=401,
                media_type=STATIC_FILES["index.html"],
            )
        answer = Response(
            signin.login_page(view),
            media_type="text/html; charset=utf-8",
            headers={"cache-control": "no-store", "referrer-policy": signin.LOGIN_REFERRER_POLICY},
        )
        answer.set_cookie(
            signin.PRESESSION_COOKIE_NAME,
            view.presession_id,
            max_age=max(1, math.ceil(sessions.login_link_ttl_s)),
            path=signin.LOGIN_PATH,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return answer

    @api.post("/login", include_in_schema=False, responses=error_responses(401, 403))
    def confirm_login(request: Request, form: str = "") -> Response:
        """Sign in with the link this browser opened: its pre-session cookie and the page's form
        token (and a same-origin `Origin`, which browsers send with every form POST)."""
        if request.headers.get("origin") is None:
            raise Forbidden("signing in must come from the door's own sign-in page", code="cross_origin")
        session_id, _ = sessions.confirm(request.cookies.get(signin.PRESESSION_COOKIE_NAME), form or None)
        answer = RedirectResponse("/", status_code=303)
        answer.set_cookie(
            signin.COOKIE_NAME,
            session_id,
            max_age=max(1, math.ceil(sessions.session_ttl_s)),
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        answer.delete_cookie(
            signin.PRESESSION_COOKIE_NAME, path=signin.LOGIN_PATH, httponly=True, samesite="strict"
        )
        return answer

    @api.get("/api/web/session", responses=error_responses(401))
    def session(request: Request, caller: Caller) -> dict[str, Any]:
        """Who the page acts as, and the CSRF token its state-changing requests carry."""
        session_id = request.cookies.get(signin.COOKIE_NAME)
        found = sessions.lookup(session_id) if session_id else None
        return {
            "person": caller.person,
            "team": caller.team,
            "device": caller.device_id,
            "csrfToken": None if found is None else found.csrf_token,
            "expiresAt": None if found is None else iso(found.expires_at_wall_s),
        }

    @api.post("/api/web/logout", responses=error_responses(401, 403))
    def logout(request: Request, caller: Caller) -> Response:
        del caller  # authenticated (and the CSRF token checked) before the session ends
        session_id = request.cookies.get(signin.COOKIE_NAME)
        if session_id:
            sessions.end(session_id)
        answer = JSONResponse({"status": "signed_out"})
        answer.delete_cookie(signin.COOKIE_NAME, path="/", httponly=True, samesite="strict")
        return answer

    @api.get("/api/memory/spaces", responses=error_responses(401))
    def spaces(caller: Caller) -> dict[str, Any]:
        """The caller's team's spaces that hold current memories, most recently changed first; the
        person's global space is reached with `scope: global` on any of them."""
        return {"spaces": team_spaces(memories, caller), "person": caller.person, "team": caller.team}


@functools.lru_cache(maxsize=len(STATIC_FILES))
def static_file(name: str) -> bytes:
    """One of the page's files from the installed package (read once)."""
    return resources.files("bli_memory.door").joinpath("web").joinpath(name).read_bytes()


def team_spaces(memories: MemoryService, principal: Principal) -> list[str]:
    """The spaces of `principal`'s team that hold current memories, most recently changed first
    (a person's global space is not one of them: it is reached with `scope: global`)."""
    return [
        tag
        for tag in memories.operations.team_spaces(principal.team_id, SPACES_READ_LIMIT)
        if not is_door_tag(tag)
    ]

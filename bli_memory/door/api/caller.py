"""Who is calling: the `Caller` every authenticated route declares.

A device token (`Authorization: Bearer <token>`) names a device; without one, the memory page's
session cookie does (`signin`), and then a request that changes something must carry the session's
CSRF token. The bearer scheme is declared here so that `/openapi.json` documents it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from bli_memory.door.api import signin
from bli_memory.door.errors import Unauthorized
from bli_memory.door.model import Principal

_BEARER = HTTPBearer(auto_error=False, description="A device token from `bli-memory-door pair`.")


async def _principal(  # async: a sync dependency costs a thread-pool round trip per request (~3 ms)
    request: Request, declared: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)] = None
) -> Principal:
    """The caller behind `Authorization: Bearer <token>`, or else the memory page's session cookie
    (`signin`: a state-changing request must carry its CSRF token); 401 for a missing, unknown or
    revoked token or session."""
    del declared  # only declares the bearer scheme in /openapi.json; the header is read as sent
    authorization = request.headers.get("authorization")
    if not authorization:
        session_id = request.cookies.get(signin.COOKIE_NAME)
        if session_id:
            principal, _ = signin.session_principal(
                request.app.state.memories,
                request.app.state.web_sessions,
                session_id,
                request.method,
                request.headers.get(signin.CSRF_HEADER),
            )
            return principal
        raise Unauthorized("missing Authorization: Bearer token")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("the Authorization header must be `Bearer <token>`")
    found: Principal | None = request.app.state.memories.authenticate(token.strip())
    if found is None:
        raise Unauthorized("the token is unknown or revoked")
    return found


Caller = Annotated[Principal, Depends(_principal)]

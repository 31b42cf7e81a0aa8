"""`door.web.WebSessions` on its own: one-time codes, expiry, bounded size, only hashes kept."""

from __future__ import annotations

import time

import pytest

from bli_memory.door import web
from bli_memory.door.model import Principal

ALICE = Principal(team_id=1, person_id=1, device_id="dev_a", person="alice", team="t", admin=False)


def test_a_code_gives_one_session_once() -> None:
    sessions = web.WebSessions()
    code = sessions.issue_code(ALICE)
    redeemed = sessions.redeem(code)
    assert redeemed is not None
    session_id, session = redeemed
    assert session.principal == ALICE and len(session.csrf_token) >= 32
    assert sessions.redeem(code) is None
    assert sessions.lookup(session_id) == session
    sessions.end(session_id)
    assert sessions.lookup(session_id) is None


def test_codes_and_sessions_expire() -> None:
    sessions = web.WebSessions(login_link_ttl_s=0.05, session_ttl_s=0.05)
    late = sessions.issue_code(ALICE)
    redeemed = sessions.redeem(sessions.issue_code(ALICE))
    assert redeemed is not None
    time.sleep(0.1)
    assert sessions.redeem(late) is None
    assert sessions.lookup(redeemed[0]) is None


def test_only_hashes_of_codes_and_session_ids_are_held() -> None:
    sessions = web.WebSessions()
    code = sessions.issue_code(ALICE)
    held = repr(sessions.__dict__)
    assert code not in held
    redeemed = sessions.redeem(code)
    assert redeemed is not None
    assert redeemed[0] not in repr(sessions.__dict__)


def test_a_flood_of_codes_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web, "MAX_LOGIN_CODES", 5)
    sessions = web.WebSessions()
    codes = [sessions.issue_code(ALICE) for _ in range(8)]
    assert len(sessions._codes) == 5
    assert sessions.redeem(codes[0]) is None  # the oldest went first
    assert sessions.redeem(codes[-1]) is not None

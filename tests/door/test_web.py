"""`door.api.signin.WebSessions` on its own: one-time codes, expiry, bounded size, only hashes kept."""

from __future__ import annotations

import time

import pytest

from bli_memory.door.api import signin
from bli_memory.door.errors import Forbidden, Unauthorized
from bli_memory.door.model import Principal

ALICE = Principal(team_id=1, person_id=1, device_id="dev_a", person="alice", team="t", admin=False)
BOB = Principal(team_id=1, person_id=2, device_id="dev_b", person="bob", team="t", admin=False)


def redeem(sessions: signin.WebSessions, code: str) -> tuple[str, signin.WebSession] | None:
    """Open the link in a browser and press its Sign in button; None when the link does not open."""
    view = sessions.open_code(code, None)
    if view is None:
        return None
    return sessions.confirm(view.presession_id, view.form_token)


def test_a_code_gives_one_session_once() -> None:
    sessions = signin.WebSessions()
    code = sessions.issue_code(ALICE)
    view = sessions.open_code(code, None)
    assert view is not None and view.principal == ALICE
    session_id, session = sessions.confirm(view.presession_id, view.form_token)
    assert session.principal == ALICE and len(session.csrf_token) >= 32
    assert sessions.open_code(code, view.presession_id) is None
    with pytest.raises(Unauthorized):
        sessions.confirm(view.presession_id, view.form_token)
    assert sessions.lookup(session_id) == session
    sessions.end(session_id)
    assert sessions.lookup(session_id) is None


def test_opening_a_code_signs_nobody_in_and_binds_it_to_the_first_browser() -> None:
    sessions = signin.WebSessions()
    code = sessions.issue_code(ALICE)
    first = sessions.open_code(code, None)
    assert first is not None and sessions._sessions == {}
    assert sessions.open_code(code, None) is None  # another browser
    assert sessions.open_code(code, "a-cookie-it-made-up") is None
    again = sessions.open_code(code, first.presession_id)  # the same browser, reloading
    assert again is not None and again.presession_id == first.presession_id
    assert again.form_token != first.form_token
    for presession, form in (
        (None, again.form_token),
        (first.presession_id, None),
        (first.presession_id, first.form_token),
    ):
        with pytest.raises(Forbidden):
            sessions.confirm(presession, form)
    assert sessions.confirm(again.presession_id, again.form_token)[1].principal == ALICE


def test_codes_and_sessions_expire() -> None:
    sessions = signin.WebSessions(login_link_ttl_s=0.05, session_ttl_s=0.05)
    late = sessions.issue_code(ALICE)
    opened = sessions.open_code(sessions.issue_code(ALICE), None)
    redeemed = redeem(sessions, sessions.issue_code(ALICE))
    assert redeemed is not None and opened is not None
    time.sleep(0.1)
    assert sessions.open_code(late, None) is None
    with pytest.raises(Unauthorized):
        sessions.confirm(opened.presession_id, opened.form_token)
    assert sessions.lookup(redeemed[0]) is None


def test_only_hashes_of_codes_and_session_ids_are_held() -> None:
    sessions = signin.WebSessions()
    code = sessions.issue_code(ALICE)
    held = repr(sessions.__dict__)
    assert code not in held
    view = sessions.open_code(code, None)
    assert view is not None and view.presession_id not in repr(sessions.__dict__)
    session_id, _ = sessions.confirm(view.presession_id, view.form_token)
    assert session_id not in repr(sessions.__dict__)


def test_a_flood_of_codes_stays_bounded_and_voids_only_its_own_devices_links() -> None:
    """One device asking for link after link loses its own oldest links, never another device's:
    the cap is per device, so no device can void everyone's links."""
    sessions = signin.WebSessions()
    bobs = sessions.issue_code(BOB)
    codes = [sessions.issue_code(ALICE) for _ in range(signin.MAX_LOGIN_CODES_PER_DEVICE * 50)]
    assert len(sessions._codes) == signin.MAX_LOGIN_CODES_PER_DEVICE + 1
    assert redeem(sessions, codes[0]) is None  # Alice's oldest went first
    assert redeem(sessions, codes[-1]) is not None
    assert redeem(sessions, bobs) is not None


def test_a_flood_of_sign_ins_stays_bounded_and_signs_out_only_its_own_devices_pages() -> None:
    sessions = signin.WebSessions()
    redeemed = redeem(sessions, sessions.issue_code(BOB))
    assert redeemed is not None
    bobs_session = redeemed[0]
    alices = []
    for _ in range(signin.MAX_SESSIONS_PER_DEVICE * 5):
        signed_in = redeem(sessions, sessions.issue_code(ALICE))
        assert signed_in is not None
        alices.append(signed_in[0])
    assert len(sessions._sessions) == signin.MAX_SESSIONS_PER_DEVICE + 1
    assert sessions.lookup(alices[0]) is None and sessions.lookup(alices[-1]) is not None
    assert sessions.lookup(bobs_session) is not None

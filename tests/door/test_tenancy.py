"""Tenancy, route by route: every route of the door is called as a second person of the same team (with
a device token), as a person of another team, and as the teammate's page session, aimed at what is not
theirs: a teammate's global space (memories, a pin, an extraction job) and another team's spaces,
rows, pins, jobs and experience. Nothing of it may be read (no answer holds its text, ids or names),
written (each victim's own export, pins and jobs are the same before and after), or revealed (a call
naming a hidden id answers exactly as the same call naming an id that does not exist).

The routes come from the app's own route table: a route added without a case here fails
`test_every_route_of_the_door_has_a_tenancy_case`.
"""

from __future__ import annotations

import http.client
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from bli_memory.door.api import routes_page, signin
from bli_memory.door.api.app import create_app
from bli_memory.hooks import stats
from bli_memory.wire.contract import HOOK_STATS_SCHEMA
from tests.door.helpers import STORE_KINDS, open_memories, serve_on_store
from tests.helpers import DoorProcess

ACTION = re.compile(r'<form method="post" action="(/login\?form=[^"]+)">')


@dataclass(frozen=True)
class Call:
    """One request of an attack. `probe`: it names a hidden id, so its answer must be the answer of the
    same call naming an id that exists nowhere."""

    method: str
    path: str
    body: Any = None
    probe: bool = False


@dataclass
class Victims:
    """What the attackers must not reach: markers (texts, names) and ids, and the ids calls aim at."""

    shared_tag: str
    carol_tag: str
    markers: list[str] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)  # exported rows, by the same names
    experience_id: str = ""
    mark: str = ""
    #: for each hidden id, one id of the same shape that exists nowhere, the same for the whole scene:
    #: a probe and its stand-in call then follow the same earlier calls (an import of one, say)
    stand_ins: dict[str, str] = field(default_factory=dict)

    def stand_in(self, hidden: str) -> str:
        if hidden not in self.stand_ins:
            if hidden == self.experience_id:
                self.stand_ins[hidden] = str(uuid.uuid4())
            else:
                cut = hidden.index("_") + 1
                self.stand_ins[hidden] = hidden[:cut] + uuid.uuid4().hex[: len(hidden) - cut]
        return self.stand_ins[hidden]

    @property
    def secrets(self) -> list[str]:
        return [*self.markers, *self.ids.values(), self.experience_id]


class Attacker:
    """One way in: a device token, or a page session (its cookie and CSRF token)."""

    def __init__(self, door: DoorProcess, name: str, token: str | None = None, session: str = "") -> None:
        self.door, self.name, self.token, self.session = door, name, token, session
        self.csrf = ""

    def call(self, call: Call) -> tuple[int, str]:
        """(status, body text) of one request."""
        parts = urlsplit(self.door.url)
        connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
        headers = {"Content-Type": "application/json", "Origin": self.door.url}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        else:
            headers["Cookie"] = self.session
            headers[signin.CSRF_HEADER] = self.csrf
        body = None if call.body is None else json.dumps(call.body).encode()
        try:
            connection.request(call.method, call.path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.read().decode("utf-8", "replace")
        finally:
            connection.close()


def _saved(door: DoorProcess, token: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = door.post(path, body, token)
    assert status in (200, 201, 202), (path, answer)
    return dict(answer)


def _export(door: DoorProcess, token: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    after = None
    while True:
        body: dict[str, Any] = {"all": True, **({"after": after} if after else {})}
        status, page = door.post("/api/memory/export", body, token)
        assert status == 200, page
        rows += page["rows"]
        after = page["next"]
        if after is None:
            return rows


def _hour_of_hooks(runs: int) -> dict[str, Any]:
    data: dict[str, object] = {}
    for _ in range(runs):
        stats.add_run(data, "prompt", {"status": "ok", "via": "direct"}, 150)
    return {
        "schema": HOOK_STATS_SCHEMA,
        "hour": stats.hour_name(time.time()) + ":00Z",
        "hooks": data["hooks"],
    }


@dataclass
class Scene:
    door: DoorProcess
    victims: Victims
    bob: str
    carol: str
    attacker: Attacker

    def state(self) -> str:
        """What the victims hold privately, as they see it: Bob's global rows and pins, everything of
        Carol's team, and both jobs. (The team's shared space is the attacker's to change too.)"""
        seen: dict[str, Any] = {
            "bob global rows": [
                row for row in _export(self.door, self.bob) if row["containerTag"].startswith("bli:")
            ],
            "carol rows": _export(self.door, self.carol),
        }
        for name, token, tag in (
            ("bob", self.bob, self.victims.shared_tag),
            ("carol", self.carol, self.victims.carol_tag),
        ):
            status, pins = self.door.post("/api/memory/pins", {"containerTag": tag}, token)
            assert status == 200, pins
            seen[f"{name} pins"] = [
                pin for pin in pins["pins"] if name == "carol" or pin["scope"] == "global"
            ]
        for job, token in (("bob job", self.bob), ("carol job", self.carol)):
            status, answer = self.door.get(f"/api/memory/jobs/{self.victims.ids[job]}", token)
            seen[job] = (status, answer)
        return json.dumps(seen, sort_keys=True)


def _sign_in(door: DoorProcess, token: str, name: str) -> Attacker:
    """The page session of `token`'s device, signed in through a one-time link as a browser does."""
    status, link = door.post("/api/web/login-link", token=token)
    assert status == 200, link
    page = Attacker(door, name)
    parts = urlsplit(door.url)

    def request(method: str, path: str, headers: dict[str, str]) -> http.client.HTTPResponse:
        connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
        connection.request(method, path, body=b"" if method == "POST" else None, headers=headers)
        return connection.getresponse()

    opened = request("GET", link["path"], {})
    found = ACTION.search(opened.read().decode())
    assert opened.status == 200 and found is not None
    presession = (opened.headers.get("set-cookie") or "").split(";", 1)[0]
    signed = request(
        "POST",
        found.group(1).replace("&amp;", "&"),
        {"Cookie": presession, "Origin": door.url, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert signed.status == 303
    cookies = signed.headers.get_all("set-cookie") or []
    page.session = next(c.split(";", 1)[0] for c in cookies if c.startswith(signin.COOKIE_NAME + "="))
    status, session = page.call(Call("GET", "/api/web/session"))
    assert status == 200
    page.csrf = json.loads(session)["csrfToken"]
    return page


@pytest.fixture(scope="module", params=STORE_KINDS)
def door(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DoorProcess]:
    """The door this module's tests share, over each store in turn."""
    process = serve_on_store(request.param, request, tmp_path_factory)
    yield process
    process.stop()


#: the ways in: a second person of Bob's team with a device token; a person of a third team with a
#: device token (an admin of it, who may also set aliases); the teammate's page session (its cookie and
#: CSRF token)
ATTACKERS = ("teammate token", "other team token", "teammate page session")


def _scene(door: DoorProcess, attacker: str) -> Scene:
    """Bob's private rows, Carol's team, and one attacker, all new (one scene per attacker, so that what
    one attacker writes never stands in another's way)."""
    mark = uuid.uuid4().hex[:10]
    team, other = f"team-t-{mark}", f"team-o-{mark}"
    carol_name = f"carol{mark}"
    victims = Victims(shared_tag=f"repo_shared_{mark}", carol_tag=f"repo_carol_{mark}", mark=mark)
    bob, carol = door.pair("bob", team=team), door.pair(carol_name, team=other, admin=True)
    shared, carols = victims.shared_tag, victims.carol_tag
    _saved(door, bob, "/api/memory/save", {"content": f"Bob's shared note {mark}", "containerTag": shared})
    plans = [
        (
            "bob global",
            bob,
            "/api/memory/save",
            {"containerTag": shared, "scope": "global", "customId": f"bobkey{mark}"},
        ),
        ("bob pin", bob, "/api/memory/pin", {"containerTag": shared, "scope": "global"}),
        ("carol row", carol, "/api/memory/save", {"containerTag": carols, "customId": f"carolkey{mark}"}),
        ("carol global", carol, "/api/memory/save", {"containerTag": carols, "scope": "global"}),
        ("carol pin", carol, "/api/memory/pin", {"containerTag": carols}),
    ]
    for name, token, path, body in plans:
        marker = name.replace(" ", "") + mark
        victims.ids[name] = _saved(door, token, path, {**body, "content": f"The {marker} setting is on"})[
            "id"
        ]
        victims.markers.append(marker)
    for name, token, tag, scope in (
        ("bob job", bob, shared, "global"),
        ("carol job", carol, carols, "project"),
    ):
        marker = name.replace(" ", "") + mark
        exchange = (
            f"User: which port does {marker} use?\n\nAssistant: We decided {marker} listens on port 8443."
        )
        body = {"content": exchange, "containerTag": tag, "extract": True, "scope": scope}
        victims.ids[name] = _saved(door, token, "/api/memory/save", body)["jobId"]
        victims.markers.append(marker)
        _wait_job(door, token, victims.ids[name])
    victims.experience_id = str(uuid.uuid4())
    _saved(
        door,
        carol,
        "/api/memory/experience",
        {"id": victims.experience_id, "store": "bli", "verdict": "win", "reason": f"carolexp{mark} helped"},
    )
    # a space of Carol's that no attacker names (the tags they do name become spaces of their own)
    hidden_tag = f"repo_carolonly_{mark}"
    _saved(
        door, carol, "/api/memory/save", {"content": f"Carol's other note {mark}", "containerTag": hidden_tag}
    )
    victims.markers += [f"carolexp{mark}", hidden_tag, other, carol_name]
    _saved(door, carol, "/api/ops/hook-stats", {"hours": [_hour_of_hooks(7)]})
    for name, token in (("bob global", bob), ("bob pin", bob), ("carol row", carol), ("carol pin", carol)):
        victims.rows[name] = next(row for row in _export(door, token) if row["id"] == victims.ids[name])
    if attacker == "other team token":
        way_in = Attacker(door, attacker, door.pair("mallory", team=f"team-m-{mark}", admin=True))
    elif attacker == "teammate token":
        way_in = Attacker(door, attacker, door.pair("alice", team=team))
    else:
        way_in = _sign_in(door, door.pair("alice", team=team), attacker)
    return Scene(door, victims, bob, carol, way_in)


def _wait_job(door: DoorProcess, token: str, job_id: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, job = door.get(f"/api/memory/jobs/{job_id}", token)
        assert status == 200, job
        if job["status"] in ("done", "failed"):
            return
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish")


# ---------------------------------------------------------------------------------------------- the cases


def _forged_import(v: Victims) -> list[Call]:
    """Each victim row sent back forgotten, changed, and as the next version of itself."""
    calls = []
    for name in ("bob global", "bob pin", "carol row", "carol pin"):
        row = v.rows[name]
        for forged in (
            {**row, "status": "forgotten", "supersededAt": row["updatedAt"], "containerTag": v.shared_tag},
            {**row, "content": "overwritten", "containerTag": v.shared_tag},
            {
                **row,
                "id": row["id"] + "_next",  # a stand-in call names its stand-in's next version
                "previousVersionId": row["id"],
                "version": row["version"] + 1,
                "content": "hijacked",
                "containerTag": v.shared_tag,
            },
        ):
            calls.append(Call("POST", "/api/memory/import", {"rows": [forged]}, probe=True))
    return calls


def _by_id(
    method: str, path: str, body: Callable[[str], Any] | None = None
) -> Callable[[Victims], list[Call]]:
    """Calls naming each hidden memory id, in the path (`{id}`) or the body."""

    def calls(v: Victims) -> list[Call]:
        names = ("bob global", "bob pin", "carol row", "carol global", "carol pin")
        return [
            Call(
                method,
                path.replace("{id}", v.ids[name]),
                None if body is None else body(v.ids[name]),
                probe=True,
            )
            for name in names
        ]

    return calls


def _reads(path: str, extra: dict[str, Any]) -> Callable[[Victims], list[Call]]:
    """A read of each scope of the shared space and of the other team's space (its tag names nothing of
    the caller's own)."""

    def calls(v: Victims) -> list[Call]:
        found = []
        for tag in (v.shared_tag, v.carol_tag):
            for scope in ("project", "global", "all"):
                found.append(Call("POST", path, {**extra, "containerTag": tag, "scope": scope}))
        return found

    return calls


def _words(v: Victims) -> str:
    return " ".join(v.markers[:6])


ROUTES: dict[tuple[str, str], Callable[[Victims], list[Call]]] = {
    ("GET", "/healthz"): lambda v: [Call("GET", "/healthz")],
    ("GET", "/openapi.json"): lambda v: [Call("GET", "/openapi.json")],
    ("GET", "/"): lambda v: [Call("GET", "/")],
    ("GET", "/web/{name}"): lambda v: [Call("GET", f"/web/{name}") for name in routes_page.STATIC_FILES],
    ("POST", "/api/memory/search"): lambda v: [
        call
        for q in (_words(v), "port 8443 setting", "which port does it use?")
        for call in _reads("/api/memory/search", {"q": q, "limit": 100})(v)
    ],
    ("POST", "/api/memory/save"): lambda v: [
        Call(
            "POST",
            "/api/memory/save",
            {"content": "mine", "containerTag": v.carol_tag, "customId": f"carolkey{v.mark}"},
        ),
        Call(
            "POST",
            "/api/memory/save",
            {
                "content": "mine",
                "containerTag": v.shared_tag,
                "customId": f"bobkey{v.mark}",
                "scope": "global",
            },
        ),
        Call(
            "POST",
            "/api/memory/save",
            {"content": "mine", "containerTag": v.shared_tag, "customId": f"bobkey{v.mark}"},
        ),
        Call(
            "POST",
            "/api/memory/save",
            {
                "content": "User: which port does the setting use?\n\nAssistant: We decided it listens on 8443.",
                "containerTag": v.shared_tag,
                "extract": True,
            },
        ),
    ],
    ("POST", "/api/memory/update"): _by_id(
        "POST", "/api/memory/update", lambda i: {"id": i, "content": "overwritten"}
    ),
    ("GET", "/api/memory/{memory_id}/history"): _by_id("GET", "/api/memory/{id}/history"),
    ("POST", "/api/memory/forget"): lambda v: [
        *_by_id("POST", "/api/memory/forget", lambda i: {"id": i, "containerTag": v.shared_tag})(v),
        *_by_id(
            "POST", "/api/memory/forget", lambda i: {"id": i, "containerTag": v.carol_tag, "scope": "global"}
        )(v),
        *[
            Call(
                "POST",
                "/api/memory/forget",
                {kind: f"The {marker} setting is on", "containerTag": tag, "scope": scope},
            )
            for marker in v.markers[:5]
            for kind in ("content", "query")
            for tag in (v.shared_tag, v.carol_tag)
            for scope in ("project", "global")
        ],
    ],
    ("POST", "/api/memory/v4/profile"): lambda v: [
        Call("POST", "/api/memory/v4/profile", {"containerTag": tag, **q})
        for tag in (v.shared_tag, v.carol_tag)
        for q in ({}, {"q": _words(v)})
    ],
    ("POST", "/api/memory/list"): _reads("/api/memory/list", {"limit": 100}),
    ("POST", "/api/memory/recent"): _reads("/api/memory/recent", {"limit": 100}),
    ("POST", "/api/memory/pin"): lambda v: [
        Call("POST", "/api/memory/pin", {"content": "my pin", "containerTag": tag, "scope": scope})
        for tag in (v.shared_tag, v.carol_tag)
        for scope in ("project", "global")
    ],
    ("POST", "/api/memory/pins"): lambda v: [
        Call("POST", "/api/memory/pins", {"containerTag": tag}) for tag in (v.shared_tag, v.carol_tag)
    ],
    ("POST", "/api/memory/unpin"): _by_id("POST", "/api/memory/unpin", lambda i: {"id": i}),
    ("POST", "/api/memory/aliases"): lambda v: [
        Call("POST", "/api/memory/aliases", {"alias": f"{v.carol_tag}_alias", "canonical": v.carol_tag}),
        Call("POST", "/api/memory/aliases", {"alias": v.carol_tag, "canonical": v.shared_tag}),
    ],
    ("POST", "/api/memory/export"): lambda v: [
        Call("POST", "/api/memory/export", {"all": True, "limit": 1000}),
        Call("POST", "/api/memory/export", {"containerTag": v.carol_tag}),
        Call("POST", "/api/memory/export", {"containerTag": v.shared_tag}),
        *_by_id("POST", "/api/memory/export", lambda i: {"all": True, "after": i})(v),
    ],
    ("GET", "/api/memory/jobs/{job_id}"): lambda v: [
        Call("GET", f"/api/memory/jobs/{v.ids[name]}", probe=True) for name in ("bob job", "carol job")
    ],
    ("POST", "/api/memory/experience"): lambda v: [
        Call(
            "POST",
            "/api/memory/experience",
            {"id": v.experience_id, "store": "bli", "verdict": "loss", "reason": "another opinion"},
            probe=True,
        )
    ],
    ("GET", "/api/ops/memory-usage"): lambda v: [Call("GET", "/api/ops/memory-usage")],
    ("POST", "/api/ops/hook-stats"): lambda v: [
        Call("POST", "/api/ops/hook-stats", {"hours": [_hour_of_hooks(1)]})
    ],
    ("GET", "/api/ops/hook-stats"): lambda v: [
        Call("GET", f"/api/ops/hook-stats?days={days}") for days in (7, 30)
    ],
    ("POST", "/api/web/login-link"): lambda v: [Call("POST", "/api/web/login-link")],
    ("GET", "/login"): lambda v: [Call("GET", "/login?code=" + uuid.uuid4().hex)],
    ("POST", "/login"): lambda v: [Call("POST", "/login?form=" + uuid.uuid4().hex)],
    ("GET", "/api/web/session"): lambda v: [Call("GET", "/api/web/session")],
    ("GET", "/api/memory/spaces"): lambda v: [Call("GET", "/api/memory/spaces")],
    # late: the forged rows it writes into the attacker's own space carry the victims' texts and ids,
    # which the attacker's later reads would then rightly show
    ("POST", "/api/memory/import"): _forged_import,
    # last: it ends the page session
    ("POST", "/api/web/logout"): lambda v: [Call("POST", "/api/web/logout")],
}


def _app_routes(tmp_path: Path) -> set[tuple[str, str]]:
    """(method, path) of every route the door's app serves, from its own route table."""
    app = create_app(open_memories(tmp_path / "routes.db"))
    found = set()
    for route in app.fastapi.routes:
        for method in getattr(route, "methods", None) or ():
            if method != "HEAD":
                found.add((method, route.path))
    return found


def test_every_route_of_the_door_has_a_tenancy_case(tmp_path: Path) -> None:
    served = _app_routes(tmp_path)
    missing = sorted(served - set(ROUTES))
    stale = sorted(set(ROUTES) - served)
    assert not missing, f"routes with no tenancy case in {__file__}: {missing}"
    assert not stale, f"tenancy cases for routes the door no longer serves: {stale}"


def _unknown(v: Victims, call: Call) -> tuple[Call, dict[str, str]]:
    """The same call naming, for each hidden id, its stand-in (`Victims.stand_in`), and the map back
    from each stand-in to the id it replaced."""
    text = json.dumps([call.path, call.body])
    back = {}
    for hidden in (*v.ids.values(), v.experience_id):
        if hidden in text:
            stand_in = v.stand_in(hidden)
            text = text.replace(hidden, stand_in)
            back[stand_in] = hidden
    path, body = json.loads(text)
    return Call(call.method, path, body), back


#: fields that differ between two answers of the same call for reasons other than the data
_VOLATILE = re.compile(r'"(jobId|createdAt|updatedAt|supersededAt|elapsedMs|path)": ?"[^"]*"')


def _same_answer(first: tuple[int, str], second: tuple[int, str], back: dict[str, str]) -> bool:
    status, text = second
    for stand_in, hidden in back.items():
        text = text.replace(stand_in, hidden)
    return first[0] == status and _VOLATILE.sub("", first[1]) == _VOLATILE.sub("", text)


@pytest.mark.parametrize("attacker", ATTACKERS)
def test_no_route_reads_writes_or_reveals_a_teammates_global_space_or_another_team(
    door: DoorProcess, attacker: str
) -> None:
    scene = _scene(door, attacker)
    victims, way_in = scene.victims, scene.attacker
    before = scene.state()
    failures: list[str] = []
    for route, cases in ROUTES.items():
        for call in cases(victims):
            status, text = way_in.call(call)
            sent = json.dumps([call.path, call.body])
            leaked = [secret for secret in victims.secrets if secret in text and secret not in sent]
            if leaked or status >= 500:
                failures.append(f"{route}: {status}, shows {leaked}: {text[:300]}")
            if call.probe:
                unknown, back = _unknown(victims, call)
                answer = way_in.call(unknown)
                if not _same_answer((status, text), answer, back):
                    failures.append(
                        f"{route} tells a hidden id from an unknown one: {call.body or call.path}\n"
                        f"    hidden:  {status} {text[:240]}\n    unknown: {answer[0]} {answer[1][:240]}"
                    )
    assert not failures, f"as {attacker}:\n" + "\n".join(failures)
    for name, token in (("bob job", scene.bob), ("carol job", scene.carol)):
        _wait_job(door, token, victims.ids[name])
    assert scene.state() == before

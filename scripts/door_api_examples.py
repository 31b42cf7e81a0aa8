#!/usr/bin/env python3
"""Write docs/door-api.md from real calls to a real door, so every example is a true answer.

    .venv/bin/python scripts/door_api_examples.py > docs/door-api.md

Starts `bli-memory-door serve` on a temporary SQLite file with the packaged model, pairs two people,
and makes each call the doc shows. Ids, tokens and times differ on every run; nothing else should.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import local_door  # scripts/local_door.py

#: how the profile chooses what lasts (door/librarian/lasting.py)
PROFILE_LASTING_NOTE = (
    "What lasts is decided by the librarian's own signals, deterministically, over the space's newest 200 "
    'rows: a decision, convention, preference or correction ("We decided …", "From now on …", "I prefer '
    '…") ranks first; then a standing order, which opens its sentence ("Don\'t edit … by hand", "Never '
    '…"); then a statement of how things are, with a verb ("CI runs with `.env.ci`"); last an edit report '
    '("`docker-compose.yml`: removed …"), a first-person account or a report of what the session did or '
    'saw ("Opened #413 …", "Turned on the rule …", "Checked: …", "Then applied the plan …", "The '
    'migration was applied to staging", "… keeps failing on CI but never locally", "expect one more '
    'restart tonight"). "Policy" counts as a decision only when the policy is the team\'s ("Our policy is '
    'squash merges"); "the bucket policy allows public reads" is a standing fact of a configured object. '
    "Newest first among equals, and at most two facts of one saved exchange before the other exchanges' "
    "facts, so one long exchange does not fill the profile. Never in any of the three: a question, a test "
    'count or test-run report ("With 2.7.4 all 612 tests pass."), a log line\'s shape (a timestamp, a '
    'level, a kubelet event such as "14m Warning OOMKilling node/…") or a fragment without a verb '
    '("`README.md` line 31, the "Environments" table."). The rules live in '
    "`bli_memory/door/librarian/lasting.py`."
)

BIN = Path(sys.executable).parent

INTRO = """# The door's HTTP API

`bli-memory-door serve` answers JSON over HTTP on 127.0.0.1:8787 by default. Every call but
`/healthz` and `/openapi.json` needs `Authorization: Bearer <device token>` (from
`bli-memory-door pair` or the session file `serve` writes when it pairs the local user). Bodies are
JSON with camelCase fields, sent as `Content-Type: application/json`; bodies over 1 MiB are refused
with 413 before they are read. The memory page the door serves at `/` authenticates with a session
cookie instead, got through a one-time link (`bli-memory-mcp open`), and sends a CSRF token on every
state-changing call (docs/web-page.md). Every answer carries a strict `Content-Security-Policy`,
`X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.

Every error is `{"error": <code>, "message": <one sentence>}` with its status: `invalid_request`
(400: a missing or wrong-typed field, empty content, content over 100 000 characters, `limit`
outside 1..100, `threshold` outside 0..1, malformed JSON), `extract_unavailable` (400),
`unauthorized` (401: missing, unknown or revoked token), `forbidden` (403), `csrf` (403: a page
request that changes something without its session's CSRF token), `host_not_allowed` and
`cross_origin` (403, below), `not_found` (404; also for another team's memory, so existence is not
revealed), `no_match` (404), `request_timeout` (408), `not_current`, `not_pinned` and `conflict` (409),
`body_too_large` (413), `unsupported_media_type` (415), `headers_too_large` (431), `insert_failed`
(502), `storage_full` and `busy` (503).

A door serves one or more teams. A token belongs to one person in one team; the spaces (container
tags) of a team are shared by its people and invisible to every other team. Superseded and forgotten
rows never appear in search, profile or forget-by-text.

## Hosts, browsers and limits

The door answers only requests whose `Host` is one of its names: by default the address it listens
on, `localhost`, `127.0.0.1` and `[::1]`, each with its port. `serve --allowed-host NAME` (repeatable)
adds `NAME` with any port, `NAME:PORT` with that port, or `*` for any host — needed for a door that
listens on `0.0.0.0` or sits behind a proxy. Any other `Host` gets 403 `host_not_allowed`, so a web
page whose name was rebound to 127.0.0.1 (DNS rebinding) cannot reach a loopback door. A request with
an `Origin` header other than the door's own (`http://` and its `Host`) gets 403 `cross_origin`, and a
body not declared `application/json` (optionally with `charset=utf-8`) gets 415
`unsupported_media_type`, so a page cannot post a form or `text/plain` to it either. There is no
`/docs` or `/redoc` page (they load scripts from a CDN); `/openapi.json` is the schema.

Connections are bounded, so no client can stall the door without a token (`serve --help`):

| limit | default | option | past it |
|---|---|---|---|
| request headers | 32 KiB | `--max-header-bytes` | 431 `headers_too_large`, connection closed |
| the headers, then the body, each arrive within | 20 s | `--read-timeout` | 408 `request_timeout`, connection closed |
| a silent connection, before or between requests | 5 s | `--idle-timeout` | connection closed |
| open connections | 200 | `--max-connections` | the longest-idle one is closed to make room; 503 `busy` when every one is serving a request |

When the store cannot write — its disk is full, or the database reached a size limit — a write
answers 503 `storage_full` and writes nothing (reads go on), the door logs `storage full` with the
database's path, and `/healthz` answers 503 with `"ok": false`, `"reason": "storage_full"` and a
message.

## Ranking

Search gathers candidates from two channels in the space — BM25 over an in-memory index of the space
(porter stems; the matches re-ranked once with the words of the best three) and, when an embedder is
loaded, cosine similarity to the space's vectors (exact over every vector below 50 000 of them; the
nearest rows of an HNSW graph above, or of pgvector's HNSW index on PostgreSQL, scored with their
exact cosines) — and fuses them (see
`bli_memory/door/ranking.py` for the function, docs/ranking.md for the measurements behind its constants):

    score = (w_k / (k + rank_keyword) + w_v / (k + rank_vector)) * recency(age)
    recency(age) = floor + (1 - floor) * 0.5 ** (age_days / half_life_days)

with k = 3, w_k = 1.5, w_v = 1.0, a 90-day half-life and a floor of 0.6. Then context: each of the
ten best candidates lends 0.3 of its score, divided by the step, to the candidates its device saved
up to two saves before and after it within 30 minutes (the question a reply answers, the fix that
followed a decision); a candidate next to several takes the best. Context only re-ranks candidates:
it never adds a row that neither channel found. (All measured on LoCoMo: see docs/benchmarks.md.)

Last, the answer kind: a question that says what sort of string answers it ("which version", "who",
"where", "which port", "why", "what time", ...) lifts each memory among the best rows that holds such
a string (a version, a name, a path or address, a port, a reason, a time), its score multiplied by
1 + 1.5 times the share of the asked kinds it holds; a stored exchange is not lifted (it holds every
kind). A question asking for no kind ranks as above. (Tuned on coding-agent exchanges: see
docs/ranking.md, "Answer kinds".)

`similarity` is the cosine of query and memory (null when the vector channel did not score the row,
e.g. with `--embedder none`); `threshold` filters on it. `score` is the fused rank score.
`matchedBy` names the channels whose candidates held the row (`keyword`, `vector`): a row found by
meaning alone, by keyword alone, or by both.

The examples below are real answers of a door started by `scripts/door_api_examples.py`.
"""


def start(db: Path) -> tuple[subprocess.Popen[str], str]:
    """The door over `db` with its default embedder (the packaged model) and its extraction worker."""
    return local_door.start_door(db, None, None, "door_api_examples", worker=True)


def pair(db: Path, person: str, team: str, admin: bool = False) -> str:
    command = [str(BIN / "bli-memory-door"), "pair", "--person", person, "--team", team, "--db", str(db)]
    if admin:
        command.append("--admin")
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


class Doc:
    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token
        self.parts: list[str] = []

    def call(
        self,
        title: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        note: str = "",
        auth: bool = True,
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if auth:
            request.add_header("Authorization", f"Bearer {token or self.token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, payload = response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            status, payload = error.code, json.loads(error.read())
        shown_auth = " \\\n  -H 'Authorization: Bearer bli_…'" if auth else ""
        shown_body = (
            ""
            if body is None
            else f" \\\n  -H 'Content-Type: application/json' \\\n  -d '{json.dumps(body)}'"
        )
        self.parts.append(f"### {title}\n")
        if note:
            self.parts.append(note + "\n")
        self.parts.append(
            f"```console\n$ curl -s -X {method} http://127.0.0.1:8787{path}{shown_auth}{shown_body}\n```\n"
        )
        self.parts.append(
            f"`{status}`\n\n```json\n{json.dumps(payload, indent=2, ensure_ascii=False)}\n```\n"
        )
        return payload


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "memory.db"
        admin = pair(db, "ana", "acme", admin=True)
        colleague = pair(db, "ben", "acme")
        outsider = pair(db, "eve", "other")
        process, url = start(db)
        try:
            doc = Doc(url, admin)
            tag = "repo_acme_payments__3f1c2a9e0b7d4c11"
            doc.parts.append("## Health and schema\n")
            doc.call(
                "GET /healthz",
                "GET",
                "/healthz",
                auth=False,
                note='No token. `embedder` is `none` when no model loaded; 503 with `"ok": false` when'
                " the store cannot write.",
            )
            doc.parts.append(
                "`GET /openapi.json` returns the OpenAPI 3.1 document of every endpoint below.\n"
            )
            doc.parts.append("## Memories\n")
            first = doc.call(
                "POST /api/memory/save",
                "POST",
                "/api/memory/save",
                {
                    "content": "Payments retries use exponential backoff capped at 30 s (MAX_RETRY_DELAY_S).",
                    "containerTag": tag,
                },
                note="201 with `status` `created`, `updated` (same `customId`, new text) or `unchanged` (an exact "
                "duplicate of a current memory, or the same `customId` and text). Optional: `customId`, `metadata` "
                '(`{"pinned": true}` makes it a pin, as `POST /api/memory/pin` does), `kind` (`memory`|`document`), '
                "`createdAt` (ISO 8601, not in the future: imports keep their history), `extract`, `scope` "
                "(`project`, the default, or `global`: the caller's own space, see Scopes and pins).",
            )
            doc.call(
                "Saving the same text again",
                "POST",
                "/api/memory/save",
                {
                    "content": "Payments retries use exponential backoff capped at 30 s (MAX_RETRY_DELAY_S).",
                    "containerTag": tag,
                },
            )
            doc.call(
                "Upsert by customId",
                "POST",
                "/api/memory/save",
                {
                    "content": "The payments service deploys with Flux.",
                    "containerTag": tag,
                    "customId": "deploy-tool",
                },
            )
            doc.call(
                "A pinned profile fact",
                "POST",
                "/api/memory/save",
                {
                    "content": "Team convention: conventional commits, squash merges.",
                    "containerTag": tag,
                    "metadata": {"pinned": True},
                },
                token=colleague,
            )
            doc.call(
                "POST /api/memory/search",
                "POST",
                "/api/memory/search",
                {"q": "how long do we wait between payment retries?", "containerTag": tag, "limit": 3},
                note="`limit` 1..100 (default 5), `threshold` 0..1 on `similarity` (default 0). `searched` lists every "
                "tag of the space (aliases included). When the door has a chat endpoint (`BLI_MEMORY_LLM_URL`, "
                "`BLI_MEMORY_LLM_MODEL`), a question is also searched as the statement that would answer it, the "
                "two result lists fused, and the answer's `rewrittenAs` gives the statement; `rewriteBudgetMs` "
                "(0..60000, optional) caps how long that rewrite may take (docs/question-rewrite.md). `scope` "
                "(default `all`) reads the space and the caller's global space as one ranking; each hit says "
                "which (`scope`).",
            )
            doc.call(
                "An identifier query",
                "POST",
                "/api/memory/search",
                {"q": "MAX_RETRY_DELAY_S", "containerTag": tag, "limit": 1},
            )
            updated = doc.call(
                "POST /api/memory/update",
                "POST",
                "/api/memory/update",
                {
                    "id": first["id"],
                    "content": "Payments retries use exponential backoff capped at 60 s (MAX_RETRY_DELAY_S).",
                },
                note="A new version; the old one is kept as history. Updating a superseded version is 409 "
                "`not_current`. Updating a fact distilled from an exchange takes its old sentence out of the "
                "stored exchange, as a forget does, unless the exchange also says the new text; the new version "
                "then no longer names that exchange.",
            )
            doc.call(
                "GET /api/memory/{id}/history",
                "GET",
                f"/api/memory/{updated['id']}/history",
                note="Every version, oldest first, from the id of any of them.",
            )
            doc.call(
                "Updating an old version",
                "POST",
                "/api/memory/update",
                {"id": first["id"], "content": "again"},
            )
            doc.call(
                "POST /api/memory/forget by id",
                "POST",
                "/api/memory/forget",
                {"containerTag": tag, "id": updated["id"]},
                note="Exactly one of `id`, `content` (exact text) or `query` (the closest current memory, only "
                "when its similarity is at least 0.85; never a stored exchange). Forgotten rows are tombstones: "
                "kept, never shown. Forgetting a fact distilled from an exchange takes its sentence out of the "
                "stored exchange too (a new version of it; the old one is history), or tombstones the exchange "
                "when the sentence is not in it word for word; any other stored exchange of the space that "
                "says the forgotten text word for word gets a new version without it as well.",
            )
            doc.call(
                "Forget by closest match",
                "POST",
                "/api/memory/forget",
                {"containerTag": tag, "query": "the payments service deploys using Flux"},
            )
            doc.call(
                "Nothing close enough",
                "POST",
                "/api/memory/forget",
                {"containerTag": tag, "query": "office coffee machine"},
            )
            doc.call(
                "POST /api/memory/v4/profile",
                "POST",
                "/api/memory/v4/profile",
                {"containerTag": tag},
                note="`static`: pinned facts; `dynamic`: the facts that last longest (or, with `q`, the most "
                "relevant); `recent`: "
                "newest rows; `pins`: the pins with their ids and scope. The space and the caller's global "
                "space are read together. Stored exchanges are left out of `dynamic` and `recent`.\n\n"
                + PROFILE_LASTING_NOTE,
            )
            doc.parts.append("## Spaces and teams\n")
            doc.call(
                "POST /api/memory/aliases",
                "POST",
                "/api/memory/aliases",
                {"alias": "repo_acme_payments_legacy", "canonical": tag},
                note="Admin tokens only (403 otherwise). Search reads every tag of the space; a save through an "
                "alias lands in the canonical tag and says so.",
            )
            doc.call(
                "Saving through an alias",
                "POST",
                "/api/memory/save",
                {
                    "content": "Legacy notes now land in the canonical space.",
                    "containerTag": "repo_acme_payments_legacy",
                },
            )
            doc.call(
                "Another team sees nothing",
                "POST",
                "/api/memory/search",
                {"q": "payments", "containerTag": tag},
                token=outsider,
            )
            doc.call(
                "Another team's memory is not found",
                "GET",
                f"/api/memory/{updated['id']}/history",
                token=outsider,
            )
            # ---- scopes and pins (docs/scopes-and-pins.md)
            doc.parts.append("## Scopes and pins\n")
            doc.call(
                "Saving to the global space",
                "POST",
                "/api/memory/save",
                {"content": "I prefer table-driven tests.", "containerTag": tag, "scope": "global"},
                note="Every person has a global space for facts that hold in every project; the door derives it "
                "from the token (a tag starting with `bli:` that no client may name: 400). Nobody else, in the "
                "team or outside it, can read or change it (another person's global memory is 404, like an "
                "unknown id).",
            )
            doc.call(
                "Search merges both spaces",
                "POST",
                "/api/memory/search",
                {"q": "which tests do we prefer", "containerTag": tag, "limit": 2},
                note="`scope` `all` (the default): one ranking over the space and the global space, each hit "
                "labelled; `project` or `global` reads one of them.",
            )
            doc.call(
                "Naming a reserved tag",
                "POST",
                "/api/memory/search",
                {"q": "x", "containerTag": "bli:global:1"},
            )
            pin = doc.call(
                "POST /api/memory/pin",
                "POST",
                "/api/memory/pin",
                {"content": "Never deploy payments on Fridays.", "containerTag": tag},
                note="A pin is kept word for word (at most 2000 characters) and loaded at every session start "
                "(`profile.pins`); it is never a search hit and never a neighbour the librarian merges, "
                "updates or ages. `scope`: `project` (default) or `global`. The same text again is "
                "`unchanged`.",
            )
            doc.call(
                "POST /api/memory/pins",
                "POST",
                "/api/memory/pins",
                {"containerTag": tag},
                note="Every pin that applies: the space's, then the caller's global ones, each oldest first.",
            )
            doc.call(
                "POST /api/memory/unpin",
                "POST",
                "/api/memory/unpin",
                {"id": pin["id"]},
                note="The pin becomes an ordinary memory again (a new version; the pin is its history). Forget "
                "it afterwards if it is no longer true. 409 `not_pinned` for a memory that is not a pin, "
                "`not_current` for an old version; 404 for an unknown id or another person's global pin.",
            )
            doc.parts.append("## Extraction jobs\n")
            job = doc.call(
                "POST /api/memory/save with extract",
                "POST",
                "/api/memory/save",
                {
                    "content": "User: which Postgres do we run?\n\nAssistant: We run PostgreSQL 16 in production; "
                    "the connection pool is capped by MAX_POOL_SIZE=20 in config/database.yml.",
                    "containerTag": tag,
                    "extract": True,
                },
                note="202: one durable job row is written, and a worker inside the door distils facts, "
                "reconciles them with the space's facts and keeps the exchange itself as a document, after the "
                "answer.",
            )
            for _ in range(100):
                time.sleep(0.1)
                request = urllib.request.Request(
                    url + f"/api/memory/jobs/{job['jobId']}", headers={"Authorization": f"Bearer {admin}"}
                )
                with urllib.request.urlopen(request, timeout=10) as response:
                    if json.loads(response.read())["status"] in ("done", "failed"):
                        break
            doc.call(
                "GET /api/memory/jobs/{id}",
                "GET",
                f"/api/memory/jobs/{job['jobId']}",
                note="`status` is `queued`, `running`, `done` or `failed` (with `error`). The outcome counts "
                "facts; the stored exchange is not one of them. Until the job is done its outcome is `null`, "
                'or, once it has written a fact, `{"progress": {"facts": [...], "applied": N, ...}}` (a job '
                "interrupted or retried goes on after the facts it applied). A job whose extraction used more "
                "than its CPU budget (`BLI_MEMORY_JOB_CPU_S`, 5 s by default) is `failed` with `error` "
                "`stopped: extraction used more than 5 s of CPU`.",
            )
            doc.call(
                "The exchange and its facts",
                "POST",
                "/api/memory/search",
                {"q": "which Postgres and what pool size", "containerTag": tag, "limit": 3},
                note="The job kept the exchange as a memory of kind `document`, so what the librarian missed "
                "is still found. The two are linked both ways: the document's `customId` is `exchange:` and "
                "24 hex digits of its text's SHA-256 (the same exchange saved again stays one document), its "
                'metadata says `source: "exchange"`, the `jobId` and `facts` (the root ids, first-version '
                "ids, of the facts distilled from it); each fact names that `customId` in its metadata "
                "`exchange`. Search labels the kinds and lists a fact before the exchange it came from. A "
                "door tombstones stored exchanges older than its retention (`serve "
                "--exchange-retention-days`, env `BLI_MEMORY_EXCHANGE_RETENTION_DAYS`, default 90 days); "
                "their facts stay. A fact forgotten or superseded (by an update, or by the librarian's "
                "reconciliation of a later correction) has its sentence cut out of its exchange: the exchange "
                "gets a new version without it (the old one is history) and keeps the rest, or is tombstoned "
                "when nothing else is left. A forgotten fact whose sentence is not in it word for word "
                "tombstones the exchange; a superseded one leaves it as it was (the librarian reworded the "
                "value, and the exchange is the record of everything else that was said), and so does a "
                "superseded fact whose exchange also holds the new text. Any other stored exchange of the "
                "space that says the forgotten or superseded sentence word for word (the same thing said "
                "again in a later session) has it cut the same way, unless it also holds the new text; one "
                "that only shares words with it is left as it is. So a search for an old value finds no "
                "exchange that still says it word for word.",
            )
            # -- browsing (door/browse.py)
            doc.parts.append("## Browsing\n")
            listed = doc.call(
                "POST /api/memory/list",
                "POST",
                "/api/memory/list",
                {"containerTag": tag, "limit": 2},
                note="The space's current memories, newest first (by last change, then id), `limit` 1..100 "
                "(default 20). `nextCursor` continues the list (null on the last page): it is a keyset "
                "position, not an offset, so a memory saved, updated or forgotten while you page neither "
                "repeats nor shifts the next page. Each row says its `kind` (`fact` or `document`), whether "
                "it is a stored `exchange`, and its `source`: the metadata `source` it was saved with "
                "(`origin`), the `person` and the `device` that saved it. Pinned memories are not listed.",
            )
            doc.call(
                "The next page",
                "POST",
                "/api/memory/list",
                {"containerTag": tag, "limit": 2, "cursor": listed["nextCursor"]},
            )
            doc.call(
                "POST /api/memory/recent",
                "POST",
                "/api/memory/recent",
                {"containerTag": tag, "limit": 1},
                note="The latest memories of the space, as the first page of the list (`limit` default 10).",
            )
            doc.call(
                "A cursor the door did not give",
                "POST",
                "/api/memory/list",
                {"containerTag": tag, "cursor": "c1.bm9uc2Vuc2U"},
            )
            doc.parts.append("## Experience log\n")
            doc.call(
                "POST /api/memory/experience",
                "POST",
                "/api/memory/experience",
                {
                    "id": "5f0c6f0e-8d7a-4a39-9a53-3c8f8d0e4b21",
                    "store": "bli",
                    "verdict": "win",
                    "reason": "The dated decision answered the question directly",
                },
                note="201 inserted, 200 an identical retry of the same id, 409 the same id with other content, "
                "400 invalid, 502 a failed insert. Person and device come from the token.",
            )
            doc.call(
                "An identical retry",
                "POST",
                "/api/memory/experience",
                {
                    "id": "5f0c6f0e-8d7a-4a39-9a53-3c8f8d0e4b21",
                    "store": "bli",
                    "verdict": "win",
                    "reason": "The dated decision answered the question directly",
                },
            )
            doc.call(
                "GET /api/ops/memory-usage",
                "GET",
                "/api/ops/memory-usage",
                note="7- and 30-day totals by store and person, and the last five reasons per store.",
            )
            hour = time.strftime("%Y-%m-%dT%H:00Z", time.gmtime())
            doc.call(
                "POST /api/ops/hook-stats",
                "POST",
                "/api/ops/hook-stats",
                {
                    "hours": [
                        {
                            "schema": "bli-memory-hook-stats.v1",
                            "hour": hour,
                            "hooks": {
                                "prompt": {
                                    "runs": 3,
                                    "ok": 2,
                                    "skipped": 1,
                                    "skipped_trivial": 1,
                                    "reasons": {"trivial_prompt": 1},
                                    "via": {"daemon": 2, "direct": 1},
                                    "elapsed_ms": {"sum": 310, "max": 180, "le_50": 1, "le_200": 2},
                                }
                            },
                        }
                    ]
                },
                note="One device's hourly hook figures, each hour as its stats file holds it "
                "(`bli_memory/hooks/stats.py`); `bli-memory-mcp sync` sends the last 14 days. Checked strictly "
                "(known hooks, counters, reasons, routes and duration buckets; integer counts; at most 336 hours; "
                "no hour in the future), else 400. A re-sent hour replaces the device's copy of it. The door "
                "keeps 30 days of hours (the ops view's longest window): its worker deletes older ones at "
                "start and then hourly.",
            )
            doc.call(
                "GET /api/ops/hook-stats?days=7",
                "GET",
                "/api/ops/hook-stats?days=7",
                note="The team's hook figures of the last 7 or 30 days, per hook: runs by outcome, reasons, "
                "routes, the duration histogram and the buckets p50 and p95 fall in (`p50Edge`: its upper edge "
                "in ms). The memory page's ops view charts this.",
            )
            doc.parts.append("## Export and import\n")
            page = doc.call(
                "POST /api/memory/export",
                "POST",
                "/api/memory/export",
                {"containerTag": tag, "limit": 2},
                token=colleague,
                note="Every row of a space — current, superseded and forgotten — in the order the door wrote them, "
                "keyset-paged: pass the answer's `next` as `after` until it is null. `all: true` instead of "
                "`containerTag` reads every space of the team and the caller's own global space. Any token of the team "
                "may export (no admin); another team's rows and another person's global space (their pins too) never "
                "appear, nor may one of their rows be named as `after`. Times carry microseconds so that an import writes them back exactly. "
                "`bli-memory-mcp export` pages through this (docs/import.md).",
            )
            doc.call(
                "POST /api/memory/import",
                "POST",
                "/api/memory/import",
                {
                    "rows": [
                        *page["rows"],
                        {
                            **page["rows"][0],
                            "id": "mem_000000000000000000000001",
                            "rootId": "mem_000000000000000000000000",
                            "previousVersionId": "mem_000000000000000000000000",
                            "version": 2,
                            "status": "current",
                            "supersededAt": None,
                        },
                    ]
                },
                note="Exported rows written back as they were: their ids, chains, statuses and times. Each row is "
                "checked against the rows already there and answered on its own (`created`, `unchanged`, `updated` "
                "when a row current here is retired in the import, or `{error, message}`); a refused row writes "
                "nothing and the others go on. A later version needs its previous one already there (import in "
                "file order); a current row may not join a chain that has one, nor take a customId another "
                "current memory of the space holds; a row already here is retired only by a row of its own space. "
                "Only rows the caller may see are looked at: an id that another team (or another person's global "
                "space) holds is answered as a free one and stored under an id of the team's own, which a second "
                "import of the same file, or the row's next version, finds again.",
            )
            doc.parts.append("## The memory page\n")
            doc.call(
                "GET /api/memory/spaces",
                "GET",
                "/api/memory/spaces",
                note="The spaces of the caller's team that hold current memories, most recently changed first "
                "(the page's space picker). The person's global space is not listed: any call reaches it "
                "with `scope: global`.",
            )
            doc.call(
                "POST /api/web/login-link",
                "POST",
                "/api/web/login-link",
                note="A one-time sign-in link to the page for the calling device, usable once within "
                "`expiresInS` seconds (`serve --login-link-ttl`, default 60). Only a device token may ask "
                "(a page session gets 403). `GET /login?code=…` trades it for the session cookie and "
                "redirects to `/`; an unknown, used or expired code gets 401 and no cookie. "
                "`bli-memory-mcp open` does all this (docs/web-page.md).",
            )
            doc.parts.append("## Errors\n")
            doc.call(
                "A wrong-typed field",
                "POST",
                "/api/memory/search",
                {"q": "x", "containerTag": tag, "limit": "5"},
            )
            doc.call(
                "A revoked or unknown token",
                "POST",
                "/api/memory/search",
                {"q": "x", "containerTag": tag},
                token="bli_unknown",
            )
        finally:
            local_door.stop_door(process, 30)
    sys.stdout.write(INTRO + "\n" + "\n".join(doc.parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

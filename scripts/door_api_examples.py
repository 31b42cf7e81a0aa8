#!/usr/bin/env python3
"""Write docs/door-api.md from real calls to a real door, so every example is a true answer.

    .venv/bin/python scripts/door_api_examples.py > docs/door-api.md
    .venv/bin/python scripts/door_api_examples.py --check

The page's prose is scripts/door_api.md.template; this script makes the calls and puts each one's
command and answer where the template names it. It starts `bli-memory-door serve` on a temporary
SQLite file with the packaged model, pairs two people, and makes each call the page shows. Ids,
tokens and times differ on every run; nothing else should.

`--check` starts no door: it fills the template with the examples docs/door-api.md already holds and
says whether that gives the page back byte for byte, so a change of prose made in the page and not
in the template (which the next run would undo) is caught.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import local_door  # scripts/local_door.py

BIN = Path(sys.executable).parent
#: the page's prose, with a line `{{example <name>}}` where each call's command and answer go
TEMPLATE = Path(__file__).with_name("door_api.md.template")
EXAMPLE_LINE = re.compile(r"^\{\{example ([a-z0-9-]+)\}\}\n", re.MULTILINE)
#: one example as the page shows it: the curl command, the status, the JSON answer
EXAMPLE_BLOCK = re.compile(
    r"```console\n\$ curl [^\n]*(?:\n  [^\n]*)*\n```\n\n`\d{3}`\n\n```json\n.*?\n```\n", re.DOTALL
)


def fill(template: str, examples: dict[str, str]) -> str:
    """The page: the template with each `{{example <name>}}` line replaced by that call's block. Every
    line must name a call made, and every call made must have its line, so no example goes missing."""
    named = EXAMPLE_LINE.findall(template)
    if sorted(named) != sorted(examples):
        raise SystemExit(
            f"the template and the calls differ: {sorted(set(named) ^ set(examples))} (template: {TEMPLATE})"
        )
    return EXAMPLE_LINE.sub(lambda line: examples[line.group(1)], template)


def examples_of(page: str, template: str) -> dict[str, str]:
    """The example blocks of a written page, by the names the template gives them in order."""
    return dict(zip(EXAMPLE_LINE.findall(template), EXAMPLE_BLOCK.findall(page), strict=True))


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
        self.examples: dict[str, str] = {}

    def call(
        self,
        name: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        auth: bool = True,
    ) -> Any:
        """Make one call and keep its command and answer as the example `name` of the template."""
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
        self.examples[name] = (
            f"```console\n$ curl -s -X {method} http://127.0.0.1:8787{path}{shown_auth}{shown_body}\n```\n"
            f"\n`{status}`\n\n```json\n{json.dumps(payload, indent=2, ensure_ascii=False)}\n```\n"
        )
        return payload


PAGE = Path(__file__).resolve().parent.parent / "docs" / "door-api.md"


def check() -> int:
    """0 when the template, filled with the page's own examples, is the page; else 1 and why."""
    template = TEMPLATE.read_text(encoding="utf-8")
    page = PAGE.read_text(encoding="utf-8")
    if fill(template, examples_of(page, template)) == page:
        return 0
    print(
        f"{PAGE} is not {TEMPLATE} filled with its own examples: edit the prose in the template",
        file=sys.stderr,
    )
    return 1


def main() -> int:
    if sys.argv[1:] == ["--check"]:
        return check()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "memory.db"
        admin = pair(db, "ana", "acme", admin=True)
        colleague = pair(db, "ben", "acme")
        outsider = pair(db, "eve", "other")
        process, url = start(db)
        try:
            doc = Doc(url, admin)
            tag = "repo_acme_payments__3f1c2a9e0b7d4c11"
            doc.call(
                "healthz",
                "GET",
                "/healthz",
                auth=False,
            )
            first = doc.call(
                "save",
                "POST",
                "/api/memory/save",
                {
                    "content": "Payments retries use exponential backoff capped at 30 s (MAX_RETRY_DELAY_S).",
                    "containerTag": tag,
                },
            )
            doc.call(
                "save-again",
                "POST",
                "/api/memory/save",
                {
                    "content": "Payments retries use exponential backoff capped at 30 s (MAX_RETRY_DELAY_S).",
                    "containerTag": tag,
                },
            )
            doc.call(
                "save-custom-id",
                "POST",
                "/api/memory/save",
                {
                    "content": "The payments service deploys with Flux.",
                    "containerTag": tag,
                    "customId": "deploy-tool",
                },
            )
            doc.call(
                "save-pinned",
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
                "search",
                "POST",
                "/api/memory/search",
                {"q": "how long do we wait between payment retries?", "containerTag": tag, "limit": 3},
            )
            doc.call(
                "search-identifier",
                "POST",
                "/api/memory/search",
                {"q": "MAX_RETRY_DELAY_S", "containerTag": tag, "limit": 1},
            )
            updated = doc.call(
                "update",
                "POST",
                "/api/memory/update",
                {
                    "id": first["id"],
                    "content": "Payments retries use exponential backoff capped at 60 s (MAX_RETRY_DELAY_S).",
                },
            )
            doc.call(
                "history",
                "GET",
                f"/api/memory/{updated['id']}/history",
            )
            doc.call(
                "update-old-version",
                "POST",
                "/api/memory/update",
                {"id": first["id"], "content": "again"},
            )
            doc.call(
                "forget-by-id",
                "POST",
                "/api/memory/forget",
                {"containerTag": tag, "id": updated["id"]},
            )
            doc.call(
                "forget-by-query",
                "POST",
                "/api/memory/forget",
                {"containerTag": tag, "query": "the payments service deploys using Flux"},
            )
            doc.call(
                "forget-no-match",
                "POST",
                "/api/memory/forget",
                {"containerTag": tag, "query": "office coffee machine"},
            )
            doc.call(
                "profile",
                "POST",
                "/api/memory/v4/profile",
                {"containerTag": tag},
            )
            doc.call(
                "aliases",
                "POST",
                "/api/memory/aliases",
                {"alias": "repo_acme_payments_legacy", "canonical": tag},
            )
            doc.call(
                "save-through-alias",
                "POST",
                "/api/memory/save",
                {
                    "content": "Legacy notes now land in the canonical space.",
                    "containerTag": "repo_acme_payments_legacy",
                },
            )
            doc.call(
                "search-other-team",
                "POST",
                "/api/memory/search",
                {"q": "payments", "containerTag": tag},
                token=outsider,
            )
            doc.call(
                "history-other-team",
                "GET",
                f"/api/memory/{updated['id']}/history",
                token=outsider,
            )
            doc.call(
                "save-global",
                "POST",
                "/api/memory/save",
                {"content": "I prefer table-driven tests.", "containerTag": tag, "scope": "global"},
            )
            doc.call(
                "search-both-spaces",
                "POST",
                "/api/memory/search",
                {"q": "which tests do we prefer", "containerTag": tag, "limit": 2},
            )
            doc.call(
                "search-reserved-tag",
                "POST",
                "/api/memory/search",
                {"q": "x", "containerTag": "bli:global:1"},
            )
            pin = doc.call(
                "pin",
                "POST",
                "/api/memory/pin",
                {"content": "Never deploy payments on Fridays.", "containerTag": tag},
            )
            doc.call(
                "pins",
                "POST",
                "/api/memory/pins",
                {"containerTag": tag},
            )
            doc.call(
                "unpin",
                "POST",
                "/api/memory/unpin",
                {"id": pin["id"]},
            )
            job = doc.call(
                "save-extract",
                "POST",
                "/api/memory/save",
                {
                    "content": "User: which Postgres do we run?\n\nAssistant: We run PostgreSQL 16 in production; "
                    "the connection pool is capped by MAX_POOL_SIZE=20 in config/database.yml.",
                    "containerTag": tag,
                    "extract": True,
                },
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
                "job",
                "GET",
                f"/api/memory/jobs/{job['jobId']}",
            )
            doc.call(
                "search-exchange",
                "POST",
                "/api/memory/search",
                {"q": "which Postgres and what pool size", "containerTag": tag, "limit": 3},
            )
            listed = doc.call(
                "list",
                "POST",
                "/api/memory/list",
                {"containerTag": tag, "limit": 2},
            )
            doc.call(
                "list-next-page",
                "POST",
                "/api/memory/list",
                {"containerTag": tag, "limit": 2, "cursor": listed["nextCursor"]},
            )
            doc.call(
                "recent",
                "POST",
                "/api/memory/recent",
                {"containerTag": tag, "limit": 1},
            )
            doc.call(
                "list-bad-cursor",
                "POST",
                "/api/memory/list",
                {"containerTag": tag, "cursor": "c1.bm9uc2Vuc2U"},
            )
            doc.call(
                "experience",
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
                "experience-retry",
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
                "memory-usage",
                "GET",
                "/api/ops/memory-usage",
            )
            hour = time.strftime("%Y-%m-%dT%H:00Z", time.gmtime())
            doc.call(
                "hook-stats-save",
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
            )
            doc.call(
                "hook-stats-read",
                "GET",
                "/api/ops/hook-stats?days=7",
            )
            page = doc.call(
                "export",
                "POST",
                "/api/memory/export",
                {"containerTag": tag, "limit": 2},
                token=colleague,
            )
            doc.call(
                "import",
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
            )
            doc.call(
                "spaces",
                "GET",
                "/api/memory/spaces",
            )
            doc.call(
                "login-link",
                "POST",
                "/api/web/login-link",
            )
            doc.call(
                "error-wrong-type",
                "POST",
                "/api/memory/search",
                {"q": "x", "containerTag": tag, "limit": "5"},
            )
            doc.call(
                "error-unknown-token",
                "POST",
                "/api/memory/search",
                {"q": "x", "containerTag": tag},
                token="bli_unknown",
            )
        finally:
            local_door.stop_door(process, 30)
    sys.stdout.write(fill(TEMPLATE.read_text(encoding="utf-8"), doc.examples))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

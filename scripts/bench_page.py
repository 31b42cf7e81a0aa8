#!/usr/bin/env python3
"""The memory page's first load: bytes transferred and time to interactive, against a local door whose
space holds N memories; with --screenshots, also the README's pictures of the page.

    .venv/bin/python scripts/bench_page.py [--memories 10000] [--runs 5] [--screenshots docs/images]

Seeds a fresh SQLite file through the memory service's bulk path (`save_many`, no embedder), starts
the real `bli-memory-door serve` on it, pairs a temporary HOME and, per run, asks
`bli-memory-mcp open --print` for a one-time link and loads it in a fresh (cold-cache) headless
chromium context (Debian's /usr/bin/chromium through Playwright; nothing is downloaded). Per run:

- bytes: every response of the load (the sign-in link's confirmation page, the sign-in POST's
  redirect, the page, its script and style, the API calls), headers and bodies as sent (Playwright's
  `request.sizes()`);
- time to interactive: from the navigation's start (the confirmation page's Sign in POST, which the
  script clicks at once) to the page's own mark
  `bli-interactive`, set once the first page of memories and the pins are on screen and every
  control works (Performance API, ms).

Prints a Markdown table (median, min, max) to stdout; progress to stderr.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import local_door  # scripts/local_door.py
from playwright.sync_api import Browser, Page, sync_playwright

from bli_memory.door.memories import MemoryService
from bli_memory.door.store.sqlite import SqliteStore
from bli_memory.settings import write_session

BIN = Path(sys.executable).parent
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
TAG = "github.com/acme/shop"
SEED_BATCH = 1000
START_TIMEOUT_S = 60.0
VIEWPORT = {"width": 1100, "height": 760}

SUBJECTS = ["the API gateway", "the billing service", "CI", "the mobile app", "staging", "the auth module"]
VERBS = ["uses", "depends on", "was migrated to", "is configured with", "is deployed by", "is tested with"]
OBJECTS = ["PostgreSQL 16", "Redis 7", "a 30 second timeout", "ArgoCD", "pnpm workspaces", "Node 20"]

#: what the screenshots show: a small, readable space.
DEMO = [
    (
        "memory",
        "We decided to deploy with the blue-green script; rollbacks are a DNS switch, not a redeploy.",
    ),
    ("memory", "CI runs `make check` (ruff, mypy, pytest); never push with it red."),
    ("memory", "The billing service retries Stripe webhooks 5 times with exponential backoff."),
    ("document", "Design notes: the deploy pipeline has three stages, build, canary (5 %) and full rollout."),
    ("memory", "Staging uses PostgreSQL 16 with pgbouncer in transaction mode."),
    ("memory", "I prefer small commits whose message says why."),
]


def sentence(rng: random.Random, index: int) -> str:
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (note {index})"


def seed(db: Path, size: int) -> str:
    memories = MemoryService(SqliteStore(db), None)
    _, token = memories.store.create_device(person="dana", team="acme", admin=False)
    principal = memories.authenticate(token)
    assert principal is not None
    rng = random.Random(size)
    for start in range(0, size, SEED_BATCH):
        texts = [sentence(rng, index) for index in range(start, min(size, start + SEED_BATCH))]
        memories.save_many(principal, TAG, texts)
        sys.stderr.write(f"\r  seeded {start + len(texts):>6}/{size}")
    sys.stderr.write("\n")
    memories.close()
    return token


def start_door(db: Path, home: Path, embedder: str = "none") -> tuple[subprocess.Popen[str], str]:
    return local_door.start_door(db, home, embedder, "bench_page", START_TIMEOUT_S)


def client_env(home: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


def login_link(home: Path) -> str:
    done = subprocess.run(
        [str(BIN / "bli-memory-mcp"), "open", "--print"],
        capture_output=True,
        text=True,
        env=client_env(home),
        timeout=60,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench_page: open --print failed: {done.stderr.strip()}")
    return done.stdout.strip()


#: the last load's bytes per request (path: headers + body), for the breakdown under the table.
BREAKDOWN: dict[str, int] = {}


def one_load(browser: Browser, home: Path) -> dict[str, float]:
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    responses: list[Any] = []
    page.on("requestfinished", lambda request: responses.append(request))
    link = login_link(home)
    page.goto(link)
    page.click("#confirm-signin")  # the link's page names who it signs in as; one click signs in
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    interactive_ms = page.evaluate("performance.getEntriesByName('bli-interactive')[0].startTime")
    total = 0
    BREAKDOWN.clear()
    for request in responses:
        sizes = request.sizes()
        size = sizes["responseBodySize"] + sizes["responseHeadersSize"]
        total += size
        path = request.url.split("//", 1)[-1].partition("/")[2].partition("?")[0]
        BREAKDOWN[f"{request.method} /{path}"] = BREAKDOWN.get(f"{request.method} /{path}", 0) + size
    context.close()
    return {"bytes": float(total), "interactive_ms": float(interactive_ms), "requests": float(len(responses))}


def static_bytes() -> dict[str, int]:
    folder = Path(__file__).resolve().parent.parent / "bli_memory" / "door" / "web"
    return {path.name: path.stat().st_size for path in sorted(folder.iterdir())}


def screenshots(browser: Browser, scratch: Path, folder: Path) -> None:
    """Browse, search, history and ops views of a small demo space on a door with the packaged model
    (so search shows similarities), as PNGs in `folder`."""
    home = scratch / "demo-home"
    home.mkdir()
    db = scratch / "demo.db"
    token = seed(db, 0)
    door, door_url = start_door(db, home, "onnx")
    try:
        write_session(door_url, token, env=client_env(home))
        _screenshots(browser, door_url, token, home, folder)
    finally:
        door.terminate()
        door.wait(15)


def demo_hook_hours(now_s: float, days: int = 6) -> list[dict[str, Any]]:
    """A week of one machine's hourly hook figures for the ops screenshot, as `sync` sends them: a
    working day's hours each day, the prompt hook mostly through the daemon, a few skipped and one
    failure. Fixed shapes, no randomness: the same picture every run."""
    hours: list[dict[str, Any]] = []
    for day in range(days, -1, -1):
        for step, hour_of_day in enumerate((9, 10, 11, 14, 15, 16)):
            when = now_s - day * 86_400 - (23 - hour_of_day) * 3_600
            if when > now_s:
                continue
            prompts = 6 + (day + step) % 5
            trivial = 1 + step % 2
            failed = 1 if (day, step) == (2, 3) else 0
            ok = prompts - trivial - failed
            hours.append(
                {
                    "schema": "bli-memory-hook-stats.v1",
                    "hour": time.strftime("%Y-%m-%dT%H:00Z", time.gmtime(when)),
                    "hooks": {
                        "prompt": {
                            "runs": prompts,
                            "ok": ok,
                            "skipped": trivial,
                            "failed": failed,
                            "skipped_trivial": trivial,
                            "reasons": {"trivial_prompt": trivial, **({"timeout": 1} if failed else {})},
                            "via": {"daemon": prompts - 1, "direct": 1},
                            "elapsed_ms": {
                                "sum": 24 * prompts,
                                "max": 180,
                                "le_50": prompts - 1,
                                "le_200": 1,
                            },
                        },
                        "stop": {
                            "runs": 2,
                            "ok": 2,
                            "via": {"daemon": 2},
                            "elapsed_ms": {"sum": 70, "max": 40, "le_50": 2},
                        },
                        **(
                            {
                                "session-start": {
                                    "runs": 1,
                                    "ok": 1,
                                    "via": {"direct": 1},
                                    "elapsed_ms": {"sum": 95, "max": 95, "le_100": 1},
                                }
                            }
                            if step == 0
                            else {}
                        ),
                    },
                }
            )
    return hours


def _screenshots(browser: Browser, door_url: str, token: str, home: Path, folder: Path) -> None:
    import json
    import urllib.request

    def call(path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(door_url + path, data=json.dumps(body).encode(), method="POST")
        request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=30) as answer:
            result: dict[str, Any] = json.loads(answer.read())
            return result

    tag = "github.com/acme/web"
    for kind, text in DEMO:
        call("/api/memory/save", {"containerTag": tag, "content": text, "kind": kind})
        time.sleep(0.01)
    call(
        "/api/memory/pin", {"containerTag": tag, "content": "Never edit generated files under gen/ by hand."}
    )
    for store, verdict, reason in [
        ("bli", "win", "recalled the deploy rule before I asked"),
        ("bli", "win", "knew the CI command"),
        ("bli", "noise", "an old staging note came up"),
        ("supermemory", "win", "found the webhook retry count"),
        ("supermemory", "loss", "missed the pgbouncer mode"),
    ]:
        call("/api/memory/experience", {"store": store, "verdict": verdict, "reason": reason})
    call("/api/ops/hook-stats", {"hours": demo_hook_hours(time.time())})
    folder.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 980, "height": 640}, device_scale_factor=1)
    page: Page = context.new_page()
    page.goto(login_link(home))
    page.click("#confirm-signin")
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_selector("#memories > li:has-text('small commits')")
    page.screenshot(path=str(folder / "page-browse.png"))
    page.fill("#q", "deploy")
    page.click("#search-form button[type=submit]")
    page.wait_for_selector("#list-title:has-text('found for')")
    page.screenshot(path=str(folder / "page-search.png"))
    item = page.locator("#memories > li", has_text="blue-green")
    item.get_by_role("button", name="Edit").click()
    item.locator("textarea").fill(
        "We decided to deploy with the blue-green script; rollbacks switch the load balancer back."
    )
    item.get_by_role("button", name="Save").click()
    page.wait_for_selector("#notice:has-text('version 2')")
    page.locator("#memories > li", has_text="load balancer").get_by_role("button", name="History").click()
    page.wait_for_selector("#versions > li")
    page.screenshot(path=str(folder / "page-history.png"))
    page.click("#show-ops")
    page.wait_for_selector("#charts svg")
    page.wait_for_selector("#hook-charts svg")
    page.screenshot(path=str(folder / "page-ops.png"), full_page=True)
    context.close()
    for name in ("browse", "search", "history", "ops"):
        sys.stderr.write(f"  wrote {folder / f'page-{name}.png'}\n")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--screenshots", type=Path, help="also write the page's PNG screenshots here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-page-") as tmp:
        folder = Path(tmp)
        home = folder / "home"
        home.mkdir()
        db = folder / "memory.db"
        sys.stderr.write(f"seeding {args.memories} memories\n")
        token = seed(db, args.memories)
        door, url = start_door(db, home)
        try:
            write_session(url, token, env=client_env(home))
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                one_load(browser, home)  # warm the door's caches and the OS page cache once
                runs = [one_load(browser, home) for _ in range(args.runs)]
                if args.screenshots is not None:
                    screenshots(browser, folder, args.screenshots)
                browser.close()
        finally:
            door.terminate()
            door.wait(15)
    files = static_bytes()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus")
    print(f"First load of the memory page, a space of {args.memories} memories, {args.runs} cold loads:\n")
    print("| measure | median | min | max |")
    print("|---|---|---|---|")
    for key, label, unit in (
        ("bytes", "bytes transferred (headers + bodies)", ""),
        ("interactive_ms", "time to interactive", " ms"),
        ("requests", "requests", ""),
    ):
        values = [run[key] for run in runs]
        print(
            f"| {label} | {statistics.median(values):.0f}{unit} | {min(values):.0f}{unit} | {max(values):.0f}{unit} |"
        )
    print(
        "\nThe page's files (uncompressed, as served): " + ", ".join(f"{n} {b} B" for n, b in files.items())
    )
    print(f"total {sum(files.values())} B")
    print(
        "One load, bytes per request (headers + body): " + ", ".join(f"{k} {v}" for k, v in BREAKDOWN.items())
    )

    return 0


if __name__ == "__main__":
    sys.exit(main())

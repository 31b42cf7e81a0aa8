#!/usr/bin/env python3
"""What the answer-kind lift adds to a search: `ranking.lift_answer_kinds` over a search's window.

    .venv/bin/python scripts/bench_answer_kind.py [--rounds 300]

A search reads its window (the 5 hits asked for and 25 more) and, when the question asks for a kind
of answer, checks each of those facts for it. This times that step alone, in-process, over 30
invented facts of the length the librarian writes, for questions asking for each kind, and prints
the median and p95 per search beside a search's own p50 (docs/benchmarks.md, "The door").
"""

from __future__ import annotations

import argparse
import statistics
import time

from bli_memory.door import answer_kind, ranking

FACTS = [
    "`httpx` is pinned to 0.27.2 in `requirements.txt` until the app= argument is restored.",
    "The nightly export job runs at 03:15 UTC from `jobs/export.py` on the worker pool.",
    "Deploys to production need a signed tag from the release manager.",
    "The staging API moved to https://api.staging.example.dev last sprint.",
    "Stubs are generated into `gen/proto/v1/` by `make proto`; never edit them by hand.",
    "The queue consumer commits its offsets only after the batch insert succeeds.",
    "Lint settings live in `.golangci.yml`, with `errorlint` and `wrapcheck` enabled.",
    "The admin UI listens on http://localhost:8081/admin when run with `make dev`.",
    "The upload test was flaky because the fixture's clock ran ahead of the server's.",
    "Marta leads the billing code; reviews go to @billing-core.",
    "Allowed versions of the search client are `>=2.4,<2.6` in `pyproject.toml`.",
    "The worker pods run 4 to 6 replicas under the autoscaler.",
    "Tracked in OPS-77: lifting the pin once upstream ships the fix.",
    "The cluster is `eks-staging-euw2`, in the `platform` account.",
    "Rounding uses HALF_EVEN for interest; the ledger replays June to check it.",
    "Log in with `argocd login cd.example.dev --sso --grpc-web` behind the proxy.",
    "We moved the state of the network stack to the `network-prod` workspace.",
    "The cache is keyed by tenant and locale, and expires after 15 minutes.",
    "Feature flags load from `FLAGS_URL`, which preview builds lacked, so they fell back to none.",
    "`vitest@1.6.0` replaced Jest; `vi.hoisted()` holds variables a mock factory needs.",
    "The pre-handoff check is `just verify`: format, lint, types and the tests.",
    "Database passwords come from Vault through the agent injector, never from env files.",
    "Migrations are named with the ticket number first and always have a real downgrade.",
    "The minimum supported Rust version is 1.75 because the exporter needs async fn in traits.",
    "The OpenSearch domain only allowed 10.20.0.0/16; the new node group runs in 10.42.0.0/16.",
    "The receipts worker restarts each child after 200 tasks to free the font cache.",
    "Named exports only, except where the framework requires a default export.",
    "CI installs with `pnpm install --frozen-lockfile` via `pnpm/action-setup@v4`.",
    "The webhook tolerance is 300 seconds in `.env.ci`, since shared runners are slow.",
    "Config lives in `~/.config/tracer/config.toml`; `TRACER_CONFIG` overrides the path.",
]
QUESTIONS = [
    "which release of the HTTP client do we pin?",
    "who signs off on production deploys?",
    "where is the staging endpoint?",
    "which folder holds the generated stubs?",
    "why was the upload test flaky?",
    "what's the name of the staging cluster?",
    "which version range of the search client is allowed?",
    "what time does the export run?",
    "how many replicas does the worker run?",
    "what flag does the login need behind the proxy?",
    "is there a ticket for lifting the pin?",
    "what's the pre-handoff command?",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300, help="times each question is timed (default 300)")
    args = parser.parse_args()
    texts = {f"m{index}": text for index, text in enumerate(FACTS)}
    scores = {memory_id: 1.0 for memory_id in texts}
    assert all(answer_kind.asked(question) for question in QUESTIONS)
    timings: list[float] = []
    for _ in range(args.rounds):
        for question in QUESTIONS:
            started = time.perf_counter()
            ranking.lift_answer_kinds(scores, texts, question)
            timings.append(time.perf_counter() - started)
    timings.sort()
    print(
        f"answer-kind lift over {len(FACTS)} facts (mean {sum(map(len, FACTS)) / len(FACTS):.0f} characters), "
        f"{len(QUESTIONS)} questions x {args.rounds}: p50 {statistics.median(timings) * 1e3:.2f} ms, "
        f"p95 {timings[int(len(timings) * 0.95)] * 1e3:.2f} ms per search"
    )


if __name__ == "__main__":
    main()

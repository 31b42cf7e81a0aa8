"""The profile's facts are chosen by what lasts (`MemoryService.profile` over the real door)."""

from __future__ import annotations

from tests.helpers import DoorProcess

DECISION = "We decided to stop using Celery beat; reconciliation runs in the worker with APScheduler."
CONVENTION = "Don't edit `src/lib/api/generated/` by hand: `pnpm gen:api` overwrites it."
STANDING = "CI runs with `.env.ci`, which sets `STRIPE_WEBHOOK_TOLERANCE=5`."
NOISE = [
    "14m Warning OOMKilling node/ip-10-42-12-14.ec2.internal Memory cgroup out of memory",
    "With 2.7.4 all 612 tests pass.",
    '`README.md` line 31, the "Environments" table.',
    "Why does test_refund_webhook keep failing on CI?",
]
EDITS = [f"`docs/notes_{index}.md`: added the on-call rota." for index in range(10)]


def save(door: DoorProcess, tag: str, content: str, exchange: str | None = None) -> None:
    metadata = {"exchange": exchange} if exchange else {}
    status, body = door.post(
        "/api/memory/save", {"content": content, "containerTag": tag, "metadata": metadata}
    )
    assert status == 201, body


def test_the_profile_holds_what_lasts_not_the_newest_fragments(door: DoorProcess, tag: str) -> None:
    for content in [DECISION, CONVENTION, STANDING, *EDITS, *NOISE]:  # the noise is newest
        save(door, tag, content)
    status, answer = door.post("/api/memory/v4/profile", {"containerTag": tag})
    assert status == 200
    dynamic = answer["profile"]["dynamic"]
    assert dynamic[:3] == [DECISION, CONVENTION, STANDING]
    assert len(dynamic) == 8 and set(dynamic[3:]) <= set(EDITS)
    recent = [row["content"] for row in answer["recent"]]
    assert not set(NOISE) & set(dynamic + recent)
    assert recent[0] == EDITS[-1]


def test_a_query_never_brings_a_log_line_into_the_profile(door: DoorProcess, tag: str) -> None:
    save(door, tag, "The settlement worker's memory limit is 768Mi in `deploy/helm/values-prod.yaml`.")
    save(door, tag, "14m Warning OOMKilling node/ip-10-42-12-14 settlement worker memory")
    status, answer = door.post(
        "/api/memory/v4/profile", {"containerTag": tag, "q": "settlement worker memory"}
    )
    assert status == 200
    assert answer["profile"]["dynamic"] == [
        "The settlement worker's memory limit is 768Mi in `deploy/helm/values-prod.yaml`."
    ]


def test_one_long_exchange_does_not_fill_the_profile(door: DoorProcess, tag: str) -> None:
    older = "The receipts queue runs on its own Celery worker pool."
    save(door, tag, older, exchange="x_older")
    newer = [f"Receipt template {index} renders with WeasyPrint." for index in range(3)]
    for content in newer:
        save(door, tag, content, exchange="x_newer")
    status, answer = door.post("/api/memory/v4/profile", {"containerTag": tag})
    assert status == 200
    assert answer["profile"]["dynamic"] == [newer[2], newer[1], older, newer[0]]

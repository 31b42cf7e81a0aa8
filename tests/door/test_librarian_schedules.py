"""A job's schedule moved by a fact that does not name the old one: "the digest now goes out at 09:10"
after "send the digest every weekday at 08:00". The schedules a fact states are read first (times of
day, intervals, cron lines); then pairs of facts, per phrasing, that must or must not supersede; then
one pair through a real door. Every project, name and value is invented.
"""

from __future__ import annotations

from typing import Any

import pytest

from bli_memory.door.librarian import Neighbour, decide, extract_facts, restated
from bli_memory.door.librarian.schedules import reschedule, rescheduled, schedules
from tests.door.helpers import saved_with_extract
from tests.helpers import DoorProcess


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The digest goes out at 08:00 UTC.", [("time", 480, "08:00")]),
        ("Backups run at 3am, before the 7:45 pm report.", [("time", 180, "3am"), ("time", 1185, "7:45 pm")]),
        (
            '`schedule="15 1 * * 1-5"` (01:15 on weekdays)',
            [("time", 75, "15 1 * * 1-5"), ("time", 75, "01:15")],
        ),
        ("The poller runs every 10 minutes.", [("interval", 600, "10 minutes")]),
        ("`rate(2 hours)` on the EventBridge rule", [("interval", 7200, "2 hours")]),
        ("cron `*/20 * * * *` sweeps the outbox", [("interval", 1200, "*/20 * * * *")]),
    ],
)
def test_the_schedules_a_fact_states(text: str, expected: list[tuple[str, int, str]]) -> None:
    assert [(s.kind, s.value, s.text) for s in schedules(text)] == expected


@pytest.mark.parametrize(
    "text",
    [
        "The run `scheduled__2026-03-02T02:30:00+00:00` failed on its second try.",  # a timestamp
        "Ratio 16:9 screens and the 1.07:30 build tag.",
        "Retry after 5 attempts, 3 per invoice.",
    ],
)
def test_a_timestamp_a_ratio_or_a_count_is_no_schedule(text: str) -> None:
    assert schedules(text) == []


Pairs = list[tuple[str, str]]

#: the new fact moves the old fact's job to another time or interval, without naming the old one.
MOVED: Pairs = [
    (
        "Product decided: email the digest every weekday at 08:00 Europe/Paris, only to active workspaces.",
        "The digest job moved to 09:10 Paris time so it lands after the morning standups.",
    ),
    (
        "Summary: `ledger-sweeper` settles pending transfers on a `rate(30 minutes)` schedule; failures page #payments.",
        "The sweeper now runs every 10 min, finance wants fresher balances.",
    ),
    (
        "The warehouse refresh is `0 3 * * *` (03:00 UTC), after the partner files land.",
        "Warehouse refresh has to run at 05:30 UTC from now on.",
    ),
    (
        "Thumbnails are regenerated every 6 hours by the `thumbs` worker.",
        "Thumbnails are rebuilt every 2 hours now; the worker count stays at 4.",
    ),
    (
        "Crontab on the app host: `# harbour-stats nightly import, 01:20 server time`.",
        "The nightly job starts at 03:45 now, the tide provider publishes its files later.",
    ),  # the words after the comma say why, not which job
]

#: the new fact states a schedule, but not as the old fact's job's new one.
BESIDE: Pairs = [
    (
        "The nightly backup of the orders database runs at 02:00.",
        "The invoice report email now goes out at 07:00.",
    ),  # another job: no word of the subject shared
    (
        "The digest goes out every weekday at 08:00.",
        "The digest lists every workspace created since 08:00 of the day before.",
    ),  # no change said
    (
        "The sync runs at 01:00 and at 13:00.",
        "The sync now also runs at 04:00 on weekends.",
    ),  # two old times, and one more added
    (
        "Cache entries expire after 300 seconds; the purge job runs every 15 minutes.",
        "The purge job now logs how many entries it removed.",
    ),  # no new schedule
    (
        "The nightly backup of the orders database runs at 02:00.",
        "The reminder job, which mails skippers, moves to 17:00 now.",
    ),  # the schedule after a comma belongs to the job named before it
]


def _cases(pairs: Pairs) -> list[Any]:
    return [pytest.param(old, new, id=str(index)) for index, (old, new) in enumerate(pairs, 1)]


@pytest.mark.parametrize(("old", "new"), _cases(MOVED))
def test_a_schedule_moved_supersedes_the_old_one(old: str, new: str) -> None:
    decision = decide(new, [Neighbour("old", old, 0.5)])
    assert (decision.action, decision.target_id) == ("update", "old"), decision.reason
    assert rescheduled(new, old) is not None


@pytest.mark.parametrize(("old", "new"), _cases(BESIDE))
def test_a_schedule_beside_the_old_one_does_not_supersede_it(old: str, new: str) -> None:
    assert rescheduled(new, old) is None
    assert decide(new, [Neighbour("old", old, 0.5)]).action != "update"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "Product decided: email the digest every weekday at 08:00 Europe/Paris, only to 3+ day old workspaces.",
            "The digest job moved to 09:10 Paris time.",
            "Product decided: email the digest every weekday at 09:10 Europe/Paris, only to 3+ day old workspaces.",
        ),
        (
            "The warehouse refresh is `0 3 * * *` (03:00 UTC), after the partner files land in `s3://drop`.",
            "Warehouse refresh has to run at 05:30 UTC from now on.",
            "The warehouse refresh is `30 5 * * *` (05:30 UTC), after the partner files land in `s3://drop`.",
        ),
        (
            "Summary: `ledger-sweeper` settles pending transfers on a `rate(30 minutes)` schedule.",
            "The sweeper now runs every 10 min.",
            "Summary: `ledger-sweeper` settles pending transfers on a `rate(10 minutes)` schedule.",
        ),
    ],
)
def test_the_old_fact_keeps_the_rest_with_each_mention_written_in_its_own_form(
    old: str, new: str, expected: str
) -> None:
    assert reschedule(old, new) == expected
    decision = decide(new, [Neighbour("old", old, 0.5)])
    assert decision.rewrite == expected


def test_a_moved_interval_is_restated_only_in_facts_about_the_same_job() -> None:
    source = "The sweeper now runs every 10 min, finance wants fresher balances."
    same_job = "Summary: `ledger-sweeper` settles transfers every 30 minutes; failures page #payments."
    other_job = "Summary: the thumbnail worker polls every 30 minutes."
    assert restated(same_job, "30 minutes", "10 min", source) == same_job.replace("30 minutes", "10 minutes")
    assert restated(other_job, "30 minutes", "10 min", source) is None


def test_a_moved_time_of_day_is_carried_like_any_specific_value() -> None:
    """A time of day names one moment of a space's schedules: a summary that restates the old one
    without the job's own words is brought up to date too."""
    source = "Summary: the runbook shows the 05:00 UTC start."
    stale = "Prod job `nightly_prod`, 01:30 UTC daily, steps `dbt source freshness` then `dbt build`."
    assert restated(stale, "01:30", "05:00", source) == stale.replace("01:30", "05:00")


def test_a_count_is_not_the_old_value_of_a_version_after_a_shared_word() -> None:
    """A bug fixed: "invoices render with … `^1.5`" wrote "invoices 1.5+ days past due" over "7+"."""
    old = "Reminders go to invoices 7+ days past due, at most 3 per invoice."
    new = "Summary: invoices render with `pdf-kit` (`^1.5`) now."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert decision.action != "update" or "1.5+" not in (decision.rewrite or ""), decision


def test_a_version_still_replaces_a_bare_major_after_the_same_word() -> None:
    decision = decide(
        "The CI image is on Node 20.11 now.", [Neighbour("old", "The CI image runs Node 18.", 0.7)]
    )
    assert (decision.action, decision.values) == ("update", ("18", "20.11")), decision


def test_through_the_door_the_old_time_leaves_the_current_facts(door_onnx: DoorProcess, tag: str) -> None:
    first = (
        "User: we need the weekly usage digest. Product decided: send it every Monday at 08:00 "
        "Europe/Paris, only to workspaces with 3+ active members.\n\nAssistant: Added `DigestMailer` "
        "and scheduled it in `config/schedule.rb`; it skips workspaces below the member threshold."
    )
    second = (
        "User: small change from product: the digest job moved to 09:10 Paris time, people read it after "
        "standup.\n\nAssistant: Updated `config/schedule.rb`; the next run is Monday."
    )
    saved_with_extract(door_onnx, tag, first)
    status, body = door_onnx.post("/api/memory/search", {"q": "when is the digest sent", "containerTag": tag})
    assert status == 200, body
    assert any("08:00" in row["content"] for row in body["results"] if row.get("kind") == "memory")
    after = saved_with_extract(door_onnx, tag, second)
    assert after["outcome"]["updated"] >= 1, after
    status, body = door_onnx.post(
        "/api/memory/search", {"q": "when is the digest sent", "containerTag": tag, "limit": 20}
    )
    assert status == 200, body
    current = [row["content"] for row in body["results"] if row.get("kind") == "memory"]
    assert current and not any("08:00" in content for content in current), current
    assert any("09:10" in content for content in current), current


def test_a_schedule_said_to_hold_now_is_a_fact_of_its_own() -> None:
    """A time of day is an extraction signal: "overnight run is 04:30 UTC now" was dropped, as
    saying nothing durable."""
    facts = extract_facts(
        "User: feed slipped to ~03:10 UTC. overnight run is 04:00 UTC now. upd the dag\n\n"
        "Assistant: Updated `dags/nightly.py`."
    )
    assert "Overnight run is 04:00 UTC now." in facts, facts


def test_a_schedule_moved_with_no_job_named_moves_the_space_s_one_at_that_schedule() -> None:
    old = "Summary: DAG `meter_rollup` runs daily at `0 2 * * *` UTC on `emr-prod`, 40 executors."
    decision = decide("Overnight run is 04:30 UTC now.", [Neighbour("old", old, 0.5)])
    assert decision.rewrite == old.replace("0 2 * * *", "30 4 * * *"), decision


def test_the_job_a_schedule_belongs_to_is_named_in_the_schedule_s_own_clause() -> None:
    """ "No `timezone:` option is set: the job now runs at 01:40 UTC" moves the space's job at 03:15;
    the option named in the first clause is not the job's name."""
    new = "No `timezone:` option is set, so the cron runs in UTC: the job now runs at 01:40 UTC."
    decision = decide(new, [Neighbour("old", "The rebuild still fires at 03:15 UTC.", 0.5)])
    assert (decision.action, decision.values) == ("update", ("03:15", "01:40")), decision
    other = "Nightly backups of `orders-db` run at 03:15 UTC; the report mail goes at 07:00."
    assert rescheduled("The report mail goes at 08:00 now: finance asked.", other) is None  # two times

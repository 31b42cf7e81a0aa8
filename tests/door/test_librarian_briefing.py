"""The briefing's rules (`door/librarian/lasting.py`): who owns what, rules, version pins and decisions
by their shape rank high; a newer fact hides an older one it restates, changes or re-versions; a
leading question is dropped. Each rule pinned by examples of our own."""

from __future__ import annotations

import pytest

from bli_memory.door.librarian.lasting import (
    DECISION_SCORE,
    DURABLE_VERB_SCORE,
    STANDING_ORDER_SCORE,
    briefing_text,
    changes,
    lasting_score,
    newer_version,
    same_fact,
)


@pytest.mark.parametrize(
    ("fact", "score"),
    [
        ("The billing service and its alerts are owned by Priya Raman (payments team).", DECISION_SCORE),
        ("Schema changes need approval from Tomás Ortega on the PR.", DECISION_SCORE),
        ("On ownership, `docs/OWNERS.md`: the importer belongs to Wen Li.", DECISION_SCORE),
        ("`docs/vendors.md`: the Stripe account owner is now Ada Park.", DECISION_SCORE),
        ("Plan is Temporal: workflows live next to the services that start them.", DECISION_SCORE),
        ("Moving the event store from MongoDB to Postgres, we need joins.", DECISION_SCORE),
        ("Controllers never call the ORM directly.", STANDING_ORDER_SCORE),
        ("Every endpoint needs an OpenAPI example.", STANDING_ORDER_SCORE),
        ("Migrations always concurrently.", STANDING_ORDER_SCORE),
        ("The service is pinned to Node 20.12 in `.nvmrc`.", STANDING_ORDER_SCORE),
        ("We need the bugfix release, go to Kafka 3.7.1.", STANDING_ORDER_SCORE),
        ("The p99 dropped to 3.5 ms after the change.", DURABLE_VERB_SCORE),
        ("`tsconfig.json`: the `strict` flag now applies to every package.", DURABLE_VERB_SCORE),
        ("`tsconfig.json`: removed the `paths` block.", 0),
        ("Root cause: the cron ran in the host's zone, not UTC.", 0),
        ("Fix: the job now reads `TZ` from the environment.", 0),
        ("Full run: 412 examples, 0 failures.", None),
        ("Monthly totals are always recomputed from the ledger.", STANDING_ORDER_SCORE),
        ("The slowest query was always the report export.", DURABLE_VERB_SCORE),
    ],
)
def test_ownership_rules_pins_and_decisions_rank_above_how_things_are(fact: str, score: int | None) -> None:
    assert lasting_score(fact) == score


@pytest.mark.parametrize(
    ("fact", "shown"),
    [
        (
            "Which queue do we use for mail? The mailer runs on the `mail` queue in Sidekiq.",
            "The mailer runs on the `mail` queue in Sidekiq.",
        ),
        ("Why did builds slow down?? Because the cache key changed.", "Because the cache key changed."),
        ("Builds run on the `large` runner.", "Builds run on the `large` runner."),
        ("What is the retry limit?", "What is the retry limit?"),
    ],
)
def test_the_briefing_states_the_answer_without_the_question_before_it(fact: str, shown: str) -> None:
    assert briefing_text(fact) == shown


def test_a_newer_wording_of_the_same_fact_hides_the_older() -> None:
    older = "Who to ask: the AWS account, VPCs and IAM roles are owned by Jon Berg (platform); ping #infra."
    newer = "Ownership: the AWS account, VPCs and IAM roles are owned by Mei Chen (platform)."
    assert same_fact(newer, older)
    assert not same_fact("The AWS account bills to cost centre 41.", older)


def test_a_stated_change_hides_what_it_changes_and_only_that() -> None:
    older = "The reports job runs on the `shared-m` warehouse, which the BI extracts also use."
    newer = "Reports now run on the `reports-l` warehouse, not shared with BI anymore."
    assert changes(newer, older)
    assert not changes("Reports run on the `reports-l` warehouse.", older)  # states no change
    assert not changes("The login page now runs on Next.js.", older)  # another subject


@pytest.mark.parametrize(
    ("older", "newer", "hidden"),
    [
        (
            "`versions.tf` pins Terraform `1.7.5`.",
            "We need the new provider API, go to Terraform 1.8.2.",
            True,
        ),
        ("The minimum Android version is 8.1.", "We're raising the minimum Android version to 10.0.", True),
        ("`.tool-versions` sets Erlang 26.2.", "Erlang 26.2.0 stays; Elixir moves on.", False),  # same
        (
            '`package.json`: `"packageManager": "pnpm@9.1.4"`.',
            "`package.json` `engines.node`: `>=20.12`.",
            False,
        ),
        ("Redis 7.2 backs the session store.", "The API gateway is Kong 3.6.", False),  # no shared name
    ],
)
def test_another_version_of_the_same_thing_hides_the_older_pin(older: str, newer: str, hidden: bool) -> None:
    assert newer_version(newer, older) is hidden


def test_numbered_siblings_are_two_facts_not_one_said_twice() -> None:
    assert not same_fact("Session note 4: touched module m4.", "Session note 3: touched module m3.")
    assert same_fact(
        "Builds run on the `large` runner pool of team one.", "Builds run on the `large` runner pool."
    )


@pytest.mark.parametrize(
    "fact",
    [
        '`playwright.config.ts` now uses `baseURL: process.env.E2E_BASE_URL ?? "https://stg.example.dev"`.',
        "`lib/pick.ts` returns `ok ? Left(a) : Right(b)` for every caller.",
    ],
)
def test_a_question_mark_inside_a_code_span_ends_no_leading_question(fact: str) -> None:
    """`a ?? b` read as "a question, then its answer" left the briefing a line of `"https://…"`.`."""
    assert briefing_text(fact) == fact


def test_a_leading_question_before_its_answer_is_still_dropped() -> None:
    assert (
        briefing_text("Which SDK do we require? The pin lives in `west.yml`.")
        == "The pin lives in `west.yml`."
    )

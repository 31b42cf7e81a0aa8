"""What lasts (`door/librarian/lasting.py`): the profile's ranking of facts and the extraction contract."""

from __future__ import annotations

import pytest

from bli_memory.door.librarian.lasting import (
    DECISION_SCORE,
    DURABLE_VERB_SCORE,
    STANDING_ORDER_SCORE,
    breaks_contract,
    lasting_score,
)


@pytest.mark.parametrize(
    "fact",
    [
        "14m Warning OOMKilling node/ip-10-42-12-14.ec2.internal Memory cgroup out of memory",
        "With 2.7.4 all 612 tests pass.",
        '`README.md` line 31, the "Environments" table.',
        "Test_refund_webhook keeps failing on CI but never locally?",
        "2024-05-14 02:30:01 ERROR settlement job timed out",
        "`pytest tests/scheduling -q`: 6 passed.",
        "`.nvmrc`: `20.12.2`.",
        "Only arizona.",  # two words: no subject, nothing said of it
        "Default ns platform-system.",  # no verb, no setting: a note, not a statement
        "`Dockerfile`, base image `node:20-alpine` (line 1).",  # an image's name is not a setting
        "Files touched: `cmd/ferry/serve.go`, `internal/server/server.go`.",  # what a change touched
    ],
)
def test_log_lines_test_counts_questions_and_fragments_never_enter_the_profile(fact: str) -> None:
    assert lasting_score(fact) is None


@pytest.mark.parametrize(
    ("fact", "score"),
    [
        ("We decided to stop using Celery beat; the schedule moves into the worker.", DECISION_SCORE),
        ("From now on pnpm only.", DECISION_SCORE),
        ("I prefer named exports everywhere.", DECISION_SCORE),
        # a first-person preference for a thing, and who decides a thing, with no verb the lists know
        ("For the bundle I want esbuild with the svg plugin, and strict TypeScript.", DECISION_SCORE),
        ("Please keep the cache in memory, I don't want another service.", DECISION_SCORE),
        ("The alert thresholds per region decides Mara Ilic from operations, not us.", DECISION_SCORE),
        ("I want you to fix the login page.", 0),  # a task, not a preference
        ("I want the login page to show an error.", 0),
        ("Don't edit `src/lib/api/generated/` by hand: every run overwrites it.", STANDING_ORDER_SCORE),
        ("CI runs with `.env.ci`, which sets `STRIPE_WEBHOOK_TOLERANCE=5`.", DURABLE_VERB_SCORE),
        (
            "`payments/celery_app.py`: `worker_max_tasks_per_child=200`, so each child restarts after 200 tasks.",
            0,
        ),
        ("`docker-compose.yml`: removed the `beat` service.", 0),
        ("Ran 1,000 receipt tasks locally under `memray run`.", 0),
        ("Test_refund_webhook keeps failing on CI but never locally.", 0),
        ("The top growth was always under `weasyprint/text/fonts.py`.", DURABLE_VERB_SCORE),
        ("Opened #413 proposing a `tracer config path` subcommand.", 0),
        ("Turned on the ESLint rule `import/no-default-export` in `.eslintrc.cjs`.", 0),
        ("The Helm change goes out with the next deploy; expect one more restart tonight.", 0),
        # an order, then why it is given: the first person of the reason is no account of the session
        ("Pls stop adding force unwraps in new code, I see `!` all over your last PR.", STANDING_ORDER_SCORE),
        ("Stop committing `.env` files, I had to rotate the keys twice.", STANDING_ORDER_SCORE),
        # a file's settings listed after its name: how the file is configured, though no verb says so
        ("`prj_release.conf`: `CONFIG_SERIAL=n`, `CONFIG_LOG=n`, `CONFIG_ASSERT=n`.", DURABLE_VERB_SCORE),
        ("`.env.ci`: `DEBUG=0`, `LOG_LEVEL=warn`.", DURABLE_VERB_SCORE),
        # a setting given its value anywhere, or a YAML key and its items: how something is configured
        (
            "`MACOSX_DEPLOYMENT_TARGET = 13.0` in `App.xcodeproj/project.pbxproj` (Debug and Release).",
            DURABLE_VERB_SCORE,
        ),
        (
            "`roles/dns/defaults/main.yml`: `resolvers:`, then `- 10.0.0.53`, then `- 10.0.1.53`.",
            DURABLE_VERB_SCORE,
        ),
        # a file described by the edit that made it, after a dash as after a colon, is a changelog line
        ("`src/jobs/purge.ts` (new) — selects rows older than 30 days and deletes them in batches.", 0),
        ("`PhotoGrid.swift` — the picker and the camera both call `MediaStore.save(_:)`.", 0),
        # who is paged for what, who owns or administers what, is ownership
        ("Aiko Tanaka is primary for the billing escalation policy.", DECISION_SCORE),
        ("Lena Brandt owns the payments backend, so API questions go to her.", DECISION_SCORE),
        ("The Play Console account is administered by Ravi Menon.", DECISION_SCORE),
        ("Ravi is the on-call engineer for ingest this quarter.", DECISION_SCORE),
        # "actually" inside a sentence stresses it; only at the start does it correct (a decision)
        ("The retries were real: a third of those sends had actually been delivered.", DURABLE_VERB_SCORE),
        ("Actually, the broker is RabbitMQ.", DECISION_SCORE),
    ],
)
def test_decisions_outrank_standing_orders_outrank_how_things_are_outrank_reports(
    fact: str, score: int
) -> None:
    assert lasting_score(fact) == score


@pytest.mark.parametrize(
    ("fact", "reason"),
    [
        ("What caused the refund webhook failure?", "question"),
        ("I pinned `pydantic==2.7.4` in `requirements.in`.", "first person"),
        ("Thanks, that fixed it.", "greeting or filler"),
        ("`pytest -q`: 30 passed in 4.87s.", "test run"),
        ("It reads the file on every start.", "leans on context"),
        ("[ERROR] connection refused", "log line"),
    ],
)
def test_breaks_contract_names_the_broken_rule(fact: str, reason: str) -> None:
    assert breaks_contract(fact) == reason


def test_a_fact_that_keeps_the_contract_passes_byte_for_byte_code_included() -> None:
    assert breaks_contract("`pydantic==2.7.4` is pinned in `requirements.in` until PAY-498 lands.") is None


@pytest.mark.parametrize(
    ("fact", "score"),
    [
        ("The bucket policy allows public reads of `assets/`.", DURABLE_VERB_SCORE),
        ("The retry policy backs off exponentially up to 30 s.", DURABLE_VERB_SCORE),
        ("Our policy is squash merges only.", DECISION_SCORE),
        ("Team policy: every PR needs two approvals.", DECISION_SCORE),
    ],
)
def test_a_policy_is_a_decision_only_when_it_is_the_team_s(fact: str, score: int) -> None:
    assert lasting_score(fact) == score


@pytest.mark.parametrize(
    "fact",
    [
        "The migration was applied to staging and verified.",
        "The plan was applied with `terraform apply` and the outputs were checked.",
        "Then applied the plan in `envs/prod`.",
        "Also bumped `serde` to 1.0.200.",
    ],
)
def test_a_past_event_of_the_session_ranks_last_in_the_profile(fact: str) -> None:
    assert lasting_score(fact) == 0


@pytest.mark.parametrize(
    "fact",
    [
        "Added a download cap to the fetcher: `--max-feed-bytes`, default 64 MiB.",
        "Raised the pool for the batch workers, set to 20 connections.",
        "Introduced request bodies capped at 25 MB for the upload endpoint.",
    ],
)
def test_a_report_that_leaves_a_default_or_a_limit_in_place_says_how_things_are(fact: str) -> None:
    assert lasting_score(fact) == DURABLE_VERB_SCORE


def test_a_report_bound_to_the_moment_stays_the_moment_s_whatever_value_it_sets() -> None:
    assert lasting_score("Bumped the timeout tonight, default 30 s until the next deploy.") == 0


@pytest.mark.parametrize(
    ("fact", "score"),
    [
        # a base verb after a plural subject is a verb: the fact is a statement, not a fragment
        (
            "Summary: colours come only from `src/theme/tokens.ts`; hex literals elsewhere fail lint.",
            DURABLE_VERB_SCORE,
        ),
        # a list of pins names what is in force, though it holds no verb
        ("Kotlin 1.9.24, Spring Boot 3.2.5.", DURABLE_VERB_SCORE),
        # "for now" hedges a pin or a rule; it does not make it a moment's report
        ("We stay on Quarkus 3.8.4 for now, do not bump the platform BOM.", STANDING_ORDER_SCORE),
        # a verb known by its place, in no word list: after "we", after "now" after a noun, before "the"
        ("The humidity sensor we poll on bus I2C1 at address 0x44.", DURABLE_VERB_SCORE),
        ("Field units now sample the line every 30 seconds.", DURABLE_VERB_SCORE),
        ("Package the release bundle with `mix release gateway`.", DURABLE_VERB_SCORE),
        # one setting given its value, in a file or in prose, states how something is configured
        ("`deploy/canary.yml`: `weight: 10`.", DURABLE_VERB_SCORE),
        ("Queue grp = billing.events, partitions 12, retention 7d.", DURABLE_VERB_SCORE),
        # a value named by a label and a colon: how a thing is configured or done
        ("Push container: `iCloud.com.example.tides`.", DURABLE_VERB_SCORE),
        ("Topic: `orders.placed.v3`; consumer group `order-mailer`.", DURABLE_VERB_SCORE),
    ],
)
def test_verbless_pins_settings_and_hedged_rules_enter_the_profile(fact: str, score: int) -> None:
    assert lasting_score(fact) == score


@pytest.mark.parametrize(
    "fact",
    [
        "The staging deploy is paused for now.",  # how things are at the moment, no rule nor pin
        "The e2e suite runs nightly for now, until the flaky upload test is fixed.",
    ],
)
def test_for_now_outside_a_rule_or_a_pin_is_the_moment_s(fact: str) -> None:
    assert lasting_score(fact) == 0


@pytest.mark.parametrize(
    "fact",
    [
        "Set up the convention and applied it to the three endpoints.",
        "I've just left the planning meeting and we have made a decision I'd like you to carry out.",
        "Made a decision on the cache and wired it in.",
    ],
)
def test_a_decision_named_only_by_its_noun_in_a_report_is_no_decision(fact: str) -> None:
    assert lasting_score(fact) == 0


@pytest.mark.parametrize(
    "fact",
    [
        # the decision named by its noun, then stated after a colon
        "I'd like to set a convention for logging from now on, if that's fine: every service logs JSON to stdout.",
        # what the one who asks wants only one way, or never another
        "I want releases only from tags on main, never from a branch.",
        "We would like migrations to always run before the new pods start.",
    ],
)
def test_a_decision_stated_in_the_first_person_is_a_decision(fact: str) -> None:
    assert lasting_score(fact) == DECISION_SCORE


def test_a_wish_without_a_rule_is_a_request_not_a_decision() -> None:
    assert lasting_score("I want a button that exports the table.") == 0


@pytest.mark.parametrize(
    "fact",
    [
        "I would be grateful if we could stick to uv for every Python task.",
        "We'd rather keep the monolith until the summer.",
        "Please make it a standing rule: amounts are stored in cents.",
        "The convention is that every tenant gets its own namespace.",
    ],
)
def test_a_preference_or_a_rule_said_in_the_first_person_is_a_decision(fact: str) -> None:
    assert lasting_score(fact) == DECISION_SCORE


@pytest.mark.parametrize(
    ("fact", "score"),
    [
        # the speaker is in a clause hanging on the statement, or in an aside: the statement is the team's
        (
            "Dr Fiona Achterberg will take over as owner of the Connect app while I am on sabbatical.",
            DECISION_SCORE,
        ),
        ("Daniel Cho (my manager) says checkpoints are selected by mIoU on the holdout.", DURABLE_VERB_SCORE),
        ("The upload cap is 25 MB, so I set the limit in the endpoint metadata.", DURABLE_VERB_SCORE),
        # the speaker in the main clause: a report of what they did
        ("I moved the upload cap to the endpoint metadata while the tests ran.", 0),
        ("Tomasz and I have Cantaloupe running on Render.", 0),
    ],
)
def test_who_speaks_in_an_aside_or_a_hanging_clause_does_not_make_it_a_report(fact: str, score: int) -> None:
    assert lasting_score(fact) == score


@pytest.mark.parametrize(
    "fact",
    [
        "Plus: `create index(:bookings, [:starts_at])`.",  # a report's label opens no setting
        "Stack on linux: `#0 reader::read_header (offset=-2147480712)`.",
        "Verified from the runner: `ansible all -m ping -o`.",
    ],
)
def test_a_report_s_label_before_a_code_span_is_no_setting(fact: str) -> None:
    assert not lasting_score(fact)


@pytest.mark.parametrize(
    ("fact", "score"),
    [
        # a report that writes a rule down: the rule lasts, the act does not
        (
            "I'd set a rule for the whole repo: money is always integer cents, never floats.",
            STANDING_ORDER_SCORE,
        ),
        ("Wrote it down in `docs/style.md`: colours always come from `tokens.ts`.", STANDING_ORDER_SCORE),
        # what follows the colon tells of the fix just made, or states nothing that lasts
        ("Fixed the flaky test: it never waits for the socket now.", 0),
        ("Updated `README.md`: the install section is shorter.", 0),
    ],
)
def test_a_report_introducing_a_rule_after_its_colon_lasts_as_the_rule(fact: str, score: int) -> None:
    assert lasting_score(fact) == score

"""A correction supersedes the old fact however it is phrased, and a contrast that retires nothing
leaves the old fact alone. The shapes are data (`RETIRING_SHAPES`, each with its example); these
tests iterate them, then pin each shape with examples of their own, then follow a correction
through a real door.
"""

from __future__ import annotations

import pytest

from bli_memory.door.librarian import Neighbour, decide
from bli_memory.door.librarian.retiring import RETIRING_SHAPES, RetiringShape, retired_terms
from tests.door.helpers import saved_with_extract
from tests.helpers import DoorProcess

# --- the shapes, as data ------------------------------------------------------------------------


@pytest.mark.parametrize("shape", RETIRING_SHAPES, ids=[shape.name for shape in RETIRING_SHAPES])
def test_each_shape_retires_what_its_example_names(shape: RetiringShape) -> None:
    assert shape.pattern.search(shape.example), shape.example
    assert shape.retires in [old for old, _new in retired_terms(shape.example)]


def test_every_shape_has_an_example_that_no_other_shape_needs() -> None:
    names = [shape.name for shape in RETIRING_SHAPES]
    assert len(names) == len(set(names))
    assert all(shape.example and shape.retires for shape in RETIRING_SHAPES)


# --- reconciliation: the old fact is superseded ---------------------------------------------------

BROKER = "Celery's broker is Redis, at `redis://cache:6379/0`."

SUPERSEDED = [
    ("moved from old to new", "We moved the broker from Redis to RabbitMQ.", BROKER),
    (
        "new, not old (a URL)",
        "The broker URL is amqp://mq.internal:5672 now, not redis://cache:6379/0.",
        BROKER,
    ),
    ("switched old for new", "We switched the broker for good: swapped Redis for RabbitMQ.", BROKER),
    (
        "renamed old to new",
        "We renamed `billing-svc` to `ledger-svc`.",
        "Deploy `billing-svc` with `make deploy`.",
    ),
    (
        "old is gone, use new",
        "Jenkins is gone, use the workflow in `.github/workflows/deploy.yml`.",
        "Production deploys run on Jenkins, job `deploy-prod`.",
    ),
    (
        "no longer uses old",
        "We no longer use Memcached; sessions live in Postgres.",
        "Sessions are cached in Memcached for 30 minutes.",
    ),
    (
        "new instead of old, said to hold now",
        "Deploys now go through ArgoCD instead of Jenkins.",
        "Deploys go through Jenkins on every merge.",
    ),
    (
        "new instead of old, a specific name",
        "The nightly export writes to `s3://exports-v2` instead of `s3://exports`.",
        "The nightly export writes to `s3://exports` at 03:00.",
    ),
    (
        "not old but new",
        "Pull requests target not `master` but `main`.",
        "Open pull requests against `master`.",
    ),
    (
        "old ported to new",
        "`shaders/`: all 34 `.glsl` files ported to `.hlsl`.",
        "The SDK provides `glslc`, which compiles `shaders/*.glsl` to SPIR-V at build time.",
    ),
    (
        "the same thing owned by another person, no word saying it changed",
        "Ownership: the Snowflake account, warehouses and roles are owned by Lars Eriksen (data platform).",
        "The Snowflake account, warehouses and roles are owned by Noor Haddad; resizes go in #snowflake-admin.",
    ),
    (
        "the same thing's owner named in another wording, no word saying it changed",
        "`CODEOWNERS` names @kfischer (Katrin Fischer) as the payments gateway owner.",
        "Tomas Berg owns the payments gateway and its webhooks; ask him before changing retries.",
    ),
    (
        "a new address on another site for the same thing, named just before it",
        "Small change for the dashboard: the charts we host now ourselves, from https://charts.acme-ops.net/v4/ .",
        "For the dashboard we embed hosted charts from the vendor: https://embed.chartvendor.com/acme/v3/ .",
    ),
    (
        "a registry with a path moved, the rest of the old fact kept",
        "Summary: images now come from `europe-west4-docker.pkg.dev/acme-prod/services`.",
        "Decisions: region europe-west4, state in gs://acme-state, and container images come from gcr.io/acme-prod.",
    ),
    (
        "moved off old, then where it runs now",
        "The build runner is off ci-old-01 and now runs on ci-box-7.",
        "The build runner lives on ci-old-01 under the desk.",
    ),
    (
        "off a versioned name",
        "We're finally off Node 18, every service runs Node 20.",
        "The API runs Node 18 in production.",
    ),
    (
        "migrated from an address",
        "We migrated the docs from docs.example.dev to handbook.example.dev.",
        "The team docs live at docs.example.dev.",
    ),
    (
        "switched off",
        "The old wiki server wiki-01.corp.example is switched off, the new one is wiki-03.corp.example.",
        "Runbooks are on the wiki at wiki-01.corp.example under Operations.",
    ),
    (
        "a thing gone, the environment variable named for it",
        "Sendwell is gone, the ops team moved us to Parcelpost for all outgoing mail.",
        "Set the key yourself: `kubectl create secret generic mail --from-literal=SENDWELL_API_KEY=...`.",
    ),
]


@pytest.mark.parametrize(
    ("fact", "old"), [(f, o) for _n, f, o in SUPERSEDED], ids=[n for n, *_r in SUPERSEDED]
)
def test_a_correction_supersedes_the_fact_that_states_the_old_thing(fact: str, old: str) -> None:
    decision = decide(fact, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.target_id) == ("update", "old"), decision.reason


@pytest.mark.parametrize(
    "fact",
    [
        "IT moved the database off pg-old-01.corp.example last weekend, it's pgdb-02.corp.example now.",
        "The old wiki server wiki-01.corp.example is switched off, the new one is wiki-03.corp.example.",
    ],
)
def test_a_host_retired_without_to_hands_its_facts_the_other_host_the_correction_names(fact: str) -> None:
    old_host = "pg-old-01.corp.example" if "pg-old" in fact else "wiki-01.corp.example"
    new_host = "pgdb-02.corp.example" if "pg-old" in fact else "wiki-03.corp.example"
    old = f"The nightly export connects to {old_host} with the reporting role."
    decision = decide(fact, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.target_id) == ("update", "old"), decision.reason
    assert decision.values == (old_host, new_host)  # the space's other facts naming it get the new one


# --- reconciliation: a contrast that retires nothing is added beside ------------------------------

KEPT = [
    (
        "the old thing still serves another subject",
        "We moved the broker from Redis to RabbitMQ.",
        "Sessions are cached in Redis for 30 minutes.",
    ),
    (
        "the old URL is not the one stored",
        "The broker URL is amqp://mq.internal:5672 now, not redis://cache:6379/0.",
        "Sessions are cached in Redis for 30 minutes.",
    ),
    ("a contrast with a plain word", "Tests run in CI, not locally.", "The tests pass locally."),
    (
        "instead of a name that stays",
        "Uploads go through the signed-URL endpoint instead of the API.",
        "The API accepts uploads of up to 10 MB per request.",
    ),
    (
        "off a name of two capitalised words, not its first word",
        "We moved off Container Registry to Artifact Registry.",
        "Decisions: region europe-west4, and container images are built by Cloud Build.",
    ),
    (
        "a state switched off, not a move",
        "Turned off the cache for the tests.",
        "The cache holds pages for 5 min.",
    ),
    (
        "the old fact already tells of the move",
        "We moved the broker from Redis to RabbitMQ.",
        "The broker moved from Redis to RabbitMQ in May.",
    ),
    (
        "another thing owned by another person",
        "The billing service is owned by Lars Eriksen.",
        "The search service is owned by Noor Haddad.",
    ),
    (
        "another thing's owner, in another wording",
        "Katrin Fischer is the search index owner.",
        "Tomas Berg owns the payments gateway and its webhooks.",
    ),
    (
        "a new address of another thing, the same verb before each",
        "Grafana now lives at https://grafana.ops.example.io.",
        "Prometheus lives at https://prom.metrics.example.net.",
    ),
    (
        "a call on an object is code, not an address",
        "The booking action now calls `supabase.rpc('book_slot')` and maps `slot_full` to a 409.",
        "The booking action checks `await locals.safeGetSession()` first.",
    ),
    (
        "a deployed address and this machine's are two places",
        "Correction: the reports API is at https://reports.stg.example.dev now.",
        "The reports API came up on http://localhost:8040/docs.",
    ),
    (
        "ported, a plain word",
        "The old tests were ported to pytest last year.",
        "The old tests use unittest.",
    ),
    (
        "a longer name that holds the old one",
        "We renamed `billing` to `ledger`.",
        "The `billing-reports` job runs at 04:00.",
    ),
]


@pytest.mark.parametrize(("fact", "old"), [(f, o) for _n, f, o in KEPT], ids=[n for n, *_r in KEPT])
def test_a_contrast_that_retires_nothing_the_old_fact_states_is_added(fact: str, old: str) -> None:
    decision = decide(fact, [Neighbour("old", old, 0.6)])
    assert decision.action != "update", decision.reason


def test_a_bare_negation_stays_a_conflict_for_a_person_to_settle() -> None:
    assert decide("We do not use Redis.", [Neighbour("old", "We use Redis.", 0.9)]).action == "conflict"


# --- through a real door ------------------------------------------------------------------------


def test_a_move_and_a_later_address_both_leave_the_old_broker_behind(
    door_onnx: DoorProcess, tag: str
) -> None:
    saved_with_extract(
        door_onnx,
        tag,
        "User: where does the worker get its jobs from?\n\nAssistant: The Celery broker is Redis: "
        "`CELERY_BROKER_URL` is `redis://cache:6379/0` in `config/celery.py`.",
    )
    moved = saved_with_extract(
        door_onnx,
        tag,
        "User: We moved the broker from Redis to RabbitMQ yesterday, keep that in mind.\n\nAssistant: Noted.",
    )
    assert moved["outcome"]["updated"] >= 1, moved
    status, body = door_onnx.post(
        "/api/memory/search", {"q": "which message broker does celery use", "containerTag": tag, "limit": 10}
    )
    assert status == 200, body
    current = [row["content"] for row in body["results"] if row.get("kind", "memory") == "memory"]
    assert any("RabbitMQ" in content for content in current), current
    assert not any("redis://" in content for content in current), current


# --- a setting given a new value, a role handed to another person ---------------------------------


@pytest.mark.parametrize(
    ("fact", "old", "action"),
    [
        (
            "`fly secrets set APP_HOST=app.example.org -a web-prod`: rolling restart.",
            "`fly secrets set APP_HOST=old.example.org -a web-prod`, which redeployed.",
            "update",
        ),
        (
            "`heroku config:set WORKERS=8 --app shop-api` is run.",
            "Ran `heroku config:set WORKERS=4 --app shop-api` last month.",
            "update",
        ),
        # another environment's file: another setting
        ("`.env.prod`: `DB_HOST=db-2.internal`.", "`.env.staging`: `DB_HOST=db-1.internal`.", "add"),
        # another app
        (
            "`fly secrets set APP_HOST=app.example.org -a web-prod`.",
            "`fly secrets set APP_HOST=old.example.org -a web-staging`.",
            "add",
        ),
    ],
)
def test_a_setting_given_a_new_value_in_the_same_place_supersedes_the_old_one(
    fact: str, old: str, action: str
) -> None:
    decision = decide(fact, [Neighbour("old", old, 0.6)])
    assert decision.action == action, decision.reason


@pytest.mark.parametrize(
    ("fact", "old", "action"),
    [
        (
            "`docs/vendors.md`: Stripe owner is now Ana Lima (finance ops).",
            "Per `docs/vendors.md`, the Stripe account is owned by Tom Reyes in finance.",
            "update",
        ),
        (
            "The payments service owner is now Ana Lima.",
            "The payments service is owned by Tom Reyes, with Kim Oh as backup.",
            "update",
        ),
        # another thing with the same common noun
        ("The payments service owner is now Ana Lima.", "The search service is owned by Tom Reyes.", "add"),
        # no role in the old fact
        ("The payments service owner is now Ana Lima.", "Tom Reyes wrote the payments service.", "add"),
        # the holder named by a first name left, and another person looks after it from now on
        (
            "Sad news: Tomas has left the company, and Mei Lin will look after the billing jobs from now on.",
            "Billing jobs run at 01:00 and their alerts go to Tomas (he owns billing).",
            "update",
        ),
        # a reviewing role handed over, the old fact saying who reviews
        (
            "Migration reviews are done by Nadia Petrova now, she has taken over the DBA role.",
            "Every migration script must be reviewed by Oskar Lind, our DBA, before it is merged.",
            "update",
        ),
        # a person who left a comment has left no role
        (
            "Tomas left a comment on the PR; the retry count is now 3.",
            "Billing jobs run at 01:00 and their alerts go to Tomas (he owns billing).",
            "add",
        ),
        # the former holder went to other work, the role passes "from this week"
        (
            "The push keys are with Lucía Ortega from this week, Kenji went to the Android side.",
            "`CONTRIBUTING.md`: added the rule and a note that Kenji Watanabe owns APNs keys.",
            "update",
        ),
        (
            "Ingrid has left the company last Friday, Tomasz Wróbel is owning the billing module from this week.",
            "Ask Ingrid Solberg about invoices, she is the owner of the billing module.",
            "update",
        ),
        # a role handed to a person named by a first name alone, "going forward"
        (
            "Ines owns the export workers going forward (queues + cron config).",
            "Marek owns the cron config, so keep every schedule in `config/cron.py`.",
            "update",
        ),
        # nobody is no person, and another thing of the same person is no handover
        ("Nobody owns the cron config now.", "Marek owns the cron config.", "add"),
        ("Ines owns the mail templates now.", "Marek owns the cron config.", "add"),
        # someone who went to lunch left no role, and nobody new holds it
        (
            "Kenji went to the canteen, the push keys are in the vault as before.",
            "`CONTRIBUTING.md`: added the rule and a note that Kenji Watanabe owns APNs keys.",
            "add",
        ),
    ],
)
def test_a_role_handed_to_another_person_supersedes_the_fact_naming_the_former_one(
    fact: str, old: str, action: str
) -> None:
    decision = decide(fact, [Neighbour("old", old, 0.6)])
    assert decision.action == action, decision.reason


def test_a_role_passed_on_by_a_first_name_keeps_the_old_fact_s_other_clauses() -> None:
    old = "The nightly job runs at 01:00, retries twice, and failure mails go to Tomas (he owns the finance area)."
    decision = decide(
        "Tomas has moved on from the company, and Mei Lin looks after finance from now on.",
        [Neighbour("old", old, 0.6)],
    )
    assert decision.action == "update", decision.reason
    assert decision.rewrite == old.replace("Tomas", "Mei Lin"), decision.rewrite


def test_a_version_beside_a_name_is_no_new_value_of_the_port_the_name_listens_on() -> None:
    # "Angular 18" names a release; "Angular on 4200" a port: the old fact must stay as it is
    old = "Local dev: the API on 3100, Angular on 4200, `/api` proxied from web to the API."
    decision = decide(
        "We standardise on Node 20.11.1 (needed for the Angular 18 upgrade).", [Neighbour("old", old, 0.6)]
    )
    assert decision.action == "add", decision.reason


@pytest.mark.parametrize(
    "old",
    [
        "`jobs/reminders.ts` selects bookings whose session starts between now + 24 hours and now + 25 hours.",
        "`book.ts` read the count and inserted in two requests; two submits 15 ms apart both got in.",
    ],
)
def test_numbers_that_count_different_things_are_no_old_and_new_value(old: str) -> None:
    """ "8 climbers" is no new value of "24 hours", nor "14 days" of "15 ms", though both facts talk
    of sessions: the word after each number says what it counts."""
    decision = decide(
        "Each session now takes up to 8 climbers, and reservations open two weeks (14 days) ahead.",
        [Neighbour("old", old, 0.6)],
    )
    assert decision.action == "add", decision.reason


# --- a subject said to hold another value now ----------------------------------------------------


@pytest.mark.parametrize(
    ("fact", "old", "action"),
    [
        ("The broker is now RabbitMQ.", BROKER, "update"),
        ("Celery's broker is now RabbitMQ at `amqp://mq:5672`.", BROKER, "update"),
        # a numbered name of the same subject: the new one replaces it
        (
            "The staging host is now `db-3.internal`.",
            "The staging host is `db-2.internal`, reachable over the VPN.",
            "update",
        ),
        # another subject with a numbered name of the same kind is a sibling, not the old value
        ("The production host is now `db-3.internal`.", "The staging host is `db-2.internal`.", "add"),
        ("The broker is now RabbitMQ.", "Sessions are cached in Redis.", "add"),
    ],
)
def test_a_subject_said_to_hold_another_value_now_supersedes_the_old_value(
    fact: str, old: str, action: str
) -> None:
    decision = decide(fact, [Neighbour("old", old, 0.6)])
    assert decision.action == action, decision.reason


@pytest.mark.parametrize(
    ("fact", "action"),
    [
        # the old host is only described, by a word of its first label, on the same parent domain
        ("Metrics are on mx-prod-3.corp-net instead of the old grafana box now.", "update"),
        ("Dashboards read mx-prod-3.corp-net rather than the former grafana server.", "update"),
        # a word the old host's label does not hold, or another parent domain, retires nothing
        ("Metrics are on mx-prod-3.corp-net instead of the old reporting box now.", "add"),
        ("Metrics are on mx-prod-3.other-net instead of the old grafana box now.", "add"),
    ],
)
def test_a_new_host_in_place_of_a_described_old_one_retires_the_host_the_words_name(
    fact: str, action: str
) -> None:
    old = "Grafana reads from mx-grafana.corp-net:3000, datasource `prometheus-main`."
    decision = decide(fact, [Neighbour("old", old, 0.5)])
    assert decision.action == action, decision.reason

"""A labelled set of correction pairs: an older fact, then a newer one that replaces it (it must
supersede the older), or a newer one that only sits beside it (it must not). Grouped by how the
correction is phrased; every project, name and value is invented. The pure reconciliation judges
each pair; a few are followed through a real door, saved as exchanges with extraction on.
"""

from __future__ import annotations

from typing import Any

import pytest

from bli_memory.door.librarian import Neighbour, decide
from tests.door.helpers import saved_with_extract
from tests.helpers import DoorProcess

#: (old fact, new fact) pairs, per phrase family.
Pairs = list[tuple[str, str]]

# --- pairs in which the new fact supersedes the old one ------------------------------------------

IS_NOW: Pairs = [
    (
        "The staging database host is `pg-stage-01.internal`.",
        "The staging database host is now `pg-stage-04.internal`.",
    ),
    ("The default branch of the monorepo is `master`.", "The default branch is now `trunk`."),
    ("Celery's result backend is Redis.", "Celery's result backend is now Postgres."),
    (
        "The API rate limit is 600 requests per minute per key.",
        "The rate limit is 1200 requests per minute per key now.",
    ),
    ("Loki keeps application logs for 14 days.", "Loki keeps application logs for 30 days now."),
]

RENAMED: Pairs = [
    (
        "The `orders-worker` deployment consumes the `orders` queue.",
        "We renamed the `orders-worker` deployment to `fulfilment-worker`.",
    ),
    (
        "Feature flags are read from the `FEATURE_FLAGS_URL` environment variable.",
        "`FEATURE_FLAGS_URL` was renamed to `FLAGS_ENDPOINT` in the config loader.",
    ),
    (
        "The CI job that builds the docs is called `docs-build`.",
        "The docs CI job is renamed to `site-build`.",
    ),
    (
        "The Python package is published as `acme-tools` on the internal index.",
        "We renamed the package from `acme-tools` to `acme-cli`.",
    ),
]

NOT_THE_OLD: Pairs = [
    ("The metrics endpoint listens on port 9100.", "Metrics are served on port 9464, not 9100."),
    (
        "Releases are cut from the `release/*` branches.",
        "Releases are cut from tags on `main`, not from the `release/*` branches.",
    ),
    (
        "Nightly backups go to the `s3://orbit-backups` bucket.",
        "The nightly backups land in `gs://orbit-backups-eu` now, not `s3://orbit-backups`.",
    ),
    (
        "The storefront frontend is bundled with Webpack.",
        "The storefront frontend is bundled with Vite, not Webpack.",
    ),
]

MOVED_FROM: Pairs = [
    (
        "Background jobs are queued in Sidekiq, backed by Redis.",
        "We migrated background jobs from Sidekiq to GoodJob.",
    ),
    ("The team wiki lives on Confluence.", "We moved the wiki from Confluence to Notion last sprint."),
    (
        "Container images are pushed to Docker Hub under `acme/`.",
        "Container images moved from Docker Hub to GHCR (`ghcr.io/acme`).",
    ),
    (
        "Terraform state is stored in the `tf-state-prod` S3 bucket.",
        "Terraform state was migrated to the Terraform Cloud workspace `acme-prod`.",
    ),
]

REPLACED: Pairs = [
    ("Python dependencies are managed with Poetry.", "We replaced Poetry with uv for dependency management."),
    ("Error tracking goes to Sentry.", "Sentry was replaced by Honeybadger for error tracking."),
    (
        "Transactional emails are sent through Mailgun's HTTP API.",
        "Mailgun has been replaced with Postmark for transactional emails.",
    ),
    (
        "The charting dependency is declared in `cmake/deps.cmake`: "
        "`find_package(Qt6 6.5 REQUIRED COMPONENTS Widgets Charts)`, linked into `dashboard`.",
        "`find_package(Qt6 6.5 REQUIRED COMPONENTS Widgets Graphs)` in `cmake/deps.cmake`; the Charts "
        "component is no longer requested.",
    ),
]

STATEMENT: Pairs = [
    (
        "`cmake/third_party.cmake` asks for `find_package(Boost 1.83 REQUIRED COMPONENTS filesystem program_options)`.",
        "`find_package(Boost ... REQUIRED COMPONENTS filesystem cli11)` in `cmake/third_party.cmake` now.",
    ),
    (
        "`docker/compose.yml` starts the queue with `command: redis-server --appendonly yes`.",
        "`docker/compose.yml`: `command: valkey-server --appendonly yes` for the queue.",
    ),
    (
        "`.github/workflows/ci.yml` lints with `uses: actions/setup-node@v3 with node-version 18`.",
        "`.github/workflows/ci.yml` now lints with `uses: actions/setup-node@v4 with node-version 18`.",
    ),
]

SWITCHED_TO: Pairs = [
    ("Go code is formatted with `gofmt` before commit.", "We switched to `gofumpt` for formatting Go code."),
    ("The mobile app talks to the API through Retrofit.", "The mobile app switched to Ktor for API calls."),
    ("Unit tests run under Jest.", "Switched the unit tests to Vitest."),
]

BUMPED: Pairs = [
    ("The project pins Node 18 in `.nvmrc`.", "Bumped `.nvmrc` to Node 20."),
    (
        "Which Go version does the service build with? Go 1.21, from the `go` directive in `go.mod`.",
        "Upgraded the `go` directive in `go.mod` to 1.22.",
    ),
    (
        "The Android app compiles against API level 33 (`compileSdk` in `build.gradle`).",
        "Go to API level 34: `compileSdk` raised in `build.gradle`.",
    ),
    (
        "Q: which Stripe API version do we call? A: `2023-10-16`, set in `stripe.ts`.",
        "We bumped the Stripe API version in `stripe.ts` to `2024-06-20`.",
    ),
    ("The Helm chart `ledger` is deployed at chart version 3.4.2.", "Bumped the `ledger` chart to 3.5.0."),
    (
        'Which toolchain does CI use? `rust-toolchain.toml` pins `channel = "1.76"`.',
        "Bumped the channel in `rust-toolchain.toml` to 1.78.",
    ),
    ("Postgres runs major version 14 on RDS.", "RDS Postgres was upgraded to 16 last night."),
    (
        "The `terraform` CLI is pinned at 1.5.7 in `.terraform-version`.",
        "Pinned terraform to 1.8.2 in `.terraform-version`.",
    ),
]

NO_LONGER: Pairs = [
    ("Run `make lint` before pushing.", "`make lint` no longer exists; use `just lint`."),
    (
        "Deploys go through the `deploy.sh` script on the bastion.",
        "`deploy.sh` is no longer used; deploys run from the GitHub Actions `release` workflow.",
    ),
    (
        "Local development runs on docker-compose with `dev.yml`.",
        "We no longer use docker-compose for local development; Tilt runs the stack.",
    ),
]

OWNER: Pairs = [
    (
        "The billing service is owned by the payments team (@payments-core).",
        "The billing service is owned by @ledger-team now.",
    ),
    (
        "Priya Nair owns the Vault root token rotation.",
        "Marco Bellini owns the Vault root token rotation now.",
    ),
    (
        "The on-call contact for the ingest pipeline is Sam Ortiz.",
        "The ingest pipeline on-call contact is now Dana Kim.",
    ),
    (
        "@frontend-guild reviews every change under `web/`.",
        "Changes under `web/` are now reviewed by @design-systems.",
    ),
    (
        "Before anyone edits the tokenizer settings, note that search belongs to Ilse Varga; she must "
        "approve tokenizer changes.",
        "Tomas Reyes owns product search now, tokenizer changes and reindexes go through him.",
    ),
    (
        "Schema changes to the ledger tables need the approval of Kofi Mensah.",
        "Wanjiru Kamau approves ledger schema changes now.",
    ),
]

ADDRESS: Pairs = [
    ("The admin API listens on port 8081.", "The admin API moved to port 9091."),
    ("Grafana is at https://grafana.ops.acme.dev.", "Grafana moved to https://metrics.acme.dev."),
    ("The staging site is served from `staging.shopfront.io`.", "Staging now lives at `stg.shopfront.io`."),
    (
        "The sandbox SFTP server is `sftp-sbx.partner.com` on port 2222.",
        "The sandbox SFTP host changed to `files-sbx.partner.com`.",
    ),
    (
        "Celery reads `CELERY_BROKER_URL=redis://queue-cache:6379/1` from `.env`.",
        "The broker URL is `amqp://rabbit.internal:5672` now, not `redis://…`.",
    ),
    ("The Celery broker is Redis, on `queue-cache:6379`.", "We moved the broker from Redis to RabbitMQ."),
    (
        "`SHOW WAREHOUSES LIKE 'REPORTING_WH'`: size LARGE, auto-suspend 60 s, shared with the finance dashboards.",
        "The nightly dbt build now runs on TRANSFORM_WH (no longer shared with finance).",
    ),
]

SETTING_LINE: Pairs = [
    ("`pool_size = 10` in `config/database.yml`.", "`pool_size = 25` in `config/database.yml`."),
    (
        "`timeout: 30s` in the `http` block of `envoy.yaml`.",
        "`timeout: 45s` in the `http` block of `envoy.yaml`.",
    ),
    (
        "`retention.ms=604800000` on the `audit-events` topic.",
        "Set `retention.ms=1209600000` on the `audit-events` topic.",
    ),
    ("| `MAX_UPLOAD_MB` | 25 | `api/settings.py` |", "| `MAX_UPLOAD_MB` | 50 | `api/settings.py` |"),
]

MOVED_IT_IS: Pairs = [
    (
        "`kamal deploy -d staging` targets `staging.quayside.internal` as set in `config/deploy.staging.yml`.",
        "Infra moved staging, its stg-eu1.quayside.io now.",
    ),
    ("The broker URL is `redis://cache:6379/0`.", "The broker moved: it is `amqp://mq.internal:5672` now."),
    ("Grafana is served from `grafana.ops.quayside.dev`.", "We moved Grafana, it's `dash.quayside.io` now."),
]

NEW_ONE: Pairs = [
    (
        "Master scans live in a B2 bucket called `herbar-masters-01`.",
        "The new bucket is `herbar-r2-masters`, on Cloudflare R2; the master scans are copied over.",
    ),
    (
        "The sender address is `noreply@notify.quillnest.app`.",
        "From now on the sender address is `hello@mail.quillnest.app`.",
    ),
    (
        "We've got an S3 bucket `tiles-prod-eu` behind CloudFront for the map tiles.",
        "Tom moved the map tiles to Cloudflare R2 — bucket is `tiles-r2`, same custom domain.",
    ),
]

RELEASE_LINE: Pairs = [
    (
        "The editor is Unity 2022.3.21f1, installed through Hub.",
        "I've upgraded the project locally to 2022.3.40f1 and it opens fine.",
    ),
    ("We run Python 3.11.4 in CI.", "Bumped the runner image to 3.11.9."),
    ("The cluster runs Kubernetes 1.29.3.", "Upgraded everything to 1.29.6 last night."),
]

SUPERSEDING: dict[str, Pairs] = {
    "the new one": NEW_ONE,
    "along its release line": RELEASE_LINE,
    "moved, it is now": MOVED_IT_IS,
    "is now": IS_NOW,
    "renamed": RENAMED,
    "new, not old": NOT_THE_OLD,
    "moved from": MOVED_FROM,
    "replaced": REPLACED,
    "one argument of a statement": STATEMENT,
    "switched to": SWITCHED_TO,
    "bumped": BUMPED,
    "no longer": NO_LONGER,
    "owner": OWNER,
    "address": ADDRESS,
    "setting line": SETTING_LINE,
}

# --- pairs in which the new fact sits beside the old one -----------------------------------------

TWO_COMPONENTS: Pairs = [
    ("Django is pinned at 4.2 in `requirements.txt`.", "Celery is pinned at 5.4 in `requirements.txt`."),
    ("Bumped `lodash` to 4.17.21.", "Bumped `axios` to 1.7.2."),
    ("The Go services build with Go 1.22.", "The Rust services build with Rust 1.78."),
    ("`react` is pinned to 18.3.1.", "`react-router` is pinned to 6.23.1."),
    ("The iOS app targets iOS 16.", "The watchOS extension targets watchOS 9."),
    (
        "The Helm chart `ledger` is deployed at chart version 3.4.2.",
        "The `ledger-ui` chart is deployed at 1.2.0.",
    ),
    (
        "The API image builds on Python 3.12.",
        "The ML worker image builds on Python 3.10 because of its CUDA wheels.",
    ),
]

TWO_PLACES: Pairs = [
    (
        "The staging database host is `pg-stage-01.internal`.",
        "The production database host is `pg-prod-01.internal`.",
    ),
    ("Staging is at https://staging.shopfront.io.", "Production is at https://shopfront.io."),
    ("The admin API listens on port 8081.", "The public API listens on port 8080."),
    ("`pool_size = 10` in `config/database.yml`.", "`pool_size = 5` in `config/cache.yml`."),
    ("The metrics endpoint listens on port 9100.", "The node exporter sidecar listens on port 9101."),
]

IN_PASSING: Pairs = [
    (
        "The admin API listens on port 8081.",
        "The health check curls port 8081 and the admin API's `/healthz` path.",
    ),
    (
        "The storefront frontend is bundled with Vite.",
        "Unlike Webpack, Vite needs no loader config for SVG files.",
    ),
    ("Background jobs run in Sidekiq.", "We migrated the cron jobs from crontab to Kubernetes CronJobs."),
    (
        "Deploys go through the GitHub Actions `release` workflow.",
        "The `release` workflow no longer needs a manual approval.",
    ),
    ("The storefront frontend is bundled with Vite.", "The docs site is built with Astro, not Vite."),
    (
        "Go code is formatted with `gofumpt` before commit.",
        "We switched to `prettier` for the TypeScript code.",
    ),
    (
        "The `orders-worker` deployment consumes the `orders` queue.",
        "We renamed the `billing-worker` deployment to `invoice-worker`.",
    ),
]

ADDITIVE: Pairs = [
    ("We use Postgres for the orders service.", "We also use Redis for rate limiting in the orders service."),
    ("Errors are reported to Sentry.", "Errors are also posted to the #alerts Slack channel."),
    ("CI runs the tests on Python 3.11.", "CI also runs the tests on Python 3.12."),
    ("Priya Nair owns the Vault root token rotation.", "Marco Bellini owns the Kafka ACL reviews now."),
    ("The billing service is owned by @payments-core.", "The search service is owned by @discovery now."),
]

TWO_COMMANDS: Pairs = [
    (
        "`bin/rails g devise:install` created `config/initializers/devise.rb`.",
        "Ran `bin/rails g pundit:install` for the policies.",
    ),
    (
        "Checked with `dbt build -s fct_orders+` on the dev target.",
        "Then `dbt build -s fct_refunds+` passed too.",
    ),
    (
        "Rev B boards build with `west build -b pollen_revb app` from `firmware/`.",
        "Rev C boards build with `west build -b pollen_revc app` from `firmware/`.",
    ),
]

ANOTHER_THING: Pairs = [
    ("Support mail goes to help@acme.org.", "Invoices are sent from billing@acme.org from now."),
    ("Alerts go to oncall@acme.org.", "From now on the nightly report is mailed to reports@acme.org."),
    ("lodash is at 4.17.21.", "Bumped axios to 4.17.3."),
    ("Terraform is pinned to 1.7.5.", "Moved the runner to 1.9.8."),
]

BESIDE: dict[str, Pairs] = {
    "another thing": ANOTHER_THING,
    "two components": TWO_COMPONENTS,
    "two commands": TWO_COMMANDS,
    "two places": TWO_PLACES,
    "in passing": IN_PASSING,
    "additive": ADDITIVE,
}


def _cases(groups: dict[str, Pairs]) -> list[Any]:
    return [
        pytest.param(old, new, id=f"{family}-{index}")
        for family, pairs in groups.items()
        for index, (old, new) in enumerate(pairs, 1)
    ]


def test_the_set_covers_every_family_with_enough_pairs() -> None:
    assert sum(map(len, SUPERSEDING.values())) >= 40
    assert sum(map(len, BESIDE.values())) >= 20
    assert all(len(pairs) >= 3 for pairs in [*SUPERSEDING.values(), *BESIDE.values()])


@pytest.mark.parametrize(("old", "new"), _cases(SUPERSEDING))
def test_a_correction_supersedes_the_older_fact(old: str, new: str) -> None:
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.target_id) == ("update", "old"), decision.reason


@pytest.mark.parametrize(("old", "new"), _cases(BESIDE))
def test_a_fact_beside_the_older_one_does_not_supersede_it(old: str, new: str) -> None:
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert decision.action != "update", decision.reason


# --- through a real door: two exchanges saved with extraction on ---------------------------------

THROUGH_THE_DOOR = [
    pytest.param(
        "User: which SDK release does the firmware build against?\n\nAssistant: `manifest.yml` pins the "
        "Orbis SDK at `v4.2.1`, and `make setup` fetches it.",
        "User: we need the new radio fixes, go to Orbis SDK 4.3.0\n\nAssistant: Bumped `revision:` in "
        "`manifest.yml` to `v4.3.0` and ran `make setup`; both boards build.",
        "which Orbis SDK release is pinned in the manifest",
        "v4.2.1",
        id="a version bumped as an action, after a question and its answer",
    ),
    pytest.param(
        "User: how is the charting library pulled in?\n\nAssistant: `cmake/deps.cmake` declares it: "
        "`find_package(Qt6 6.5 REQUIRED COMPONENTS Widgets Charts)`, and `dashboard` links it.",
        "User: we're moving the plots to Qt Graphs\n\nAssistant: `cmake/deps.cmake`: `find_package(Qt6 6.5 "
        "REQUIRED COMPONENTS Widgets Graphs)`; the Charts component is no longer requested.",
        "which Qt components does cmake request",
        "Widgets Charts",
        id="a component replaced inside a longer statement",
    ),
    pytest.param(
        "User: why is the nightly build slow?\n\nAssistant: `show warehouses like 'REPORTING_WH'`: size LARGE, "
        "auto-suspend 60 s, and it's shared with the finance dashboards, which refresh at 06:00 while our "
        "run is still going.",
        "User: platform split the compute last week\n\nAssistant: The nightly dbt build now runs on "
        "TRANSFORM_WH (size MEDIUM, not shared with finance anymore).",
        "which warehouse does the nightly dbt build run on",
        "REPORTING_WH",
        id="a resource moved, its old state said to hold no more",
    ),
]


THROUGH_THE_DOOR.append(
    pytest.param(
        "User: from now on every new page uses the design tokens. also pin node with volta, we are on "
        "20.11.1, people keep building with random versions\n\nAssistant: Pinned: `package.json` now has "
        '`"volta": {"node": "20.11.1"}`, and `.nvmrc` says `20.11.1`.',
        "User: the volta pin is outdated, bump it to the current LTS\n\nAssistant: Done: `package.json` "
        'now has `"volta": {"node": "22.3.0"}`, and `.nvmrc` says `22.3.0`.',
        "which node version is the repo pinned to",
        "20.11.1",
        id="a version replaced in one fact is replaced in every fact that still states it",
    )
)


THROUGH_THE_DOOR += [
    pytest.param(
        "User: wire the refund webhooks to the refunds table. Ines Moreau owns everything payments, ask her "
        "before touching the stripe account settings.\n\nAssistant: Added the endpoint. I did not change "
        "anything in the Stripe dashboard; the endpoint still needs registering there, which per your note "
        "is Ines Moreau's call.",
        "User: heads up: our payments lead left last week. Tomasz Wójcik owns payments + the stripe account "
        "now, he's the one to ask.\n\nAssistant: Updated `CODEOWNERS` and `docs/payments.md`.",
        "who do I ask before changing the stripe account",
        "Ines Moreau",
        id="a role handed to a person with an accented name, in every fact about what passed",
    ),
    pytest.param(
        "User: how do I deploy to staging?\n\nAssistant: Staging: https://staging.quayside-app.dev, "
        "deployed from `main`. The smoke tests read `staging.quayside-app.dev` from `e2e/config.ts`.",
        "User: Second, staging moved to a new host, https://stg.quayside.run, since we left the old "
        "domain.\n\nAssistant: Updated `e2e/config.ts`; the smoke tests pass against it.",
        "where is staging",
        "staging.quayside-app.dev",
        id="a subject moved to a new host, its old host gone from every fact",
    ),
]


@pytest.mark.parametrize(("first", "second", "query", "old_value"), THROUGH_THE_DOOR)
def test_the_second_exchange_leaves_the_old_value_out_of_the_current_facts(
    door_onnx: DoorProcess, tag: str, first: str, second: str, query: str, old_value: str
) -> None:
    before = saved_with_extract(door_onnx, tag, first)
    assert before["outcome"]["added"] >= 1, before
    status, body = door_onnx.post("/api/memory/search", {"q": query, "containerTag": tag, "limit": 20})
    assert status == 200, body
    assert any(
        old_value in row["content"] for row in body["results"] if row.get("kind", "memory") == "memory"
    )
    after = saved_with_extract(door_onnx, tag, second)
    assert after["outcome"]["updated"] >= 1, after
    status, body = door_onnx.post("/api/memory/search", {"q": query, "containerTag": tag, "limit": 20})
    assert status == 200, body
    current = [row["content"] for row in body["results"] if row.get("kind", "memory") == "memory"]
    assert current and not any(old_value in content for content in current), current


# --- one value replaced, restated in the other facts that state it ----------------------------------

from bli_memory.door.librarian import carried_over, carried_pairs, restated  # noqa: E402


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("3.19.6", "3.22.2"),
        ("`build-02.rack.lan`", "`build-05.rack.lan`"),
        ("https://a.example.dev", "https://b.example.dev"),
        ("2022.3.21f1", "6000.0.23f1"),
    ],
)
def test_a_specific_value_is_carried_over_to_other_facts(old: str, new: str) -> None:
    assert carried_over(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("7", "14"),
        ("512", "2048"),
        ("1.2", "1.3"),
        ("redis", "rabbitmq"),
        ("3.19.6", "3.19.6"),
        ("main", "trunk"),
        ("settings/v1.py", "settings/v2.py"),  # files live side by side
        ("schema_v2.sql", "schema_v3.sql"),
        ("docs/runbook.md", "docs/oncall.md"),
    ],
)
def test_a_bare_number_a_short_version_or_a_word_or_a_file_is_never_carried_over_alone(
    old: str, new: str
) -> None:
    """ "7" or "main" can be many things in one space: not carried over on its own (a number or a
    short version is, only where the same words name it: the tests below)."""
    assert not carried_over(old, new)


def test_restated_replaces_the_old_value_as_the_correction_writes_the_new_one() -> None:
    assert (
        restated(
            "Pin flutter with fvm, we are on 3.19.6, ppl keep building.",
            "3.19.6",
            "3.22.2",
            "Moved to 3.22.2.",
        )
        == "Pin flutter with fvm, we are on 3.22.2, ppl keep building."
    )
    assert restated(
        "Hosts: BUILD-02.rack.lan only.", "build-02.rack.lan", "build-05.rack.lan", "Now `Build-05.rack.lan`."
    ) == ("Hosts: Build-05.rack.lan only.")
    # a build part after a version of three parts is a build of that release, and stays
    assert (
        restated(
            "`docs/setup.md` says to install the LunarG SDK 1.3.280.0.",
            "1.3.280",
            "1.3.290",
            "We're going to SDK 1.3.290 for mesh shaders.",
        )
        == "`docs/setup.md` says to install the LunarG SDK 1.3.290.0."
    )
    assert restated("The wheel is 1.3.280.dev1.", "1.3.280", "1.3.290", "The SDK goes to 1.3.290.") is None


@pytest.mark.parametrize(
    "content",
    [
        "Upgraded from 3.19.6 to 3.22.2 last week.",  # states the new value too: a history
        "The SDK is 3.19.60 on the old boards.",  # another value that starts the same
        "Release 13.19.6 of the tool.",
        "The API is at v3.19.6.1.",
    ],
)
def test_restated_leaves_a_history_or_another_value_alone(content: str) -> None:
    assert restated(content, "3.19.6", "3.22.2", "Moved to 3.22.2.") is None


# --- which value of the old fact a correction replaces ----------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "rewrite"),
    [
        # the words before both values meet on "service" too: the nearest word ("Gradle") decides
        (
            "The service runs on JDK 17 with Gradle 8.5.",
            "Actually the service needs Gradle 8.7 now.",
            "The service runs on JDK 17 with Gradle 8.7.",
        ),
        ("The minimum is Android 7.0 (API 24).", "The minimum android is now API 26.", "(API 26)"),
    ],
)
def test_a_correction_replaces_the_value_named_by_the_same_nearest_word(
    old: str, new: str, rewrite: str
) -> None:
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert decision.action == "update", decision.reason
    assert decision.rewrite is not None and rewrite in decision.rewrite


@pytest.mark.parametrize(
    ("new", "rewrite"),
    [
        # "CPU stays": the CPU's value is not the one replaced, though only its name meets the old fact's
        ("We have decided with Miriam: the task gets 4096 MB, CPU stays.", None),
        (
            "Correction: the task gets 4096 MB now, cpu unchanged.",
            "The task size: `cpu = 1024`, `memory = 4096`, `desired_count = 2` in `infra/main.tf`.",
        ),
    ],
)
def test_a_value_the_correction_says_stays_is_not_the_one_it_replaces(new: str, rewrite: str | None) -> None:
    old = "The task size: `cpu = 1024`, `memory = 2048`, `desired_count = 2` in `infra/main.tf`."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert decision.rewrite == rewrite, decision.reason
    assert decision.action == ("add" if rewrite is None else "update")


def test_a_subject_moved_to_a_new_host_hands_its_old_address_and_host_to_the_restatement() -> None:
    """ "staging moved to a new host, X": the old fact is history, and the other facts naming the old
    address, with or without its scheme, are restated with the new one."""
    old = "Staging: https://staging.quill-app.dev, deployed from `main` on every merge."
    new = "Staging moved to a new host, https://stg.quill.run, since we left the old domain."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == (
        "update",
        ("https://staging.quill-app.dev", "https://stg.quill.run"),
    )
    assert carried_pairs(*decision.values) == [
        ("https://staging.quill-app.dev", "https://stg.quill.run"),
        ("staging.quill-app.dev", "stg.quill.run"),
    ]
    assert (
        restated(
            "Summary: staging at `staging.quill-app.dev` from `main`.",
            "staging.quill-app.dev",
            "stg.quill.run",
            new,
        )
        == "Summary: staging at `stg.quill.run` from `main`."
    )


def test_a_subject_now_deployed_to_another_host_hands_the_old_host_on() -> None:
    """A host name without a digit is the same kind of value as one with: the move hands it on."""
    old = "To push `kamal deploy -d staging` to staging; that targets `staging.quayside.internal`."
    new = "Staging now deploys to `stg-eu1.quayside.io`; no references to the retired host remain."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == (
        "update",
        ("staging.quayside.internal", "stg-eu1.quayside.io"),
    )


# --- a role handed over, restated in the other facts about the same thing ------------------------------


@pytest.mark.parametrize(
    ("old", "new", "former", "successor"),
    [
        (
            "Ines Moreau owns everything payments, ask her before touching the stripe account settings.",
            "Tomasz Wójcik owns payments + the stripe account now, he's the one to ask.",
            "Ines Moreau",
            "Tomasz Wójcik",
        ),
        (
            "Access to the warehouse is granted by Lucía Ferreira, who owns the IAM bindings.",
            "Łukasz Nowak owns the warehouse IAM bindings now.",
            "Lucía Ferreira",
            "Łukasz Nowak",
        ),
    ],
)
def test_a_role_handed_to_a_person_with_accented_names_passes_both_names_on(
    old: str, new: str, former: str, successor: str
) -> None:
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == ("update", (former, successor)), decision.reason
    assert carried_pairs(former, successor) == [(former, successor)]


def test_the_new_holder_replaces_the_former_only_in_facts_about_what_passed() -> None:
    source = "Tomasz Wójcik owns payments + the stripe account now, he's the one to ask."
    about = "The Stripe endpoint still needs registering in the dashboard, which is Ines Moreau's call."
    assert restated(about, "Ines Moreau", "Tomasz Wójcik", source) == (
        "The Stripe endpoint still needs registering in the dashboard, which is Tomasz Wójcik's call."
    )
    # the same person's other role is hers still
    assert (
        restated("Ines Moreau also runs the booking calendar sync.", "Ines Moreau", "Tomasz Wójcik", source)
        is None
    )


def test_a_holder_named_by_the_first_name_alone_is_carried_to_every_fact_of_what_passed() -> None:
    """ "Rohan went to the data team" names the former holder by his first name: each fact naming
    "Rohan Mehta" as holding what passed gets the new holder's whole name, surname included."""
    source = "The release signing keys are with Ilse Vermeer from this week, Rohan went to the data team."
    assert carried_pairs("Rohan", "Ilse Vermeer") == [("Rohan", "Ilse Vermeer")]
    assert restated(
        "Rohan Mehta keeps the release signing keys; nobody else can sign a build.",
        "Rohan",
        "Ilse Vermeer",
        source,
    ) == ("Ilse Vermeer keeps the release signing keys; nobody else can sign a build.")
    # a lowercase word after the first name is no surname
    assert restated(
        "Ask Rohan about the signing keys before a release.", "Rohan", "Ilse Vermeer", source
    ) == ("Ask Ilse Vermeer about the signing keys before a release.")
    # his other role is his still
    assert restated("Rohan Mehta also runs the office wifi.", "Rohan", "Ilse Vermeer", source) is None
    # a first name and a bare name neither is carried
    assert carried_pairs("Rohan", "Ilse") == []


def test_a_role_over_a_compound_name_meets_the_same_words_apart() -> None:
    """ "Stripe-webhook related" and "the Stripe webhooks": one thing, whatever the hyphen and plural."""
    old = "For anything Stripe-webhook related, Ana Lima owns it, so don't touch app/api/stripe/ without her."
    new = "Our billing engineer moved to the mobile team — Dara Quinn owns the Stripe webhooks now."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == ("update", ("Ana Lima", "Dara Quinn")), decision.reason
    assert restated(old, "Ana Lima", "Dara Quinn", new) == old.replace("Ana Lima", "Dara Quinn")


def test_a_short_version_is_restated_only_where_the_same_words_name_what_it_versions() -> None:
    """ "1.75" alone could be anything's version: it is carried over, and each fact gets the new one
    only when a word before it there meets one before the new value in the correcting fact."""
    source = '`Cargo.toml`: `[package]`, then `rust-version = "1.80"`.'
    assert carried_pairs("1.75", "1.80") == [("1.75", "1.80")]
    assert (
        restated(
            "Our minimum supported Rust version should be 1.75, for Debian users.", "1.75", "1.80", source
        )
        == "Our minimum supported Rust version should be 1.80, for Debian users."
    )
    assert restated("The cache TTL multiplier is 1.75 for hot keys.", "1.75", "1.80", source) is None
    assert carried_pairs("1.75", "1.80.1") == []  # not the same form


def test_a_bare_number_is_restated_only_after_the_same_word_about_the_same_thing() -> None:
    source = "And minimum android is now API 26 (the producer says under 1% of users are below it)."
    assert carried_pairs("24", "26") == [("24", "26")]
    assert restated("Summary: 60 fps by default, minimum Android API 24.", "24", "26", source) == (
        "Summary: 60 fps by default, minimum Android API 26."
    )
    assert restated("The nightly job retries 24 times.", "24", "26", source) is None  # another word before
    # the same word before, and another thing named beside it
    moved = "The admin API moved to port 9090."
    assert restated("The public API listens on port 8080.", "8080", "9090", moved) is None


@pytest.mark.parametrize(
    "content",
    [
        "`web/proxy.conf.json` proxies `/api` to `http://localhost:4000`.",
        "`server/main.ts` reads `PORT` (default 4000).",
        "Start it with `node server.js --port 4000`.",
        "The API is served on port 4000 in dev.",
    ],
)
def test_a_port_is_restated_where_this_machine_names_it(content: str) -> None:
    """A port moved ("listens on 4100 now") is a port wherever this machine's address, the word
    "port" or a binding verb names it, whatever words stand around it."""
    source = "The API listens on 4100 these days; something else grabbed the old port."
    assert restated(content, "4000", "4100", source) == content.replace("4000", "4100")


@pytest.mark.parametrize(
    "content",
    [
        "Postgres for prod is at db.internal port 4000.",  # another host's port
        "The import takes 4000 ms on the CI runner.",  # no port
        "Workers run on 4000 MB of memory.",  # a unit after it
        "Angular dev server on 4200, cache on 4000.",  # no word says port: the same-words rule decides
    ],
)
def test_a_port_is_not_restated_where_it_is_another_host_s_or_no_port(content: str) -> None:
    source = "The API listens on 4100 these days; something else grabbed the old port."
    assert restated(content, "4000", "4100", source) is None


def test_a_version_is_never_read_as_a_port() -> None:
    """Below PORT_MIN no number is a port: "Node 20, not 18" leaves "Angular 18" alone."""
    assert (
        restated("Local dev: Angular 18 on port 4200.", "18", "20", "Node 20 on port 4200, not 18.") is None
    )


@pytest.mark.parametrize(
    "new",
    [
        "Small refactor request: we renamed the pool service to ObjectPoolRegistry because it also handles VFX.",
        "We renamed the pool service to ObjectPoolRegistry.",
    ],
)
def test_a_class_renamed_by_the_words_of_its_name_keeps_the_rule_under_the_new_name(new: str) -> None:
    """ "the pool service" is `PoolService` word for word: the rule about it holds under its new name,
    and the rename is handed on to the other facts naming the class."""
    old = "For coins and obstacles always use PoolService, not Instantiate."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == ("update", ("PoolService", "ObjectPoolRegistry")), (
        decision.reason
    )
    assert decision.rewrite == "For coins and obstacles always use ObjectPoolRegistry, not Instantiate."
    assert carried_pairs("PoolService", "ObjectPoolRegistry") == [("PoolService", "ObjectPoolRegistry")]


def test_a_class_named_in_the_subject_renamed_to_one_word_keeps_the_rest_under_the_new_name() -> None:
    """ "the AudioBus singleton" names `AudioBus` as a word of the subject; the new name may be one
    capitalised word. The old fact's rule holds under the new name, and the rename is handed on."""
    old = "Sound effects go through the AudioBus singleton, never `AudioStreamPlayer` directly."
    new = "I renamed the AudioBus singleton to Mixer (file is autoload/mixer.gd now)."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == ("update", ("AudioBus", "Mixer")), decision.reason
    assert (
        decision.rewrite
        == "Sound effects go through the Mixer singleton, never `AudioStreamPlayer` directly."
    )
    assert restated("`level_exit.gd` calls `AudioBus.stop_all()`.", "AudioBus", "Mixer", new) == (
        "`level_exit.gd` calls `Mixer.stop_all()`."
    )


def test_a_rename_of_words_that_name_no_class_of_the_old_fact_hands_nothing_on() -> None:
    old = "For coins and obstacles always use PoolService, not Instantiate."
    decision = decide("We renamed the spawn service to SpawnRegistry.", [Neighbour("old", old, 0.6)])
    assert decision.values is None or decision.values[0] != "PoolService", decision


def test_a_summary_label_and_a_negation_in_another_clause_do_not_hide_a_new_version() -> None:
    """ "Summary:" names no thing of its own (no sibling of "The project"), and "wasn't set" belongs
    to another clause than the version it replaces."""
    old = (
        "The project requires Qt 6.7.2 — `CMakeLists.txt` has `find_package(Qt6 6.7.2 REQUIRED COMPONENTS "
        "Widgets Gui)`, and CMake found Qt 5 first because `CMAKE_PREFIX_PATH` wasn't set."
    )
    decision = decide("Summary: Qt pinned at `6.8.1` in CMake and presets.", [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == ("update", ("6.7.2", "6.8.1")), decision.reason


def test_a_bare_number_in_a_negated_fact_is_not_replaced_across_clauses() -> None:
    old = "Bench result on rev C, 500 readings with BLE connected and notifying: sigma 6 g, no outliers."
    new = "The app can override the intervals over BLE, persisted in settings: `WEIGHT_INTERVAL_S=600`."
    assert decide(new, [Neighbour("old", old, 0.6)]).action == "add"


def test_an_admin_a_change_goes_through_is_a_role_handed_over() -> None:
    old = "App registration changes (scopes, secrets, redirect URIs) go through Fatima Al-Sayed, the tenant admin."
    new = "Our tenant admin left last week, Daniel Osei owns the Entra app registration now."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == ("update", ("Fatima Al-Sayed", "Daniel Osei")), (
        decision.reason
    )


# --- an address moved to another site -------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "values"),
    [
        (
            "1) The staging environment is https://hr-stg.quillcorp.azurewebsites.net.",
            "Staging moved off App Service to our AKS cluster, the new URL is https://hr-staging.quillcorp.net.",
            ("https://hr-stg.quillcorp.azurewebsites.net", "https://hr-staging.quillcorp.net"),
        ),
        (
            "Builds run only on `build-02.rack.lan` (it has the vSphere network path), never from laptops.",
            "Image builds moved to build-05.rack.lan, it's already got the vsphere route.",
            ("build-02.rack.lan", "build-05.rack.lan"),
        ),
    ],
)
def test_a_service_given_a_new_address_supersedes_its_old_one(
    old: str, new: str, values: tuple[str, str]
) -> None:
    """The new fact says the address is new, the two hosts share two words of their names and the
    facts a word of what they are about."""
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == ("update", values), decision.reason


@pytest.mark.parametrize(
    "old",
    [
        "The staging database is at https://db-stg.quillcorp-data.io.",  # one shared word: the company's
        "Grafana for staging is https://grafana.ops-tools.io.",  # no shared word
        "Production is https://hr.quillcorp.net.",  # another thing
    ],
)
def test_another_service_on_another_site_is_left_alone(old: str) -> None:
    new = "Staging moved off App Service to our AKS cluster, the new URL is https://hr-staging.quillcorp.net."
    assert decide(new, [Neighbour("old", old, 0.6)]).action == "add"


def test_a_bucket_renamed_to_a_kebab_case_name_hands_the_old_name_on() -> None:
    """ "the attachments bucket" is the setting `ATTACHMENTS_BUCKET` word for word, and the two names
    are one bucket's: as many parts, one shared. A label before the move ("Quick update …:") is no
    part of it."""
    old = '`config/runtime.exs`: `bucket: System.get_env("ATTACHMENTS_BUCKET", "quill-attachments-prod")`.'
    new = "Quick update for the uploads: infra renamed the attachments bucket, it's quill-files-prod now."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == ("update", ("quill-attachments-prod", "quill-files-prod"))
    assert carried_pairs("quill-attachments-prod", "quill-files-prod") == [
        ("quill-attachments-prod", "quill-files-prod")
    ]


def test_a_kebab_case_name_holding_a_renamed_word_is_its_own_thing() -> None:
    decision = decide(
        "We renamed `billing` to `ledger`.",
        [Neighbour("old", "The `billing-reports` job runs at 04:00.", 0.6)],
    )
    assert decision.action != "update", decision.reason


# --- a thing said to be gone, and a name like its own given for it ------------------------------------

from bli_memory.door.librarian.corrections import gone_for  # noqa: E402


@pytest.mark.parametrize(
    ("old", "new", "pair"),
    [
        (
            "Exports land in `larch-prod-lake.exports.daily`, read by the finance notebooks.",
            "The old lake project was decommissioned on Friday, use `larch-lake-prd` from now on.",
            ("larch-prod-lake", "larch-lake-prd"),
        ),
        (
            "Uploads go to the `quill-media-eu` bucket through the signed-URL endpoint.",
            "That bucket is gone since the migration; it's `quill-eu-media` now, same layout.",
            ("quill-media-eu", "quill-eu-media"),
        ),
    ],
)
def test_a_name_said_to_be_gone_gives_way_to_the_like_name_given_for_it(
    old: str, new: str, pair: tuple[str, str]
) -> None:
    assert gone_for(new, old) == pair
    decision = decide(new, [Neighbour("old", old, 0.5)])
    assert (decision.action, decision.values) == ("update", pair), decision
    assert decision.rewrite == old.replace(*pair)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a sibling shares one part: another bucket, not the same one renamed
        (
            "Logs go to `orbit-logs-prod` for 30 days.",
            "The old media bucket was deleted, use `orbit-files-prod` for uploads.",
        ),
        # nothing is said to be gone
        (
            "Exports land in `larch-prod-lake.exports.daily`.",
            "The new reporting project is `larch-lake-prd`, for the dashboards.",
        ),
        # two like names in the old fact: which one went is not said
        (
            "Staging reads `larch-stg-lake` and production `larch-prod-lake`.",
            "The old lake project was decommissioned, use `larch-lake-prd`.",
        ),
    ],
)
def test_a_name_is_not_replaced_without_being_gone_or_by_a_sibling_s(old: str, new: str) -> None:
    assert gone_for(new, old) is None


def test_switched_everything_names_no_subject_to_move() -> None:
    """A bug fixed: "Switched everything to `x`" replaced a root cause that said "selected everything"."""
    old = "Two tries appended the same files twice to `raw.orders`, and `stg_orders.sql` selected everything."
    decision = decide("Switched everything to `harbor-dw-prd`.", [Neighbour("old", old, 0.6)])
    assert decision.action == "add", decision


def test_a_value_both_facts_state_is_no_new_value_of_another() -> None:
    """A bug fixed: "Delta 3.1.0 and Scala 2.13.12 are compatible" rewrote "sbt 1.9.9" as "sbt 2.13.12"
    in a summary that states Scala 2.13.12 too."""
    old = "Summary: Spark 3.5.1 (provided), Scala 2.13.12, sbt 1.9.9, Delta 3.1.0 bundled in the fat jar."
    decision = decide(
        "Nothing else needed changing: Delta 3.1.0 and Scala 2.13.12 are compatible with it.",
        [Neighbour("old", old, 0.6)],
    )
    assert decision.action != "update", decision


def test_a_file_name_is_no_address_a_service_moves_from() -> None:
    """`hr-staging.md` matches the shape of a host name; it is a file, and the old fact's one address
    is the URL beside it."""
    from bli_memory.door.librarian.corrections import address_moved

    old = "The staging environment is https://atlas-hr-stg.azurewebsites.net, see `hr-staging.md`."
    new = "Staging moved to our cluster, the new URL is https://hr-staging.atlas-corp.net."
    assert address_moved(new, old) == (
        "https://atlas-hr-stg.azurewebsites.net",
        "https://hr-staging.atlas-corp.net",
    )


# --- shapes read on set f ------------------------------------------------------------------------------


def test_an_arrow_before_the_subject_does_not_make_two_facts_siblings() -> None:
    """A bug fixed: "fixes -> ctrl-runtime is on v0.18.4 now" read "->" as a word naming another
    ctrl-runtime than the one "Pin ctrl-runtime v0.17.3" pins."""
    decision = decide(
        "Need the cache fixes -> libfoo is on v2.4.1 now, libbar v0.9.0.",
        [Neighbour("old", "Pin libfoo v2.3.7, go 1.22.", 0.5)],
    )
    assert (decision.action, decision.values) == ("update", ("v2.3.7", "v2.4.1")), decision


def test_a_role_held_by_a_first_name_alone_passes_to_the_new_holder() -> None:
    decision = decide(
        "Mateo Rossi owns the deploy scripts now, route deploy PRs to him.",
        [Neighbour("old", "Ingrid owns the deploy scripts, dont touch deploy/ w/o her ok.", 0.5)],
    )
    assert (decision.action, decision.values) == ("update", ("Ingrid", "Mateo Rossi")), decision


@pytest.mark.parametrize(
    "new",
    [
        "Other thing: the message broker has moved, new host is mq.tidewater.io, the old one is off.",
        "The message broker moved, its new address is mq.tidewater.io.",
    ],
)
def test_a_subject_moved_with_its_new_host_named_after_it(new: str) -> None:
    old = "Workers connect on port 5671 with TLS; the message broker is RabbitMQ at mq.tide-internal.net."
    decision = decide(new, [Neighbour("old", old, 0.5)])
    assert decision.values == ("mq.tide-internal.net", "mq.tidewater.io"), decision
    assert decision.rewrite == old.replace("mq.tide-internal.net", "mq.tidewater.io")


# --- shapes read on set h ------------------------------------------------------------------------------


def test_a_fact_that_changes_two_values_rewrites_both_in_the_old_one() -> None:
    old = "Gradle we keep on 8.5, the Android plugin on 8.2.1, and Ktor 2.3.9 for the network."
    new = "We go up to Gradle 8.7 now, the Android plugin then must be 8.3.2."
    decision = decide(new, [Neighbour("old", old, 0.5)])
    assert (
        decision.rewrite
        == "Gradle we keep on 8.7, the Android plugin on 8.3.2, and Ktor 2.3.9 for the network."
    )


def test_the_person_to_go_to_from_now_on_takes_the_role_over() -> None:
    decision = decide(
        "The billing API has changed hands: Oskar Lind is the person to go to from now on for the invoice schema.",
        [
            Neighbour(
                "old", "Mira Castell owns the billing API, so invoice schema changes go through her.", 0.5
            )
        ],
    )
    assert (decision.action, decision.values) == ("update", ("Mira Castell", "Oskar Lind")), decision


def test_now_before_a_url_says_the_url_holds_now() -> None:
    decision = decide(
        "Dashboard + API now https://ops.quarry.io only.",
        [Neighbour("old", "Record envs: the dashboard https://grafana.quarry.io (sso via okta).", 0.5)],
    )
    assert decision.values == ("https://grafana.quarry.io", "https://ops.quarry.io"), decision


def test_through_the_door_both_values_one_fact_changes_leave_every_current_fact(
    door_onnx: DoorProcess, tag: str
) -> None:
    first = (
        "User: for the app we fix the versions now. Gradle we keep on 8.5, the Android plugin on 8.2.1, "
        "and for network we take Ktor 2.3.9.\n\nAssistant: Declared them in `gradle/libs.versions.toml`.\n\n"
        "Summary: Gradle 8.5, Android plugin 8.2.1 and Ktor 2.3.9 are now declared only in the version catalog."
    )
    second = (
        "User: We go up to Gradle 8.7 now, the Android plugin then must be 8.3.2.\n\nAssistant: Bumped both "
        "in `gradle/libs.versions.toml`; the build is green."
    )
    saved_with_extract(door_onnx, tag, first)
    after = saved_with_extract(door_onnx, tag, second)
    assert after["outcome"]["updated"] >= 1, after
    status, body = door_onnx.post(
        "/api/memory/search", {"q": "gradle android plugin versions", "containerTag": tag, "limit": 20}
    )
    assert status == 200, body
    current = [row["content"] for row in body["results"] if row.get("kind", "memory") == "memory"]
    assert current and not any("8.5" in c.replace("8.5.", "") or "8.2.1" in c for c in current), current


# --- the value's own unit, a host inside a setting, a host named by its first label -----------------


def test_a_bare_number_is_restated_where_its_unit_or_the_word_beside_it_meets() -> None:
    """The word beside a number may follow it ("48 kHz", "port 5353 answer"), and word order varies
    between writers: the nearest word on either side meets, and another word around it or a third in
    the two facts says it is the same thing."""
    source = "The mixer ran hot, so lower the rate: 44 kHz is plenty for the voice channel."
    assert restated("The capture rate must 48 kHz be for every channel.", "48", "44", source) == (
        "The capture rate must 44 kHz be for every channel."
    )
    moved = "The default port collided with the printer daemon, answer on 6060 by default from today."
    assert restated(
        "The daemon should on TCP port 5353 answer, with a --port flag.", "5353", "6060", moved
    ) == ("The daemon should on TCP port 6060 answer, with a --port flag.")
    # the same unit, but the clause stating each number names its own thing
    sampled = "The mixer ran hot, so the sample rate goes lower: 44 kHz is plenty."
    assert restated("The capture rate must 48 kHz be for every channel.", "48", "44", sampled) is None
    assert (
        restated(
            "The public API times out after 30 seconds.",
            "30",
            "60",
            "The admin API times out after 60 seconds now.",
        )
        is None
    )
    assert (
        restated(
            "Workers retry 3 times before giving up.",
            "3",
            "5",
            "The deploy script now waits 5 seconds between retries.",
        )
        is None
    )


def test_a_host_inside_a_changed_setting_is_handed_on() -> None:
    """`ProxyJump=bastion.lab.example.org` -> `ProxyJump=ops@gate.lab.example.org:2200`: the fact that
    names the bastion in prose gets the new host too."""
    old = "`group_vars/all.yml`: `ssh_args: '-o ProxyJump=bastion.lab.example.org'`."
    new = "`group_vars/all.yml`: `ssh_args: '-o ProxyJump=ops@gate.lab.example.org:2200'`."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert decision.action == "update" and decision.values is not None, decision.reason
    assert carried_pairs(*decision.values) == [("bastion.lab.example.org", "gate.lab.example.org")]
    assert carried_pairs("timeout=30", "timeout=60") == []


def test_a_host_retired_by_its_first_label_is_superseded_and_handed_on() -> None:
    """ "moved from ledger-db to pgx-2.acct.internal" names the old host by its first label."""
    new = "The accounting db moved from ledger-db to pgx-2.acct.internal:5432, no pooler anymore."
    old = "The accounting db is ledger-db.acct.internal:6432 behind the pooler."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == (
        "update",
        ("ledger-db.acct.internal", "pgx-2.acct.internal"),
    )
    assert decision.rewrite is None  # the old fact's pooler went with its host
    # another host of the same domain is not named by that label
    other = decide(new, [Neighbour("old", "Reports read from ledger-ro.acct.internal.", 0.6)])
    assert other.action != "update", other.reason


def test_a_person_who_took_over_a_role_replaces_the_former_holder_in_a_summary_s_clause() -> None:
    old = "Summary: invoices go out on the 1st; VAT questions go to Henrike Solberg per the owners page."
    new = "Anton Varga has graciously taken over the VAT filings, so from now on VAT things go to him."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == ("update", ("Henrike Solberg", "Anton Varga")), (
        decision.reason
    )
    assert decision.rewrite == old.replace("Henrike Solberg", "Anton Varga")
    # a role over another thing stays with its holder
    unrelated = decide(new, [Neighbour("old", "Henrike Solberg owns the shipping labels.", 0.6)])
    assert unrelated.action != "update", unrelated.reason


def test_a_correction_naming_another_thing_after_the_same_noun_supersedes_the_old_one() -> None:
    """ "… bucket cn-archive-b2 now" after "… to the bucket harbour-archive": the noun says what the
    names are, a word of the subject ("restic") says it is the same thing."""
    old = "Restic backups run nightly at 01:00 to the bucket harbour-archive (eu-west-2)."
    new = "Restic target is B2 now: bucket cn-archive-b2, endpoint s3.eu-central-003.backblazeb2.com."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == ("update", ("harbour-archive", "cn-archive-b2")), (
        decision.reason
    )
    # another subject's bucket stays
    other = decide(
        "Uploads go to bucket media-prod-2 now.",
        [Neighbour("old", "Thumbnails are written to bucket thumbs-prod.", 0.6)],
    )
    assert other.action != "update", other.reason


@pytest.mark.parametrize(
    ("old", "new", "values"),
    [
        (
            "`io.ktor.server` is left at 2.3.7 in `build.gradle.kts`; nothing else changes.",
            "Ktor server goes to 2.3.12, Kotlin with it to 1.9.24.",
            ("2.3.7", "2.3.12"),
        ),
        (
            "Pin redis-py 4.6.0, 5.0 broke our sentinel setup.",
            "Upstream fixed the sentinel bug in 5.0.4 -> go to 5.0.4 and drop the pin.",
            ("4.6.0", "5.0.4"),
        ),
    ],
)
def test_a_value_said_to_go_to_another_is_a_correction(old: str, new: str, values: tuple[str, str]) -> None:
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == ("update", values), decision.reason


def test_questions_that_go_to_a_channel_change_no_value() -> None:
    old = "Summary: handlers on nodejs20.x with 512 MB, SDK v3."
    new = "Summary: the redrive job runs on a `rate(15 minutes)` schedule; alarms go to `#team-oncall`."
    assert decide(new, [Neighbour("old", old, 0.6)]).action != "update"


def test_a_host_said_gone_by_its_first_label_retires_its_urls_and_hands_on_the_new_host() -> None:
    new = (
        "Staging lives on Render now: https://quill-staging.onrender.com, the old api-stg subdomain is gone."
    )
    old = "Staging API is https://api-stg.quill.app, creds are in the vault under quill-staging."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == (
        "update",
        ("api-stg.quill.app", "quill-staging.onrender.com"),
    )
    assert decide(new, [Neighbour("old", "Production API is https://api.quill.app.", 0.6)]).action != "update"


def test_a_build_target_renamed_after_the_same_noun_supersedes_the_old_one() -> None:
    """A compound's part is no word of its own: "the billing svc" and "Pay-billing svc" name one thing."""
    new = "Heads up: the billing svc got renamed, it's pay_ledger now, tgt //services/pay_ledger:PayLedger."
    old = "Pay-billing svc tgt = //services/pay_billing:PayBilling."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert decision.action == "update" and decision.values is not None, decision.reason
    assert decision.values[1] == "//services/pay_ledger:payledger"


def test_a_thing_said_to_be_with_a_person_now_hands_the_role_over() -> None:
    new = "The signing keys are now with Maren Holt, Bo moved to the web team."
    old = "Bo Lindgren owns the signing keys for the release builds."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == ("update", ("Bo Lindgren", "Maren Holt")), decision.reason


def test_a_thing_given_a_new_address_keeps_what_else_the_old_fact_said() -> None:
    """ "images now come from <registry path>" after "… container images come from gcr.io/acme-prod":
    one thing has one address; the region and the state bucket the old fact also states still hold,
    and the move is handed on to the other facts naming the old address."""
    old = "Decisions: region europe-west4, state in gs://acme-state, and container images come from gcr.io/acme-prod."
    new = "Summary: images now come from `europe-west4-docker.pkg.dev/acme-prod/services`."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert decision.values == ("gcr.io/acme-prod", "europe-west4-docker.pkg.dev/acme-prod/services")
    assert decision.rewrite == old.replace(
        "gcr.io/acme-prod", "europe-west4-docker.pkg.dev/acme-prod/services"
    )
    assert restated("CI pushes to gcr.io/acme-prod on merge.", *decision.values, new) == (
        "CI pushes to europe-west4-docker.pkg.dev/acme-prod/services on merge."
    )


# --- a new value is written as it is ---------------------------------------------------------------------

from bli_memory.door.librarian.reconcile import _replaced  # noqa: E402


@pytest.mark.parametrize("after", [r"D:\ci\logs", r"E:\agent\new", r"\\nas\builds\g<0>"])
def test_a_value_holding_backslashes_replaces_the_old_one_as_written(after: str) -> None:
    """The new value was read as a replacement template: "\\l" raised, "\\n" became a line break."""
    old = r"The runner keeps its logs in C:\runner\logs and uploads them nightly."
    assert _replaced(old, r"C:\runner\logs", after) == old.replace(r"C:\runner\logs", after)


def test_a_rewrite_never_gives_one_release_what_another_one_has() -> None:
    """p: "DBR 16.4 LTS ships Spark 3.5.2" became "DBR 16.4 LTS ships Spark 4.0.0" after "17.3 LTS is
    Spark 4.0.0": the old fact, rewritten, would still name 16.4 where the new one names 17.3."""
    old = "DBR 16.4 LTS ships Spark 3.5.2, so we compile against that and keep it `Provided`."
    decision = decide(
        "17.3 LTS is Spark 4.0.0 on Scala 2.13, so that headache goes away.", [Neighbour("old", old, 0.6)]
    )
    assert decision.rewrite is None, decision.rewrite
    assert (decision.action, decision.target_id) == ("update", "old")  # replaced whole, not corrupted


from bli_memory.door.librarian.reconcile import _mixes_versions  # noqa: E402


def test_a_version_that_ends_its_sentence_is_read_too() -> None:
    """ "… allow DBR 17.3." was no version to the check (a full stop after it hid it): the rewrite
    naming DBR 16.4 beside it went through."""
    assert _mixes_versions(
        "DBR 16.4 ships Spark 4.0.0 for the nightly job.", "Job clusters only allow DBR 17.3."
    )
    assert not _mixes_versions(
        "DBR 17.3 ships Spark 4.0.0 for the nightly job.", "Job clusters only allow DBR 17.3."
    )


def test_a_range_the_new_value_closes_on_itself_names_that_value_alone() -> None:
    """ "`>=4.2,<4.3`" with 4.2 -> 4.3 would read `>=4.3,<4.3`, a range that allows nothing: the rest
    of the old fact is kept and the range becomes the pin it now is."""
    old = (
        "Put the rules into `CONTRIBUTING.md` so newcomers see them: pdm only (`pdm add` / `pdm add -dG "
        "test`), Django stays inside `>=4.2,<4.3` until we decide otherwise, pytest functions only."
    )
    new = "`CONTRIBUTING.md` still said the old Django range; updated it to the 4.3 LTS pin."
    decision = decide(new, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.values) == ("update", ("4.2", "4.3")), decision.reason
    assert decision.rewrite == old.replace("`>=4.2,<4.3`", "`4.3`")
    # a range the new value leaves open stays a range
    assert _replaced("Django stays inside `>=4.2,<5.0`.", "4.2", "4.3") == (
        "Django stays inside `>=4.3,<5.0`."
    )

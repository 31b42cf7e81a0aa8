"""The profile's facts are chosen by what lasts (`MemoryService.profile` over the real door)."""

from __future__ import annotations

from bli_memory.door.service.profile import PROFILE_BRIEFING_COUNT, PROFILE_BRIEFING_MAX_CHARS
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
#: distinct names, so that the rules made of them are not near-identical facts of one another.
NAMES = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar "
    "papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
).split()
#: more names than a briefing holds facts: NAMES, then each of them again with a suffix of its own.
MANY_NAMES = [*NAMES, *(f"{name}x" for name in NAMES)]
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
    assert dynamic == [DECISION, CONVENTION, STANDING]  # an edit's report is not a lasting fact
    recent = [row["content"] for row in answer["recent"]]
    assert not set(NOISE) & set(dynamic + recent)
    assert recent == EDITS[::-1]  # the newest facts in force


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
    newer = [
        "Receipt documents use WeasyPrint.",
        "Receipt emails use Postmark.",
        "Receipt numbers use a Postgres sequence.",
    ]
    for content in newer:
        save(door, tag, content, exchange="x_newer")
    status, answer = door.post("/api/memory/v4/profile", {"containerTag": tag})
    assert status == 200
    assert answer["profile"]["dynamic"] == [newer[2], newer[1], older, newer[0]]


def test_the_briefing_shows_the_version_in_force_and_a_fact_once(door: DoorProcess, tag: str) -> None:
    for content in [
        "`go.work` pins Terraform `1.7.5` for every stack.",
        "Who to ask: the AWS account and IAM roles are owned by Jon Berg (platform); ping #infra.",
        "Which queue does mail use? The mailer runs on the `mail` queue, never on `default`.",
        "We need the new provider API, go to Terraform 1.8.2.",
        "Ownership: the AWS account and IAM roles are owned by Mei Chen (platform).",
    ]:
        save(door, tag, content)
    status, answer = door.post("/api/memory/v4/profile", {"containerTag": tag})
    assert status == 200
    block = answer["profile"]["dynamic"] + [row["content"] for row in answer["recent"]]
    assert answer["profile"]["dynamic"] == [
        "Ownership: the AWS account and IAM roles are owned by Mei Chen (platform).",
        "We need the new provider API, go to Terraform 1.8.2.",
        "The mailer runs on the `mail` queue, never on `default`.",
    ]
    assert not any("1.7.5" in line or "Jon Berg" in line or "?" in line for line in block)


def test_a_report_of_an_edit_never_hides_the_decision_it_carried_out(door: DoorProcess, tag: str) -> None:
    decision = "We decided to move the Terraform state off S3 and onto Terraform Cloud workspaces."
    save(door, tag, decision)
    save(
        door, tag, "`backend.tf`: the `s3` backend is now a `cloud` block for the Terraform Cloud workspaces."
    )
    status, answer = door.post("/api/memory/v4/profile", {"containerTag": tag})
    assert status == 200
    assert answer["profile"]["dynamic"][0] == decision


def test_the_briefing_keeps_to_its_budget_most_lasting_first(door: DoorProcess, tag: str) -> None:
    rules = [
        f"Module {n}1 never imports {n}2 or {n}3 from {n}4 and {n}5, because the build of {n}6 and {n}7 "
        f"must stay apart from {n}8, {n}9 and the {n}10 bundle."
        for n in MANY_NAMES
    ]
    for rule in rules:
        save(door, tag, rule)
    decision = "We decided that every service owns its own schema, from now on."
    save(door, tag, decision)
    status, answer = door.post("/api/memory/v4/profile", {"containerTag": tag})
    assert status == 200
    dynamic = answer["profile"]["dynamic"]
    assert dynamic[0] == decision
    assert len(dynamic) < PROFILE_BRIEFING_COUNT  # the characters run out first
    used = sum(len(line) for line in dynamic)
    assert used <= PROFILE_BRIEFING_MAX_CHARS < used + len(rules[0])


def test_among_facts_alike_those_naming_a_thing_come_first(door: DoorProcess, tag: str) -> None:
    named = [
        "The staging database runs on pg-staging-02 in the lhr region.",
        "Steam builds upload from the lf-build01 runner.",
    ]
    plain = [
        "The scheduled run checks out the main branch like a push does.",
        "The nightly report mails the support team a summary of failed payments.",
        "The retry worker gives up after the third attempt and logs a warning.",
    ]
    for content in named + plain:  # the facts that name nothing are the newest
        save(door, tag, content)
    status, answer = door.post("/api/memory/v4/profile", {"containerTag": tag})
    assert status == 200
    assert answer["profile"]["dynamic"] == named[::-1] + plain[::-1]  # then newest first


def test_a_query_finds_only_the_fact_in_force(door: DoorProcess, tag: str) -> None:
    save(
        door, tag, "Who to ask: the AWS account and IAM roles are owned by Jon Berg (platform); ping #infra."
    )
    newer = "Ownership: the AWS account and IAM roles are owned by Mei Chen (platform)."
    save(door, tag, newer)
    status, answer = door.post(
        "/api/memory/v4/profile", {"containerTag": tag, "q": "who owns the AWS account"}
    )
    assert status == 200
    assert answer["profile"]["dynamic"] == [newer]


#: words of their own for each fact of a full briefing, so that none restates another.
WORDS = (
    "apple basin candle dagger ember falcon garnet harbor island jasper kettle lantern meadow nectar "
    "orchard pepper quarry ribbon saddle timber umber velvet walnut yarrow zephyr anchor beacon cinder "
    "drift estuary fjord glacier hollow inlet juniper kelp lagoon marsh nettle oyster prairie quartz reef "
    "sorrel tundra upland valley willow yucca zinnia acorn bramble cedar dune elm fern gorse heath ivy "
    "larch maple poplar alder birch clover daisy fennel ginger hazel iris jasmine kale lilac mango "
    "nutmeg olive parsley quince rosemary saffron thyme vanilla wasabi"
).split()


def test_a_full_briefing_chooses_decisions_then_the_facts_naming_more_things(
    door: DoorProcess, tag: str
) -> None:
    decision = "We decided that every service owns its own schema, from now on."  # names nothing
    two_named = "The omega1 worker keeps its queue apart from the omega2 package."
    one_named = [
        f"The {name}1 service writes {WORDS[2 * index]} logs to the {WORDS[2 * index + 1]} volume."
        for index, name in enumerate(MANY_NAMES[: PROFILE_BRIEFING_COUNT + 1])
    ]
    assert len(one_named) > PROFILE_BRIEFING_COUNT
    for content in [decision, two_named, *one_named]:  # the two chosen first are the oldest
        save(door, tag, content)
    status, answer = door.post("/api/memory/v4/profile", {"containerTag": tag})
    assert status == 200
    newest = one_named[::-1][: PROFILE_BRIEFING_COUNT - 2]
    assert answer["profile"]["dynamic"] == [decision, two_named, *newest]


def test_the_briefing_shows_what_it_chose_most_lasting_first(door: DoorProcess, tag: str) -> None:
    rule = "Deploys must go through the deploy01 runner."  # a standing order naming one thing
    two_named = "The omega1 worker keeps its queue apart from the omega2 package."  # how things are
    for content in [rule, two_named]:
        save(door, tag, content)
    status, answer = door.post("/api/memory/v4/profile", {"containerTag": tag})
    assert status == 200
    assert answer["profile"]["dynamic"] == [rule, two_named]  # chosen the other way round

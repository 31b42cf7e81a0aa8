"""Answer kinds: what a question asks for (`answer_kind.asked`), what a memory holds
(`answer_kind.held_share`), and the lift search gives a fact that holds it
(`ranking.lift_answer_kinds`, then through the real memories with the packaged model)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bli_memory.door import answer_kind, ranking
from bli_memory.door.embed import NoneEmbedder, load_embedder
from bli_memory.door.model import MAX_CONTENT_CHARS, now_s
from tests.door.helpers import device_principal, open_memories


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("which release of the HTTP client are we pinned to?", {"version"}),
        ("what version range of the ORM is allowed?", {"version", "range"}),
        ("who approves changes to the billing code?", {"person"}),
        ("where do the nightly backups go?", {"where"}),
        ("where is the staging endpoint?", {"address"}),  # names which place: that one only
        ("where are the fixtures kept?", {"where"}),
        ("which folder holds the generated protobuf stubs?", {"path"}),
        ("what's the URL of the status page?", {"address"}),
        ("which local port does the admin UI use?", {"port"}),
        ("what flag makes the linter fix files in place?", {"flag"}),
        ("what's the command to seed the dev database?", {"command"}),
        ("is there a ticket for the flaky upload test?", {"ticket"}),
        ("what's the name of the staging cluster?", {"name"}),
        ("how should I name test methods?", set()),  # the verb
        ("what are the rules for naming branches?", {"rule"}),
        ("which lint rule enforces the import order?", set()),  # a rule as a thing, not a convention
        ("how many replicas does the queue run?", {"number"}),
        ("which advisory lock number is taken?", {"number"}),
        ("why did the deploy job time out?", {"reason"}),
        ("what time does the cleanup cron run?", {"time"}),
        ("when did we move to the new region?", {"time"}),
        # a condition, not a date; a mention of a file, not a request for one
        ("when does the consumer commit its offsets?", set()),
        ("how should I name a new migration file?", set()),
        ("We use pnpm in this repo.", set()),
        # a wh-word asks only where it opens a question, not as a relative or a time clause
        ("how do I mock a module whose factory needs an outer variable?", set()),
        ("what rounding mode applies when interest is booked?", set()),
        ("how do I refresh the SDK types when the server contract changes?", set()),
        ("the folder where uploads land, is it backed up?", set()),
        ("do you know who reviews the fee code?", {"person"}),
        ("According to the runbook, who approves a prod deploy?", {"person"}),
        ("to whom do I send the invoice?", {"person"}),
        ("since when is the cache on?", {"time"}),
        ("and where do the logs go?", {"where"}),
        # "release" as a moment, "policy for" as a thing: no version, no rule asked
        ("what caused the latency regression in the last release?", {"reason"}),
        ("what's the node version?", {"version"}),
        ("tell me the version of pydantic", {"version"}),
        ("where is the trust policy for the deploy role defined?", {"where"}),
        ("which ingress rules for the cluster exist?", set()),
        ("what is our policy on force pushes?", {"rule"}),
        ("naming conventions for tests?", {"rule"}),
    ],
)
def test_a_question_asks_for_the_kinds_its_wording_names(question: str, kinds: set[str]) -> None:
    assert answer_kind.asked(question) == kinds


@pytest.mark.parametrize(
    ("text", "kind", "held"),
    [
        ("`httpx` is pinned to 0.27.2 in `requirements.txt`.", "version", True),
        ("Node is `>=20.12 <21` in `package.json`.", "version", True),
        ("The old subnet 10.20.0.0/16 is gone.", "version", False),  # an address range, not a version
        ("The suite ran in 4.87s.", "version", False),  # a duration
        ("The fee code is owned by @billing-core; Marta leads it.", "person", True),
        ("Marta's tests pass now.", "person", False),  # a sentence's first word is no evidence
        ("`FontCache` objects leak.", "person", False),
        ("Deploys need a signed tag from the release manager.", "person", True),  # a role
        ("We celebrate birthdays with cake on Fridays.", "person", False),  # a weekday is no one
        ("Stubs are generated into `gen/proto/v1/`.", "path", True),
        ("Lint settings live in `.golangci.yml`.", "path", True),
        ("In Next.js 14 the route is static.", "path", False),
        ("The status page is https://status.example.dev now.", "address", True),
        ("The status page moved to status.example.dev.", "address", True),
        ("State is in `s3://tf-state/network.tfstate`.", "address", False),  # a place, not an address
        ("State is in s3://tf-state/network.tfstate now.", "where", True),
        ("The admin UI came up on http://localhost:8081/admin.", "port", True),
        ("Log in with `argocd login --sso`.", "flag", True),
        ("Run `make seed` before the tests.", "command", True),
        ("The `timeout` argument is new.", "command", False),
        ("Allowed versions are `<3.0`.", "range", True),
        ("Left a TODO with OPS-77 so we can unpin later.", "ticket", True),
        ("Tracked in #412.", "ticket", True),
        ("The cluster is eks-staging-euw2.", "name", True),
        ("Rounding uses HALF_UP.", "name", True),
        ("The cluster runs in the west.", "name", False),
        ("From now on every new migration must be reversible.", "rule", True),
        ("The migration drops the index, then the table.", "rule", False),
        # a question the memory restates lays down no rule
        ("Who should review the fee code? CODEOWNERS maps it to @fin-eng.", "rule", False),
        ("Should it be reversible? Yes: every migration must be.", "rule", True),
        ("The job timed out because the runner had 2 GB.", "reason", True),
        ("The runner has 2 GB.", "reason", False),
        ("The cleanup cron runs at 03:15 UTC.", "time", True),
        ("You may need to restart it.", "time", False),  # "may", the verb
        ("We moved in May.", "time", True),
    ],
)
def test_a_memory_holds_a_kind_by_its_strings(text: str, kind: str, held: bool) -> None:
    assert answer_kind.held_share(text, frozenset({kind})) == (1.0 if held else 0.0)


def test_the_held_share_is_the_fraction_of_asked_kinds() -> None:
    asked = answer_kind.asked("which version range of the search client is allowed?")
    assert answer_kind.held_share("`opensearch-py>=2.4,<2.6` in `pyproject.toml`", asked) == 1.0
    assert answer_kind.held_share("The node subnet is 10.42.0.0/16.", asked) == 0.5
    assert answer_kind.held_share("anything", frozenset()) == 0.0


def test_lift_multiplies_the_scores_of_memories_holding_the_asked_kind() -> None:
    scores = {"cause": 1.0, "pin": 0.8, "exchange": 0.9}
    texts = {"cause": "2.8 changed the serializer, so amounts broke", "pin": "pydantic is pinned to 2.7.4"}
    lifted = ranking.lift_answer_kinds(scores, texts, "which version of pydantic do we pin?", boost=1.0)
    # both facts hold a version; the exchange (not in `texts`) keeps its score
    assert lifted == {"cause": 2.0, "pin": 1.6, "exchange": 0.9}
    lifted = ranking.lift_answer_kinds(scores, texts, "who pinned pydantic?", boost=0.5)
    assert lifted == scores  # neither names a person
    assert ranking.lift_answer_kinds(scores, texts, "pydantic pin", boost=1.0) == scores  # nothing asked


def test_search_puts_the_fact_holding_the_asked_version_above_its_neighbour(tmp_path: Path) -> None:
    embedder, reason = load_embedder("onnx", env={})
    assert reason is None, reason
    memories = open_memories(tmp_path / "memory.db", embedder)
    try:
        principal = device_principal(memories)
        cause = "The HTTP client broke the webhook tests when it dropped the app argument in its new release."
        pin = "The HTTP client `httpx` is pinned to 0.27.2 in requirements.txt."
        for text in (pin, cause, "Lunch is served at noon in the cafeteria."):
            memories.save(principal, "repo-a", text, created_at=now_s() - 86_400.0)
        question = "which release of the HTTP client do we use?"
        plain = memories.search(principal, "repo-a", question, weights=ranking.Weights(answer_kind=0.0))
        hits = memories.search(principal, "repo-a", question)
        assert hits[0].memory.content == pin
        score = {hit.memory.content: hit.score for hit in hits}
        before = {hit.memory.content: hit.score for hit in plain}
        assert score[pin] == pytest.approx(before[pin] * (1.0 + ranking.ANSWER_KIND_BOOST))
        assert score[cause] == pytest.approx(before[cause])  # holds no version: unchanged
    finally:
        memories.close()


#: texts that made a backtracking pattern quadratic (a 64 000-character run of "a-" took 166 s)
ADVERSARIAL = {
    "dashes": "a-" * 50_000,
    "dotted digits": "1." * 50_000,
    "dotted words": "a." * 50_000,
    "an unclosed code span of slashes": "`" + "a/" * 50_000,
    "an unclosed code span of dots": "`" + "a." * 50_000,
    "a scheme that never ends": "a+" * 50_000 + "://",
    "backticks": "`a" * 50_000,
    "digits and dashes": "1-" * 50_000,
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_every_pattern_reads_a_hostile_text_in_linear_time(name: str) -> None:
    text = ADVERSARIAL[name]
    started = time.perf_counter()
    for kind in answer_kind.KINDS:
        kind.held_by(text)  # the whole text, past the HELD_TEXT_CHARS a search reads
    # linear: about 0.1 s here for all kinds; a quadratic pattern takes minutes
    assert time.perf_counter() - started < 5.0


def test_a_question_of_many_wh_words_is_read_in_linear_time() -> None:
    started = time.perf_counter()
    assert answer_kind.asked("the job runs when " * 50_000) == frozenset()
    assert answer_kind.asked("who " * 100_000) == frozenset({"person"})
    assert answer_kind.asked("what " + "x-y " * 50_000 + "version") == frozenset()
    assert answer_kind.asked("the trust policy for " * 20_000) == frozenset()
    assert time.perf_counter() - started < 5.0


def test_a_search_over_a_hostile_memory_answers(tmp_path: Path) -> None:
    memories = open_memories(tmp_path / "memory.db", NoneEmbedder())
    try:
        principal = device_principal(memories)
        for text in ADVERSARIAL.values():
            memories.save(principal, "repo-a", text[:MAX_CONTENT_CHARS] + " release")
        started = time.perf_counter()
        hits = memories.search(principal, "repo-a", "which release is it on?", limit=5)
        assert len(hits) == 5
        assert time.perf_counter() - started < 5.0
    finally:
        memories.close()

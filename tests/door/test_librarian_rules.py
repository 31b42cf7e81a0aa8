"""The deterministic librarian's rules, one example (or a few of its like) each, and a correction that
supersedes through a real door.

Extraction: the user's decisions stay (question mark or not), questions, one-off tasks and problem
reports leave nothing; a pronoun is never guessed; facts are impersonal; code spans are kept byte for
byte; test-run reports, thanks, re-runs and general-knowledge answers leave nothing. Reconciliation: a
new value of the same subject, or a correction, updates the old memory.
"""

from __future__ import annotations

import pytest

from bli_memory.door.librarian import Neighbour, decide, extract_facts
from tests.helpers import DoorProcess

# --- the user's turn --------------------------------------------------------------------------------


def test_a_decision_inside_a_request_is_kept_with_its_question_mark_dropped() -> None:
    facts = extract_facts(
        "User: We decided to stop using Celery beat for the nightly settlement job, it keeps "
        "double-firing after deploys. Can you move the schedule into the worker with APScheduler "
        "instead?\n\nAssistant: Done."
    )
    assert len(facts) == 1
    assert facts[0].startswith("We decided to stop using Celery beat")
    assert "Move the schedule into the worker with APScheduler instead." in facts[0]
    assert "?" not in facts[0]


@pytest.mark.parametrize(
    ("prompt", "kept"),
    [
        ("Can you switch the logger to structlog instead?", "Switch the logger to structlog instead."),
        ("From now on, name migrations with the ticket first. Can you fix mine?", "From now on"),
        ("Please don't use unwrap() in non-test code anymore.", "Don't use unwrap() in non-test code"),
        ("I prefer named exports everywhere. Fix the Button while you're at it.", "I prefer named exports"),
        # dropping a tool is a decision, whatever the complaint beside it
        ("I'm done with Webpack, the config breaks on every upgrade.", "I'm done with Webpack"),
        # a kind of problem as the subject of how it is handled is a convention, not a problem report
        ("errors go through app::Outcome (thiserror underneath).", "Errors go through app::Outcome"),
        ("failures are reported via `Sentry.capture` in the worker.", "Failures are reported via"),
    ],
)
def test_decisions_and_conventions_of_the_user_are_kept(prompt: str, kept: str) -> None:
    facts = extract_facts(f"User: {prompt}\n\nAssistant: Done.")
    assert any(kept in fact for fact in facts), facts
    assert not any("Fix" in fact or "fix mine" in fact for fact in facts)


@pytest.mark.parametrize(
    "prompt",
    [
        "Where does the gateway get its ClickHouse credentials in prod?",
        "test_refund_webhook keeps failing on CI but never locally. can you figure out why",
        "The release workflow failed on the macOS job again.",
        "errors in `app::Error` show up twice in the log since the upgrade.",
        "Update `.nvmrc`, the engines field and CI.",
    ],
)
def test_questions_problem_reports_and_one_off_tasks_of_the_user_leave_nothing(prompt: str) -> None:
    assert extract_facts(f"User: {prompt}\n\nAssistant: Done.") == []


def test_a_correction_keeps_a_word_saying_so() -> None:
    facts = extract_facts(
        "User: actually, staging moved last sprint: the API is at https://api.stg.example.dev now. "
        "Can you update the Postman environment?\n\nAssistant: Updated."
    )
    assert facts == ["Correction: staging moved last sprint: the API is at https://api.stg.example.dev now."]


# --- pronouns -------------------------------------------------------------------------------------


def test_an_object_pronoun_after_a_code_block_is_dropped_not_guessed() -> None:
    facts = extract_facts(
        "Assistant: CI runs with `.env.ci`, which sets `STRIPE_WEBHOOK_TOLERANCE=5`. Locally the gap is "
        "under a second.\n\n```\n$ grep -rn TOLERANCE .env*\n.env.ci:14:STRIPE_WEBHOOK_TOLERANCE=5\n```\n\n"
        "I set it to 300 in `.env.ci` to match production."
    )
    assert "CI runs with `.env.ci`, which sets `STRIPE_WEBHOOK_TOLERANCE=5`." in facts
    assert not any("gap to 300" in fact or "Locally the gap" in fact for fact in facts)
    assert not any("300" in fact for fact in facts)  # what "it" was is not certain: no fact


def test_an_object_pronoun_joins_the_sentence_that_names_it_in_its_own_words() -> None:
    facts = extract_facts(
        "Assistant: The login test sets a cookie. The session cookie used `SameSite=Strict`. "
        "I changed it to `SameSite=Lax`."
    )
    assert "The session cookie used `SameSite=Strict`; changed it to `SameSite=Lax`." in facts
    assert not any("login test to" in fact for fact in facts)


def test_a_pronoun_after_a_noun_of_its_own_sentence_keeps_its_words() -> None:
    facts = extract_facts("Assistant: The receipts task renders PDFs with `WeasyPrint`, and it leaks fonts.")
    assert facts == ["The receipts task renders PDFs with `WeasyPrint`, and it leaks fonts."]


@pytest.mark.parametrize(
    ("reply", "fact"),
    [
        (
            "Run `make docs`. It renders the site into `site/build/` with mkdocs.\n\n"
            "Don't commit that folder: CI rebuilds it on every push.",
            "Don't commit `site/build/`: CI rebuilds it on every push.",
        ),
        (
            "Settings are read from `config/app.toml` at start. The loader watches that file, so an edit "
            "applies without a restart.",
            "The loader watches `config/app.toml`, so an edit applies without a restart.",
        ),
    ],
)
def test_that_folder_or_file_becomes_the_one_the_sentence_before_names(reply: str, fact: str) -> None:
    assert fact in extract_facts(f"Assistant: {reply}")


@pytest.mark.parametrize(
    "reply",
    [
        # two folders before it: which one is not certain
        "The build copies `assets/` into `dist/` with `cpy`.\n\nDon't edit that folder by hand, ever.",
        # a URL ending in a slash is no folder
        "The spec is served at `https://api.example.dev/v1/`.\n\nDon't edit that folder by hand, ever.",
    ],
)
def test_that_folder_is_left_alone_when_the_sentence_before_names_none_or_two(reply: str) -> None:
    facts = extract_facts(f"Assistant: {reply}")
    assert not any(fact.startswith("Don't edit `") for fact in facts)


def test_that_file_starting_a_compound_is_no_pointer() -> None:
    """ "that file permissions": "that" joins a clause and "file" starts a compound; the one file
    named before is not what it means, so the words stay (here joined to the sentence before)."""
    facts = extract_facts(
        "Assistant: The settings live in `config/app.toml`. Check that file permissions are 0600 before "
        "you deploy."
    )
    assert not any("`config/app.toml` permissions" in fact for fact in facts)


# --- the assistant's voice ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "fact"),
    [
        (
            "I pinned `dramatiq==1.17.0` in `requirements.txt`.",
            "`dramatiq==1.17.0` is pinned in `requirements.txt`.",
        ),
        ('I set `rust-version = "1.75"` in `Cargo.toml`.', '`rust-version = "1.75"` is set in `Cargo.toml`.'),
        (
            "I also changed the fixture to sign lazily with `sign()`.",
            "Changed the fixture to sign lazily with `sign()`.",
        ),
    ],
)
def test_facts_are_impersonal(said: str, fact: str) -> None:
    assert extract_facts(f"Assistant: {said}") == [fact]


def test_a_reported_list_of_actions_is_one_fact_per_action() -> None:
    facts = extract_facts(
        'Assistant: Set `rust-version = "1.74"` in `Cargo.toml`, set the MSRV channel in '
        "`rust-toolchain.toml` to 1.74.1, and bumped `clap` to 4.5.4."
    )
    assert facts == [
        '`rust-version = "1.74"` is set in `Cargo.toml`.',
        "Set the MSRV channel in `rust-toolchain.toml` to 1.74.1.",
        "`clap` is bumped to 4.5.4.",
    ]


@pytest.mark.parametrize(
    "span",
    ["`V49__account_currency_not_null.sql`", "`__mocks__/fileMock.js`", "`app/**/page.tsx`", "`**kwargs`"],
)
def test_code_spans_are_kept_byte_for_byte(span: str) -> None:
    facts = extract_facts(f"Assistant: The migration lives in {span} since version 2.")
    assert len(facts) == 1 and span in facts[0]


# --- what leaves nothing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "Ran `pytest tests/webhooks -q`:\n\n```\n..............................   [100%]\n30 passed in 4.87s\n```\n\n"
        "All 30 webhook tests pass.",
        "`cargo test` passes on 1.75.0 and on stable.",
        "`go test ./...` and `make lint` pass.",
        "`cargo clippy --all-targets -- -D warnings` is clean.",
        "I ran `uv lock`, and the indexer tests pass (27).",
    ],
)
def test_test_run_reports_leave_nothing(reply: str) -> None:
    assert extract_facts(f"User: check it\n\nAssistant: {reply}") == []


@pytest.mark.parametrize(
    "text",
    [
        "User: run the webhook tests once more\n\nAssistant: All green. `pytest` uses `pytest.ini` in the root.",
        "User: Thanks, that's perfect!\n\nAssistant: Glad it helped. The cache lives in `/var/cache/app`.",
        "User: quick question: what's the difference between useMemo and useCallback?\n\nAssistant: "
        "`useMemo` caches the result of a function call between renders. `useCallback` caches the function "
        "itself; `useCallback(fn, deps)` is the same as `useMemo(() => fn, deps)`.",
    ],
)
def test_re_runs_thanks_and_general_knowledge_leave_nothing(text: str) -> None:
    assert extract_facts(text) == []


def test_a_question_about_the_project_answered_with_its_files_is_kept_with_the_question() -> None:
    facts = extract_facts(
        "User: How do I regenerate the API client after the spec changes?\n\n"
        "Assistant: Run `pnpm gen:api`; I checked that it writes into `src/lib/api/generated/`."
    )
    assert facts and facts[0].startswith("How do I regenerate the API client after the spec changes? Run")


def test_moment_bound_reports_leave_nothing() -> None:
    text = (
        "User: there's a typo on the settings page\n\nAssistant: Fixed: `src/app/settings/page.tsx` line 57 "
        "now reads fine. I searched the repo with `rg -i recieve`: no other hits in source."
    )
    assert extract_facts(text) == []


# --- reconciliation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fact", "old"),
    [
        (
            "We're moving the console to Node 20, 20.12 specifically.",
            "CI keeps running on Node 18 via `setup-node`.",
        ),
        (
            "`internal/consume/consumer.go`: the default topic is now `events.raw.v3`.",
            "The consumer reads `events.raw.v2`.",
        ),
        ('`Cargo.toml`: `rust-version = "1.75"`.', '`rust-version = "1.74"` is set in `Cargo.toml`.'),
        (
            "Correction: change of plan on the MSRV: we need async fn in traits, so it's 1.75, not what we set.",
            "We agreed to bump the MSRV to 1.74 so we can use the new clap.",
        ),
        (
            "Retries back off for 30 seconds between attempts on the queue.",
            "Between attempts on the queue, retries back off for 5 seconds.",
        ),
    ],
)
def test_a_new_value_of_the_same_subject_updates_the_old_memory(fact: str, old: str) -> None:
    decision = decide(fact, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.target_id) == ("update", "old"), decision.reason


@pytest.mark.parametrize(
    ("fact", "old"),
    [
        (
            "Correction: the staging API is at https://api.stg.example.dev now.",
            "The API came up on http://localhost:8040/docs.",
        ),
        (
            '`package.json`: `"test": "vitest run"`.',
            '`package.json`: `"packageManager": "pnpm@9.1.4"`.',
        ),
        (
            "`pydantic==2.7.4` is pinned in `requirements.in`.",
            "`requirements.in`: added `apscheduler==3.10.4`.",
        ),
        ("`clap` is bumped to 4.5.4.", "We agreed to bump the MSRV to 1.74."),
    ],
)
def test_another_subject_is_not_updated(fact: str, old: str) -> None:
    assert decide(fact, [Neighbour("old", old, 0.6)]).action == "add"


# --- through a real door ---------------------------------------------------------------------------


def _save(door: DoorProcess, tag: str, content: str) -> str:
    status, body = door.post("/api/memory/save", {"content": content, "containerTag": tag, "extract": True})
    assert status == 202, body
    return str(body["jobId"])


def test_a_correction_supersedes_through_a_real_door(door_onnx: DoorProcess, tag: str) -> None:
    first = door_onnx.wait_job(
        _save(
            door_onnx,
            tag,
            "User: We agreed to bump the MSRV to 1.74 so we can use the new clap. Update whatever needs it."
            '\n\nAssistant: Set `rust-version = "1.74"` in `Cargo.toml`.',
        ),
    )
    assert first["status"] == "done" and first["outcome"]["added"] == 2
    second = door_onnx.wait_job(
        _save(
            door_onnx,
            tag,
            "User: Change of plan on the MSRV: we need async fn in traits, so it's 1.75, not what we set "
            'last week. Redo it.\n\nAssistant: Updated:\n\n- `Cargo.toml`: `rust-version = "1.75"`',
        ),
    )
    assert second["status"] == "done" and second["outcome"]["updated"] == 2, second
    status, body = door_onnx.post(
        "/api/memory/search", {"q": "minimum supported Rust version MSRV", "containerTag": tag, "limit": 10}
    )
    assert status == 200, body
    contents = [row["content"] for row in body["results"] if row.get("kind", "memory") == "memory"]
    assert any("1.75" in content for content in contents)
    assert not any("1.74" in content for content in contents), contents
    histories = []
    for row in body["results"]:
        status, history = door_onnx.get(f"/api/memory/{row['id']}/history")
        assert status == 200
        histories.append([version["content"] for version in history["versions"]])
    assert ["We agreed to bump the MSRV to 1.74 so we can use the new clap."] in [h[:1] for h in histories]
    assert ['`rust-version = "1.74"` is set in `Cargo.toml`.'] in [h[:1] for h in histories]


def test_an_old_memory_saying_more_keeps_the_rest_with_the_new_value() -> None:
    old = (
        "`payments/worker.py` now takes `pg_try_advisory_lock(7301)` before the settlement job runs, "
        "and `requirements.in` pins `zq-broker==4.2.7`."
    )
    decision = decide("`requirements.in` now pins `zq-broker==5.0.1`.", [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.target_id) == ("update", "old")
    assert decision.rewrite == old.replace("4.2.7", "5.0.1")


def test_an_old_memory_saying_nothing_else_is_replaced_by_the_new_fact() -> None:
    decision = decide(
        "We're moving the console to Node 20.",
        [Neighbour("old", "CI keeps running on Node 18 via `setup-node`.", 0.6)],
    )
    assert (decision.action, decision.rewrite) == ("update", None)


@pytest.mark.parametrize(
    "text",
    [
        "User: thanks, that fixed it!\n\nAssistant: Glad to hear it. The `main` branch is ready whenever you are.",
        'User: there\'s a typo on the settings page, "Recieve"\n\nAssistant: `src/settings/page.tsx` now reads '
        '"Receive"; `pnpm lint` is clean.',
        "User: should we use match or match_phrase for titles?\n\nAssistant: `match` analyses the query and "
        "matches any term; `match_phrase` requires the terms in order. I'd use `match_phrase` for titles.",
    ],
)
def test_thanks_typo_fixes_and_advice_from_general_knowledge_leave_nothing(text: str) -> None:
    assert extract_facts(text) == []


def test_a_word_about_wording_in_a_request_that_builds_something_does_not_make_it_a_typo_fix() -> None:
    """ "the exact wording comes later" names wording; the reply built a feature, and its facts stay."""
    reply = (
        "Both done on `develop`, so they are on staging to look at.\n\n**Threshold**\n\n"
        "`src/Shipping/Threshold.php` now has `public const MIN_SPEND = '80.00';` and I updated the "
        "shipping zone setting so the admin screen shows the same number:\n\n```\n"
        '$ wp wc shipping_zone_method update 1 3 --settings=\'{"min_amount":"80.00"}\'\n'
        "Success: Updated shipping_zone_method 3.\n```\n\n"
        "The same command has to run on live on Monday; the deploy only copies files.\n\n"
        "**Basket notice**\n\nA new `src/Shipping/ProgressNotice.php` shows the gap on the basket page and "
        "in the mini-basket, for EU addresses only, and hides once the basket qualifies. Its text goes "
        "through the `shop/delivery_notice` filter, so the designer's copy is a one-line change that "
        "does not touch the logic. Styling is a plain `.shop-delivery-notice` class in "
        "`assets/css/cart.css`.\n\nCaveat: the basket total is counted after coupons and before "
        "delivery, which is how the built-in free-shipping rule counts it.\n\n| Basket | Shown |\n|---|---|\n"
        '| €62.50 | "€17.50 away" |\n| €79.99 | "€0.01 away" |\n| €80.00 | no notice, free delivery |'
    )
    text = (
        "User: Our bookkeeper has been doing her sums on postage and wants the delivery cut-off raised to €80 "
        "from Monday. Could you also show a little notice in the basket? Our designer will send the exact "
        f"wording later, so anything sensible for now is fine.\n\nAssistant: {reply}"
    )
    facts = extract_facts(text)
    assert any("€80" in fact or "80.00" in fact for fact in facts), facts


def test_a_value_corrected_in_place_is_a_decision_and_a_correction() -> None:
    assert extract_facts("User: The gRPC port is 8443, not 8080. Fix the docs.\n\nAssistant: Done.") == [
        "The gRPC port is 8443, not 8080."
    ]
    assert extract_facts("Assistant: Actually, the pool limit is 20 in `config/db.toml`.") == [
        "Correction: the pool limit is 20 in `config/db.toml`."
    ]
    decision = decide("The gRPC port is 8443, not 8080.", [Neighbour("old", "The gRPC port is 8080.", 0.9)])
    assert (decision.action, decision.target_id) == ("update", "old")


def test_a_numbered_sibling_is_another_subject_not_a_new_version() -> None:
    old = "Fact 1: the build cache for service-1 lives in bucket cache-1 and expires after 1 days."
    fact = "Fact 2: the build cache for service-2 lives in bucket cache-2 and expires after 2 days."
    assert decide(fact, [Neighbour("old", old, 0.9)]).action == "add"


@pytest.mark.parametrize(
    "fact",
    [
        "We moved the API from Node 18 to Node 20.",
        "The API runs on Node 20 instead of Node 18.",
        "The API runs on Node 20, not 18.",
    ],
)
def test_a_correction_naming_the_old_value_supersedes_it(fact: str) -> None:
    decision = decide(fact, [Neighbour("old", "The API runs on Node 18.", 0.8)])
    assert (decision.action, decision.target_id) == ("update", "old"), decision.reason


def test_a_pronoun_opening_the_answer_joins_the_question_it_answers() -> None:
    facts = extract_facts(
        "User: what does the `sync` job do?\n\nAssistant: It copies rows from prod to staging every night "
        "at 02:00 UTC. It is defined in `jobs/sync.py`."
    )
    assert facts == [
        "What does the `sync` job do? It copies rows from prod to staging every night at 02:00 UTC; "
        "it is defined in `jobs/sync.py`."
    ]

"""Librarian rules for sentence shapes, each one linguistic or structural class pinned with examples of
its own (pure functions, no door): a question typed without its question mark, a tool's tally quoted
as output, a surface-only fix, the verb after a modal, a value said to hold "now", a reply that opens
with its commands, a diff that is no command, a gerund subject, a pronoun across a list of actions
and across a block of output."""

from __future__ import annotations

import pytest

from bli_memory.door.librarian import Neighbour, decide, extract_facts
from bli_memory.door.librarian.extract import _answers_from_general_knowledge
from bli_memory.door.librarian.retiring import retired_terms

# --- a question without its question mark -----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "User: whats the difference between a mutex and a semaphore\n\nAssistant: A `Mutex` is held by one "
        "owner at a time; a `Semaphore` counts permits, so `n` holders can share it.",
        "User: how does a bloom filter answer membership queries\n\nAssistant: It hashes the key with `k` "
        "functions and checks that every bit is set; a false positive is possible, a false negative never.",
    ],
)
def test_a_general_question_without_its_question_mark_leaves_nothing(text: str) -> None:
    assert extract_facts(text) == []


def test_a_question_without_its_question_mark_is_never_a_fact_and_still_frames_its_answer() -> None:
    facts = extract_facts(
        "User: hows the retry delay configured in this repo\n\n"
        "Assistant: `RETRY_DELAY_S=30` is set in `jobs/retry.py`."
    )
    assert facts == [
        "Hows the retry delay configured in this repo? `RETRY_DELAY_S=30` is set in `jobs/retry.py`."
    ]


def test_a_statement_opening_with_what_is_still_a_statement() -> None:
    facts = extract_facts(
        "User: what we ship is the `cli` wheel only, built by `make wheel`. Can you check the version?\n\n"
        "Assistant: It is 1.4.2."
    )
    assert facts == ["What we ship is the `cli` wheel only, built by `make wheel`."]


# --- a tool's tally quoted as output; a fix of the surface only -------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "`yamllint deploy/` now prints `0 files failed`.",
        "`make lint` now reports `3 files checked, 0 errors`.",
    ],
)
def test_a_tally_quoted_in_a_code_span_is_a_run_report(reply: str) -> None:
    text = f"User: add the `lint` target\n\nAssistant: Added `lint` to the `Makefile`. {reply}"
    facts = extract_facts(text)
    assert facts and all("now" not in fact for fact in facts), facts


def test_a_code_span_with_a_number_but_no_tally_is_kept() -> None:
    facts = extract_facts(
        "User: add the lint job\n\nAssistant: The `lint` job in `ci.yml` runs `eslint --max-warnings 0` on "
        "every push."
    )
    assert facts == ["The `lint` job in `ci.yml` runs `eslint --max-warnings 0` on every push."]


def test_a_request_to_fix_the_indentation_leaves_nothing() -> None:
    assert (
        extract_facts(
            "User: the yaml in deploy/ has broken indentation, fix it\n\nAssistant: Fixed `deploy/app.yaml`: "
            "two keys under `probes` were indented with a tab instead of spaces."
        )
        == []
    )


def test_a_convention_about_indentation_is_still_kept() -> None:
    facts = extract_facts(
        "User: fix the indentation in `app.yaml`; we always indent YAML with two spaces.\n\n"
        "Assistant: Re-indented `app.yaml` with two spaces."
    )
    assert any("we always indent YAML with two spaces" in fact for fact in facts), facts


# --- the word after a modal is a verb ----------------------------------------------------------------


def test_a_pronoun_after_a_modal_and_its_verb_joins_the_sentence_that_names_it() -> None:
    facts = extract_facts(
        "User: Deploy the worker with four processes.\n\nAssistant: The worker now runs with `WORKERS=4` in "
        "`deploy/worker.env`. You can follow it at https://grafana.example.dev/d/worker."
    )
    assert facts == [
        "The worker now runs with `WORKERS=4` in `deploy/worker.env`; you can follow it at "
        "https://grafana.example.dev/d/worker."
    ]


def test_a_pronoun_after_a_modal_with_nothing_before_it_is_dropped() -> None:
    assert (
        extract_facts(
            "User: Deploy the worker with four processes.\n\n"
            "Assistant: You should bookmark it: https://grafana.example.dev/d/worker."
        )
        == []
    )


def test_a_modal_sentence_that_names_its_object_stays() -> None:
    facts = extract_facts(
        "User: Deploy the worker with four processes.\n\n"
        "Assistant: You can find the worker dashboard at https://grafana.example.dev/d/worker."
    )
    assert facts == ["You can find the worker dashboard at https://grafana.example.dev/d/worker."]


def test_it_in_capitals_is_the_it_department_and_its_move_is_kept() -> None:
    facts = extract_facts(
        "User: IT moved the wiki off wiki01.corp.example on Friday, it's wiki03.corp.example now.\n\n"
        "Assistant: Noted, I'll use the new host."
    )
    assert facts == ["IT moved the wiki off wiki01.corp.example on Friday, it's wiki03.corp.example now."]
    assert [old for old, _new in retired_terms(facts[0])] == ["wiki01.corp.example"]


@pytest.mark.parametrize(
    "sentence",
    [
        "It moved to wiki03.corp.example on Friday.",  # the pronoun: what moved was named before
        "IT MOVED TO WIKI03.CORP.EXAMPLE ON FRIDAY.",  # shouted: "IT" is the pronoun in capitals
    ],
)
def test_it_as_the_pronoun_still_leans_on_what_came_before(sentence: str) -> None:
    assert extract_facts(f"User: Where is the wiki now?\n\nAssistant: {sentence}") == []


# --- a value said to hold now supersedes --------------------------------------------------------------


@pytest.mark.parametrize(
    ("fact", "old"),
    [
        (
            "Grafana moved to the new cluster last month, it's https://metrics.example.org now.",
            "Dashboards are at https://grafana.old.example.org/d/abc for the API.",
        ),
        (
            "Retention is 30 snapshots now, set by the export job.",
            "The export job keeps 14 snapshots in `backups/`.",
        ),
        (
            "The login service answers on https://auth.example.org/v2 now.",
            "Tokens come from https://login.example.org/oauth for the login service.",
        ),
    ],
)
def test_a_value_said_to_hold_now_supersedes_the_one_before(fact: str, old: str) -> None:
    decision = decide(fact, [Neighbour("old", old, 0.5)])
    assert (decision.action, decision.target_id) == ("update", "old"), decision.reason


@pytest.mark.parametrize(
    ("fact", "old"),
    [
        # "now" about a verb, not a value: a description
        (
            "`cache.py` now uses `redis.asyncio` (redis-py 5.0.4).",
            "Sessions use Redis 7.2 on the shared host.",
        ),
        # the same words without "now": no correction, so no looser match
        (
            "Retention is 30 snapshots, set by the export job.",
            "The export job keeps 14 snapshots in `backups/`.",
        ),
        # a URL on another site is another service, "now" or not
        (
            "Grafana moved, it's https://metrics.example.org now.",
            "The status page is https://grafana.status.example.com for customers.",
        ),
        # a URL whose host names nothing the new fact names
        (
            "The docs site moved, it's https://docs.example.org now.",
            "Error reports go to https://sentry.example.org/acme/api.",
        ),
    ],
)
def test_now_without_a_value_of_the_same_thing_adds(fact: str, old: str) -> None:
    decision = decide(fact, [Neighbour("old", old, 0.5)])
    assert decision.action == "add", decision.reason


def test_a_url_without_now_or_a_correction_does_not_supersede_by_its_host_words() -> None:
    decision = decide(
        "Grafana for the batch team is https://metrics.example.org.",
        [Neighbour("old", "Dashboards are at https://grafana.old.example.org/d/abc for the API.", 0.5)],
    )
    assert decision.action == "add", decision.reason


# --- a reply that opens with its commands -------------------------------------------------------------


def test_a_reply_opening_with_commands_answers_the_how_to_with_them() -> None:
    facts = extract_facts(
        "User: How do I seed the local database with demo data?\n\nAssistant: ```\nmake db-reset\n"
        "python -m app.seed --demo\n```\n\nThat drops the local schema and loads 200 demo accounts from "
        "`fixtures/demo.json`."
    )
    assert facts == [
        "How do I seed the local database with demo data? `make db-reset`, then `python -m app.seed --demo`; "
        "that drops the local schema and loads 200 demo accounts from `fixtures/demo.json`."
    ]


@pytest.mark.parametrize(
    "command",
    [
        r"grep -rn '\bTODO\b' src/",
        r"grep -E '\d+ ERROR \(\w+\)' /var/log/php-fpm.log",
        r"rg '\buser_id\b' app/",
    ],
)
def test_a_command_holding_backslashes_is_folded_into_its_lead_in_as_written(command: str) -> None:
    """The command was read as a replacement template: "\\c" or "\\O" raised, and the job kept nothing."""
    facts = extract_facts(
        "User: where do the runner's logs end up?\n\nAssistant: The runner writes one log per job. "
        f"List them with this:\n```\n{command}\n```\n"
    )
    assert any(f"`{command}`" in fact for fact in facts), facts


def test_a_lead_in_ending_on_is_takes_the_file_its_block_names() -> None:
    """ "… and staging is:" + a TOML block was stored as "… and staging is.", a sentence without its end."""
    facts = extract_facts(
        "User: split the deploy config\n\nAssistant: Each app has its own file now. `deploy.toml` is "
        'prod (`app = "otter"`), and staging is:\n\n```toml\n# deploy.staging.toml\napp = "otter-staging"\n'
        'region = "fra"\n\n[env]\n  PORT = "8080"\n```\n\nMigrations run before each release.'
    )
    assert '`deploy.toml` is prod (`app = "otter"`), and staging is `deploy.staging.toml`.' in facts, facts
    # a lead-in that does not end on its verb names nothing from the block
    facts = extract_facts(
        "User: split the deploy config\n\nAssistant: I wrote the staging settings to their own file:\n\n"
        '```toml\n# deploy.staging.toml\napp = "otter-staging"\nregion = "fra"\n[env]\n  PORT = "8080"\n```\n'
    )
    assert not any("`deploy.staging.toml`" in fact for fact in facts), facts
    # an empty block after such a lead-in names nothing (its first line was read and raised IndexError)
    facts = extract_facts(
        "User: split the deploy config\n\nAssistant: `deploy.toml` is prod, and staging is:\n\n```toml\n```\n\n"
        "Migrations run before each release on `deploy.toml`."
    )
    assert "Migrations run before each release on `deploy.toml`." in facts, facts


def test_a_line_all_in_bold_is_a_section_title_not_a_fact() -> None:
    facts = extract_facts(
        "User: wire up the mailer\n\nAssistant: Done.\n\n**Sendwell (config/runtime.exs, prod block)**\n\n"
        "The adapter reads `SENDWELL_API_KEY` at boot.\n\n**Never log the key.**\n\n**Set the secret on the otter app with this:**\n\n"
        "```\nfly secrets set SENDWELL_API_KEY=... -a otter\n```\n"
    )
    assert not any(fact.startswith("Sendwell (config") for fact in facts), facts
    assert "The adapter reads `SENDWELL_API_KEY` at boot." in facts, facts
    assert "Never log the key." in facts, facts  # a bold sentence is a statement
    assert any("`fly secrets set SENDWELL_API_KEY=... -a otter`" in fact for fact in facts), (
        facts
    )  # a bold lead-in leads


def test_a_reply_opening_with_output_keeps_nothing_of_it() -> None:
    facts = extract_facts(
        "User: How do I run the unit tests for the parser?\n\nAssistant: ```\n$ pytest tests/parser -q\n"
        "14 passed in 0.31s\n```\n\nThe parser tests live in `tests/parser/` and need no database."
    )
    assert all("passed" not in fact for fact in facts), facts
    assert any("`tests/parser/`" in fact for fact in facts), facts


def test_a_diff_after_a_lead_in_is_no_command() -> None:
    facts = extract_facts(
        "User: Cap the page size.\n\nAssistant: The page size cap is now `MAX_PAGE = 100` in `api/pages.py`. "
        "Changed it to clamp instead of raising:\n\n```diff\n-    raise ValueError(size)\n"
        "+    size = min(size, MAX_PAGE)\n```"
    )
    assert all("raise ValueError" not in fact and "min(size" not in fact for fact in facts), facts


# --- the user's gerund subject; a pronoun across a list of actions or a block --------------------------


def test_a_user_s_sentence_opening_with_a_gerund_is_not_filler() -> None:
    facts = extract_facts(
        'User: Searching for "naïve" returns nothing.\n\nAssistant: The `title` field folds accents at '
        "index time with `unaccent` but not at query time, so the two never meet."
    )
    assert any("`unaccent`" in fact for fact in facts), facts


def test_an_action_whose_pronoun_means_the_action_before_stays_joined_to_it() -> None:
    facts = extract_facts(
        "User: Move the alias.\n\nAssistant: I created `orders_v3`, copied the rows and pointed the `orders` "
        "alias to it."
    )
    assert any("`orders_v3`" in fact and "alias to it" in fact for fact in facts), facts
    assert not any(fact.startswith("Copied") for fact in facts), facts


def test_actions_without_a_pronoun_are_still_one_fact_each() -> None:
    facts = extract_facts(
        "User: Pin the tools.\n\nAssistant: I pinned `ruff==0.6.9` in `requirements-dev.txt`, bumped "
        "`mypy` to 1.11 in `pyproject.toml` and removed `black`."
    )
    assert "`ruff==0.6.9` is pinned in `requirements-dev.txt`." in facts, facts


def test_a_pronoun_after_a_block_of_output_leans_on_the_block_s_lead_in() -> None:
    facts = extract_facts(
        "User: Build the docs.\n\nAssistant: `make docs` renders the site into `site/`:\n\n```\n"
        "INFO - Building documentation...\nINFO - Documentation built in 2.31 seconds\n```\n\n"
        "I copied it to `public/docs/` and committed it, since the landing page links there."
    )
    assert any("`make docs`" in fact and "`public/docs/`" in fact for fact in facts), facts


def test_a_paragraph_after_a_block_that_names_its_subject_stays_its_own() -> None:
    facts = extract_facts(
        "User: Build the docs.\n\nAssistant: `make docs` renders the site into `site/`:\n\n```\n"
        "INFO - Documentation built in 2.31 seconds\n```\n\n"
        "The landing page links to `public/docs/`, which is committed."
    )
    assert "The landing page links to `public/docs/`, which is committed." in facts, facts


# --- a cause answers the report before it; a run's lead-in; a trailing-off ellipsis -------------------


@pytest.mark.parametrize(
    "opening",
    [
        "Cause: `ttl_seconds` in `cache.py` is read as minutes, so entries live 60 times too long.",
        "Root cause: `ttl_seconds` in `cache.py` is read as minutes, so entries live 60 times too long.",
    ],
)
def test_a_reply_naming_a_cause_answers_the_report_before_it(opening: str) -> None:
    facts = extract_facts(
        f"User: Cached prices stay stale for an hour after an update.\n\nAssistant: {opening}"
    )
    assert facts[0].startswith("Cached prices stay stale for an hour after an update. Why? "), facts
    assert "`ttl_seconds`" in facts[0], facts


def test_a_reply_that_names_no_cause_is_not_framed_onto_the_report() -> None:
    facts = extract_facts(
        "User: Cached prices stay stale for an hour after an update.\n\n"
        "Assistant: `ttl_seconds` in `cache.py` is read as minutes, so entries live 60 times too long."
    )
    assert facts == ["`ttl_seconds` in `cache.py` is read as minutes, so entries live 60 times too long."]


def test_a_cause_is_not_framed_onto_a_request() -> None:
    facts = extract_facts(
        "User: Please make cached prices refresh faster.\n\n"
        "Assistant: Cause: `ttl_seconds` in `cache.py` is read as minutes, so entries live 60 times too long."
    )
    assert all("Why?" not in fact for fact in facts), facts


def test_a_lead_in_reporting_a_run_of_output_is_no_fact() -> None:
    facts = extract_facts(
        "User: Check the build.\n\nAssistant: The build uses `make release`. I ran `make check` on the branch:"
        "\n\n```\nlint ok\ntypes ok\n```"
    )
    assert facts == ["The build uses `make release`."]


def test_a_trailing_off_ellipsis_before_a_lower_case_word_does_not_end_the_sentence() -> None:
    facts = extract_facts(
        "User: We're numbering the releases by date like 2024.06 instead of 1, 2, 3... because of the "
        "monthly train.\n\nAssistant: Noted."
    )
    assert facts == [
        "We're numbering the releases by date like 2024.06 instead of 1, 2, 3... because of the monthly train."
    ]


def test_a_block_of_log_lines_after_a_lead_in_is_output_not_a_command() -> None:
    facts = extract_facts(
        "User: Build the docs.\n\nAssistant: `make docs` renders the site into `site/`:\n\n```\n"
        "INFO - Documentation built in 2.31 seconds\n```"
    )
    assert facts == ["`make docs` renders the site into `site/`."]


def test_a_terminal_session_after_a_lead_in_gives_its_commands_not_their_output() -> None:
    facts = extract_facts(
        "User: Add the linter to CI.\n\nAssistant: The CI job is in `.github/workflows/lint.yml`. The same "
        "check runs locally with:\n\n```\n$ cargo clippy --workspace -- -D warnings\n"
        "    Checking tally-core v0.4.1\n    Finished dev [unoptimized] target(s) in 9.87s\n```"
    )
    assert any("`cargo clippy --workspace -- -D warnings`" in fact for fact in facts), facts
    assert all("Checking" not in fact and "Finished" not in fact for fact in facts), facts


def test_a_terminal_session_introduced_as_a_report_gives_no_command() -> None:
    facts = extract_facts(
        "User: Is the migration fine?\n\nAssistant: Ran it against a copy of staging:\n\n```\n"
        "$ ./manage.py migrate --plan\nPlanned operations:\n  orders.0042_backfill_totals\n```\n\n"
        "The migration only adds the `total_cents` column."
    )
    assert all("migrate --plan" not in fact for fact in facts), facts


def test_a_heading_between_a_block_and_a_paragraph_ends_what_the_lead_in_leads() -> None:
    facts = extract_facts(
        "User: Build the docs.\n\nAssistant: `make docs` renders the site into `site/`:\n\n```\n"
        "INFO - Documentation built in 2.31 seconds\n```\n\n## Publishing\n\nI copied it to `public/docs/`."
    )
    assert facts == ["`make docs` renders the site into `site/`."]


def test_a_numbered_section_title_in_bold_is_a_heading_not_a_fact() -> None:
    facts = extract_facts(
        "User: two things, go\n\nAssistant: Two changes, one PR.\n\n**1. Switch to v2**\n\n"
        "The topic in `application.yml` is now `payments.settled.v2`.\n\n**2. Poll size**\n\n"
        "`max.poll.records` is 50 now.\n\n**3. Summary email.** It goes to `ops@example.org` now."
    )
    assert facts == [
        "The topic in `application.yml` is now `payments.settled.v2`.",
        "`max.poll.records` is 50 now.",
        "Summary email. It goes to `ops@example.org` now.",
    ], facts


def test_a_reply_s_opening_commands_that_no_question_asked_for_leave_nothing() -> None:
    assert extract_facts("User: run the tests\n\nAssistant: ```\nnpm ci\nnpm test\n```\n\nAll green.") == []
    facts = extract_facts(
        "User: set up the project\n\nAssistant: ```\nnpm ci\nnpm run build\n```\n\nThe build writes `dist/app.js`."
    )
    assert facts == ["The build writes `dist/app.js`."]


def test_list_items_that_are_only_values_complete_their_lead_in_as_one_fact() -> None:
    facts = extract_facts(
        "User: Rename the fixtures.\n\nAssistant: Renamed in `tests/fixtures/`:\n\n"
        "- `user1.json` to `user_alice.json`\n- `user2.json` to `user_bob.json`\n\n"
        "Fixture names now say whose data they hold."
    )
    assert facts[0] == (
        "Renamed in `tests/fixtures/`: `user1.json` to `user_alice.json`; `user2.json` to `user_bob.json`."
    ), facts


def test_a_list_item_with_a_verb_stays_its_own_fact() -> None:
    facts = extract_facts(
        "User: Tidy the config.\n\nAssistant: Changes in `config/`:\n\n"
        "- `app.toml` now sets `workers = 4`\n- `log.toml` drops the `debug` handler"
    )
    assert "`app.toml` now sets `workers = 4`." in facts, facts


# --- a trailing clause that points at other text -----------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "kept"),
    [
        (
            "`Clinic` validation: `time_zone` must be an IANA identifier, so `America/Phoenix` passes and "
            "display names like the one above are rejected.",
            "`Clinic` validation: `time_zone` must be an IANA identifier.",
        ),
        (
            "Migrations live in `db/migrations/`, which the table below lists one by one.",
            "Migrations live in `db/migrations/`.",
        ),
    ],
)
def test_a_trailing_clause_pointing_at_other_text_is_cut_and_the_main_clause_kept(
    sentence: str, kept: str
) -> None:
    assert extract_facts(f"User: what did you change\n\nAssistant: {sentence}") == [kept]


@pytest.mark.parametrize(
    "sentence",
    [
        "The cache in `redis-2` is cold, so expect slow pages tonight.",  # the moment binds it all
        "As shown above, `time_zone` must be an IANA identifier.",  # the main clause points at the text
    ],
)
def test_a_sentence_whose_main_clause_leans_on_context_or_the_moment_leaves_nothing(sentence: str) -> None:
    assert extract_facts(f"User: what did you change\n\nAssistant: {sentence}") == []


# --- a line without a verb that names what a general question is about ----------------------------


def test_a_topic_line_beside_a_general_question_leaves_the_question_general() -> None:
    assert (
        extract_facts(
            "User: quick Rust question, Mutex vs RwLock. when do i need which\n\nAssistant: A `Mutex` lets "
            "one holder in at a time; an `RwLock` lets many readers or one writer in. Use the `RwLock` when "
            "reads far outnumber writes."
        )
        == []
    )


@pytest.mark.parametrize(
    "user",
    [
        "Mutex vs RwLock in `ledger/post.rs`. when do i need which",  # a path: this project's code
        "we have Mutex vs RwLock everywhere. when do i need which",  # the team: its own state
        "`sync-job` stalls when the replica lags. when do i need which",  # a verb: a statement
    ],
)
def test_a_line_naming_the_project_beside_the_question_keeps_it_about_the_project(user: str) -> None:
    assert extract_facts(
        f"User: {user}\n\nAssistant: A `Mutex` lets one holder in at a time; an `RwLock` lets many "
        "readers or one writer in."
    )


# --- markdown emphasis -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user", "kept", "gone"),
    [
        # underscores inside a name are part of it (CommonMark opens no emphasis inside a word)
        ("orders__shopify__daily has to run at 04:00 UTC from now on.", "orders__shopify__daily", None),
        # a dunder is Python's name, not a word in bold
        (
            "from now on every package needs an `__init__.py`, and __init__ stays empty.",
            "__init__ stays",
            None,
        ),
        # emphasis around words is still markup
        ("from now on we __always run__ **the linter** before pushing.", "we always run the linter", "**"),
    ],
)
def test_emphasis_is_markup_only_around_words(user: str, kept: str, gone: str | None) -> None:
    facts = extract_facts(f"User: {user}\n\nAssistant: Done, noted in `CONTRIBUTING.md`.")
    text = " ".join(facts)
    assert kept in text, facts
    if gone:
        assert gone not in text


@pytest.mark.parametrize("lead", ["First, ", "Second, ", "Secondly: ", "Finally, ", "Heads up: "])
def test_an_ordinal_or_heads_up_lead_is_dropped_so_the_fact_opens_with_its_subject(lead: str) -> None:
    facts = extract_facts(
        f"User: {lead}staging moved to a new host, https://stg.quill.run, since we left the old domain."
        "\n\nAssistant: Updated `playwright.config.ts`."
    )
    assert facts[0].startswith("Staging moved to a new host"), facts


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        ("The new one is dispatch.quayside.com, the old one only redirects until June.", None),
        (
            "Added a `--alias-swap` flag so the new index is built next to the old one and the alias is switched.",
            "next to the old one",
        ),
    ],
)
def test_one_of_a_kind_named_only_before_the_sentence_leans_on_it(reply: str, kept: str | None) -> None:
    """ "The new one is X": new what? The sentence does not say. "next to the old one" after "the new
    index" says it within the sentence."""
    facts = extract_facts(f"User: can you update the links?\n\nAssistant: Done. {reply}")
    if kept is None:
        assert not any("new one" in fact for fact in facts), facts
    else:
        assert any(kept in fact for fact in facts), facts


# --- what a user's sentence states --------------------------------------------------------------------


def test_a_list_after_a_lead_in_starts_at_its_first_item_and_a_trailing_please_is_cut() -> None:
    facts = extract_facts(
        "User: Two housekeeping updates, please, so the docs stay true: first, heads up that our billing "
        "engineer moved to the mobile team — Dara Quinn owns the Stripe webhooks now, please update "
        "CODEOWNERS.\n\nAssistant: Updated `.github/CODEOWNERS`."
    )
    assert (
        facts[0] == "Our billing engineer moved to the mobile team — Dara Quinn owns the Stripe webhooks now."
    ), facts


@pytest.mark.parametrize(
    ("user", "fact"),
    [
        # a statement keeps nothing of the request hanging on it
        ("We use pnpm only, please delete the package-lock.json someone committed.", "We use pnpm only."),
        # a standing order said with a please is the statement's rule, not a one-off request
        (
            "We manage Python dependencies with uv only, please no pip install or poetry commands in docs.",
            "We manage Python dependencies with uv only, please no pip install or poetry commands in docs.",
        ),
        (
            "Rule from security review, pls apply everywhere from now on: no secret values in Pulumi config.",
            "Rule from security review, pls apply everywhere from now on: no secret values in Pulumi config.",
        ),
        # a request stays whole, for the rules that read requests (the choice it carries)
        (
            "Please move the nightly job to APScheduler instead, please keep the cron file.",
            "Move the nightly job to APScheduler instead, please keep the cron file.",
        ),
    ],
)
def test_a_trailing_please_is_cut_from_a_statement_and_kept_in_a_request(user: str, fact: str) -> None:
    assert extract_facts(f"User: {user}\n\nAssistant: Done.") == [fact]


# --- a list after a lead-in that frames it -----------------------------------------------------------


@pytest.mark.parametrize(
    ("user", "fact"),
    [
        (
            "Some ground rules we settled in the guild, please follow them: we stay on Gradle 8.7 for now, "
            "and every module must declare its own `namespace`.",
            "We stay on Gradle 8.7 for now, and every module must declare its own `namespace`.",
        ),
        (
            "Three things the team agreed on, keep them in mind: the events topic is `ingest.raw.v2` and "
            "our consumer group has to be called `indexer-main`.",
            "The events topic is `ingest.raw.v2` and our consumer group has to be called `indexer-main`.",
        ),
    ],
)
def test_a_list_after_a_lead_in_that_frames_it_is_kept_without_the_lead_in(user: str, fact: str) -> None:
    assert extract_facts(f"User: {user}\n\nAssistant: Noted, nothing to change yet.") == [fact]


@pytest.mark.parametrize(
    "user",
    [
        "For now, skip the flaky upload test on CI.",  # a task bound to the moment stays out
        "The staging deploy is paused for now.",  # how things are at the moment, no decision
    ],
)
def test_for_now_binds_a_sentence_that_decides_nothing_to_the_moment(user: str) -> None:
    assert extract_facts(f"User: {user}\n\nAssistant: Done.") == []


# --- a general question with an aside, and a problem asked to be fixed ------------------------------


@pytest.mark.parametrize(
    "user",
    [
        "Quick general Rust question, not about our parser really: what's the difference between `Box<dyn T>` "
        "and `impl T`? I always mix them up.",
        "Not about our workers: what's the difference between a thread and a green thread? I never remember "
        "which one is cheaper.",
    ],
)
def test_a_general_question_with_the_asker_s_own_habit_beside_it_leaves_nothing(user: str) -> None:
    reply = (
        "Assistant: `Box<dyn T>` is a trait object: one type, dispatched at run time through a vtable. `impl T` "
        "is one concrete type the compiler picks, dispatched statically, so it is usually faster."
    )
    assert extract_facts(f"User: {user}\n\n{reply}") == []


@pytest.mark.parametrize(
    "user",
    [
        'the empty state on the inbox says "No mesages", fix pls',
        "The footer still shows 2024 as the copyright year, please fix.",
    ],
)
def test_a_sentence_asking_to_fix_what_it_describes_is_a_problem_report(user: str) -> None:
    facts = extract_facts(f"User: {user}\n\nAssistant: Fixed it in `src/ui/strings.ts`.")
    assert not any("mesages" in fact or "2024" in fact for fact in facts), facts


def test_a_problem_named_after_a_dash_is_the_reason_for_a_statement_not_a_report() -> None:
    facts = extract_facts(
        "User: flink is now 1.19.1 — the checkpoint bug we hit on the big topics is fixed there. rebuild "
        "and run the tests\n\nAssistant: Bumped `flink.version` in `pom.xml`; the tests pass."
    )
    assert facts and facts[0].startswith("Flink is now 1.19.1"), facts


def test_a_problem_in_the_main_clause_is_still_a_report() -> None:
    facts = extract_facts(
        "User: the ingest job fails again on the big topics — no idea why\n\nAssistant: Looking at it."
    )
    assert facts == [], facts


def test_a_problem_given_as_the_reason_for_a_standing_choice_is_no_report() -> None:
    facts = extract_facts(
        "User: two things. marshmallow 4.0 broke our nested schemas, so pin marshmallow to 3.21.3 until "
        "the rewrite.\n\nAssistant: Pinned it in `requirements.txt`."
    )
    assert any("pin marshmallow to 3.21.3" in fact for fact in facts), facts


def test_a_problem_followed_by_a_request_to_fix_it_is_still_a_report() -> None:
    facts = extract_facts("User: the export breaks on large files, so fix it please\n\nAssistant: Looking.")
    assert facts == [], facts


def test_an_interjection_opening_a_user_s_statement_is_dropped_and_the_statement_kept() -> None:
    facts = extract_facts(
        "User: ok the importer is rewritten so we go to Postgres 17 now. update the compose file\n\n"
        "Assistant: Updated `compose.yaml` to `postgres:17`."
    )
    assert facts[0] == "The importer is rewritten so we go to Postgres 17 now.", facts
    assert extract_facts("User: ok thanks\n\nAssistant: You're welcome.") == []


def test_no_before_a_code_span_opens_a_statement_not_an_answer() -> None:
    facts = extract_facts(
        "User: which timezone does the scheduler use\n\nAssistant: No `timezone:` option is set in "
        "`config/config.exs`, so Oban Cron evaluates every expression in UTC."
    )
    assert any(fact.startswith("No `timezone:` option is set") for fact in facts), facts


def test_a_bound_on_a_quantity_the_user_states_is_kept_and_below_a_number_points_at_no_text() -> None:
    """ "at most 90 days", "below 20% charge": a limit the user sets is a rule; "below" before a
    number is a bound, not "see below"."""
    facts = extract_facts(
        "User: Hello, two rules from the board for the loans. First, a tool can be borrowed for at most 14 "
        "days; after that a reminder goes out. Second, drills below 20% charge must not be lent at all."
        "\n\nAssistant: Both are settings now, in `config/loans.toml`."
    )
    assert any(fact.startswith("A tool can be borrowed for at most 14 days") for fact in facts), facts
    assert any(fact.startswith("Drills below 20% charge must not be lent") for fact in facts), facts
    assert extract_facts("User: see the table below\n\nAssistant: Looking at it.") == []


def test_a_sentence_that_only_announces_a_change_is_no_fact() -> None:
    facts = extract_facts(
        "User: Change of plan. The nightly export now starts at 05:10 from now on, Oslo time."
        "\n\nAssistant: Moved the schedule in `export/scheduler.py`."
    )
    assert facts and not any("change of plan" in fact.lower() and len(fact.split()) < 5 for fact in facts), (
        facts
    )
    assert any("05:10" in fact for fact in facts), facts


@pytest.mark.parametrize(
    ("user", "kept"),
    [
        (
            "ops moved us off the old box to the managed cache last night, new broker is "
            "rediss://jobs-broker.abc123.cache.example.net:6380/0 (TLS). update the default pls",
            "rediss://jobs-broker.abc123.cache.example.net:6380/0",
        ),
        ("The signing keys are with Maren Holt from this week, Bo moved to the web team.", "Maren Holt"),
        ("also cut the retry window to 3 hours, the growers asked for it.", "3 hours"),
        (
            "The vendor moved the webhook endpoint — it's https://hooks.vendor.example/v3/events now, the old "
            "one was switched off this morning which is why nothing arrives.",
            "https://hooks.vendor.example/v3/events",
        ),
    ],
)
def test_a_change_said_with_when_it_happened_or_as_a_new_setting_is_kept(user: str, kept: str) -> None:
    """ "last night" says when the change happened, not that something broke, when the sentence gives
    the new value; "from this week" starts a rule; "cut X to 3 hours" sets a value that stays."""
    facts = extract_facts(f"User: {user}\n\nAssistant: Updated `config/settings.py`.")
    assert any(kept in fact for fact in facts), facts


def test_a_time_of_day_in_a_problem_report_still_makes_it_one() -> None:
    assert extract_facts("User: the import broke last night again\n\nAssistant: Looking at it.") == []


def test_a_value_that_holds_now_is_kept_without_the_clause_that_says_when() -> None:
    """ "this morning" binds a report to the moment; after a value said to hold now it says when the
    value changed, and only the clause before it is kept."""
    facts = extract_facts(
        "User: The vendor moved the webhook endpoint — it's https://hooks.vendor.example/v3/events now, "
        "the old one was switched off this morning.\n\nAssistant: Updated `config/hooks.py`."
    )
    assert "The vendor moved the webhook endpoint — it's https://hooks.vendor.example/v3/events now." in facts
    assert not any("this morning" in fact for fact in facts), facts
    # no value said to hold now: the moment still binds the whole sentence
    assert extract_facts("User: The cache is cold, so expect slow pages tonight.\n\nAssistant: Ok.") == []


@pytest.mark.parametrize(
    "user",
    [
        "unrelated q. pluck vs map in lodash, why does every style guide push map",
        "Random one while webpack chews through a cold build (why is it so slow). I keep getting bitten by "
        "this: why does `Array.prototype.sort` mutate but `toSorted` does not?",
        "q unrelated: diff betw let, const, var in js? always mix up",
        "quick one, not about the codebase: whats the difference between `for in` and `for of`, when do i use which",
    ],
)
def test_a_question_said_to_be_off_the_project_s_topic_leaves_nothing(user: str) -> None:
    """The asker says the question is unrelated ("unrelated q", "random one", "q unrelated", "not about
    the codebase"), the mark may be missing ("…, why does X"), and the reply answers from general
    knowledge: the exchange is noise, as a general question always was."""
    reply = "Because `map` returns a new array and states the shape; `pluck` guesses it from the keys."
    assert extract_facts(f"User: {user}\n\nAssistant: {reply}") == []


@pytest.mark.parametrize(
    "user",
    [
        'A quick question that has nothing to do with the project. My landlord wrote "per our agreement" in '
        "his mail; is that rude in English?",
        "not code. my supervisor keeps writing 'data are', is that a real rule or just taste?",
        "random q not work related. my cousin asked why 0.1 + 0.2 prints 0.30000000000000004 in our python "
        "class?? why tho",
        "totally off topic but my sister asked me why `[[0]*3]*3` shares its rows and i couldnt explain it?",
    ],
)
def test_a_question_declared_off_topic_first_leaves_nothing_whatever_it_says_of_mine(user: str) -> None:
    """The asker's first sentence says the question is not about the project ("nothing to do with the
    project", "not code.", "not work related", "off topic"): "my supervisor", "our python class" and
    the story around the question are its context, not the project's; the reply answers from general
    knowledge."""
    reply = (
        "Compare floats with `math.isclose(a, b)`, which uses a relative tolerance of 1e-09 by default. "
        "For money, use `decimal.Decimal` instead of floats."
    )  # two rules as a reply states them: kept from an exchange about the project
    assert extract_facts(f"User: {user}\n\nAssistant: {reply}") == []


@pytest.mark.parametrize(
    "user",
    [
        "dumb q that came up at lunch. my nephew asked why ice floats and i fumbled it. give me a version a "
        "ten-year-old gets",  # declared, and it asks without a question
        "random one, not work. why do planes leave white trails behind them and some days not?",
        "side thing, prepping a talk for a meetup tomorrow: whats the difference between a process and a thread",
        "quick sql question while the migration runs. is `count(*)` slower than `count(1)`?",
        "question not about code. in german is it 'das Virus' or 'der Virus'?",
    ],
)
def test_a_question_announced_as_a_side_one_leaves_nothing(user: str) -> None:
    """A first sentence that announces a question of another kind ("dumb q", "random one, not work",
    "side thing", "quick sql question", "question not about code") declares it off the project's
    topic, whether or not a question mark follows."""
    reply = "Short version: it depends on how the engine counts rows, and most engines treat both alike."
    assert extract_facts(f"User: {user}\n\nAssistant: {reply}") == []


def test_a_declared_question_s_answer_may_name_example_paths() -> None:
    """ "not work related": the folders and the git range in the answer are the answer's examples."""
    user = (
        "not work related. i have 300 scanned receipts named scan_001 and so on, all in one folder. want "
        "them sorted into folders by month. quick way?"
    )
    reply = (
        "Use `exiftool`: `cd ~/Scans`, then `exiftool '-Directory<CreateDate' -d ./%Y-%m/ .` moves each "
        "file into a folder such as `./2024-01/`. To undo a bad run in git, `git log main..sorting` lists "
        "what the branch added."
    )
    assert extract_facts(f"User: {user}\n\nAssistant: {reply}") == []


@pytest.mark.parametrize(
    "user",
    [
        # "quick question" alone announces nothing: this one asks how the project deploys
        "quick question: how do we deploy to staging?",
        # a side question that is a task on the repository's file
        "side thing: can you add `dist/` to `.gitignore`?",
    ],
)
def test_a_quick_or_side_question_about_the_project_keeps_its_answer(user: str) -> None:
    reply = (
        "Run `deploy/staging.sh` from the repository root; it builds the image and pushes it to `stg-eu1`."
    )
    assert extract_facts(f"User: {user}\n\nAssistant: {reply}") != []


@pytest.mark.parametrize(
    "user",
    [
        # a finding, not a declaration: "not related to" the database
        "The timeout is not related to the database. Why does the pool run dry?",
        # the declaration is not the first sentence: a statement of the project comes first
        "The export job is slow again because the pool is small. Totally off topic, but why does a pool run dry?",
        # declared, but the question names one of the repository's files
        "off topic but why does `config/pool.toml` set max_size twice?",
    ],
)
def test_an_off_topic_word_later_or_beside_a_path_keeps_the_exchange(user: str) -> None:
    reply = "A connection pool runs dry when every connection is checked out and none comes back."
    assert not _answers_from_general_knowledge(user, reply)


def test_a_question_about_what_the_session_did_is_no_general_question() -> None:
    """ "what did you change" and "how do we deploy" ask about the project: the reply stays."""
    facts = extract_facts("User: what did you change\n\nAssistant: `config/app.toml` now sets `workers = 4`.")
    assert facts == ["`config/app.toml` now sets `workers = 4`."]


# --- a reason that leans on what came before, and its consequence ----------------------------------


@pytest.mark.parametrize(
    ("prompt", "kept"),
    [
        (
            "That fix costs gas, so the withdrawal budget moves from 52000 to 55000.",
            "The withdrawal budget moves from 52000 to 55000.",
        ),
        (
            "This broke the nightly again, so we pin `numpy` to 1.26.4 from now on.",
            "We pin `numpy` to 1.26.4 from now on.",
        ),
    ],
)
def test_the_consequence_of_a_reason_that_leans_on_the_context_is_kept_alone(prompt: str, kept: str) -> None:
    facts = extract_facts(f"User: {prompt}\n\nAssistant: Updated `config/limits.toml` and the tests.")
    assert kept in facts, facts
    assert not any(fact.startswith(("That fix", "This broke")) for fact in facts), facts


def test_a_consequence_that_leans_on_the_context_too_is_dropped() -> None:
    prompt = "That fix costs gas, so it moves from 52000 to 55000."
    facts = extract_facts(f"User: {prompt}\n\nAssistant: Updated `config/limits.toml` and the tests.")
    assert not any("52000" in fact for fact in facts), facts

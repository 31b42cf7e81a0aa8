"""Librarian rules that keep capture trustworthy, each pinned with examples of its own (pure functions,
no door): a correction must say what it corrects; a request to explain is a question; a bare
instruction is a one-off task unless it follows the decision it spells out."""

from __future__ import annotations

import pytest

from bli_memory.door.librarian import Neighbour, decide, extract_facts

# --- reconciliation: a correction says what it corrects ------------------------------------------


@pytest.mark.parametrize(
    ("fact", "old"),
    [
        (
            "The retry middleware dropped out too, so the 100 ms deadlines were no longer enforced; "
            "requests queued instead of failing fast.",
            "A failover test took 1.2 s instead of the ~9 s pauses we saw with the old client.",
        ),
        (
            "The cache is no longer warmed at boot; it fills within 30 s.",
            "Boot takes 45 s because the cache is warmed.",
        ),
        (
            "Uploads go through the signed-URL endpoint instead of the API, capped at 50 MB.",
            "The API accepts uploads of up to 10 MB per request.",
        ),
    ],
)
def test_instead_of_or_no_longer_about_something_else_is_not_a_correction(fact: str, old: str) -> None:
    decision = decide(fact, [Neighbour("old", old, 0.6)])
    assert decision.action == "add", decision.reason


@pytest.mark.parametrize(
    ("fact", "old"),
    [
        ("We moved the API from port 8080 to 8443.", "The API listens on port 8080 in staging."),
        ("Use Node 20 instead of Node 18 in CI.", "CI runs on Node 18 via setup-node."),
        (
            "Actually, the staging API is at https://api.stg.example.dev now.",
            "The staging API is https://staging.internal.example.dev.",
        ),
    ],
)
def test_a_correction_that_names_the_old_value_or_says_so_still_supersedes(fact: str, old: str) -> None:
    decision = decide(fact, [Neighbour("old", old, 0.6)])
    assert (decision.action, decision.target_id) == ("update", "old"), decision.reason


# --- the user's turn: what asks and what only tasks ------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "User: can you explain how Python's GIL affects threads?\n\nAssistant: The GIL lets only one thread "
        "run bytecode at a time. Threads still help for I/O-bound work because the GIL is released while "
        "waiting on sockets. For CPU-bound work use `multiprocessing` instead.",
        "User: Could you walk me through what `git rebase --onto` does?\n\nAssistant: `git rebase --onto "
        "NEW OLD BRANCH` replays the commits of BRANCH that are not in OLD on top of NEW, which moves a "
        "branch cut from the wrong base.",
    ],
)
def test_a_request_to_explain_answered_from_general_knowledge_leaves_nothing(text: str) -> None:
    assert extract_facts(text) == []


def test_a_request_to_explain_the_project_still_keeps_what_it_finds() -> None:
    facts = extract_facts(
        "User: can you explain how our retry queue works?\n\nAssistant: `jobs/retry.py` re-enqueues a "
        "failed job with `RETRY_DELAY_S=30` between attempts, at most 5 times."
    )
    assert any("RETRY_DELAY_S=30" in fact for fact in facts), facts


@pytest.mark.parametrize(
    "prompt",
    [
        "Run the tests.",
        "Go through src/ and fix what's there.",
        "Look into why the nightly build is slow and clean it up.",
    ],
)
def test_a_bare_instruction_alone_is_a_one_off_task(prompt: str) -> None:
    assert extract_facts(f"User: {prompt}\n\nAssistant: Done.") == []


def test_an_instruction_after_its_decision_or_naming_a_value_is_kept() -> None:
    facts = extract_facts(
        "User: From now on, no raw SQL in handlers. Use the query builder in `db/query.py`. Go through "
        "`api/` and fix what's there.\n\nAssistant: Done."
    )
    assert facts == ["From now on, no raw SQL in handlers. Use the query builder in `db/query.py`."]
    assert extract_facts("User: Set `WORKERS=4` in `gunicorn.conf.py`.\n\nAssistant: Done.") == [
        "Set `WORKERS=4` in `gunicorn.conf.py`."
    ]


# --- the reply: what points back, and what is bound to the moment ----------------------------------


@pytest.mark.parametrize(
    ("reply", "joined"),
    [
        (
            "Retries should stay at 3 until the broker is upgraded; I wrote that down in `docs/retries.md`.",
            "Retries should stay at 3 until the broker is upgraded; wrote that down in `docs/retries.md`.",
        ),
        (
            "The `cleanup` cron deleted live sessions; I rolled that back in `deploy/cron.yaml`.",
            "The `cleanup` cron deleted live sessions; rolled that back in `deploy/cron.yaml`.",
        ),
    ],
)
def test_that_before_a_particle_is_an_object_pronoun_joined_to_what_it_means(reply: str, joined: str) -> None:
    assert extract_facts(f"User: sort it out\n\nAssistant: {reply}") == [joined]


def test_that_before_a_particle_with_nothing_to_lean_on_is_dropped() -> None:
    assert extract_facts("User: ok\n\nAssistant: Wrote that down in `docs/notes.md`.") == []


@pytest.mark.parametrize(
    "sentence",
    [
        "The new limit goes out with the next deploy; until then the old pods keep `256Mi`.",
        "The cache in `redis-2` is cold, so expect slow pages tonight.",
        "The `backfill` job finishes tomorrow around 04:00 UTC.",
    ],
)
def test_a_sentence_bound_to_the_moment_leaves_nothing(sentence: str) -> None:
    assert extract_facts(f"User: deploy it\n\nAssistant: {sentence}") == []


# --- general knowledge: a kind of file, an example path, the assistant's own voice -----------------


@pytest.mark.parametrize(
    "text",
    [
        "User: what's the difference between COPY and ADD in a Dockerfile?\n\nAssistant: `COPY` copies files "
        "from the build context into the image. `ADD` also extracts local tar archives and can fetch URLs. "
        "Prefer `COPY` unless you need the extraction.",
        "User: how do Terraform workspaces differ from a directory per environment?\n\nAssistant: Workspaces "
        "keep several states for one configuration in the same backend. Separate directories (e.g. "
        "`envs/prod/main.tf`, `envs/staging/main.tf`) give each environment its own backend. Most teams "
        "prefer directories for production because a wrong `workspace select` can apply to the wrong one.",
        "User: why is COUNT(*) slow on big Postgres tables?\n\nAssistant: Because of MVCC, each row's "
        "visibility is checked, so `COUNT(*)` scans the table. In my experience an estimate from "
        "`pg_class.reltuples` is enough for dashboards.",
    ],
)
def test_general_knowledge_with_a_kind_of_file_an_example_or_my_experience_leaves_nothing(text: str) -> None:
    assert extract_facts(text) == []


@pytest.mark.parametrize(
    "user",
    [
        "quick one, not about our code: what's the difference between a mutex and a semaphore?",
        "unrelated to this repo, what's the difference between a mutex and a semaphore?",
        "what's the difference between a mutex and a semaphore? nothing to do with our project",
    ],
)
def test_a_question_its_asker_says_is_not_about_the_project_leaves_nothing(user: str) -> None:
    reply = (
        "Both guard shared state, but differently:\n\n- a **mutex** is owned by the thread that locked it: "
        "`std::lock_guard<std::mutex> lock(m);` releases it at the end of the scope.\n- a **semaphore** counts "
        "permits and any thread may release one: `sem.release()` after `sem.acquire()`.\n\nRules of thumb: "
        "exclusive access → mutex; bounding concurrency → semaphore."
    )
    assert extract_facts(f"User: {user}\n\nAssistant: {reply}") == []


def test_our_code_named_in_a_question_still_ties_it_to_the_project() -> None:
    text = (
        "User: what's the difference between our retry helper and the one in the SDK?\n\nAssistant: "
        "`lib/retry.ts` retries 3 times with jitter; the SDK's helper retries once."
    )
    assert extract_facts(text) != []


@pytest.mark.parametrize(
    "aside",
    ["reviewing a PR and want to be sure", "asking for a friend", "it came up in code review"],
)
def test_an_aside_saying_why_the_question_is_asked_leaves_it_general_knowledge(aside: str) -> None:
    text = (
        f"User: useEffect vs useLayoutEffect, when does each one run? {aside}\n\nAssistant: `useEffect` runs "
        "after the browser paints; `useLayoutEffect` runs synchronously after the DOM is mutated, before "
        "paint. Reach for the layout one only when you must measure the layout before the user sees it."
    )
    assert extract_facts(text) == []


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        # the team in the question: it asks about the project
        (
            "what Postgres version are we on? the new hire asked",
            "`postgres:16.2` is the image in the compose file.",
        ),
        # an aside that says how the team works is a statement about the project
        (
            "what's the difference between rebase and merge? we squash everything",
            "`git rebase` replays commits on a new base; a merge records both parents.",
        ),
    ],
)
def test_a_question_or_an_aside_about_the_team_keeps_the_answer(question: str, answer: str) -> None:
    assert extract_facts(f"User: {question}\n\nAssistant: {answer}"), question


def test_a_wh_question_with_instead_is_a_question_not_a_choice() -> None:
    facts = extract_facts(
        "User: when would I use a materialized view instead of a regular view in Postgres?\n\n"
        "Assistant: In our `reports` schema, `daily_totals` is a materialized view refreshed by "
        "`cron/refresh.sql`."
    )
    assert "When would I use a materialized view instead of a regular view in Postgres." not in facts
    assert all("?" in fact for fact in facts if "instead" in fact), facts  # only as the framed question
    assert extract_facts("User: Can you switch the logger to structlog instead?\n\nAssistant: Done.") == [
        "Switch the logger to structlog instead."
    ]


def test_the_project_s_own_files_still_tie_a_question_to_the_project() -> None:
    facts = extract_facts(
        "User: what's the difference between the two stages in the Dockerfile?\n\nAssistant: The `build` "
        "stage compiles with `go build -o /out/app`; the `runtime` stage copies `/out/app` into "
        "`gcr.io/distroless/static`."
    )
    assert facts, "a question about the project's Dockerfile is about the project"


@pytest.mark.parametrize(
    "reply",
    [
        "Re-ran the deploy workflow for tag v2.3.1: every job green, the image is pushed to the registry.",
        "I reran `make e2e` against staging with the new seed data and it came back clean this time.",
        "Retried the flaky upload step on `release.yml`, and it went through on the second attempt.",
    ],
)
def test_a_report_of_running_something_again_leaves_nothing(reply: str) -> None:
    assert extract_facts(f"User: ship the release\n\nAssistant: {reply}") == []


def test_an_instruction_to_rerun_a_project_task_is_kept() -> None:
    """Not a run report, and not general knowledge: `make proto` is a task this project defines."""
    facts = extract_facts(
        "User: how do I refresh the stubs?\n\nAssistant: Rerun `make proto` after editing any `.proto` file."
    )
    assert any("make proto" in fact for fact in facts), facts


@pytest.mark.parametrize(
    "reply",
    [
        "Run `pnpm gen:api`; it rewrites the typed clients from the spec.",
        "Use `just seed-db` after every schema change.",
    ],
)
def test_a_how_to_answered_with_a_task_of_the_project_is_about_the_project(reply: str) -> None:
    assert extract_facts(f"User: how do I refresh the client types?\n\nAssistant: {reply}"), reply


@pytest.mark.parametrize(
    "prompt",
    [
        "I don't want to merge this without a second review.",
        "Please don't ship that until the migration is reviewed.",
    ],
)
def test_a_demonstrative_before_a_preposition_points_back_and_is_not_a_fact(prompt: str) -> None:
    assert extract_facts(f"User: {prompt}\n\nAssistant: Noted.") == []


def test_here_and_a_team_channel_tie_a_question_and_its_answer_to_the_project() -> None:
    assert extract_facts("User: Who approves schema changes here?\n\nAssistant: The data team, in #data-eng.")
    assert extract_facts("User: who reviews infra changes?\n\nAssistant: Anyone in @acme/platform-team can.")
    assert (
        extract_facts(
            "User: what's the difference between @Component and @Service in Spring?\n\nAssistant: Both "
            "register a bean. @Service marks the service layer; @Component is the generic stereotype."
        )
        == []
    )


# --- corrections in the user's own words ------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "fact"),
    [
        (
            "Scratch that, the nightly backup now runs at 03:00 UTC. Update the cron entry.",
            "Correction: the nightly backup now runs at 03:00 UTC.",
        ),
        (
            "I was wrong earlier: the search cluster is on OpenSearch 2.11, not Elasticsearch 7.17.",
            "Correction: the search cluster is on OpenSearch 2.11, not Elasticsearch 7.17.",
        ),
        (
            "Update: we're on JDK 21 now for all Java services. Bump the toolchain.",
            "Correction: we're on JDK 21 now for all Java services.",
        ),
    ],
)
def test_a_correction_in_the_user_s_words_is_kept_and_says_so(prompt: str, fact: str) -> None:
    assert fact in extract_facts(f"User: {prompt}\n\nAssistant: Done."), extract_facts(f"User: {prompt}")


@pytest.mark.parametrize(
    ("fact", "old", "rewrite"),
    [
        (
            "Correction: the nightly backup now runs at 03:00 UTC.",
            "The nightly backup runs at 01:00 UTC via `cron/backup.sh`.",
            None,
        ),
        (
            "Payments on-call is @team-settlements now, not @team-ledger.",
            "Payments on-call is owned by @team-ledger.",
            None,
        ),
        (
            "Correction: we're on JDK 21 now for all Java services.",
            "Java services build with Gradle 7.6 and JDK 17, and `gradle/libs.versions.toml` pins the rest.",
            "Java services build with Gradle 7.6 and JDK 21, and `gradle/libs.versions.toml` pins the rest.",
        ),
    ],
)
def test_a_correction_supersedes_the_value_it_names(fact: str, old: str, rewrite: str | None) -> None:
    decision = decide(fact, [Neighbour("old", old, 0.7)])
    assert (decision.action, decision.target_id, decision.rewrite) == ("update", "old", rewrite), decision


@pytest.mark.parametrize(
    ("fact", "old"),
    [
        ("We renamed the default branch to `trunk`.", "The default branch is `main`."),
        ("The staging host moved to `db-3.internal`.", "The staging host is `db-2.internal` on port 5432."),
        (
            "We moved the nightly export to `jobs/export.py`.",
            "The nightly export runs from `cron/export.sh`.",
        ),
    ],
)
def test_a_subject_moved_to_a_new_value_supersedes_the_old_value(fact: str, old: str) -> None:
    decision = decide(fact, [Neighbour("old", old, 0.7)])
    assert (decision.action, decision.target_id) == ("update", "old"), decision.reason


@pytest.mark.parametrize(
    ("fact", "old"),
    [
        ("We moved the API to Go.", "The billing worker is written in Python 3.12."),
        ("Switched the logger to structlog.", "Logs go to Loki for 14 days."),
        (
            "We renamed the default branch to `trunk`.",
            "The default branch is protected; merges need a review.",
        ),
    ],
)
def test_a_move_of_another_subject_or_of_nothing_valued_adds(fact: str, old: str) -> None:
    assert decide(fact, [Neighbour("old", old, 0.7)]).action == "add"


@pytest.mark.parametrize(
    "text",
    [
        "User: ty, works\n\nAssistant: Great. The fix is on `main` now.",
        "User: lgtm\n\nAssistant: Merged. The branch `fix/rounding` is deleted.",
        "User: there's a wrong word in the docstring of `parse_amount`, it says 'cents' but means 'minor "
        "units'\n\nAssistant: Fixed the docstring in `ledger/amounts.py`; no code changed.",
    ],
)
def test_short_thanks_and_wording_fixes_leave_nothing(text: str) -> None:
    assert extract_facts(text) == []


def test_a_user_s_report_of_something_wrong_is_a_problem_not_a_fact() -> None:
    facts = extract_facts(
        "User: The totals in `reports/daily.sql` are wrong since the FX change. Can you look?\n\n"
        "Assistant: Looking now."
    )
    assert facts == []


# --- impersonal wording that stays grammatical -------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "fact"),
    [
        (
            "I updated `cron/backup.sh` schedule to `0 3 * * *`.",
            "Updated `cron/backup.sh` schedule to `0 3 * * *`.",
        ),
        ("I removed `package-lock.json` and added guards.", "Removed `package-lock.json` and added guards."),
        (
            "I made `BrokenPipe` a clean exit in `src/output.rs`.",
            "`BrokenPipe` is made a clean exit in `src/output.rs`.",
        ),
        ("I pinned `x==1` in `requirements.in`.", "`x==1` is pinned in `requirements.in`."),
    ],
)
def test_an_action_is_made_passive_only_when_its_object_ends_at_the_code_span(said: str, fact: str) -> None:
    assert extract_facts(f"User: go\n\nAssistant: {said}") == [fact]


# --- a short "Why?" asks about the statement before it -----------------------------------------------


def test_a_bare_why_after_a_statement_frames_the_answer_with_that_statement() -> None:
    facts = extract_facts(
        "User: `sync-job` stalls when the replica lags behind. Why?\n\nAssistant: The `sync-job` reads "
        "with `READ COMMITTED` on the replica and waits for `replica_lag < 5s` before each batch."
    )
    assert facts[0].startswith("`sync-job` stalls when the replica lags behind. Why? The `sync-job` reads"), (
        facts
    )


def test_a_bare_why_is_not_framed_onto_an_answer_that_does_not_show_it_answers() -> None:
    facts = extract_facts(
        "User: The nightly report is empty again. Why?\n\nAssistant: We run PostgreSQL 16 in production, "
        "and `pg_cron` runs the jobs at 01:00."
    )
    assert not any("Why?" in fact for fact in facts), facts


@pytest.mark.parametrize(
    "ask",
    ["can you figure out why", "Find it.", "Could you look into it?"],
)
def test_a_problem_and_a_request_to_find_its_cause_frame_the_cause(ask: str) -> None:
    facts = extract_facts(
        f"User: checkout_flow_spec keeps failing on the nightly run. {ask}\n\nAssistant: The nightly job "
        "runs with `TZ=UTC`, and `checkout_flow_spec` builds its cutoff from `Date.now()` in local time."
    )
    assert facts[0] == (
        "checkout_flow_spec keeps failing on the nightly run. Why? The nightly job runs with `TZ=UTC`, and "
        "`checkout_flow_spec` builds its cutoff from `Date.now()` in local time."
    ), facts


def test_a_request_to_investigate_without_a_problem_frames_nothing() -> None:
    facts = extract_facts(
        "User: We added a retry budget to the client. Can you check?\n\nAssistant: The client in "
        "`net/retry.go` caps retries at `RETRY_BUDGET=0.2` of requests."
    )
    assert not any("Why?" in fact for fact in facts), facts


@pytest.mark.parametrize("identifier", ["test_refund_webhook", "v2.json", "useMemo", "s3://bucket"])
def test_an_identifier_opening_a_fact_keeps_its_case(identifier: str) -> None:
    facts = extract_facts(f"Assistant: {identifier} is defined in `src/config.ts` with `RETRIES=3`.")
    assert facts and facts[0].startswith(identifier), facts


@pytest.mark.parametrize(
    ("lead_in", "fact"),
    [
        ("The API signs requests with `HMAC-SHA256`, so:", "The API signs requests with `HMAC-SHA256`."),
        ("Builds run in `buildkit` and then:", "Builds run in `buildkit`."),
        ("Secrets come from `sops` files, as follows:", "Secrets come from `sops` files."),
    ],
)
def test_a_lead_in_keeps_no_dangling_word_once_its_list_is_gone(lead_in: str, fact: str) -> None:
    assert extract_facts(f"Assistant: {lead_in}\n\n- one\n- two")[0] == fact


def test_that_before_a_preposition_is_the_object_and_joins_what_it_means() -> None:
    facts = extract_facts(
        "User: the cache is stale\n\nAssistant: Redis was configured with `maxmemory-policy noeviction`; "
        "I switched that to `allkeys-lru` in `redis.conf`."
    )
    assert facts == [
        "Redis was configured with `maxmemory-policy noeviction`; switched that to `allkeys-lru` in `redis.conf`."
    ]


def test_a_reply_reporting_a_change_it_made_is_about_the_project() -> None:
    facts = extract_facts(
        "User: why is the queue slow?\n\nAssistant: The consumer prefetch is 1. Bumping it to 50 in "
        "`consumer.py` fixed the throughput."
    )
    assert facts and "`consumer.py`" in facts[0], facts


def test_someone_changing_something_in_an_explanation_is_still_general_knowledge() -> None:
    text = (
        "User: explain optimistic locking in JPA\n\nAssistant: Optimistic locking uses a `@Version` column: "
        "the update fails with `OptimisticLockException` when someone else changed the row first."
    )
    assert extract_facts(text) == []


def test_a_four_word_question_that_names_its_subject_frames_the_answer() -> None:
    assert extract_facts(
        "User: where's the retry config?\n\nAssistant: It lives in `config/retry.toml`. We set it to 5 attempts."
    ) == ["Where's the retry config? It lives in `config/retry.toml`; we set it to 5 attempts."]


def test_a_question_whose_pronoun_leans_on_earlier_words_frames_nothing() -> None:
    assert extract_facts(
        "User: where is it defined?\n\nAssistant: `RETRIES` is defined in `config/retry.toml`."
    ) == ["`RETRIES` is defined in `config/retry.toml`."]


# --- impersonal wording: an action turns passive only when nothing else hangs on its subject -------


@pytest.mark.parametrize(
    ("reply", "kept", "never"),
    [
        (
            "I changed `src/Card.tsx` from `export default function Card` to `export function Card` and "
            "updated its 14 import sites.",
            "Changed `src/Card.tsx` from `export default function Card` to `export function Card` and "
            "updated its 14 import sites.",
            "is changed",
        ),
        (
            "I ran `fly secrets set API_BASE=https://api.example.dev` for the staging app and restarted "
            "the machines.",
            "Ran `fly secrets set API_BASE=https://api.example.dev` for the staging app and restarted the "
            "machines.",
            "is run",
        ),
    ],
)
def test_an_action_joined_to_a_second_one_keeps_its_active_voice(reply: str, kept: str, never: str) -> None:
    facts = extract_facts(f"User: please fix it\n\nAssistant: {reply}")
    assert kept in facts and not any(never in fact for fact in facts), facts


def test_a_lone_action_on_a_code_span_still_turns_passive() -> None:
    facts = extract_facts("User: pin it please\n\nAssistant: I pinned `httpx==0.27.2` in requirements.txt.")
    assert "`httpx==0.27.2` is pinned in requirements.txt." in facts, facts


def test_two_actions_each_on_a_code_span_both_turn_passive() -> None:
    facts = extract_facts(
        "User: pin it please\n\nAssistant: I pinned `httpx==0.27.2` in `requirements.in` and recompiled "
        "`requirements.txt`."
    )
    assert "`httpx==0.27.2` is pinned in `requirements.in`; `requirements.txt` is recompiled." in facts, facts

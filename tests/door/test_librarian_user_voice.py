"""Librarian rules for what the user says across sentences and lines (pure functions, no door): a
sentence that leans on the one before ("They want …", "She'll take over …") joins the sentence that
names what it means, and a list of settings ("topic: `x`", "consumer group `y`") is one fact, not a
fragment a line; a question the asker declares off the project ("totally unrelated to anything but …",
"an off-piste question, nothing to do with the garden") leaves nothing."""

from __future__ import annotations

import pytest

from bli_memory.door.librarian import extract_facts

# --- the user's sentence that leans on the one before ---------------------------------------------


def test_a_user_s_sentence_on_they_joins_the_kept_sentence_that_names_them() -> None:
    facts = extract_facts(
        "User: The bank gave us the drop box: host is sftp.bank.example on port 2022, user `ledger`. "
        "They want one file per day named stmt_20240101.csv with tabs as separator. Can you build the "
        "export?\n\nAssistant: Done, the task writes the file and uploads it."
    )
    assert facts[0] == (
        "The bank gave us the drop box: host is sftp.bank.example on port 2022, user `ledger`; they want "
        "one file per day named stmt_20240101.csv with tabs as separator."
    )


def test_a_user_s_sentence_on_she_joins_the_sentence_that_names_her_even_unkept() -> None:
    facts = extract_facts(
        "User: Our intern left last week, and the lab sent us Mirela Dobre as the new helper. She'll take "
        "over the weekly imports from next week.\n\nAssistant: Noted, I gave her account the importer role."
    )
    assert facts[0] == (
        "Our intern left last week, and the lab sent us Mirela Dobre as the new helper; she'll take over "
        "the weekly imports from next week."
    )


def test_a_user_s_sentence_on_they_with_nothing_before_it_is_still_dropped() -> None:
    facts = extract_facts(
        "User: They want one file per day named stmt_20240101.csv.\n\nAssistant: I will write that file."
    )
    assert not any("stmt_20240101" in fact for fact in facts)


def test_a_user_s_order_to_switch_everything_to_a_value_is_a_decision() -> None:
    facts = extract_facts(
        "User: Piotr told us `payments.settled.v1` goes away on 15 April. Switch everything to "
        "payments.settled.v2 and look at the rebalancing too.\n\nAssistant: Done, one PR."
    )
    assert "Switch everything to payments.settled.v2 and look at the rebalancing too." in facts, facts
    # a switch naming no value is a one-off task
    assert extract_facts("User: Switch to the other branch and run the tests.\n\nAssistant: Done.") == []


def test_a_change_someone_made_for_the_team_is_a_decision() -> None:
    facts = extract_facts(
        "User: sendwell is gone - priya's moved us to parcelpost (the old contract ends friday). "
        "switch the mailer over pls\n\nAssistant: Switched."
    )
    assert facts[0].startswith("Sendwell is gone - priya's moved us to parcelpost"), facts
    # a thing moved for someone else is no change of the team's
    assert not any(
        "printer" in fact
        for fact in extract_facts(
            "User: the printer moved to room 4 yesterday, fix the label job pls\n\nAssistant: Fixed."
        )
    )


def test_a_question_with_a_compound_of_only_is_still_a_question() -> None:
    """ "content-only" read as the choice word "only", and the question was kept as a decision."""
    facts = extract_facts(
        "User: the CDN is `cdn.otter.example` now. And one question because I forget every time: what "
        "exactly I must keep from a store build so later I can do a content-only update?\n\n"
        "Assistant: Keep `content_state.bin` from the build that went to the store."
    )
    assert not any("one question" in fact.lower() for fact in facts), facts
    assert any("content_state.bin" in fact for fact in facts), facts


def test_a_condition_with_no_main_clause_is_no_rule() -> None:
    crash = (
        "User: new top crash in `libunity.so`, 1.8% of sessions. Always when app comes back from background."
    )
    assert not any(
        fact.startswith("Always when") for fact in extract_facts(crash + "\n\nAssistant: Looking.")
    )
    rule = "User: Always when you touch `db/schema.sql`, run `make migrate` too.\n\nAssistant: Noted."
    assert any(fact.startswith("Always when you touch") for fact in extract_facts(rule))


# --- a list of settings in the user's prompt -----------------------------------------------------------


def test_consecutive_setting_lines_of_a_user_s_list_are_one_fact() -> None:
    facts = extract_facts(
        "User: new consumer for the billing service, can you wire it up?\n"
        "- topic: `billing.invoices.v3`\n"
        "- consumer group `billing-writer`\n"
        "- we use confluent-kafka-go, never sarama\n\n"
        "Assistant: Wired up the consumer in `billing/consumer.go`."
    )
    assert "Topic: `billing.invoices.v3`; consumer group `billing-writer`." in facts


def test_one_setting_line_alone_is_not_merged_with_the_prose_around_it() -> None:
    facts = extract_facts(
        "User: the cache settings:\n- ttl `900`\n- we never cache the cart page\n\n"
        "Assistant: Set the TTL in `cache/config.py`."
    )
    assert not any(";" in fact and "cart" in fact for fact in facts)


# --- a question the asker declares off the project ------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    [
        "totally unrelated to anything but it's bugging me: every time I plug my phone into my laptop the "
        "photo app opens its import screen. how do I make it stop?",
        "Forgive a slightly off-piste question, nothing to do with the observatory. My home backup to a FAT32 "
        "stick copies every file again each night. Why?",
    ],
)
def test_a_question_declared_off_the_project_leaves_nothing(prompt: str) -> None:
    reply = (
        "The setting lives per device in the system's image tool, not in the photo app: pick the device and "
        "choose No application. FAT32 stores times to two seconds and has no owners, so a copy that "
        "preserves them sees every file as changed; use `--modify-window=1 --no-owner`."
    )
    assert extract_facts(f"User: {prompt}\n\nAssistant: {reply}") == []


def test_a_handle_shaped_option_in_a_code_span_ties_no_answer_to_a_team() -> None:
    facts = extract_facts(
        "User: totally unrelated but the pane won't scroll in my terminal multiplexer, how do I fix it?\n\n"
        "Assistant: Turn mouse mode on with `set -g mouse on`; the plugin's `set -g @scroll-speed-lines 3` "
        "sets how far one wheel step moves."
    )
    assert facts == []


def test_nothing_to_do_with_a_thing_said_of_a_finding_keeps_the_finding() -> None:
    facts = extract_facts(
        "User: the timeout has nothing to do with the pool, the `RETRY_LIMIT=2` in `jobs.py` is the cause\n\n"
        "Assistant: Right: I raised `RETRY_LIMIT` to 5 in `jobs.py`."
    )
    assert facts


# --- a general question asked in other words -------------------------------------------------------------

_TEXTBOOK_REPLY = (
    "A mutex is held by one owner at a time, and only that owner releases it; a semaphore counts permits, "
    "so several holders can share it up to its count. Use a mutex to guard one shared value, and a "
    "semaphore to bound how many workers use a pool at once.\n\n"
    "```python\nlock = threading.Lock()\nslots = threading.Semaphore(4)\n```"
)


@pytest.mark.parametrize(
    "prompt",
    [
        # an asking request without its question mark
        "walk me through mutex vs semaphore, high level is fine",
        "remind me when to use a mutex and when a semaphore",
        # a request with an adverb, and an aside on why it is asked
        "Could you kindly clarify the distinction between a mutex and a semaphore? I wish to use them correctly.",
        # a spoken lead before an unmarked question
        "can u explain mutexes vs semaphores? like when do i actually need each",
        # the emphasis before the verb
        "what even is a semaphore",
        # the stack named in passing, the question asked in general
        "we're on Go 1.22 but in general how do a mutex and a semaphore differ? not just for go",
        "explain mutex vs semaphore. we mostly write kotlin so this is pure curiosity",
        # an aside's "my" says who asked, not whose project it is
        "my intern asked me why a semaphore is not a mutex and I totally blanked. remind me?",
    ],
)
def test_a_general_question_asked_in_other_words_leaves_nothing(prompt: str) -> None:
    assert extract_facts(f"User: {prompt}\n\nAssistant: {_TEXTBOOK_REPLY}") == []


@pytest.mark.parametrize(
    "prompt",
    [
        "walk me through how we deploy the api",
        "can you explain why our nightly job failed",
        "remind me where the retry limit is set",
        "my deploy keeps timing out. remind me where the retry limit is set?",
    ],
)
def test_an_asking_request_about_the_project_keeps_what_the_reply_states(prompt: str) -> None:
    reply = (
        "I looked at `deploy/api.sh`: it builds the image, pushes it to `registry.acme.internal/api` and "
        "runs `kubectl rollout restart deploy/api`. The retry limit is `RETRY_LIMIT=3` in `jobs/settings.py`."
    )
    assert extract_facts(f"User: {prompt}\n\nAssistant: {reply}")


# --- a prohibition, a state as of a change, praise ---------------------------------------------------


def test_a_prohibition_opening_on_no_is_a_rule_and_a_bare_no_is_an_answer() -> None:
    facts = extract_facts(
        "User: No Lombok annotations in this codebase, I don't want to debug generated code. Add the "
        "DTOs by hand.\n\nAssistant: Wrote the DTOs as records."
    )
    assert facts[0] == "No Lombok annotations in this codebase, I don't want to debug generated code.", facts
    for answer in (
        "No, that's fine, thanks.",
        "No problem, the v2 build is green.",
        "No changes to `app.yaml`.",
    ):
        assert extract_facts(f"User: {answer}\n\nAssistant: Great.") == [], answer


def test_a_state_as_of_a_change_is_no_problem_report() -> None:
    facts = extract_facts(
        "User: The lockfile has us on Nuxt 3.12.4 as of yesterday's rebase. Tidy the plugins folder."
        "\n\nAssistant: Tidied."
    )
    assert "The lockfile has us on Nuxt 3.12.4 as of yesterday's rebase." in facts, facts
    # the day of a failure still reports it
    assert extract_facts("User: The deploy of Nuxt 3.12.4 failed yesterday.\n\nAssistant: Looking.") == []


@pytest.mark.parametrize(
    "prompt",
    [
        "Brilliant, the 04:00 backup finished in 12 minutes instead of an hour.",
        "Fantastic, that's the first time the nightly run at 3am finished clean.",
    ],
)
def test_praise_that_names_a_time_is_no_fact(prompt: str) -> None:
    assert extract_facts(f"User: {prompt}\n\nAssistant: Glad it held.") == []

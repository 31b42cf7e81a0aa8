"""The deterministic librarian frames a reply's first statement with the user's wh-question only when
the statement shows that it answers it: a shared word that names something, a pronoun standing for
what was asked, the instruction a how-to question asks for, or a lead-in whose first item answers."""

from __future__ import annotations

import pytest

from bli_memory.door.librarian import extract_facts

QUESTION = "why does our flaky_retry_hook keep failing on the nightly run?"


def test_an_unrelated_first_sentence_is_kept_without_the_question() -> None:
    facts = extract_facts(f"User: {QUESTION}\n\nAssistant: We run PostgreSQL 16 in production.")
    assert facts == ["We run PostgreSQL 16 in production."]


def test_a_first_sentence_naming_what_was_asked_carries_the_question() -> None:
    facts = extract_facts(
        f"User: {QUESTION}\n\nAssistant: The `flaky_retry_hook` times out because the nightly database is cold."
    )
    assert facts == [
        "Why does our flaky_retry_hook keep failing on the nightly run? The `flaky_retry_hook` times out "
        "because the nightly database is cold."
    ]


@pytest.mark.parametrize(
    ("text", "framed"),
    [
        (
            "User: How do I rebuild the generated gRPC stubs?\n\n"
            "Assistant: Run `make proto`; it pins `buf` v1.32.2 in the Makefile.",
            "How do I rebuild the generated gRPC stubs? Run `make proto`; it pins `buf` v1.32.2 in the Makefile.",
        ),
        (
            "User: Where does tracer keep its config and cache?\n\nAssistant: We use the `directories` crate "
            "with qualifier `dev.acme`, so:\n\n- config: `~/.config/tracer/config.toml` on Linux\n"
            "- cache: `~/.cache/tracer/` on Linux",
            "Where does tracer keep its config and cache? We use the `directories` crate with qualifier "
            "`dev.acme`.",
        ),
    ],
    ids=["how-to answered by an instruction", "lead-in whose first item answers"],
)
def test_answers_shown_by_form_carry_the_question(text: str, framed: str) -> None:
    assert extract_facts(text)[0] == framed


def test_a_shared_generic_verb_is_no_evidence() -> None:
    """ "run" is in both, but says how, not what: the answer is about something else."""
    facts = extract_facts(f"User: {QUESTION}\n\nAssistant: We run the `payments` service on Kubernetes 1.29.")
    assert facts and not facts[0].startswith("Why does")

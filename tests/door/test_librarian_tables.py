"""Tables of who owns what (`door/librarian/tables.py`): a table whose header names a role becomes one
sentence a row, which extraction keeps and the briefing ranks as ownership; any other table, and a
table inside a code fence, stays layout."""

from __future__ import annotations

import pytest

from bli_memory.door.librarian import extract_facts
from bli_memory.door.librarian.lasting import DECISION_SCORE, lasting_score
from bli_memory.door.librarian.tables import role_tables_as_prose

OWNERS = (
    "| Path | Team | Lead |\n|---|---|---|\n| `svc/billing/` | @acme/payments | Ines Duarte |\n"
    "| `svc/search/` | @acme/discovery | none listed |\n"
)


def test_each_row_of_a_role_table_is_one_sentence_led_by_its_first_column() -> None:
    assert role_tables_as_prose(f"Owners:\n\n{OWNERS}\nAsk them first.") == (
        "Owners:\n\n- Path `svc/billing/`: the team is @acme/payments; the lead is Ines Duarte.\n"
        "- Path `svc/search/`: the team is @acme/discovery.\n\nAsk them first."
    )


def test_a_row_of_a_role_table_is_kept_and_ranks_as_who_owns_what() -> None:
    facts = extract_facts(f"User: who owns billing?\n\nAssistant: From `CODEOWNERS`:\n\n{OWNERS}")
    row = "Path `svc/billing/`: the team is @acme/payments; the lead is Ines Duarte."
    assert row in facts
    assert lasting_score(row) == DECISION_SCORE


@pytest.mark.parametrize(
    "text",
    [
        # figures of the moment: no column names a role
        "| Model | Time |\n|---|---|\n| `fct_sales` | 19 min |\n| `int_sales` | 11 min |",
        # a table inside a code fence is code
        f"```\n{OWNERS}```",
    ],
)
def test_other_tables_and_fenced_ones_stay_as_they_are(text: str) -> None:
    assert role_tables_as_prose(text) == text

"""A value moved in its slot (`librarian.slots`, pure): a correction that names only the new value
reaches the stored fact holding the old one in the same slot; and through a real door, a request and a
config block that name no old value leave no fact stating it current."""

from __future__ import annotations

import pytest

from bli_memory.door.librarian import decide, moved_value, slot_statements
from bli_memory.door.librarian.reconcile import Neighbour
from tests.door.helpers import saved_with_extract
from tests.helpers import DoorProcess


def _exchange(user: str, reply: str = "Done.") -> str:
    return f"User: {user}\n\nAssistant: {reply}"


# --- which statements of an exchange say that a value changed ---------------------------------------


def test_statements_are_the_sentences_with_a_change_word_and_a_value() -> None:
    text = _exchange(
        "The invoices job is slow. Finance wants the free shipping threshold raised to €75 next month. "
        "Should we move the API to 4420?",
        "Raised it. The job takes 12 seconds.",
    )
    assert slot_statements(text) == [
        "Finance wants the free shipping threshold raised to €75 next month.",
    ]


def test_the_lines_of_a_block_opened_by_a_change_are_statements_but_a_diffs_removed_lines_are_not() -> None:
    text = _exchange(
        "the compiler and the language server disagree, sort it out",
        "Compiler selection after the change:\n\n```nix\nhp = pkgs.haskell.packages.ghc984;\n```\n\n"
        "And the proxy:\n\n```diff\n-  listen 127.0.0.1:7311;\n+  listen 127.0.0.1:4420;\n```\n\n"
        "The test run:\n\n```text\nall 12 checks passed in 4 seconds\n```",
    )
    statements = slot_statements(text)
    assert "hp = pkgs.haskell.packages.ghc984;" in statements
    assert "+  listen 127.0.0.1:4420;" in statements
    assert not any("7311" in statement for statement in statements)


def test_a_block_answering_a_request_for_a_change_is_read_though_its_own_lead_says_none() -> None:
    text = _exchange(
        "the itch page lives on the studio account now, fix the upload step",
        "Both done in `.github/workflows/export.yml`:\n\n```yaml\nrun: butler push build emberworks/skyline:linux\n```",
    )
    assert "run: butler push build emberworks/skyline:linux" in slot_statements(text)


# --- a value moved in its slot ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stored", "user", "reply", "move"),
    [
        pytest.param(
            "The billing worker listens on port 7311 behind nginx.",
            "nginx and the metrics agent keep fighting over the port, so the billing worker lives on 4420 "
            "from here on.",
            "Done.",
            ("7311", "4420"),
            id="a port, named by what listens there",
        ),
        pytest.param(
            "The stack's region is us-east-1; the bucket policy names it too.",
            "listeners are mostly in Europe, so the stack lives in Frankfurt now",
            "Updated the stack config:\n\n```yaml\nconfig:\n  aws:region: eu-central-1\n```",
            ("us-east-1", "eu-central-1"),
            id="a cloud region",
        ),
        pytest.param(
            "The export job runs Godot 4.2.2 stable in its container.",
            "the loader is ported, so we go to 4.3 now",
            "Moved the project to Godot 4.3 stable:\n\n```diff\n-    container: godot-ci:4.2.2\n"
            "+    container: godot-ci:4.3\n```",
            ("4.2.2", "4.3"),
            id="an old value a diff removes is retired, not kept",
        ),
        pytest.param(
            "SMS reminders go out 24 hrs before the shift starts.",
            "the SMS goes out 3 hours before the shift from now on",
            "Done.",
            ("24", "3"),
            id="a count of time in another spelling of its unit",
        ),
        pytest.param(
            "Free shipping applies to orders over €60 within Germany.",
            "Finance wants the free shipping threshold raised to €75 next month.",
            "Done.",
            ("€60", "€75"),
            id="a sum in the same currency",
        ),
        pytest.param(
            "Build with Zig 0.12.1, nothing newer: the allocator API changed.",
            "ok",
            "Bumped Zig to 0.12.3 in `build.zig.zon`, the allocator is the same.",
            ("0.12.1", "0.12.3"),
            id="a version of the same release line",
        ),
        pytest.param(
            "Invoices go to Halima Okafor (finance lead), who approves anything over budget.",
            "Tobias Brandt took over finance this month, so the approvals and invoices go to Tobias now.",
            "Noted in `CONTRIBUTING.md`.",
            ("Halima Okafor", "Tobias Brandt"),
            id="a person, by a first name the exchange gives in full",
        ),
        pytest.param(
            "Tagged builds are uploaded to hollowfox/skyline on itch.",
            "the game page moved to the studio account now, please fix the upload",
            "Changed the target:\n\n```yaml\nrun: butler push build emberworks/skyline:linux\n```",
            ("hollowfox/skyline", "emberworks/skyline"),
            id="the owner of an owner/name handle",
        ),
        pytest.param(
            "The flake pins the compiler: haskell.packages.ghc948, not the default set.",
            "the language server and the compiler disagree",
            "Compiler selection after the change:\n\n```nix\nhp = pkgs.haskell.packages.ghc984;\n```",
            ("haskell.packages.ghc948", "pkgs.haskell.packages.ghc984"),
            id="a number moved inside a dotted name",
        ),
    ],
)
def test_a_correction_naming_only_the_new_value_moves_the_stored_one(
    stored: str, user: str, reply: str, move: tuple[str, str]
) -> None:
    exchange = _exchange(user, reply)
    moves = [m for s in slot_statements(exchange) if (m := moved_value(stored, s, exchange)) is not None]
    assert moves, slot_statements(exchange)
    assert (moves[0].old, moves[0].new) == move
    assert move[1] in moves[0].text and move[0] not in moves[0].text.replace(move[1], "")


def test_a_stored_range_moved_onto_its_upper_bound_names_the_value_alone() -> None:
    stored = "Django stays inside `>=4.2,<4.3` until we decide otherwise."
    exchange = _exchange(
        "we're going to the LTS",
        "The contributing guide still said the old Django range; I moved it to the 4.3 LTS pin.",
    )
    moves = [m for s in slot_statements(exchange) if (m := moved_value(stored, s, exchange)) is not None]
    assert [m.text for m in moves] == ["Django stays inside `4.3` until we decide otherwise."]


def test_the_rules_that_judge_a_fact_by_its_wording_see_no_correction_in_these() -> None:
    """The pairs above are what the slot reads and the fact-by-fact verdict does not: it adds them."""
    stored = "Local dev server is Undertow via the servlet adapter, listening on port 8280."
    fact = "Kindly shift the local Undertow to 3031."
    assert decide(fact, [Neighbour("old", stored, 0.6)]).action == "add"
    exchange = _exchange(f"The local port clashes with the proxy on our laptops. {fact}")
    moves = [moved_value(stored, s, exchange) for s in slot_statements(exchange)]
    assert any(m is not None and (m.old, m.new) == ("8280", "3031") for m in moves)


@pytest.mark.parametrize(
    ("stored", "user", "reply"),
    [
        pytest.param(
            "The engraving is a text box of 20 characters and costs €4.50 extra.",
            "the accountant has checked postage costs and wants the free delivery threshold raised to €50",
            "Done.",
            id="a sum sharing one word",
        ),
        pytest.param(
            "The crashes already reported for 1.3.1 stay unreadable.",
            "ok, ship it now",
            "Built and uploaded:\n\n```\nbuild/android/Hatchery-1.4.0.aab (92.6 MB)\n```",
            id="a version inside a built package's name",
        ),
        pytest.param(
            "The upstream budget is 250ms per call.",
            "the pricing team bumped the upstream budget after the page",
            "Done: the upstream budget is now `timeoutMs: 400`, and the p99 target is still 180ms.",
            id="a value said to hold as before",
        ),
        pytest.param(
            "Building the index took ~50s at this table size.",
            "the builds are faster now",
            "Ran the builds again:\n\n```\n✔  nx run api:build:production (38s)\n```",
            id="measures: about so much, and a run report's time",
        ),
        pytest.param(
            "dbt is pinned to 1.7.11 so local and CI match.",
            "the templater is still behind",
            "Now blocked: `sqlfluff-templater-dbt 3.0.7 depends on dbt-core<1.8.0`.",
            id="a version range's bound",
        ),
        pytest.param(
            "Fact 5: the build cache for service-5 lives in bucket cache-5 and expires after 5 days.",
            "Fact 3: the build cache for service-3 lives in bucket cache-3 and expires after 3 days.",
            "Done.",
            id="numbered siblings",
        ),
        pytest.param(
            "The alarm fires when the queue holds more than 50 messages.",
            "the redrive now moves up to 250 messages per run",
            "Done.",
            id="a count sharing only its unit",
        ),
        pytest.param(
            "The billing worker listens on port 7311.",
            "we moved the billing worker from 7311 to 4420 now",
            "Done.",
            id="an exchange that names the old value (the fact-by-fact rules judge it)",
        ),
        pytest.param(
            "Payouts go through Stripe Connect Express.",
            "Jonas Eberle owns payouts now.",
            "Done.",
            id="a product's capitalised name is no former holder",
        ),
        pytest.param(
            "Sink topic: `payments.enriched.v1`.",
            "the consumer now reads `payments.raw.v1`",
            "Done.",
            id="sibling names differing by a word",
        ),
        pytest.param(
            "Tests run with `uv run pytest -q quokka/reminders`.",
            "the shifts app is new now",
            "Ran:\n\n```console\n$ uv run pytest -q quokka/shifts\n```",
            id="a path's last part is a sibling",
        ),
        pytest.param(
            "Qdrant is up at qdrant-01.int.lab.lan:6333.",
            "the model endpoint now points at http://gpu-02.int.lab.lan:8001/v1",
            "Done.",
            id="ports of two hosts sharing a domain",
        ),
        pytest.param(
            "Pragmas: replaced `pragma solidity ^0.8.20;` with `pragma solidity 0.8.24;`.",
            "pragmas are now 0.8.26 everywhere",
            "Done.",
            id="a history of versions",
        ),
        pytest.param(
            "CI runs on Node 18.19.0.",
            "moved the runner to Node 20.11.1 now",
            "Done.",
            id="a version of another major release",
        ),
        pytest.param(
            "The UAT deploys go to tarn/uat.",
            "prod deploys go to tarn/prod now",
            "Done.",
            id="places run side by side",
        ),
    ],
)
def test_values_of_other_slots_are_left_alone(stored: str, user: str, reply: str) -> None:
    exchange = _exchange(user, reply)
    assert [moved_value(stored, s, exchange) for s in slot_statements(exchange)] == [None] * len(
        slot_statements(exchange)
    )


def test_a_question_is_no_statement_of_a_change() -> None:
    exchange = _exchange("should we move the billing worker to 4420?", "Maybe.")
    assert slot_statements(exchange) == []


# --- through a real door ------------------------------------------------------------------------------


def test_a_request_naming_only_the_new_port_retires_the_fact_with_the_old_one(
    door_onnx: DoorProcess, tag: str
) -> None:
    first = saved_with_extract(
        door_onnx,
        tag,
        _exchange(
            "Set up the billing worker service, please.",
            "The billing worker listens on port 7311 behind nginx; `deploy/nginx.conf` proxies `/billing` to it.",
        ),
    )
    assert first["outcome"]["added"] >= 1, first
    second = saved_with_extract(
        door_onnx,
        tag,
        _exchange(
            "nginx and the metrics agent keep fighting over the port. Kindly shift the billing worker to 4420.",
            "Changed the upstream:\n\n```nginx\nupstream billing { server 127.0.0.1:4420; }\n```",
        ),
    )
    assert second["outcome"]["updated"] >= 1, second
    status, body = door_onnx.post(
        "/api/memory/search",
        {"q": "which port does the billing worker listen on", "containerTag": tag, "limit": 20},
    )
    assert status == 200, body
    current = [row["content"] for row in body["results"] if row.get("kind", "memory") == "memory"]
    assert any("4420" in content and "billing worker" in content for content in current), current
    assert not any("7311" in content for content in current), current

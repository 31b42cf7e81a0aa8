"""The values a diff in an exchange changes (`librarian.diffs`, pure), and a diff followed through a
real door: the fact stating the old value is restated with the new one, though the reply's prose
names neither."""

from __future__ import annotations

import pytest

from bli_memory.door.librarian import changed_values, restated
from bli_memory.door.librarian.diffs import changed_value
from tests.door.helpers import saved_with_extract
from tests.helpers import DoorProcess


@pytest.mark.parametrize(
    ("old_line", "new_line", "change"),
    [
        ("memory = 2048", "memory = 4096", ("2048", "4096")),
        ("dbt-core==1.7.11", "dbt-core==1.8.7", ("1.7.11", "1.8.7")),
        (
            "payments-settled: payments.settled.v1",
            "payments-settled: payments.settled.v2",
            ("payments.settled.v1", "payments.settled.v2"),
        ),
        # a quoted value changed in part is changed whole
        ('schedule="0 17 * * *",', 'schedule="30 18 * * *",', ("0 17 * * *", "30 18 * * *")),
        (
            '"MLFLOW_TRACKING_URI": "http://mlflow.lab.internal:5000",',
            '"MLFLOW_TRACKING_URI": "https://mlflow.lab.example.net",',
            ("http://mlflow.lab.internal:5000", "https://mlflow.lab.example.net"),
        ),
        ("1.7.5", "1.9.8", ("1.7.5", "1.9.8")),  # a file that is its value alone (`.terraform-version`)
        ("dims = (2,3,4)", "dims = (2, 3, 4)", None),  # spacing only: no value changed
    ],
)
def test_a_changed_line_gives_its_old_and_new_value(
    old_line: str, new_line: str, change: tuple[str, str] | None
) -> None:
    assert changed_value(old_line, new_line) == change


@pytest.mark.parametrize(
    ("old_line", "new_line"),
    [
        ("x = 1", "y = 2"),  # no shared name
        ('bucket: System.get_env("B", "..."),', 'bucket: System.get_env("B", "files-prod"),'),
        ("return render(request, 'a.html', {'rows': rows, 'total': total})", "return JsonResponse(data)"),
    ],
)
def test_lines_that_change_no_single_value_give_none(old_line: str, new_line: str) -> None:
    assert changed_value(old_line, new_line) is None


def test_only_a_fenced_diff_is_read_and_each_removed_line_meets_its_own_added_line() -> None:
    text = (
        "User: more memory pls\n\nAssistant: Raised it in `infra/main.tf`:\n\n```diff\n"
        "@@ -3,4 +3,4 @@\n   cpu                      = 1024\n-  memory                   = 2048  # MB\n"
        "-  desired_count            = 2\n+  memory                   = 4096  # MB, month-end\n"
        "+  desired_count            = 3\n```\n\n"
        "A list is not a diff:\n\n```yaml\n- package: dbt-labs/dbt_utils\n  version: 1.1.1\n```\n\n"
        "- a bullet outside a fence\n+ and another\n"
    )
    assert changed_values(text) == [
        ("2048", "4096", "memory = 4096"),
        ("2", "3", "desired_count = 3"),
    ]


def test_an_unclosed_fence_is_read_to_the_end_once() -> None:
    text = "Assistant: Moved it.\n\n```diff\n-port: 8080\n+port: 9090\n" + "x\n" * 50_000
    assert changed_values(text) == [("8080", "9090", "port: 9090")]


def test_a_setting_named_right_before_the_old_value_takes_the_new_one() -> None:
    fact = "`infra/main.tf` sizes the task: `cpu = 1024` and `memory = 2048` MB."
    assert restated(fact, "2048", "4096", "memory = 4096") == (
        "`infra/main.tf` sizes the task: `cpu = 1024` and `memory = 4096` MB."
    )
    assert restated(fact, "1024", "2048", "memory = 2048") is None  # another setting's number


def test_a_setting_named_in_words_beside_the_old_number_takes_the_new_one() -> None:
    source = "SELLER_PAYOUT_HOLD_DAYS=14"
    assert restated("Hold seller money 7 days after the buyer confirms delivery.", "7", "14", source) == (
        "Hold seller money 14 days after the buyer confirms delivery."
    )
    assert restated("Sellers get paid 7 days after delivery.", "7", "14", source) == (
        "Sellers get paid 14 days after delivery."
    )
    # the unit alone, or the name's words without the unit, are another thing's number
    assert restated("Logs are kept 7 days.", "7", "14", source) is None
    assert restated("The payout job retries 7 times for a seller.", "7", "14", source) is None


def test_a_diff_restates_the_fact_that_states_the_old_value(door_onnx: DoorProcess, tag: str) -> None:
    first = saved_with_extract(
        door_onnx,
        tag,
        "User: how big is the ledger task?\n\nAssistant: `infra/modules/ledger/main.tf` sizes it: "
        "`cpu = 1024` and `memory = 2048` MB, two tasks.",
    )
    assert first["outcome"]["added"] >= 1, first
    second = saved_with_extract(
        door_onnx,
        tag,
        "User: the month-end run died with exit 137 again, give it more room\n\nAssistant: Raised it:\n\n"
        "```diff\n   cpu    = 1024\n-  memory = 2048\n+  memory = 4096\n```\n\n"
        "The heap has room for the month-end batch now.",
    )
    assert second["outcome"]["updated"] >= 1, second
    status, body = door_onnx.post(
        "/api/memory/search",
        {"q": "how much memory does the ledger task get", "containerTag": tag, "limit": 20},
    )
    assert status == 200, body
    current = [row["content"] for row in body["results"] if row.get("kind", "memory") == "memory"]
    assert any("memory = 4096" in content for content in current), current
    assert not any("2048" in content for content in current), current

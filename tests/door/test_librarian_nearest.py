"""A change said of the nearest fact (`door/librarian/nearest.py`): a correction that shares few words
with the fact it corrects, paired by the embedder's similarity and the one value of a kind both state."""

from __future__ import annotations

import pytest

from bli_memory.door.librarian import Neighbour, decide
from bli_memory.door.librarian.nearest import changed_nearest, kinds, moved_number


def test_kinds_reads_quantities_by_unit_family_times_versions_ports_and_hosts() -> None:
    text = "From 04:30 the sync waits 15 mins, listens on port 8443 at sync.lab.example.org, and needs 2.4.1."
    assert kinds(text) == {
        "quantity:minutes": {"15"},
        "time": {"04:30"},
        "port": {"8443"},
        "host": {"sync.lab.example.org"},
        "version": {"2.4.1"},
    }


@pytest.mark.parametrize(
    ("text", "found"),
    [
        # a URL's host counts, with its port, whatever path follows it
        ("The feed is https://rt.transit.example/feed, polled every 20 s.", {"rt.transit.example"}),
        ("Registry: `https://models.lab.internal:8443/v2`.", {"models.lab.internal:8443"}),
        ("DATABASE_URL=postgres://app@db-stg.lab.internal:5432/app", {"db-stg.lab.internal:5432"}),
    ],
)
def test_a_url_names_its_host(text: str, found: set[str]) -> None:
    assert kinds(text)["host"] == found


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("We're on 2022.3.40f1 now.", "2022.3.40f1"),  # a release's letters and number after it
        ("The loader is ported, so we go to 4.3 now.", "4.3"),  # a word after it that is no unit
        ("Engine: Godot 4.3 stable.", "4.3"),
    ],
)
def test_a_version_is_read_with_its_release_suffix_and_beside_words_that_are_no_unit(
    text: str, version: str
) -> None:
    assert kinds(text)["version"] == {version}


def test_a_number_before_a_unit_is_a_quantity_not_a_version() -> None:
    assert kinds("The run took 4.5 hours at 0.6 m/s.") == {
        "quantity:hours": {"4.5"},
        "quantity:metres per second": {"0.6"},
    }


@pytest.mark.parametrize(
    ("old", "new", "values"),
    [
        (
            "Carts are kept for 20 minutes and then emptied by the sweeper.",
            "From now on a basket stays reserved for 35 minutes while the buyer pays.",
            ("20", "35"),
        ),
        (
            "The reconcile job runs at 01:30 Oslo time.",
            "Because the export finishes later, our job starts at 05:45 from now on.",
            ("01:30", "05:45"),
        ),
        (
            "The game server should on UDP port 7000 listen, with a --port flag to override.",
            "The default port clashed with the voice chat, so listen on 27015 by default from now.",
            ("7000", "27015"),
        ),
        # a speed is its own unit, not minutes beside the "3.5 m" of the aisles; the docking speed is
        # another setting, in a clause that says no change
        (
            "Aisles are 3.5 m wide, so the forklift drives at most 1.2 m/s between the racks.",
            "Safety review: from now the top speed is 0.8 m/s between the racks, and docking stays slow, 0.3 m/s.",
            ("1.2", "0.8"),
        ),
        # a URL's host moved within the same site, near enough to be the same endpoint
        (
            "Src = gtfs-rt @ https://rt.ridenorth.example/feed , poll q20s.",
            "RideNorth moved the realtime endpoint, it's https://gtfs.ridenorth-transit.example/v2/realtime now.",
            ("rt.ridenorth.example", "gtfs.ridenorth-transit.example"),
        ),
        (
            "Pin the editor: we stay on 2022.3.21f1 LTS.",
            "We're on 2022.3.40f1 now, CI image too.",
            ("2022.3.21f1", "2022.3.40f1"),
        ),
    ],
)
def test_a_change_of_the_one_value_of_a_kind_supersedes_the_nearest_fact(
    old: str, new: str, values: tuple[str, str]
) -> None:
    decision = decide(new, [Neighbour("old", old, 0.7)])
    assert (decision.action, decision.values) == ("update", values), decision.reason


@pytest.mark.parametrize(
    ("old", "new", "similarity"),
    [
        # no change said where the value is
        (
            "Boot takes 45 s because the cache is warmed.",
            "The cache is no longer warmed at boot; it fills within 30 s.",
            0.7,
        ),
        # too far apart, and no word of the subject shared
        (
            "The nightly backup of the orders database runs at 02:00.",
            "The invoice report email now goes out at 07:00.",
            0.6,
        ),
        # each names its own thing in the same place
        ("The staging host is `db-2.internal`.", "The production host is now `db-3.internal`.", 0.8),
        # two values of the kind in the old fact: which one changed is not known
        ("The sync runs at 01:00 and at 13:00.", "The sync now runs at 04:00.", 0.8),
        # not near enough
        ("Carts are kept for 20 minutes.", "A basket now stays reserved for 35 minutes.", 0.4),
        # another host of the same site, not near enough to be the same service's address
        (
            "Prometheus lives at https://prom.metrics.example.net.",
            "Grafana now lives at https://grafana.ops.example.io.",
            0.62,
        ),
    ],
)
def test_the_nearest_fact_is_left_alone_without_the_evidence(old: str, new: str, similarity: float) -> None:
    assert changed_nearest(new, [("old", old, similarity)]) is None


HOLD = "Holds now expire after 8 minutes and are released by the database itself via `pg_cron`."


def test_a_changed_quantity_reaches_a_further_fact_of_the_same_unit_and_subject() -> None:
    """A duration is said again in other words: under the nearest-fact floor, a fact stating one
    quantity of the same unit and sharing a word of the subject ("hold") takes the new value."""
    new = "Changed the hold length to 12 minutes in the database and on the page."
    assert changed_nearest(new, [("old", HOLD, 0.33)]) == ("old", "8", "12")
    decision = decide(new, [Neighbour("old", HOLD, 0.33)])
    assert decision.action == "update" and decision.rewrite == HOLD.replace("8 minutes", "12 minutes")


@pytest.mark.parametrize(
    ("new", "similarity"),
    [
        ("Changed the hold length to 12 minutes in the database and on the page.", 0.25),  # too far
        ("The reminder email now goes out 12 minutes before the start.", 0.4),  # no word of the subject
        ("Changed the hold length to 12 hours in the database.", 0.4),  # another unit
    ],
)
def test_a_changed_quantity_leaves_a_further_fact_alone_without_the_evidence(
    new: str, similarity: float
) -> None:
    assert changed_nearest(new, [("old", HOLD, similarity)]) is None


def test_m_is_its_own_unit_neither_minutes_nor_metres_per_second() -> None:
    assert kinds("Rows are 3.2 m wide; the poller waits 5 minutes.") == {
        "quantity:m": {"3.2"},
        "quantity:minutes": {"5"},
    }


def test_only_the_nearest_two_are_read_most_similar_first() -> None:
    new = "From now on a basket stays reserved for 35 minutes while the buyer pays."
    far = ("far", "Baskets are emptied after 20 minutes.", 0.56)
    near = [
        ("a", "The basket page shows a timer.", 0.8),
        ("b", "Carts are kept for 25 minutes, then emptied.", 0.7),
    ]
    assert changed_nearest(new, [far, *near]) == ("b", "25", "35")
    assert changed_nearest(new, [far, *near, ("c", "The basket page is white.", 0.75)]) is None


def test_a_file_s_name_is_no_host() -> None:
    assert "host" not in kinds(
        "Moved `CONFIG_I2C=y` from `prj.conf` to `boards/revc.conf`, now in board.yml."
    )


def test_a_role_s_new_holder_is_written_as_the_correction_writes_the_name() -> None:
    old = "Deploy approvals: the contact is Kenji Watanabe; builds are signed on `ci-mac-02`."
    new = "As of today the contact for deploy sign-off is Lucía Ortega."
    decision = decide(new, [Neighbour("old", old, 0.7)])
    assert "in the nearest fact" in decision.reason
    assert (decision.action, decision.values) == ("update", ("Kenji Watanabe", "Lucía Ortega")), (
        decision.reason
    )
    assert decision.rewrite == old.replace("Kenji Watanabe", "Lucía Ortega")


# --- a number said to move from one value to another ------------------------------------------------

OLD_BUDGET = "VaultkeepTreasury.executeWithdrawal stays under 52000 gas on the single-token path."


def test_a_number_said_to_move_replaces_it_in_the_near_fact_that_states_it() -> None:
    decision = decide(
        "The withdrawal budget moves from 52000 to 55000.", [Neighbour("old", OLD_BUDGET, 0.45)]
    )
    assert decision.action == "update", decision.reason
    assert decision.rewrite == OLD_BUDGET.replace("52000", "55000")


@pytest.mark.parametrize(
    ("new", "old", "similarity"),
    [
        # another subject: the claim budget is not the withdrawal's
        ("The claim budget moves from 52000 to 55000.", OLD_BUDGET, 0.45),
        # the old fact states the number twice: which one moved is not known
        ("The withdrawal budget moves from 52000 to 55000.", "Withdrawal: 52000 gas, claim: 52000 gas.", 0.6),
        # another unit: 55000 users are no new value of 52000 ms
        (
            "The withdrawal queue moves from 52000 to 55000 users.",
            "executeWithdrawal times out after 52000 ms.",
            0.6,
        ),
        # too far apart
        ("The withdrawal budget moves from 52000 to 55000.", OLD_BUDGET, 0.2),
    ],
)
def test_a_moved_number_leaves_alone_a_fact_it_may_not_be_said_of(
    new: str, old: str, similarity: float
) -> None:
    assert moved_number(new, [("old", old, similarity)]) is None

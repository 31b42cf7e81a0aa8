"""The saved exchanges about none of their space's parts (``librarian.anchors``), pure, and through
a real door: an exchange saved into a space it meets nowhere gives no facts, and the briefing leaves
out the facts of one that was saved before the space had anything to meet."""

from __future__ import annotations

import pytest

from bli_memory.door.librarian.anchors import (
    LOOSE_AT_SAVE_MIN_SOURCES,
    LOOSE_MIN_SOURCES,
    identifiers,
    loose_exchange,
    loose_sources,
)
from tests.door.helpers import saved_with_extract
from tests.helpers import DoorProcess


@pytest.mark.parametrize(
    ("fact", "names"),
    [
        ("The pve box is pve-hearth on 192.168.20.5.", {"pve-hearth", "192.168.20.5"}),
        ("Our app id is 2718290; 443 is a quantity's size.", {"2718290"}),
        ("Handoff is at 09:00, then Priya Raghunathan takes the pager.", {"09:00", "priya", "raghunathan"}),
        (
            "Jars go to `/Volumes/gristmill/artifacts/jars` before the job runs.",
            {"volumes/gristmill/artifacts/jars"},
        ),
        ("Java 17. Spark 4 drops Java 8/11, so the build targets 17.", {"java", "8/11"}),
        (
            "Built `lf-build01` with Unity 2022.3.41f1 for the Steam depot.",
            {"lf-build01", "unity", "2022.3.41f1", "steam"},
        ),
    ],
)
def test_a_name_is_read_by_its_shape(fact: str, names: set[str]) -> None:
    assert identifiers(fact) == names


@pytest.mark.parametrize(
    "fact",
    [
        "Mutex: a lock with *ownership*.",
        "A binary semaphore looks like a mutex but anyone can release it.",
        "Use the pool. Fix: Bumped the limit after the run.",  # a capital opening a sentence or a plain word
        "There are two high tides a day because the moon pulls on both sides of the earth.",
        "Spell out abbreviations, e.g. write 'for example', i.e. in full.",  # "e.g" and "i.e" name nothing
    ],
)
def test_plain_words_name_nothing(fact: str) -> None:
    assert identifiers(fact) == frozenset()


SPACE = [
    (
        "exchange:1",
        "User: the db is tidemark-pg on fly, region lhr.\n\nAssistant: Attached it in `deploy/fly.toml`.",
    ),
    ("exchange:1", "The database is `tidemark-pg`, attached on Fly."),  # a fact drawn from it
    (
        "exchange:2",
        "User: staging gets its own cluster, not tidemark-pg.\n\nAssistant: Done in `deploy/fly.staging.toml`.",
    ),
    ("exchange:3", "User: Rangi owns the workers.\n\nAssistant: Noted in `docs/owners.md` for Rangi."),
    (
        "exchange:4",
        "User: reminders go out at 17:00 UK time.\n\nAssistant: The cron that Rangi owns now says so.",
    ),
    ("exchange:5", "User: why are there two tides a day?\n\nAssistant: The Moon pulls the near side more."),
    (
        "exchange:6",
        "User: no hex colours in components from now on.\n\nAssistant: Lint rule added in `src/theme/tokens.ts`.",
    ),
]


def test_an_exchange_naming_nothing_the_others_name_and_no_path_is_loose() -> None:
    # the tides share no name with the project; the colour rule shares none either, but names a path
    assert loose_sources(SPACE) == {"exchange:5"}


def test_a_name_the_exchange_alone_holds_anchors_nothing() -> None:
    alone = [("exchange:1", "User: Ask Moira.\n\nAssistant: Moira knows."), *SPACE[2:5]]
    assert "exchange:1" in loose_sources(alone)


def test_a_space_of_few_exchanges_judges_none_loose() -> None:
    few = [pair for pair in SPACE if pair[0] in {"exchange:1", "exchange:5"}]
    assert len({source for source, _ in few}) < LOOSE_MIN_SOURCES
    assert loose_sources(few) == frozenset()


def test_an_exchange_being_saved_is_judged_against_the_space_before_it() -> None:
    before = [pair for pair in SPACE if pair[0] != "exchange:5"]
    tides = SPACE[5][1]
    assert loose_exchange(tides, before)
    assert not loose_exchange("User: does Rangi still own it?\n\nAssistant: Yes.", before)  # a name held
    assert not loose_exchange("User: why?\n\nAssistant: See `docs/tides.md`.", before)  # a path of the repo


def test_a_path_under_home_ties_nothing_to_the_project() -> None:
    before = [pair for pair in SPACE if pair[0] != "exchange:5"]
    photos = "User: rename my holiday photos by date\n\nAssistant: `cd ~/Pictures/trip` and run exiftool."
    assert loose_exchange(photos, before)
    assert not loose_exchange(photos.replace("~/Pictures/trip", "./assets/photos"), before)


def test_a_space_whose_exchanges_name_no_path_judges_none_as_they_are_saved() -> None:
    # a chat about anything but a repository: nothing of the space is a part to meet
    chat = [
        (f"exchange:{n}", f"User: how was {day}?\n\nAssistant: Busy! {what}.")
        for n, (day, what) in enumerate(
            [("Monday", "Pottery class"), ("Tuesday", "A long run"), ("today", "Baking")]
        )
    ]
    assert not loose_exchange("User: any summer plans?\n\nAssistant: Researching adoption agencies.", chat)


def test_the_first_exchanges_of_a_space_are_never_judged() -> None:
    first = SPACE[:1]
    assert len({source for source, _ in first}) < LOOSE_AT_SAVE_MIN_SOURCES
    assert not loose_exchange(SPACE[5][1], first)
    assert not loose_exchange(SPACE[5][1], [])


EXCHANGES = [
    "User: the harbour app's db is tidemark-pg on Fly, region lhr. Rangi owns the Oban workers.\n\n"
    'Assistant: Attached `tidemark-pg`; `primary_region = "lhr"` is in `deploy/fly.toml`.',
    "User: arrival reminders go out at 17:00 UK time, Rangi wants the cron in Oban.\n\n"
    "Assistant: The Oban cron entry in `config/runtime.exs` runs `ArrivalReminder` at 17:00 Europe/London.",
    "User: staging should get its own cluster, not tidemark-pg.\n\n"
    "Assistant: Created tidemark-pg-staging on Fly; staging deploys with `fly deploy -c deploy/fly.staging.toml`.",
    # worded so that extraction keeps a fact of it: only the space can tell it is about nothing here
    "User: my nephew asked me yesterday why bread dough has to rest before baking and i had "
    "no good answer. whats going on in there\n\nAssistant: Resting lets two things happen. The yeast "
    "keeps fermenting, so carbon dioxide builds up in the dough and it rises. The gluten network also "
    "relaxes: kneading stretches the protein strands tight, and a rest lets them loosen. A longer, colder "
    "rest also gives enzymes time to break starch into sugars, which is where most of the flavour comes from.",
]


def test_an_exchange_about_nothing_of_the_space_is_kept_without_facts(door: DoorProcess, tag: str) -> None:
    for exchange in EXCHANGES[:3]:
        assert saved_with_extract(door, tag, exchange)["outcome"]["added"] > 0
    bread = saved_with_extract(door, tag, EXCHANGES[3])
    assert bread["outcome"]["added"] == 0, bread
    status, found = door.post(
        "/api/memory/search", {"q": "where does the flavour of bread come from", "containerTag": tag}
    )
    assert status == 200, found
    starch = [hit for hit in found["results"] if "starch" in hit["content"]]
    assert starch and all(hit["kind"] == "document" for hit in starch), found  # the exchange is kept, whole


def test_the_briefing_leaves_out_what_a_general_question_left(door: DoorProcess, tag: str) -> None:
    # saved first, when the space had nothing to meet, the general question gives its facts …
    for exchange in [EXCHANGES[3], *EXCHANGES[:3]]:
        saved_with_extract(door, tag, exchange)
    status, found = door.post(
        "/api/memory/search", {"q": "where does the flavour of bread come from", "containerTag": tag}
    )
    assert status == 200, found
    tides = [hit for hit in found["results"] if hit["kind"] == "memory" and "starch" in hit["content"]]
    assert tides, found  # … which are kept, and found …
    status, answer = door.post("/api/memory/v4/profile", {"containerTag": tag})
    assert status == 200
    shown = answer["profile"]["dynamic"] + [row["content"] for row in answer["recent"]]
    assert any("tidemark-pg" in line for line in shown), shown
    assert not any("starch" in line or "dough" in line for line in shown), shown  # … but never brief

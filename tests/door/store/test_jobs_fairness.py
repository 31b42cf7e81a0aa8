"""Extraction jobs are claimed in a round over the devices that have some waiting, on both stores:
one device's backlog never holds another device's job back by more than one job per waiting device.
A claimer passes the device of its previous job (`claim_job(after_device=...)`), as the door's
worker does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bli_memory.door.model import Job
from bli_memory.door.store.roles import Store
from tests.door.helpers import store_principal
from tests.door.store.helpers import STORES, open_kind


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = open_kind(request.param, tmp_path, request)
    yield opened
    opened.close()


def _claim_all(store: Store) -> list[Job]:
    """Claim and finish every waiting job as the worker does, in its order."""
    claimed: list[Job] = []
    previous: str | None = None
    while (job := store.claim_job(after_device=previous)) is not None:
        claimed.append(job)
        store.finish_job(job.id, {})
        previous = job.device_id
    return claimed


def test_a_backlog_of_one_device_does_not_hold_back_the_jobs_of_others(store: Store) -> None:
    flood = store_principal(store, "flood")
    backlog = [store.enqueue_job(flood, "t", f"exchange {n}", None) for n in range(8)]
    ada = store_principal(store, "ada")
    bob = store_principal(store, "bob")
    ada_jobs = [store.enqueue_job(ada, "t", f"ada {n}", None) for n in range(2)]
    bob_job = store.enqueue_job(bob, "t", "bob", None)
    order = [job.id for job in _claim_all(store)]
    assert sorted(order) == sorted([*backlog, *ada_jobs, bob_job])  # each once
    # every device is served once per round while it has jobs waiting
    assert set(order[:3]) == {backlog[0], ada_jobs[0], bob_job}
    assert set(order[3:5]) == {backlog[1], ada_jobs[1]}
    assert order[5:] == backlog[2:]  # alone now: the rest, oldest first
    # each device's own jobs keep their order
    assert [job_id for job_id in order if job_id in backlog] == backlog


def test_the_round_goes_on_from_the_previous_device_and_wraps(store: Store) -> None:
    devices = [store_principal(store, name) for name in ("ann", "ben", "cy")]
    for principal in devices:
        store.enqueue_job(principal, "t", f"{principal.person} one", None)
        store.enqueue_job(principal, "t", f"{principal.person} two", None)
    ids = sorted(principal.device_id for principal in devices)
    first = store.claim_job(after_device=ids[1])  # the round stands after the middle device
    assert first is not None and first.device_id == ids[2]
    second = store.claim_job(after_device=ids[2])  # past the last device: back to the first
    assert second is not None and second.device_id == ids[0]
    third = store.claim_job()  # no place in the round: from the first device
    assert third is not None and third.device_id == ids[0] and third.content.endswith("two")


def test_without_a_previous_device_the_oldest_job_of_the_first_device_comes_first(store: Store) -> None:
    ada = store_principal(store, "ada")
    first = store.enqueue_job(ada, "t", "first", None)
    store.enqueue_job(ada, "t", "second", None)
    claimed = store.claim_job()
    assert claimed is not None and claimed.id == first

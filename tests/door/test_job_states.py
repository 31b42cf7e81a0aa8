"""An extraction job's states: their stored text never changes, and the moves between them are the
ones the stores make (`door/job_states.py`)."""

from __future__ import annotations

import json

from bli_memory.door.job_states import NEXT_STATES, PENDING_STATES, JobState, is_final, may_move


def test_each_state_is_its_stored_text_in_sql_json_and_comparisons() -> None:
    assert [state.value for state in JobState] == ["queued", "running", "done", "failed", "cancelled"]
    for state in JobState:
        assert str(state) == f"{state}" == state.value and state == state.value
    assert json.dumps({"status": JobState.DONE}) == '{"status": "done"}'


def test_the_moves_are_the_ones_the_stores_make_and_three_states_are_final() -> None:
    assert set(NEXT_STATES) == set(JobState)
    assert NEXT_STATES[JobState.QUEUED] == {JobState.RUNNING, JobState.CANCELLED}
    assert NEXT_STATES[JobState.RUNNING] == {
        JobState.RUNNING,  # a shared store's claim of a job whose lease ran out
        JobState.QUEUED,  # a retry, or a restart's requeue
        JobState.DONE,
        JobState.FAILED,
        JobState.CANCELLED,  # its device was revoked
    }
    assert [state for state in JobState if is_final(state)] == [
        JobState.DONE,
        JobState.FAILED,
        JobState.CANCELLED,
    ]
    assert set(PENDING_STATES) == {state for state in JobState if not is_final(state)}


def test_may_move_reads_the_table_and_refuses_a_state_it_does_not_know() -> None:
    assert may_move("queued", "running") and may_move(JobState.RUNNING, "done")
    assert not may_move("done", "queued") and not may_move("queued", "done")
    assert not may_move("queued", "paused") and not may_move("paused", "running")

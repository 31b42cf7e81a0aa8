"""render.py is pure: door answers in, (text, structured) out. No door, no clock."""

from __future__ import annotations

import datetime as dt

import pytest

from bli_memory import render

NOW = dt.datetime(2026, 9, 10, 12, 0, tzinfo=dt.timezone.utc)


def ago(**delta: float) -> str:
    return (NOW - dt.timedelta(**delta)).isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize(
    ("created", "age"),
    [
        (ago(minutes=59), "<1h"),
        (ago(hours=5, minutes=3), "5h"),
        (ago(days=3, hours=2), "3d"),
        (ago(days=65), "2mo"),
        (ago(days=800), "2y"),
        (ago(minutes=-10), "<1h"),  # clock skew: a time in the future
        (None, "?"),
        ("yesterday", "?"),
        (True, "?"),
    ],
)
def test_age_reads_like_a_person_would_say_it(created: object, age: str) -> None:
    assert render.format_age(created, NOW) == age


def test_age_accepts_epoch_seconds_and_milliseconds() -> None:
    five_hours_ago = (NOW - dt.timedelta(hours=5)).timestamp()
    assert render.format_age(five_hours_ago, NOW) == "5h"
    assert render.format_age(five_hours_ago * 1000, NOW) == "5h"


def test_a_naive_timestamp_is_taken_as_utc() -> None:
    assert render.format_age("2026-09-10T07:00:00", NOW) == "5h"


def test_similarity_is_labelled_only_for_a_real_number() -> None:
    assert render.format_similarity(0.834) == "cosine similarity 0.83"
    assert render.format_similarity(0) == "cosine similarity 0.00"
    assert render.format_similarity(None) is None
    assert render.format_similarity("0.9") is None
    assert render.format_similarity(False) is None


def search_answer() -> dict[str, object]:
    return {
        "results": [
            {
                "id": "m1",
                "kind": "memory",
                "content": "We pin numpy < 2.\nonnxruntime 1.17 breaks on it.",
                "containerTag": "repo_a__1",
                "similarity": 0.91,
                "score": 0.7,
                "createdAt": ago(hours=5),
            },
            {
                "id": "m2",
                "kind": "memory",
                "content": "Keyword-only hit",
                "containerTag": "repo_a__old",
                "similarity": None,
                "score": 0.4,
                "createdAt": ago(days=3),
            },
            {
                "id": "d1",
                "kind": "document",
                "content": "Release runbook",
                "containerTag": "repo_a__1",
                "score": 0.3,
                "createdAt": ago(days=65),
                "link": "https://example.test/runbook",
            },
        ],
        "searched": ["repo_a__1", "repo_a__old"],
    }


def test_search_lists_facts_and_documents_apart_with_id_age_source_and_full_text() -> None:
    text, structured = render.render_search("numpy", "repo_a__1", search_answer(), NOW)
    facts, documents = text.split("Documents:")
    assert "Remembered facts:" in facts
    assert "[id m1 · 5h · source repo_a__1 · cosine similarity 0.91]" in facts
    assert "   We pin numpy < 2.\n   onnxruntime 1.17 breaks on it." in facts
    assert "[id d1 · 2mo · source repo_a__1 · link https://example.test/runbook]" in documents
    assert text.startswith("2 remembered facts and 1 document for “numpy” in space repo_a__1")
    assert "also searched: repo_a__old" in text.splitlines()[0]
    assert [m["id"] for m in structured["memories"]] == ["m1", "m2"]
    assert [d["id"] for d in structured["documents"]] == ["d1"]
    assert structured["memories"][0]["age"] == "5h"
    assert structured["silent"] is False
    assert structured["summary"] == text.splitlines()[0]


def test_a_fused_score_or_missing_similarity_is_never_shown_as_similarity() -> None:
    text, _ = render.render_search("numpy", "repo_a__1", search_answer(), NOW)
    m2_line = next(line for line in text.splitlines() if "id m2" in line)
    assert "similarity" not in m2_line
    assert "0%" not in text
    assert "0.40" not in text  # the fused score of m2


def test_zero_matches_says_the_record_is_silent() -> None:
    text, structured = render.render_search(
        "flux capacitor", "repo_a__1", {"results": [], "searched": []}, NOW
    )
    assert text.startswith("The record is silent on “flux capacitor” in space repo_a__1")
    assert structured["silent"] is True
    assert structured["memories"] == [] and structured["documents"] == []


def test_save_names_the_space_the_memory_landed_in() -> None:
    text, structured = render.render_save(
        {"id": "m9", "containerTag": "repo_canonical__2", "status": "created"}, "repo_alias__1"
    )
    assert text == (
        "Saved memory m9 in space repo_canonical__2 (asked for repo_alias__1; "
        "the door files that tag under repo_canonical__2) (status: created)."
    )
    assert structured["containerTag"] == "repo_canonical__2"
    assert structured["requestedContainerTag"] == "repo_alias__1"


def test_save_unchanged_and_queued_say_so() -> None:
    text, _ = render.render_save({"id": "m9", "containerTag": "t", "status": "unchanged"}, "t")
    assert text.startswith("Already remembered memory m9 in space t")
    text, structured = render.render_save({"queued": True, "jobId": "j1", "containerTag": "t"}, "t")
    assert "Queued for extraction in space t as job j1" in text
    assert structured["queued"] is True and "id" not in structured


def test_update_shows_the_new_text_and_the_text_it_replaced() -> None:
    history = {
        "id": "m1",
        "versions": [
            {"id": "v1", "version": 1, "content": "Ana owns releases", "status": "superseded"},
            {"id": "v2", "version": 2, "content": "Bo owns releases", "status": "current"},
        ],
    }
    text, structured = render.render_update(
        {"id": "m1", "version": 2, "previousVersionId": "v1"}, "m1", "Bo owns releases", history
    )
    assert (
        text.splitlines()[0] == "Updated memory m1 to version 2; the previous text is kept as history (v1)."
    )
    assert "It now says:\n   Bo owns releases" in text
    assert "It said before:\n   Ana owns releases" in text
    assert structured["previousContent"] == "Ana owns releases"
    assert [v["version"] for v in structured["versions"]] == [1, 2]


def test_update_without_history_still_says_the_old_text_is_kept() -> None:
    text, structured = render.render_update({"id": "m1", "version": 3}, "m1", "new")
    assert "kept as history" in text
    assert structured["previousContent"] is None and "versions" not in structured


def test_forget_says_exactly_what_was_forgotten_and_how() -> None:
    answer = {
        "forgotten": {"id": "m1", "content": "Ana owns releases", "similarity": 0.93},
        "match": "closest",
    }
    text, structured = render.render_forget(answer, "repo_a__1")
    assert text.splitlines()[0] == (
        "Forgot memory m1 in space repo_a__1 (as the closest match, cosine similarity 0.93); "
        "it is tombstoned, not erased."
    )
    assert text.splitlines()[-1] == "   Ana owns releases"
    assert structured["match"] == "closest"


def test_nothing_forgotten_is_data_and_names_the_bar_for_closest() -> None:
    text, structured = render.render_nothing_forgotten("repo_a__1", "closest", "who owns releases")
    assert "no memory matches anything close to “who owns releases” (cosine similarity ≥ 0.85)" in text
    assert structured["forgotten"] is None
    text, _ = render.render_nothing_forgotten("repo_a__1", "id", "m404")
    assert text == "Nothing forgotten in space repo_a__1: no memory matches id m404."


def test_an_error_names_its_reason() -> None:
    text, structured = render.render_error(
        "search_memory",
        "http_401",
        render.explain_reason("http_401", "http://127.0.0.1:1"),
        code="unauthorized",
    )
    assert text.startswith("search_memory failed (reason: http_401, door error: unauthorized): ")
    assert "device token" in text
    assert structured["error"]["reason"] == "http_401"


@pytest.mark.parametrize(
    ("reason", "needle"),
    [
        ("dashboard_unreachable", "nothing answered at http://door.test"),
        ("timeout", "did not answer in time"),
        ("bad_response", "not readable JSON"),
        ("http_503", "failed while answering"),
        ("http_409", "refused the request"),
        ("unknown_internal:KeyError", "client failed"),
    ],
)
def test_every_reason_has_an_explanation(reason: str, needle: str) -> None:
    assert needle in render.explain_reason(reason, "http://door.test")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:8765", "http://127.0.0.1:8765"),
        ("https://door.example/base/", "https://door.example/base/"),
        ("http://u:s3cretpw@door:8765/x", "http://***@door:8765/x"),
        ("http://a@b@door", "http://***@door"),
        ("https://door/x?token=t0p#frag", "https://door/x?***"),
        ("u:pw@door.example", "***@door.example"),  # no scheme: still masked
        (None, None),
    ],
)
def test_display_url_masks_what_may_hold_a_credential(url: str | None, shown: str | None) -> None:
    assert render.display_url(url) == shown


def test_a_failure_never_repeats_the_credential_of_the_door_url() -> None:
    text = render.explain_reason("timeout", "http://u:s3cretpw@door.test:1/?key=t0p")
    assert "s3cretpw" not in text and "t0p" not in text and "http://***@door.test:1/?***" in text


def test_rows_below_the_similarity_floor_are_not_matches_and_unscored_rows_stay() -> None:
    when = ago(hours=2)
    rows: list[dict[str, object]] = [
        {"id": "a", "kind": "memory", "content": "near", "similarity": 0.6, "createdAt": when},
        {"id": "b", "kind": "memory", "content": "far", "similarity": 0.1, "createdAt": when},
        {"id": "c", "kind": "memory", "content": "keyword", "similarity": None, "createdAt": when},
    ]
    answer = {"results": rows, "searched": ["t"]}
    text, structured = render.render_search("q", "t", answer, NOW, min_similarity=0.25)
    assert [m["id"] for m in structured["memories"]] == ["a", "c"] and "far" not in text
    assert structured["minSimilarity"] == 0.25
    noise = {"results": [rows[1]], "searched": ["t"]}
    text, structured = render.render_search("zebra", "t", noise, NOW, min_similarity=0.25)
    assert structured["silent"] is True and text.startswith("The record is silent on “zebra”")
    assert "cosine similarity 0.25" in text
    _, unfloored = render.render_search("zebra", "t", noise, NOW)
    assert unfloored["silent"] is False


def test_an_unreachable_https_door_may_be_a_tls_failure_not_only_a_stopped_door() -> None:
    text = render.explain_reason("dashboard_unreachable", "https://door.test")
    assert "TLS" in text and "certificate" in text and "nothing answered" not in text
    assert "nothing answered" in render.explain_reason("dashboard_unreachable", "http://door.test")

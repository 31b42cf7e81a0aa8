"""A stored exchange that one of its own facts outranks yields its place to other memories of
comparable score (`ranking.represented_exchanges_yield`); one that ranks above all its facts keeps it."""

from __future__ import annotations

from bli_memory.door import ranking


def test_an_exchange_outranked_by_its_own_fact_yields_to_a_comparable_memory() -> None:
    order = ["fact", "exchange", "other"]
    scores = {"fact": 1.0, "exchange": 0.9, "other": 0.5}
    ranked, new = ranking.represented_exchanges_yield(order, scores, {"fact": "k"}, {"exchange": "k"})
    assert ranked == ["fact", "other", "exchange"]
    assert new["exchange"] == 0.9 * ranking.REPRESENTED_EXCHANGE_FACTOR and new["other"] == 0.5


def test_an_exchange_above_its_facts_or_far_above_the_rest_keeps_its_place() -> None:
    scores = {"fact": 0.5, "exchange": 0.9, "other": 0.6}
    order = ["exchange", "other", "fact"]
    assert ranking.represented_exchanges_yield(order, scores, {"fact": "k"}, {"exchange": "k"})[0] == order
    far = {"fact": 1.0, "exchange": 0.9, "other": 0.1}  # nothing comes close: the exchange stays second
    ranked, _ = ranking.represented_exchanges_yield(
        ["fact", "exchange", "other"], far, {"fact": "k"}, {"exchange": "k"}
    )
    assert ranked == ["fact", "exchange", "other"]


def test_another_exchanges_fact_does_not_make_an_exchange_yield() -> None:
    order = ["fact", "exchange", "other"]
    scores = {"fact": 1.0, "exchange": 0.9, "other": 0.5}
    ranked, _ = ranking.represented_exchanges_yield(order, scores, {"fact": "k1"}, {"exchange": "k2"})
    assert ranked == order

"""The keyword channel's index and BM25, driven with plain strings and checked against SQLite FTS5.

FTS5's `bm25()` with the `porter unicode61 remove_diacritics 2` tokenizer is the reference the
in-memory index replaced: with FTS5's constants (k1 1.2, b 0.75, its idf) the same corpus must rank
the same way, which checks the tokens, stems, phrases, term frequencies and lengths. The door's own
constants differ (see door/keyword.py) and are checked by their effect.
"""

from __future__ import annotations

import math
import random
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from bli_memory.door import keyword
from bli_memory.door.keyword import KeywordIndex, query_terms
from bli_memory.door.snapshots import mapped_arrays
from bli_memory.door.stem_table import StemTable, joined_texts, stem_hash


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("MAX_POOL_SIZE", [("max", "pool", "size")]),
        ("useAuthStore", [("useauthstor",)]),
        ("BLI-1234", [("bli", "1234")]),
        ("what is BLI-1234 about", [("bli", "1234"), ("about",)]),
        ("src/door/app.py", [("src", "door", "app", "py")]),
        ("John's dog", [("john",), ("dog",)]),
        ("2024-05-01 release", [("2024",), ("05",), ("01",), ("releas",)]),
        ("Café NAÏVE", [("cafe",), ("naiv",)]),
        ("dogs dog DOGS", [("dog",)]),
        ("what is it", []),
        ("", []),
        ('" * NEAR( a:b ^x', [("near",), ("a", "b"), ("x",)]),
    ],
)
def test_query_terms(query: str, expected: list[tuple[str, ...]]) -> None:
    assert query_terms(query) == expected


def test_query_terms_are_capped() -> None:
    many = " ".join(f"word{n}" for n in range(100))
    assert len(query_terms(many)) == keyword.MAX_QUERY_TERMS


def _bm25(indexes: list[KeywordIndex], query: str, limit: int) -> list[str]:
    """One BM25 pass, without feedback: what FTS5 compares with."""
    return keyword.search(indexes, query, limit, feedback=False)


def _index(texts: dict[str, str]) -> KeywordIndex:
    return KeywordIndex.build((memory_id, text, None, 0.0) for memory_id, text in texts.items())


IDENTIFIERS = {
    "pool": "MAX_POOL_SIZE is 40 on staging",
    "auth": "the login state lives in useAuthStore",
    "ticket": "BLI-1234 tracks the flaky upload test",
    "apart": "max and pool and size appear here apart, like bli and 1234",
}


@pytest.mark.parametrize(
    ("query", "found"),
    [("MAX_POOL_SIZE", "pool"), ("useAuthStore", "auth"), ("BLI-1234", "ticket"), ("bli-1234?", "ticket")],
)
def test_an_identifier_finds_its_memory_not_its_scattered_parts(query: str, found: str) -> None:
    assert _bm25([_index(IDENTIFIERS)], query, 10) == [found]


def test_words_match_through_stems_case_and_accents() -> None:
    index = _index({"a": "Deploying the Café service", "b": "nothing here"})
    assert _bm25([index], "deployed cafe", 10) == ["a"]
    assert _bm25([index], "CAFÉ", 10) == ["a"]


def test_a_query_of_stopwords_or_unknown_words_finds_nothing() -> None:
    index = _index(IDENTIFIERS)
    assert _bm25([index], "what is it", 10) == []
    assert _bm25([index], "zebra", 10) == []
    assert _bm25([KeywordIndex()], "pool", 10) == []
    assert _bm25([index], "pool", 0) == []


def _corpus(seed: int, size: int) -> dict[str, str]:
    """Short and long texts over a small vocabulary, so terms repeat within and across documents."""
    rng = random.Random(seed)
    vocabulary = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron".split()
    vocabulary += ["BLI-1234", "MAX_POOL_SIZE", "src/app.py", "deploying", "deployed", "Café"]
    return {
        f"m{n}": " ".join(
            rng.choice(vocabulary[: rng.randint(3, len(vocabulary))]) for _ in range(rng.randint(1, 40))
        )
        for n in range(size)
    }


def _fts5_scores(texts: dict[str, str], query: str) -> dict[str, float]:
    """What SQLite FTS5's bm25() says of the same corpus, higher is better."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5 (id UNINDEXED, content, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    db.executemany("INSERT INTO t (id, content) VALUES (?, ?)", list(texts.items()))
    expression = " OR ".join('"' + " ".join(term) + '"' for term in query_terms(query))
    if not expression:
        return {}
    rows = db.execute("SELECT id, bm25(t) FROM t WHERE t MATCH ?", (expression,)).fetchall()
    return {memory_id: -score for memory_id, score in rows}


def _fts5_idf(documents: int, df: int) -> float:
    return max(math.log((documents - df + 0.5) / (df + 0.5)), 1e-6)


@pytest.fixture
def fts5_constants(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(keyword, "K1", 1.2)
    monkeypatch.setattr(keyword, "B", 0.75)
    monkeypatch.setattr(keyword, "idf", _fts5_idf)
    yield


QUERIES = [
    "alpha",
    "alpha beta",
    "what about omicron and xi",
    "BLI-1234",
    "MAX_POOL_SIZE deploy",
    "src/app.py",
    "cafe deploying",
    "mu nu xi omicron kappa",
    "gamma gamma delta",
]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.usefixtures("fts5_constants")
def test_bm25_ranks_as_sqlite_fts5_does(seed: int, query: str) -> None:
    texts = _corpus(seed, 300)
    reference = _fts5_scores(texts, query)
    ours = _bm25([_index(texts)], query, 25)
    assert set(ours) <= set(reference)
    # the FTS5 scores along our ranking are FTS5's best scores in order (ties may come in any order)
    assert [round(reference[m], 9) for m in ours] == sorted(
        (round(v, 9) for v in reference.values()), reverse=True
    )[:25]


def _all_postings(index: KeywordIndex) -> dict[str, tuple[list[int], list[int]]]:
    """Per stem: the slots that hold it and how often, whatever arrays they are kept in."""
    found = {}
    for term in range(index.term_count):
        slots, frequencies = index.postings(term)
        found[index.stem_of(term)] = (slots.tolist(), frequencies.tolist())
    return found


def test_adding_one_by_one_equals_building_at_once() -> None:
    texts = _corpus(4, 200)
    built = _index(texts)
    grown = KeywordIndex()
    for memory_id, text in texts.items():
        grown.add(memory_id, text)
    grown.add("m0", "ignored: already indexed")
    assert grown.ids == built.ids and _all_postings(grown) == _all_postings(built)
    for query in QUERIES:
        assert _bm25([grown], query, 50) == _bm25([built], query, 50)


def test_a_removed_memory_is_never_found_and_the_statistics_follow(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _corpus(5, 400)
    index = _index(texts)
    removed = [f"m{n}" for n in range(0, 400, 2)]
    for memory_id in removed:
        index.remove(memory_id)
    index.remove("m0")  # twice: a no-op
    index.remove("unknown")
    kept = {m: t for m, t in texts.items() if m not in removed}
    fresh = _index(kept)
    assert len(index) == len(fresh) == 200
    for query in QUERIES:
        found = _bm25([index], query, 400)
        assert not set(found) & set(removed)
        assert found == _bm25([fresh], query, 400)


def test_compaction_keeps_every_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyword, "COMPACT_AFTER_DEAD", 10)
    texts = _corpus(6, 100)
    index = _index(texts)
    before = {query: _bm25([index], query, 100) for query in QUERIES}
    for n in range(100, 250):
        index.add(f"m{n}", "temporary alpha beta")
    for n in range(100, 250):
        index.remove(f"m{n}")
    # compacted when the 126th retired slot outnumbered the 124 still live; 24 retired since
    assert len(index.ids) == 124 and len(index) == 100
    assert {query: _bm25([index], query, 100) for query in QUERIES} == before
    index.add("late", "alpha omega")
    assert _bm25([index], "omega", 5) == ["late"]


@pytest.mark.usefixtures("fts5_constants")
def test_a_space_of_several_tags_ranks_as_one_index() -> None:
    texts = _corpus(7, 300)
    first = {m: t for m, t in texts.items() if int(m[1:]) % 3}
    second = {m: t for m, t in texts.items() if not int(m[1:]) % 3}
    whole = _index(texts)
    for query in QUERIES:
        split = _bm25([_index(first), _index(second)], query, 300)
        assert sorted(split) == sorted(_bm25([whole], query, 300))
        reference = _fts5_scores(texts, query)
        assert [round(reference[m], 9) for m in split] == sorted(
            (round(v, 9) for v in reference.values()), reverse=True
        )


def test_repeated_phrases_count() -> None:
    index = _index({"once": "BLI-1234 fixed", "twice": "BLI-1234 fixed, BLI-1234 verified"})
    assert _bm25([index], "BLI-1234", 2) == ["twice", "once"]


def test_texts_without_words_are_indexed_and_never_found() -> None:
    index = _index({"empty": "", "dots": "... --- !!!", "word": "hello"})
    assert len(index) == 3
    assert _bm25([index], "hello", 10) == ["word"]


def test_ties_keep_save_order() -> None:
    index = _index({f"m{n}": "same words here" for n in range(30)})
    assert _bm25([index], "words", 5) == ["m0", "m1", "m2", "m3", "m4"]


def test_a_phrase_never_spans_two_memories() -> None:
    index = _index({"a": "set the max", "empty": "", "b": "pool size to 40", "c": "max pool size"})
    assert _bm25([index], "MAX_POOL_SIZE", 10) == ["c"]
    index.remove("c")
    assert _bm25([index], "MAX_POOL_SIZE", 10) == []


def test_a_word_in_most_memories_still_counts() -> None:
    """FTS5's idf is 1e-6 for a word in over half the documents; ours stays positive, so a speaker's
    or a project's own name still separates the memory that has it."""
    texts = {f"m{n}": f"Caroline said thing number {n}" for n in range(6)}
    texts |= {"both": "Caroline started painting landscapes", "painting": "painting"}
    index = _index(texts)
    assert _bm25([index], "Caroline painting", 1) == ["both"]


def test_length_counts_less_than_in_fts5() -> None:
    """B is 0.3, not 0.75: a longer memory with the word twice beats a short one with it once."""
    index = _index(
        {"short": "deploy notes", "long": "deploy the app, then deploy the docs, then tell the team"}
    )
    assert _bm25([index], "deploy", 2) == ["long", "short"]


FEEDBACK_SPACE = {
    "best": "the nightly backup job copies the database to the bucket at 02:00",
    "kin": "the backup job failed: the bucket credentials expired, rotate them in the vault",
    "loner": "someone mentioned a backup once",
    "stranger": "the bucket credentials and the vault rotation policy",
}


def test_feedback_moves_up_matches_that_share_the_best_ones_words() -> None:
    index = _index(FEEDBACK_SPACE)
    assert _bm25([index], "nightly backup", 4) == ["best", "loner", "kin"]
    assert keyword.search([index], "nightly backup", 4) == ["best", "kin", "loner"]


def test_feedback_never_brings_a_memory_without_the_querys_words() -> None:
    index = _index(FEEDBACK_SPACE)
    assert "stranger" not in keyword.search([index], "nightly backup", 10)
    lookalike = _index(
        {"real": "Config: MAX_POOL_SIZE=40 on staging", "twin": "pool max size setting on staging"}
    )
    assert keyword.search([lookalike], "MAX_POOL_SIZE", 10) == ["real"]


def test_feedback_terms_skip_the_query_stopwords_and_short_stems() -> None:
    index = _index(FEEDBACK_SPACE)
    terms = keyword.feedback_terms([index], ["best", "kin"], query_terms("nightly backup"))
    stems = [term[0] for term in terms]
    assert "backup" not in stems and "nightli" not in stems  # the query's own
    assert "the" not in stems and "at" not in stems and "02" not in stems  # stopwords, short stems
    assert stems[0] == "job"  # held by both and by no other memory
    assert len(stems) <= keyword.FEEDBACK_TERMS
    assert keyword.feedback_terms([index], [], query_terms("nightly backup")) == []


def _saved(rows: list[tuple[str, str | None, float]]) -> KeywordIndex:
    """An index of (id, device, saved at) rows, in save order."""
    return KeywordIndex.build(
        (memory_id, f"text {memory_id}", device, when) for memory_id, device, when in rows
    )


def test_neighbours_are_the_same_devices_saves_around_a_memory_within_the_window() -> None:
    index = _saved(
        [
            ("old", "d1", 0.0),  # hours before: another session
            ("a", "d1", 10_000.0),
            ("team", "d2", 10_010.0),  # a teammate's save in between
            ("b", "d1", 10_020.0),
            ("hit", "d1", 10_030.0),
            ("c", "d1", 10_040.0),
            ("d", "d1", 10_050.0),
            ("e", "d1", 10_060.0),
        ]
    )
    assert index.neighbours("hit", 2, 1800.0) == [("b", 1), ("a", 2), ("c", 1), ("d", 2)]
    assert index.neighbours("a", 2, 1800.0) == [("b", 1), ("hit", 2)]  # "old" is out of the window
    assert index.neighbours("team", 2, 1800.0) == []
    index.remove("b")
    assert index.neighbours("hit", 1, 1800.0) == [("a", 1), ("c", 1)]  # a retired one is skipped
    assert index.neighbours("unknown", 2, 1800.0) == []
    assert index.neighbours("hit", 2, 1800.0, scan=1) == [("c", 1)]  # at most `scan` slots a side


def test_neighbours_survive_compaction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyword, "COMPACT_AFTER_DEAD", 2)
    index = _saved([(f"m{n}", "d1", float(n)) for n in range(10)])
    for n in (1, 3, 4, 6, 7, 8):
        index.remove(f"m{n}")
    assert len(index.ids) < 10  # compacted
    assert index.neighbours("m5", 2, 1800.0) == [("m2", 1), ("m0", 2), ("m9", 1)]


def _phrase_reference(texts: dict[str, str], phrase: tuple[str, ...]) -> dict[str, int]:
    """How often `phrase` stands in each text, by a plain scan of its tokens."""
    found: dict[str, int] = {}
    for memory_id, text in texts.items():
        stems = keyword.tokens(text)
        count = sum(
            1 for i in range(len(stems) - len(phrase) + 1) if tuple(stems[i : i + len(phrase)]) == phrase
        )
        if count:
            found[memory_id] = count
    return found


@pytest.mark.parametrize("seed", [7, 8])
def test_phrases_are_found_only_inside_live_memories_as_often_as_they_stand(seed: int) -> None:
    texts = _corpus(seed, 300)
    texts["edge-a"] = "alpha max pool"  # a phrase cut by the end of one memory and the start of the next
    texts["edge-b"] = "size beta"
    index = _index(texts)
    for memory_id in list(texts)[::3]:
        index.remove(memory_id)
        del texts[memory_id]
    for phrase in [("max", "pool", "size"), ("bli", "1234"), ("src", "app", "py"), ("pool", "size", "beta")]:
        slots, counts = index._matches(phrase)
        found = {
            index.ids[slot]: int(count) for slot, count in zip(slots.tolist(), counts.tolist(), strict=True)
        }
        assert found == _phrase_reference(texts, phrase), phrase


def test_a_snapshot_reads_back_as_the_same_index() -> None:
    texts = _corpus(9, 300)
    index = KeywordIndex.build(
        (memory_id, text, f"dev{n % 3}" if n % 4 else None, float(n))
        for n, (memory_id, text) in enumerate(texts.items())
    )
    for memory_id in list(texts)[::5]:
        index.remove(memory_id)
    copy = KeywordIndex.from_arrays(index.to_arrays())
    for query in QUERIES:
        assert keyword.search([copy], query, 50) == keyword.search([index], query, 50), query
    assert copy.ids == index.ids and copy.devices == index.devices and copy.saved_at == index.saved_at
    assert copy.live == index.live and copy.total_length == index.total_length
    assert copy.neighbours("m7", 3, 100.0) == index.neighbours("m7", 3, 100.0)
    # it goes on like the original: an addition, a removal
    for grown in (index, copy):
        grown.add("late", "alpha omega", "dev1", 999.0)
        grown.remove("m1")
    assert keyword.search([copy], "omega alpha", 20) == keyword.search([index], "omega alpha", 20)


def test_a_snapshot_of_one_retired_memory_or_none_reads_back() -> None:
    for texts in ({}, {"only": "alpha"}):
        index = _index(texts)
        index.remove("only")
        copy = KeywordIndex.from_arrays(index.to_arrays())
        assert copy.ids == index.ids and len(copy) == 0
        copy.add("new", "alpha beta")
        assert keyword.search([copy], "alpha", 5) == ["new"]


def test_a_snapshot_that_does_not_fit_together_is_refused() -> None:
    arrays = _index(_corpus(10, 20)).to_arrays()
    arrays["offsets"] = arrays["offsets"][:-1]
    with pytest.raises(ValueError, match="postings"):
        KeywordIndex.from_arrays(arrays)


def _set(name: str, position: int, value: int | float) -> Callable[[dict[str, np.ndarray]], None]:
    def change(arrays: dict[str, np.ndarray]) -> None:
        arrays[name] = arrays[name].copy()
        arrays[name][position] = value

    return change


def _swap_first_postings(arrays: dict[str, np.ndarray]) -> None:
    arrays["postings"] = arrays["postings"].copy()
    arrays["postings"][[0, 1]] = arrays["postings"][[1, 0]]


#: well-formed arrays of the right sizes whose values disagree: each made every search of the space
#: fail (or score nonsense) and was written back at the next stop
DISAGREEING = {
    "a posting past the last document": _set("postings", 0, 10_000),
    "a negative posting": _set("postings", 0, -3),
    "a term's postings out of order": _swap_first_postings,
    "a frequency of 0": _set("frequencies", 0, 0),
    "a term's count of live documents": _set("document_counts", 0, 500),
    "a token past the last term": _set("tokens", 3, 1_000_000),
    "a negative token": _set("tokens", 3, -1),
    "a start off its place": _set("starts", 2, 1),
    "a length past the tokens": _set("lengths", -1, 1e6),
    "a fractional length": _set("lengths", 0, 2.5),
    "an offset past the postings": _set("offsets", 1, 10**9),
    "a live flag of 2": _set("alive", 0, 2),
    "a device code past the names": _set("device_codes", 0, 99),
    "a stem order past the terms": _set("stem_order", 0, 10**6),
}


@pytest.mark.parametrize("damage", DISAGREEING.values(), ids=DISAGREEING.keys())
def test_a_snapshot_whose_arrays_are_well_formed_but_disagree_is_refused(
    damage: Callable[[dict[str, np.ndarray]], None],
) -> None:
    index = KeywordIndex.build(
        (memory_id, text, f"dev{n % 3}", float(n))
        for n, (memory_id, text) in enumerate(_corpus(16, 60).items())
    )
    arrays = index.to_arrays()
    assert _all_postings(KeywordIndex.from_arrays(arrays)) == _all_postings(index)  # as written: read
    damage(arrays)
    with pytest.raises(ValueError):
        KeywordIndex.from_arrays(arrays)


def _scored(indexes: list[KeywordIndex], query: str) -> list[tuple[str, float]]:
    """(id, BM25 score) of the first pass's matches: the exact scores, not only the order."""
    hits = keyword._ranked(indexes, query_terms(query), 50)
    return [(indexes[owner].ids[slot] or "", score) for owner, slot, score in hits]


def test_a_snapshot_with_later_saves_and_forgets_ranks_as_a_fresh_build(tmp_path: Path) -> None:
    texts = _corpus(11, 400)
    texts["pool"] = "MAX_POOL_SIZE is 40 on staging"
    snapshot = tmp_path / "space.keyword.npz"
    np.savez(snapshot, **_index(texts).to_arrays())
    loaded = KeywordIndex.from_arrays(mapped_arrays(snapshot))
    # the postings stay where they lie in the file: no array per word is made
    assert isinstance(loaded._slots, np.memmap) and isinstance(loaded._frequencies, np.memmap)
    assert not loaded.term_id  # no dictionary of every stem either
    later = _corpus(12, 60)  # new words and old ones, saved after the load
    later = {f"late{n}": text + f" novelword{n}" for n, text in enumerate(later.values())}
    later["late-pool"] = "set MAX_POOL_SIZE to 80 in production"
    for memory_id, text in later.items():
        loaded.add(memory_id, text)
    gone = [*list(texts)[::7], "late3", "late-pool"]
    for memory_id in gone:
        loaded.remove(memory_id)
    current = {m: t for m, t in (texts | later).items() if m not in gone}
    fresh = _index(current)
    for query in [*QUERIES, "novelword5 alpha", "MAX_POOL_SIZE", "novelword3"]:
        assert _scored([loaded], query) == _scored([fresh], query), query
        assert keyword.search([loaded], query, 30) == keyword.search([fresh], query, 30), query
    # written again (the later postings merged into the file's), it reads back the same
    again = tmp_path / "again.keyword.npz"
    np.savez(again, **loaded.to_arrays())
    reread = KeywordIndex.from_arrays(mapped_arrays(again))
    assert _all_postings(reread) == _all_postings(loaded)
    for query in QUERIES:
        assert keyword.search([reread], query, 30) == keyword.search([fresh], query, 30), query


def test_a_snapshot_without_the_stems_hashes_still_reads() -> None:
    """A snapshot written before the stems' hashes were saved: they are computed on load."""
    index = _index(_corpus(13, 100))
    arrays = index.to_arrays()
    del arrays["stem_hashes"], arrays["stem_order"]
    copy = KeywordIndex.from_arrays(arrays)
    for query in QUERIES:
        assert _scored([copy], query) == _scored([index], query), query


def test_stems_are_found_by_hash_through_collisions_and_empty_ones() -> None:
    stems = ["", "alpha", "café", "日本", "beta"]
    table = StemTable.of(joined_texts(stems), len(stems))
    assert [table.find(stem) for stem in stems] == [0, 1, 2, 3, 4]
    assert [table.stem(term) for term in range(len(stems))] == stems
    assert table.find("gamma") is None
    # two stems with one hash: the lookup checks each one's text, past the other
    for wanted, order in (("beta", [0, 1]), ("alpha", [1, 0])):
        same = np.full(2, stem_hash(wanted), dtype=np.uint64)
        clash = StemTable(joined_texts(["alpha", "beta"]), 2, same, np.array(order))
        assert clash.find(wanted) == ["alpha", "beta"].index(wanted)
        assert clash.find("gamma") is None


def test_a_compressed_or_foreign_snapshot_is_refused(tmp_path: Path) -> None:
    arrays = _index(_corpus(14, 20)).to_arrays()
    compressed = tmp_path / "compressed.npz"
    np.savez_compressed(compressed, **arrays)
    with pytest.raises(ValueError, match="uncompressed"):
        mapped_arrays(compressed)
    objects = tmp_path / "objects.npz"
    np.savez(objects, ids=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="numbers"):
        mapped_arrays(objects)


def test_saves_between_searches_are_found_by_the_next_search() -> None:
    """A term's joined postings are kept between searches: a save must renew them."""
    texts = _corpus(15, 100)
    index = _index(texts)
    for n in range(4):
        memory_id = f"new{n}"
        index.add(memory_id, f"alpha zeta{n % 2} pool")
        texts[memory_id] = f"alpha zeta{n % 2} pool"
        for query in ("alpha", "zeta0", "zeta1 pool"):
            assert _scored([index], query) == _scored([_index(texts)], query), (n, query)


def test_a_term_no_memory_holds_is_worth_the_most_and_one_every_memory_holds_the_least() -> None:
    index = KeywordIndex.build(
        (f"m{n}", text, None, 0.0)
        for n, text in enumerate(
            [
                "the dispatch app deploys nightly",
                "the dispatch app uses Oban",
                "dispatch sockets need PHX_HOST",
            ]
        )
    )
    terms = query_terms("which Elixir version does dispatch run")
    worth = dict(zip(terms, keyword.term_worths([index], terms), strict=True))
    assert worth[("dispatch",)] == pytest.approx(keyword.idf(3, 3))
    assert worth[("elixir",)] == pytest.approx(keyword.idf(3, 0))
    assert worth[("elixir",)] > worth[("dispatch",)] > 0
    split = [
        KeywordIndex.build([("a", "dispatch elixir", None, 0.0)]),
        KeywordIndex.build([("b", "dispatch", None, 0.0)]),
    ]
    assert keyword.term_worths(split, [("elixir",)]) == [pytest.approx(keyword.idf(2, 1))]

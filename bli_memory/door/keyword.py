"""The keyword channel: Okapi BM25 over an in-memory inverted index of a space's current memories.

Pure code, no I/O: the store feeds an index the texts of a space (and every later save and
retirement), and asks it for the best matches of a query. Tests drive it with plain strings.

Why not SQLite FTS5's `bm25()`, which the door used first: FTS5 finds the matching rows of a broad
question quickly (about 1 ms for 1 600 of 10 000 rows) but then spends about 2 µs per matched row in
its ranking function, and a broad question matches 10-40 % of a space. That was 3-4 ms of a 5.5 ms
search at 10 000 memories and 90 ms at 100 000 (scripts/bench_door.py). Here BM25 is a
few vectorised numpy operations over the postings of the query's terms: tens of microseconds.

The scoring is Okapi BM25 as Lucene writes it:

    score(d) = sum over query terms t in d of  idf(t) * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(d) / avglen))
    idf(t)   = log(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

with N, df and avglen taken over the space searched (every tag that names it), so one busy space
does not change how another one ranks, and no team's words weigh in another team's search.

Two departures from FTS5's bm25(), measured on LoCoMo (scripts/eval_locomo.py, 1 033 questions, hybrid
recall@10; keyword alone in brackets): FTS5's constants and idf scored 0.635 [0.596]. FTS5 floors
the idf of a word found in over half the memories at 1e-6, which silences a speaker's name or a
project's own name in its space; Lucene's idf keeps it small but positive: 0.640 [0.600]. Memories
are short and their lengths say little about relevance: B 0.3 instead of 0.75 gives 0.653 [0.627]
(B 0 to 0.3 all land at 0.653-0.661, a plateau; 0.3 keeps some check on a long pasted memory that
repeats a word). K1 0.9-1.2 measured the same.

Tokens are FTS5's `unicode61 remove_diacritics 2` with `porter` stemming: runs of letters and
digits, lower-cased, accents removed; `_` and punctuation separate. An identifier the query names
(`MAX_POOL_SIZE`, `BLI-1234`, `src/door/app.py`) becomes a phrase of its tokens that must appear
side by side, so it matches the identifier and not its parts scattered over a memory.
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import snowballstemmer

K1 = 1.2
B = 0.3
#: words that carry no meaning on their own; dropped from queries so BM25 ranks on content.
STOPWORDS = frozenset(
    (
        "a an and are as at be but by can could did do does for from had has have how i if in into is it "
        "its me my of on or our so that the their them then there these they this to was we were what when "
        "where which who why will with would you your"
    ).split()
)
MAX_QUERY_TERMS = 32
#: pseudo-relevance feedback: the words that best mark the first FEEDBACK_DOCS matches join the query,
#: FEEDBACK_TERMS of them, each counting FEEDBACK_WEIGHT of a word the query itself holds.
FEEDBACK_DOCS = 3
FEEDBACK_TERMS = 20
FEEDBACK_WEIGHT = 0.2
#: a space's postings are compacted when retired documents outnumber live ones past this many.
COMPACT_AFTER_DEAD = 1024
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
#: "John's" asks about John: the possessive would otherwise become the phrase "john s".
_POSSESSIVE = re.compile(r"(?<=[^\W\d_])['’]s\b", re.UNICODE)
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_ASCII_SEPARATORS = str.maketrans({code: " " for code in range(128) if not chr(code).isalnum()})
_STEMMER = snowballstemmer.stemmer("porter")
_STEM_CACHE_MAX = 500_000
_stems: dict[str, str] = {}

#: a query term: one stem, or a phrase of stems that must appear side by side.
Term = tuple[str, ...]


def _fold(text: str) -> str:
    """Lower case without accents (`Café` -> `cafe`), as FTS5's remove_diacritics does."""
    text = text.lower()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _stem(word: str) -> str:
    stem = _stems.get(word)
    if stem is None:
        if len(_stems) >= _STEM_CACHE_MAX:
            _stems.clear()
        stem = _stems[word] = _STEMMER.stemWord(word)
    return stem


#: the stems of the stopwords: never a feedback word.
_STOP_STEMS = frozenset(_stem(word) for word in STOPWORDS)


def words(text: str) -> list[str]:
    """The folded, unstemmed words of `text`."""
    folded = _fold(text)
    if folded.isascii():  # the common case, about twice as fast as the regular expression
        return folded.translate(_ASCII_SEPARATORS).split()
    return _TOKEN.findall(folded)


def tokens(text: str) -> list[str]:
    """The stems of `text` in order: what the index stores and queries match."""
    return [_stem(word) for word in words(text)]


def query_terms(text: str) -> list[Term]:
    """The terms of a query: every meaningful word, and every identifier as one phrase.

    A whitespace-separated chunk of several tokens with a letter among them (`MAX_POOL_SIZE`,
    `BLI-1234`, `don't`) is a phrase; a chunk of digits and punctuation (`2024-05-01`) is its
    separate numbers. Single stopwords are dropped; at most MAX_QUERY_TERMS terms, first come.
    """
    terms: list[Term] = []
    for chunk in _POSSESSIVE.sub("", text).split():
        parts = words(chunk)
        if not parts:
            continue
        if len(parts) > 1 and _LETTER.search(chunk):
            terms.append(tuple(_stem(part) for part in parts))
            continue
        terms.extend((_stem(part),) for part in parts if part not in STOPWORDS)
    return list(dict.fromkeys(terms))[:MAX_QUERY_TERMS]


class KeywordIndex:
    """The current memories of one tag of a space: postings per stem, lengths, and every token.

    Slots are never reused: a retired memory's slot is marked dead (its postings and tokens stay
    until the index compacts), so slot order is save order, which breaks score ties as rowid did,
    and, with each slot's device and save time, gives a memory's context (:meth:`neighbours`).
    `tokens` holds every slot's term ids end to end (slot s at `starts[s]`, `lengths[s]` long):
    a phrase is found by one vectorised scan of it instead of a Python loop per candidate.
    """

    def __init__(self) -> None:
        self.term_id: dict[str, int] = {}  # stem -> term id
        self._word_term: dict[str, int] = {}  # folded word -> term id of its stem
        self.stems: list[str] = []  # per term id: its stem
        self.postings: list[array[int]] = []  # per term id: the slots that hold it, ascending
        self.frequencies: list[array[int]] = []  # per term id: how often, slot for slot
        #: per term id: how many live documents hold it (postings keep retired slots until compaction)
        self.document_counts = array("i")
        self._clear_documents()

    def _clear_documents(self) -> None:
        self.ids: list[str | None] = []
        self.slot_of: dict[str, int] = {}
        self.tokens = array("i")
        self.starts = array("q")
        self.lengths = array("d")
        self.alive = array("b")
        self.devices: list[str | None] = []  # per slot: the device that saved it
        self.saved_at = array("d")  # per slot: when (epoch seconds; the row's updated_at)
        self.live = 0
        self.total_length = 0.0

    def __len__(self) -> int:
        return self.live

    @classmethod
    def build(cls, documents: Iterable[tuple[str, str, str | None, float]]) -> KeywordIndex:
        """An index of `(memory id, text, device id, saved at)` rows in save order: a first search.

        The postings are made in one vectorised pass instead of one append per term and document
        (10 000 memories: about twice as fast as adding them one by one).
        """
        index = cls()
        known = index._word_term
        for memory_id, text, device, saved_at in documents:
            if memory_id in index.slot_of:
                continue
            terms = [known[w] if w in known else index._learn(w) for w in words(text)]
            index._append_slot(memory_id, terms, device, saved_at)
        index._rebuild_postings()
        return index

    def _append_slot(self, memory_id: str, terms: Sequence[int], device: str | None, saved_at: float) -> int:
        """A new live slot for `memory_id` holding `terms` (the postings are the caller's)."""
        slot = len(self.ids)
        self.slot_of[memory_id] = slot
        self.ids.append(memory_id)
        self.devices.append(device)
        self.saved_at.append(saved_at)
        self.starts.append(len(self.tokens))
        self.tokens.extend(terms)
        self.lengths.append(float(len(terms)))
        self.alive.append(1)
        self.live += 1
        self.total_length += len(terms)
        return slot

    def _rebuild_postings(self) -> None:
        count = len(self.ids)
        self.postings = [array("i") for _ in self.postings]
        self.frequencies = [array("i") for _ in self.frequencies]
        self.document_counts = array("i", bytes(4 * len(self.postings)))
        if not count or not self.tokens:
            return
        lengths = np.frombuffer(self.lengths).astype(np.int64)
        slots_of_tokens = np.repeat(np.arange(count, dtype=np.int64), lengths)
        alive = np.frombuffer(self.alive, dtype=np.int8).astype(bool)[slots_of_tokens]
        terms_of_tokens = np.frombuffer(self.tokens, dtype=np.int32).astype(np.int64)[alive]
        pairs, frequencies = np.unique(terms_of_tokens * count + slots_of_tokens[alive], return_counts=True)
        terms = pairs // count
        slots = (pairs % count).astype(np.int32)
        frequencies = frequencies.astype(np.int32)
        bounds = np.searchsorted(terms, np.arange(len(self.postings) + 1)).tolist()
        for term in range(len(self.postings)):
            start, end = bounds[term], bounds[term + 1]
            if start != end:
                self.postings[term] = array("i", slots[start:end].tobytes())
                self.frequencies[term] = array("i", frequencies[start:end].tobytes())
                self.document_counts[term] = end - start

    def add(self, memory_id: str, text: str, device: str | None = None, saved_at: float = 0.0) -> None:
        """Index a current memory (a no-op for one already indexed)."""
        if memory_id in self.slot_of:
            return
        known = self._word_term
        terms = [known[w] if w in known else self._learn(w) for w in words(text)]
        slot = self._append_slot(memory_id, terms, device, saved_at)
        for term, count in Counter(terms).items():
            self.postings[term].append(slot)
            self.frequencies[term].append(count)
            self.document_counts[term] += 1

    def _learn(self, word: str) -> int:
        stem = _stem(word)
        term = self.term_id.get(stem)
        if term is None:
            term = self.term_id[stem] = len(self.postings)
            self.stems.append(stem)
            self.postings.append(array("i"))
            self.frequencies.append(array("i"))
            self.document_counts.append(0)
        self._word_term[word] = term
        return term

    def remove(self, memory_id: str) -> None:
        """Forget a memory that is no longer current (a no-op for one not indexed)."""
        slot = self.slot_of.pop(memory_id, None)
        if slot is None:
            return
        self.alive[slot] = 0
        self.ids[slot] = None
        start = self.starts[slot]
        for term in set(self.tokens[start : start + int(self.lengths[slot])]):
            self.document_counts[term] -= 1
        self.live -= 1
        self.total_length -= self.lengths[slot]
        dead = len(self.ids) - self.live
        if dead > COMPACT_AFTER_DEAD and dead > self.live:
            self._compact()

    def _compact(self) -> None:
        """Drop retired slots: renumber the live ones in save order and rebuild the postings."""
        survivors = [
            (
                memory_id,
                self.tokens[self.starts[slot] : self.starts[slot] + int(self.lengths[slot])],
                self.devices[slot],
                self.saved_at[slot],
            )
            for slot, memory_id in enumerate(self.ids)
            if memory_id is not None
        ]
        self._clear_documents()
        for memory_id, terms, device, saved_at in survivors:
            self._append_slot(memory_id, terms, device, saved_at)
        self._rebuild_postings()

    def neighbours(
        self, memory_id: str, steps: int, window_s: float, scan: int = 64
    ) -> list[tuple[str, int]]:
        """The memories saved just before and after `memory_id` by the same device, within `window_s`
        of it: up to `steps` on each side, as (memory id, step), step 1 the closest.

        Save order, not time order: an import that back-dates its rows keeps its own sequence. At
        most `scan` slots are looked at on each side, so a busy team space stays cheap.
        """
        slot = self.slot_of.get(memory_id)
        if slot is None:
            return []
        device, when = self.devices[slot], self.saved_at[slot]
        found: list[tuple[str, int]] = []
        for direction in (-1, 1):
            step = 0
            other = slot
            for _ in range(scan):
                other += direction
                if not 0 <= other < len(self.ids) or step == steps:
                    break
                candidate = self.ids[other]
                if candidate is None or self.devices[other] != device:
                    continue
                if abs(self.saved_at[other] - when) > window_s:
                    break
                step += 1
                found.append((candidate, step))
        return found

    def _matches(self, term: Term) -> tuple[np.ndarray, np.ndarray]:
        """(slots, frequencies) of the live documents holding `term`, slots ascending."""
        ids = [term_id for stem in term if (term_id := self.term_id.get(stem)) is not None]
        if len(ids) < len(term):
            return _EMPTY_SLOTS, _EMPTY_FREQUENCIES
        alive = np.frombuffer(self.alive, dtype=np.bool_)  # 0/1 bytes: a view, not a copy per term
        if len(ids) == 1:
            slots = np.frombuffer(self.postings[ids[0]], dtype=np.int32)
            frequencies = np.frombuffer(self.frequencies[ids[0]], dtype=np.int32)
            keep = alive[slots]
            return slots[keep], frequencies[keep]
        return self._phrase_matches(ids, alive)

    def _phrase_matches(self, ids: list[int], alive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where the terms `ids` stand side by side: anchored on the rarest, checked with numpy.

        Only the tokens of the documents that hold the rarest term are looked at: a scan of every
        token of a space took 20-40 ms per phrase at 1 000 000 memories; these are a few hundred."""
        if any(not self.postings[term] for term in ids):
            return _EMPTY_SLOTS, _EMPTY_FREQUENCIES
        width = len(ids)
        anchor = min(range(width), key=lambda i: len(self.postings[ids[i]]))
        holders = np.frombuffer(self.postings[ids[anchor]], dtype=np.int32)
        holders = holders[alive[holders]]
        if not holders.size:
            return _EMPTY_SLOTS, _EMPTY_FREQUENCIES
        slot_starts = np.frombuffer(self.starts, dtype=np.int64)[holders]
        counts = np.frombuffer(self.lengths)[holders].astype(np.int64)
        # every token position of the holders, and the holder each belongs to
        owner = np.repeat(np.arange(holders.size), counts)
        positions = np.repeat(slot_starts, counts) + (
            np.arange(owner.size) - np.repeat(np.cumsum(counts) - counts, counts)
        )
        tokens = np.frombuffer(self.tokens, dtype=np.int32)
        hit = tokens[positions] == ids[anchor]
        owners = owner[hit]
        starts = positions[hit] - anchor
        ends = slot_starts[owners] + counts[owners]
        keep = (starts >= slot_starts[owners]) & (starts + width <= ends)
        starts, owners = starts[keep], owners[keep]
        for offset, term in enumerate(ids):
            if offset != anchor and starts.size:
                same = tokens[starts + offset] == term
                starts, owners = starts[same], owners[same]
        if not starts.size:
            return _EMPTY_SLOTS, _EMPTY_FREQUENCIES
        found, counted = np.unique(holders[owners], return_counts=True)
        return found.astype(np.int32), counted.astype(np.int32)

    # ------------------------------------------------------------------ snapshot

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The whole index as flat numpy arrays (:meth:`from_arrays` reads them back): postings as
        one CSR (offsets per term), strings as newline-joined UTF-8. No pickle: a file of these
        holds numbers and text only."""
        lengths = np.array([len(p) for p in self.postings], dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        devices = sorted({device for device in self.devices if device is not None})
        code = {device: number for number, device in enumerate(devices, start=1)}
        words = list(self._word_term)
        return {
            "ids": _joined([memory_id or "" for memory_id in self.ids]),
            "stems": _joined(self.stems),
            "words": _joined(words),
            "word_terms": np.array([self._word_term[w] for w in words], dtype=np.int32),
            "offsets": offsets,
            "postings": _concat(self.postings),
            "frequencies": _concat(self.frequencies),
            "document_counts": np.frombuffer(self.document_counts, dtype=np.int32).copy(),
            "tokens": np.frombuffer(self.tokens, dtype=np.int32).copy(),
            "starts": np.frombuffer(self.starts, dtype=np.int64).copy(),
            "lengths": np.frombuffer(self.lengths, dtype=np.float64).copy(),
            "alive": np.frombuffer(self.alive, dtype=np.int8).copy(),
            "saved_at": np.frombuffer(self.saved_at, dtype=np.float64).copy(),
            "device_names": _joined(devices),
            "device_codes": np.array(
                [code.get(d, 0) if d is not None else 0 for d in self.devices], dtype=np.int32
            ),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> KeywordIndex:
        """The index :meth:`to_arrays` wrote (raises ValueError when the arrays do not fit together)."""
        index = cls()
        index.stems = _split(arrays["stems"])
        index.term_id = {stem: term for term, stem in enumerate(index.stems)}
        words_ = _split(arrays["words"])
        word_terms = arrays["word_terms"].tolist()
        if len(words_) != len(word_terms):
            raise ValueError("words and their terms differ in number")
        index._word_term = dict(zip(words_, word_terms, strict=True))
        offsets = arrays["offsets"].tolist()
        if len(offsets) != len(index.stems) + 1:
            raise ValueError("postings do not match the terms")
        postings = arrays["postings"].astype(np.int32).tobytes()
        frequencies = arrays["frequencies"].astype(np.int32).tobytes()
        index.postings = [array("i", postings[4 * a : 4 * b]) for a, b in itertools.pairwise(offsets)]
        index.frequencies = [array("i", frequencies[4 * a : 4 * b]) for a, b in itertools.pairwise(offsets)]
        index.document_counts = array("i", arrays["document_counts"].astype(np.int32).tobytes())
        alive = arrays["alive"].astype(np.int8)
        ids = _split(arrays["ids"], alive.size)
        if not len(ids) == alive.size == arrays["starts"].size == arrays["lengths"].size:
            raise ValueError("documents do not match their ids")
        index.ids = [memory_id if live else None for memory_id, live in zip(ids, alive.tolist(), strict=True)]
        index.slot_of = {memory_id: slot for slot, memory_id in enumerate(index.ids) if memory_id is not None}
        index.tokens = array("i", arrays["tokens"].astype(np.int32).tobytes())
        index.starts = array("q", arrays["starts"].astype(np.int64).tobytes())
        index.lengths = array("d", arrays["lengths"].astype(np.float64).tobytes())
        index.alive = array("b", alive.tobytes())
        index.saved_at = array("d", arrays["saved_at"].astype(np.float64).tobytes())
        names: list[str | None] = [None, *_split(arrays["device_names"])]
        index.devices = [names[code] for code in arrays["device_codes"].tolist()]
        index.live = len(index.slot_of)
        index.total_length = float(np.frombuffer(index.lengths)[alive.astype(bool)].sum())
        return index


def _joined(texts: Sequence[str]) -> np.ndarray:
    return np.frombuffer("\n".join(texts).encode("utf-8"), dtype=np.uint8)


def _split(data: np.ndarray, count: int | None = None) -> list[str]:
    """The texts `_joined` wrote; `count` tells one empty text from none."""
    text = data.tobytes().decode("utf-8")
    return text.split("\n") if text or count == 1 else []


def _concat(parts: Sequence[array[int]]) -> np.ndarray:
    return np.frombuffer(b"".join(part.tobytes() for part in parts), dtype=np.int32)


_EMPTY_SLOTS = np.zeros(0, dtype=np.int32)
_EMPTY_FREQUENCIES = np.zeros(0, dtype=np.int32)


def idf(documents: int, df: int) -> float:
    """How much finding a term says, from how many of the documents hold it: always > 0."""
    return math.log(1.0 + (documents - df + 0.5) / (df + 0.5))


def search(indexes: Iterable[KeywordIndex], query: str, limit: int, *, feedback: bool = True) -> list[str]:
    """The ids of the best BM25 matches of `query` over the union of `indexes`, best first."""
    indexes = list(indexes)
    terms = query_terms(query)
    return search_with_feedback(indexes, terms, limit) if feedback else search_terms(indexes, terms, limit)


def search_with_feedback(indexes: Sequence[KeywordIndex], terms: Sequence[Term], limit: int) -> list[str]:
    """BM25 in two passes: the second re-ranks the first's matches with the words that mark its best.

    Pseudo-relevance feedback (RM3's idea, kept simple, :func:`feedback_terms`): among the memories
    that hold the query's words, the ones that also share the vocabulary of the best few move up.
    Only the first pass's matches are re-ranked; a memory that holds none of the query's words never
    enters by feedback alone. (Letting it enter scored the same on LoCoMo, 0.674, but gave a memory
    that merely resembles an identifier's memory a keyword rank: `MAX_POOL_SIZE` found "pool max
    size setting" through the words of its own memory.) On LoCoMo re-ranking took hybrid recall@10
    from 0.653 to 0.669 (keyword alone 0.627 to 0.632); 3 to 5 feedback memories and 10 to 20 words
    at weight 0.2 to 0.5 all landed at 0.664-0.676. The matches are scored again from their own
    tokens: scoring 20 more words over a whole space of 100 000 took 15 ms, this well under one.
    Equal scores keep the first pass's order (its score, then save order): never an id's.
    """
    first = _ranked(indexes, terms, limit)
    extra = feedback_terms(indexes, _ids(indexes, first[:FEEDBACK_DOCS]), terms)
    if not extra:
        return _ids(indexes, first)
    live = sum(index.live for index in indexes)
    average_length = max(sum(index.total_length for index in indexes) / live, 1e-9)
    scores = np.array([score for _, _, score in first])
    owners = np.array([owner for owner, _, _ in first])
    for owner, index in enumerate(indexes):
        here = np.flatnonzero(owners == owner)
        present = [(term, stem) for (stem,) in extra if (term := index.term_id.get(stem)) is not None]
        if not here.size or not present:
            continue
        term_ids = np.array([term for term, _ in present], dtype=np.int32)
        term_weights = FEEDBACK_WEIGHT * np.array(
            [idf(live, _document_frequency(indexes, stem)) for _, stem in present]
        )
        scores[here] += _extra_scores(
            index, [first[i][1] for i in here.tolist()], term_ids, term_weights, average_length
        )
    order = np.lexsort((np.arange(len(first)), -scores))
    return _ids(indexes, [first[i] for i in order.tolist()])


def _ids(indexes: Sequence[KeywordIndex], hits: Sequence[tuple[int, int, float]]) -> list[str]:
    """The memory ids of `_ranked` hits (live slots only, so never a retired slot's None)."""
    return [memory_id for owner, slot, _ in hits if (memory_id := indexes[owner].ids[slot]) is not None]


def _document_frequency(indexes: Sequence[KeywordIndex], stem: str) -> int:
    """How many live documents of `indexes` hold `stem`.

    Live ones only: a door that forgot a memory and one that rebuilt its index from the store since
    (a restart, a write by another process) hold the same memories and must weigh words alike
    (counting retired slots until compaction gave them different feedback weights)."""
    return sum(index.document_counts[index.term_id[stem]] for index in indexes if stem in index.term_id)


def _extra_scores(
    index: KeywordIndex,
    slots: list[int],
    term_ids: np.ndarray,
    term_weights: np.ndarray,
    average_length: float,
) -> np.ndarray:
    """BM25 of the weighted terms `term_ids` (distinct) for each of `slots`, from the slots' tokens."""
    extra = np.zeros(len(slots))
    order = np.argsort(term_ids)
    sorted_ids, sorted_weights = term_ids[order], term_weights[order]
    starts = np.frombuffer(index.starts, dtype=np.int64)[slots]
    lengths = np.frombuffer(index.lengths)[slots]
    counts = lengths.astype(np.int64)
    total = int(counts.sum())
    if not total:
        return extra
    document = np.repeat(np.arange(len(slots)), counts)
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    tokens = np.frombuffer(index.tokens, dtype=np.int32)[np.repeat(starts, counts) + offsets]
    hit = np.isin(tokens, sorted_ids)
    if not hit.any():
        return extra
    width = len(sorted_ids)
    pairs, tf = np.unique(
        document[hit] * width + np.searchsorted(sorted_ids, tokens[hit]), return_counts=True
    )
    documents, terms = pairs // width, pairs % width
    norm = K1 * (1.0 - B + B * lengths[documents] / average_length)
    np.add.at(extra, documents, sorted_weights[terms] * tf * (K1 + 1.0) / (tf + norm))
    return extra


def feedback_terms(
    indexes: Sequence[KeywordIndex], memory_ids: Sequence[str], query: Sequence[Term]
) -> list[Term]:
    """Up to FEEDBACK_TERMS words of the memories `memory_ids` that the query lacks, best first.

    A word's worth is its idf times how many of those memories hold it: words they share and the
    space rarely uses. Stopwords and one- or two-letter stems never join. Ties in worth go to the
    stem that sorts first, so the words chosen never depend on iteration order.
    """
    asked = {stem for term in query for stem in term}
    live = sum(index.live for index in indexes)
    held: dict[str, int] = {}
    for memory_id in memory_ids:
        for index in indexes:
            slot = index.slot_of.get(memory_id)
            if slot is None:
                continue
            start = index.starts[slot]
            for term in set(index.tokens[start : start + int(index.lengths[slot])]):
                stem = index.stems[term]
                if len(stem) > 2 and stem not in asked and stem not in _STOP_STEMS:
                    held[stem] = held.get(stem, 0) + 1
            break
    worth = {stem: count * idf(live, _document_frequency(indexes, stem)) for stem, count in held.items()}
    best = sorted(worth, key=lambda stem: (-worth[stem], stem))[:FEEDBACK_TERMS]
    return [(stem,) for stem in best]


def search_terms(indexes: Sequence[KeywordIndex], terms: Sequence[Term], limit: int) -> list[str]:
    """The ids of the best BM25 matches of `terms`, best first."""
    return _ids(indexes, _ranked(indexes, terms, limit))


def _ranked(
    indexes: Sequence[KeywordIndex], terms: Sequence[Term], limit: int
) -> list[tuple[int, int, float]]:
    """(index number, slot, score) of the best BM25 matches of `terms`, best first."""
    live = sum(index.live for index in indexes)
    if not terms or live == 0 or limit <= 0:
        return []
    average_length = max(sum(index.total_length for index in indexes) / live, 1e-9)
    matches = [[index._matches(term) for term in terms] for index in indexes]
    idfs = []
    for position in range(len(terms)):
        df = sum(int(per_index[position][0].size) for per_index in matches)
        idfs.append(idf(live, df))
    best_scores: list[np.ndarray] = []
    best_slots: list[np.ndarray] = []
    best_owner: list[np.ndarray] = []
    for owner, (index, per_term) in enumerate(zip(indexes, matches, strict=True)):
        if not any(slots.size for slots, _ in per_term):
            continue
        scores = np.zeros(len(index.ids), dtype=np.float64)
        matched = np.zeros(len(index.ids), dtype=bool)
        lengths = np.frombuffer(index.lengths, dtype=np.float64)
        for weight, (slots, frequencies) in zip(idfs, per_term, strict=True):
            if not slots.size:
                continue
            tf = frequencies.astype(np.float64)
            # the length norm of the matched slots only (the same values as over every slot, without
            # the pass over all of a million memories' lengths per query)
            norm = K1 * (1.0 - B + B * lengths[slots] / average_length)
            scores[slots] += weight * tf * (K1 + 1.0) / (tf + norm)
            matched[slots] = True
        slots = np.flatnonzero(matched)
        best_scores.append(scores[slots])
        best_slots.append(slots)
        best_owner.append(np.full(slots.size, owner))
    if not best_slots:
        return []
    scores = np.concatenate(best_scores)
    slots = np.concatenate(best_slots)
    owners = np.concatenate(best_owner)
    if scores.size > limit:
        # every row scoring at least the limit-th best, so ties at the cut are broken by save order
        cut = -np.partition(-scores, limit - 1)[limit - 1]
        keep = scores >= cut
        scores, slots, owners = scores[keep], slots[keep], owners[keep]
    order = np.lexsort((slots, owners, -scores))[:limit]
    return [(int(owners[i]), int(slots[i]), float(scores[i])) for i in order.tolist()]

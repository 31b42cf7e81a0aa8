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

import math
import re
import unicodedata
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import snowballstemmer

from bli_memory.door.stem_table import StemTable, joined_texts, split_texts

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

    The postings are one CSR made when the index is built (or read, memory-mapped, from a snapshot:
    :meth:`from_arrays`) and never changed after; a later save's postings go to a small per-term
    delta that :meth:`postings` appends (the joined arrays kept until the term's next save), a
    forget only clears the slot's `alive` byte, and compaction makes a new CSR. A snapshot's stems are looked up by hash (`StemTable`), so loading one makes
    no Python object per word: 1 000 000 memories of the bench's million words load in about 0.65 s
    instead of several seconds.
    """

    def __init__(self) -> None:
        #: stem -> term id of the terms learned or looked up since the index was made; a snapshot's
        #: other terms are found in `_base` (:class:`StemTable`) and join this only when asked for
        self.term_id: dict[str, int] = {}
        self._word_term: dict[str, int] = {}  # folded word -> term id of its stem
        self._base = StemTable.empty()  # the stems of a snapshot's terms, ids 0 .. len - 1
        self._new_stems: list[str] = []  # the stems of the terms learned after them, in id order
        #: the postings as one CSR: per term t < len(offsets) - 1, the slots that hold it, ascending,
        #: are slots[offsets[t]:offsets[t + 1]] and how often, frequencies[...]; read-only (a snapshot's
        #: may be memory-mapped). Postings added since are in `_more_slots`/`_more_frequencies`.
        self._offsets: np.ndarray = np.zeros(1, dtype=np.int64)
        self._slots: np.ndarray = _EMPTY_SLOTS
        self._frequencies: np.ndarray = _EMPTY_FREQUENCIES
        self._more_slots: dict[int, array[int]] = {}
        self._more_frequencies: dict[int, array[int]] = {}
        #: per term with later postings: both parts joined, made when a search asks, dropped on a save
        self._joined: dict[int, tuple[np.ndarray, np.ndarray]] = {}
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

    @property
    def term_count(self) -> int:
        return self._base.count + len(self._new_stems)

    def term_of(self, stem: str) -> int | None:
        """The term id of `stem`, or None when no document of the index ever held it."""
        term = self.term_id.get(stem)
        if term is None:
            term = self._base.find(stem)
            if term is not None:
                self.term_id[stem] = term
        return term

    def stem_of(self, term: int) -> str:
        base = self._base.count
        return self._new_stems[term - base] if term >= base else self._base.stem(term)

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        """(slots, frequencies) of every document that held `term` (live or retired), slots ascending."""
        if term < self._offsets.size - 1:
            start, end = int(self._offsets[term]), int(self._offsets[term + 1])
            slots, frequencies = self._slots[start:end], self._frequencies[start:end]
        else:
            slots, frequencies = _EMPTY_SLOTS, _EMPTY_FREQUENCIES
        more = self._more_slots.get(term)
        if more is None:
            return slots, frequencies
        joined = self._joined.get(term)
        if joined is None:
            # copies, never views: a view would stop the next save from growing the arrays
            more_slots = np.array(more, dtype=np.int32)
            more_frequencies = np.array(self._more_frequencies[term], dtype=np.int32)
            if slots.size:
                more_slots = np.concatenate((slots, more_slots))
                more_frequencies = np.concatenate((frequencies, more_frequencies))
            joined = self._joined[term] = (more_slots, more_frequencies)
        return joined

    def _posting_count(self, term: int) -> int:
        count = 0
        if term < self._offsets.size - 1:
            count = int(self._offsets[term + 1] - self._offsets[term])
        more = self._more_slots.get(term)
        return count if more is None else count + len(more)

    def _rebuild_postings(self) -> None:
        count = len(self.ids)
        terms_total = self.term_count
        self._offsets = np.zeros(terms_total + 1, dtype=np.int64)
        self._slots, self._frequencies = _EMPTY_SLOTS, _EMPTY_FREQUENCIES
        self._more_slots, self._more_frequencies, self._joined = {}, {}, {}
        self.document_counts = array("i", bytes(4 * terms_total))
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
        self._offsets = np.searchsorted(terms, np.arange(terms_total + 1)).astype(np.int64)
        self._slots, self._frequencies = slots, frequencies
        self.document_counts = array("i", np.diff(self._offsets).astype(np.int32).tobytes())

    def add(self, memory_id: str, text: str, device: str | None = None, saved_at: float = 0.0) -> None:
        """Index a current memory (a no-op for one already indexed)."""
        if memory_id in self.slot_of:
            return
        known = self._word_term
        terms = [known[w] if w in known else self._learn(w) for w in words(text)]
        slot = self._append_slot(memory_id, terms, device, saved_at)
        for term, count in Counter(terms).items():
            more = self._more_slots.get(term)
            if more is None:
                more = self._more_slots[term] = array("i")
                self._more_frequencies[term] = array("i")
            self._joined.pop(term, None)
            more.append(slot)
            self._more_frequencies[term].append(count)
            self.document_counts[term] += 1

    def _learn(self, word: str) -> int:
        stem = _stem(word)
        term = self.term_of(stem)
        if term is None:
            term = self.term_id[stem] = self.term_count
            self._new_stems.append(stem)
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
        ids = [term_id for stem in term if (term_id := self.term_of(stem)) is not None]
        if len(ids) < len(term):
            return _EMPTY_SLOTS, _EMPTY_FREQUENCIES
        alive = np.frombuffer(self.alive, dtype=np.bool_)  # 0/1 bytes: a view, not a copy per term
        if len(ids) == 1:
            slots, frequencies = self.postings(ids[0])
            keep = alive[slots]
            return slots[keep], frequencies[keep]
        return self._phrase_matches(ids, alive)

    def _phrase_matches(self, ids: list[int], alive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where the terms `ids` stand side by side: anchored on the rarest, checked with numpy.

        Only the tokens of the documents that hold the rarest term are looked at: a scan of every
        token of a space took 20-40 ms per phrase at 1 000 000 memories; these are a few hundred."""
        sizes = [self._posting_count(term) for term in ids]
        if not all(sizes):
            return _EMPTY_SLOTS, _EMPTY_FREQUENCIES
        width = len(ids)
        anchor = min(range(width), key=lambda i: sizes[i])
        holders = self.postings(ids[anchor])[0]
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
        one CSR (offsets per term), strings as newline-joined UTF-8, and the stems' hashes in order
        so a reader finds a stem without a dictionary of every one. No pickle: a file of these holds
        numbers and text only."""
        offsets, slots, frequencies = self._merged_postings()
        devices = sorted({device for device in self.devices if device is not None})
        code = {device: number for number, device in enumerate(devices, start=1)}
        stems = self._base.joined(self._new_stems)
        table = StemTable.of(stems, self.term_count)
        return {
            "ids": joined_texts([memory_id or "" for memory_id in self.ids]),
            "stems": stems,
            "stem_hashes": table.hashes,
            "stem_order": table.order,
            "offsets": offsets,
            "postings": slots,
            "frequencies": frequencies,
            "document_counts": np.frombuffer(self.document_counts, dtype=np.int32).copy(),
            "tokens": np.frombuffer(self.tokens, dtype=np.int32).copy(),
            "starts": np.frombuffer(self.starts, dtype=np.int64).copy(),
            "lengths": np.frombuffer(self.lengths, dtype=np.float64).copy(),
            "alive": np.frombuffer(self.alive, dtype=np.int8).copy(),
            "saved_at": np.frombuffer(self.saved_at, dtype=np.float64).copy(),
            "device_names": joined_texts(devices),
            "device_codes": np.array(
                [code.get(d, 0) if d is not None else 0 for d in self.devices], dtype=np.int32
            ),
        }

    def _merged_postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The CSR with the postings added since it was made merged in: (offsets, slots, frequencies)."""
        terms_total = self.term_count
        base_terms = self._offsets.size - 1
        base_sizes = np.diff(self._offsets)
        if not self._more_slots and base_terms == terms_total:
            return np.asarray(self._offsets), np.asarray(self._slots), np.asarray(self._frequencies)
        more_terms = sorted(self._more_slots)
        more_sizes = [len(self._more_slots[term]) for term in more_terms]
        sizes = np.zeros(terms_total, dtype=np.int64)
        sizes[:base_terms] = base_sizes
        sizes[more_terms] += more_sizes
        term_of_posting = np.concatenate(
            (
                np.repeat(np.arange(base_terms, dtype=np.int64), base_sizes),
                np.repeat(np.array(more_terms, dtype=np.int64), more_sizes),
            )
        )
        # stable: a term's later postings follow its earlier ones, and they hold later slots
        order = np.argsort(term_of_posting, kind="stable")
        more_slots = _concat([self._more_slots[term] for term in more_terms])
        more_frequencies = _concat([self._more_frequencies[term] for term in more_terms])
        slots = np.concatenate((self._slots, more_slots))[order]
        frequencies = np.concatenate((self._frequencies, more_frequencies))[order]
        offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        return offsets, slots.astype(np.int32), frequencies.astype(np.int32)

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> KeywordIndex:
        """The index :meth:`to_arrays` wrote (raises ValueError when the arrays do not fit together).

        The postings and stems stay the arrays given (memory-mapped ones stay mapped): no Python
        object per term, so a space of a million words loads in the time of its documents."""
        index = cls()
        offsets = np.asarray(arrays["offsets"], dtype=np.int64)
        terms_total = offsets.size - 1
        if "stem_hashes" in arrays:
            index._base = StemTable(arrays["stems"], terms_total, arrays["stem_hashes"], arrays["stem_order"])
        else:
            index._base = StemTable.of(arrays["stems"], terms_total)
        if terms_total < 0 or len(index._base) != terms_total:
            raise ValueError("postings do not match the terms")
        postings, frequencies = arrays["postings"], arrays["frequencies"]
        if postings.size != frequencies.size or (terms_total and int(offsets[-1]) != postings.size):
            raise ValueError("postings do not match their frequencies")
        index._offsets = offsets
        index._slots = postings if postings.dtype == np.int32 else postings.astype(np.int32)
        index._frequencies = frequencies if frequencies.dtype == np.int32 else frequencies.astype(np.int32)
        index.document_counts = array("i", np.asarray(arrays["document_counts"], dtype=np.int32).tobytes())
        if len(index.document_counts) != terms_total:
            raise ValueError("postings do not match the terms' counts")
        alive = np.asarray(arrays["alive"], dtype=np.int8)
        ids = split_texts(arrays["ids"], alive.size)
        if not len(ids) == alive.size == arrays["starts"].size == arrays["lengths"].size:
            raise ValueError("documents do not match their ids")
        if alive.all():  # the common case, about twice as fast at a million memories
            index.ids = list[str | None](ids)
            index.slot_of = dict(zip(ids, range(len(ids)), strict=True))
        else:
            index.ids = [
                memory_id if live else None for memory_id, live in zip(ids, alive.tolist(), strict=True)
            ]
            index.slot_of = {
                memory_id: slot for slot, memory_id in enumerate(index.ids) if memory_id is not None
            }
        index.tokens = array("i", np.asarray(arrays["tokens"], dtype=np.int32).tobytes())
        index.starts = array("q", np.asarray(arrays["starts"], dtype=np.int64).tobytes())
        index.lengths = array("d", np.asarray(arrays["lengths"], dtype=np.float64).tobytes())
        index.alive = array("b", alive.tobytes())
        index.saved_at = array("d", np.asarray(arrays["saved_at"], dtype=np.float64).tobytes())
        names: list[str | None] = [None, *split_texts(arrays["device_names"])]
        codes = np.asarray(arrays["device_codes"])
        if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= len(names)):
            raise ValueError("documents name devices the snapshot does not hold")
        index.devices = [names[code] for code in codes.tolist()]
        index.live = len(index.slot_of)
        index.total_length = float(np.frombuffer(index.lengths)[alive.astype(bool)].sum())
        _check_documents(index, alive)
        _check_postings(index)
        return index


def _check_documents(index: KeywordIndex, alive: np.ndarray) -> None:
    """Raise ValueError unless a snapshot's documents fit together: every slot's tokens lie end to
    end in `tokens` and name known terms, every live id is one and unique.
    Well-formed arrays that disagree would make every search of the space fail (an index out of
    range) and be written back at the next stop, so such a file must be refused, never used."""
    count, terms_total = alive.size, index.term_count
    if not (len(index.saved_at) == len(index.devices) == count) or ((alive != 0) & (alive != 1)).any():
        raise ValueError("documents do not match their save times, devices or live flags")
    if index.live != int(alive.sum()) or "" in index.slot_of:
        raise ValueError("live documents do not have one id each")
    lengths = np.frombuffer(index.lengths)
    if not np.isfinite(lengths).all() or (lengths < 0).any() or (lengths % 1).any():
        raise ValueError("document lengths are not counts of tokens")
    counts = lengths.astype(np.int64)
    ends = np.cumsum(counts)
    total = int(ends[-1]) if count else 0
    if (np.frombuffer(index.starts, dtype=np.int64) != ends - counts).any() or total != len(index.tokens):
        raise ValueError("document starts and lengths do not match the tokens")
    tokens = np.frombuffer(index.tokens, dtype=np.int32)
    if tokens.size and (int(tokens.min()) < 0 or int(tokens.max()) >= terms_total):
        raise ValueError("tokens name terms the snapshot does not hold")


def _check_postings(index: KeywordIndex) -> None:
    """Raise ValueError unless a snapshot's postings fit its documents: offsets ascending from 0 to
    the postings' end, each term's slots ascending and within the documents, every frequency at
    least 1, each term's count of live documents the one its postings give, and the stems' lookup
    table a permutation of the terms (see `_check_documents` for why)."""
    offsets, slots, frequencies = index._offsets, index._slots, index._frequencies
    if offsets.size and (
        int(offsets[0]) != 0 or int(offsets[-1]) != slots.size or (np.diff(offsets) < 0).any()
    ):
        raise ValueError("postings do not match their offsets")
    if slots.size and (int(slots.min()) < 0 or int(slots.max()) >= len(index.alive)):
        raise ValueError("postings name documents the snapshot does not hold")
    if frequencies.size and int(frequencies.min()) < 1:
        raise ValueError("postings hold frequencies below 1")
    ascending = np.diff(slots) > 0
    term_starts = offsets[1:-1]
    ascending[term_starts[(term_starts > 0) & (term_starts < slots.size)] - 1] = True
    if not ascending.all():
        raise ValueError("a term's postings are not in ascending slot order")
    alive = np.frombuffer(index.alive, dtype=np.int8)[slots].astype(np.int64)
    held = np.concatenate(([0], np.cumsum(alive)))
    if (held[offsets[1:]] - held[offsets[:-1]] != np.frombuffer(index.document_counts, dtype=np.int32)).any():
        raise ValueError("postings do not match the terms' counts of live documents")
    order = index._base.order
    if order.size and (
        int(order.min()) < 0
        or int(order.max()) >= order.size
        or (np.bincount(order, minlength=order.size) != 1).any()
    ):
        raise ValueError("the stems' lookup table is not one entry per term")
    if (index._base.hashes[1:] < index._base.hashes[:-1]).any():
        raise ValueError("the stems' hashes are not sorted")
    if index._base.count and index._base.bounds().size - 1 != index._base.count:
        raise ValueError("the stems do not match the postings' terms")


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
        present = [(term, stem) for (stem,) in extra if (term := index.term_of(stem)) is not None]
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


def term_worths(indexes: Sequence[KeywordIndex], terms: Sequence[Term]) -> list[float]:
    """Each query term's idf in `indexes` (a phrase: its rarest stem's): what a row holding it gains."""
    live = sum(index.live for index in indexes)
    return [idf(live, min(_document_frequency(indexes, stem) for stem in term)) for term in terms]


def _ids(indexes: Sequence[KeywordIndex], hits: Sequence[tuple[int, int, float]]) -> list[str]:
    """The memory ids of `_ranked` hits (live slots only, so never a retired slot's None)."""
    return [memory_id for owner, slot, _ in hits if (memory_id := indexes[owner].ids[slot]) is not None]


def _document_frequency(indexes: Sequence[KeywordIndex], stem: str) -> int:
    """How many live documents of `indexes` hold `stem`.

    Live ones only: a door that forgot a memory and one that rebuilt its index from the store since
    (a restart, a write by another process) hold the same memories and must weigh words alike
    (counting retired slots until compaction gave them different feedback weights)."""
    return sum(index.document_counts[term] for index in indexes if (term := index.term_of(stem)) is not None)


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
                stem = index.stem_of(term)
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

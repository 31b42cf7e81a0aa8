"""The session-start profile: the pinned facts of a space, the facts that bear on the session's
query (or, without one, the briefing: the lasting facts in force, most lasting first, within a
character budget) and the latest memories in force.

Separate from search: it reads pins and the newest rows as well as hits, and ranks what lasts
(``librarian.lasting``) rather than what matches.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, replace

from bli_memory.door import exchanges
from bli_memory.door.exchanges import is_stored_exchange
from bli_memory.door.librarian.anchors import identifiers, loose_sources
from bli_memory.door.librarian.lasting import (
    DECISION_SCORE,
    SHARED_MIN_WORDS,
    briefing_text,
    changes,
    content_words,
    has_version,
    lasting_score,
    newer_version,
    same_fact,
)
from bli_memory.door.model import Memory, Principal
from bli_memory.door.service.search import Searcher
from bli_memory.door.service.spaces import Spaces
from bli_memory.door.store.roles import Store

PROFILE_DYNAMIC_COUNT = 8
#: the lasting facts the briefing (the profile without a query) shows at most, and their characters:
#: about 1 500 tokens, inside what a host places before the first prompt (Claude Code takes 10 000
#: characters of hook context before it moves the rest to a file; the hook's block stops at 8 000).
#: A project told in long turns stores 40-50 lasting candidates, and at 30 the cap, not the order,
#: left some out (docs/evaluation.md, "A briefing of 40 facts": s 0.58 -> 0.68 of its lasting facts).
PROFILE_BRIEFING_COUNT = 40
PROFILE_BRIEFING_MAX_CHARS = 6000
#: the briefing chooses facts naming more of the project's things first, counting up to this many:
#: a host with its port, or a path with a version, tells more than one name; more than two, no more.
BRIEFING_NAMES_COUNTED = 2
#: the lowest lasting score a fact of the briefing has: reports of what a session did (0) are left out.
PROFILE_BRIEFING_MIN_SCORE = 1
PROFILE_RECENT_COUNT = 10
#: the profile reads this many times its counts, so that stored exchanges left out do not leave it short.
PROFILE_READ_FACTOR = 3
#: the newest rows the profile ranks by how long they last (``librarian.lasting``) when no query is given.
PROFILE_POOL_COUNT = 200
#: pairs of facts whose "does the newer hide the older" answer is remembered (``_text_hides``): a
#: space's 200 newest rows make at most 19 900 pairs, most far fewer; a full cache holds about 10 MiB.
HIDES_CACHE_MAX = 32768
#: facts of one saved exchange the profile shows before it shows any other exchange's less lasting ones.
PROFILE_FACTS_PER_EXCHANGE = 2


@dataclass(frozen=True)
class Profile:
    """What the session-start block is made of: pinned facts, the facts that bear on the query (or
    the most recent ones), and the recent memories themselves."""

    static: list[Memory]
    dynamic: list[str]
    recent: list[Memory]
    tags: list[str]


class Profiles:
    """The profiles of the spaces `spaces` names, from `store` and `searcher`."""

    def __init__(self, store: Store, spaces: Spaces, searcher: Searcher) -> None:
        self.store = store
        self.spaces = spaces
        self.searcher = searcher

    def profile(self, principal: Principal, tag: str, q: str | None = None) -> Profile:
        """Pinned facts, the facts bearing on `q` (or, without one, the briefing: the lasting facts),
        and the latest memories in force. What lasts is ranked by
        ``librarian.lasting.lasting_score`` over the newest PROFILE_POOL_COUNT rows (decisions, conventions,
        preferences and who owns what, then rules, standing orders and version pins, then how things are;
        the briefing chooses decisions first, then the facts naming most of the project's things, and
        shows what it chose most lasting first); a question, a
        test count, a log line or a fragment without a verb is left out of all three, and so are stored
        exchanges (they are history, and each would fill the block with a whole turn), a fact a newer
        one restates or gives another version of, and the briefing and the latest memories leave out
        the facts of a saved exchange about none of the space's parts (``librarian.anchors``: a general
        question answered from general knowledge)."""
        tags = self.spaces.scope_tags(principal, tag, "all")
        pinned = self.store.pinned(principal.team_id, tags)
        read = self.store.recent(principal.team_id, tags, max(PROFILE_POOL_COUNT, PROFILE_RECENT_COUNT))
        scored = [
            (memory, lasting_score(memory.content)) for memory in read if not is_stored_exchange(memory)
        ]
        current = _current(scored)
        # an exchange about none of the space's parts (``librarian.anchors``) briefs nothing
        loose = {
            source
            for source in loose_sources([(exchanges.source_of(memory), memory.content) for memory in read])
            if source.startswith(exchanges.EXCHANGE_KEY_PREFIX)  # a memory saved by hand is meant
        }
        kept = [
            (memory, score)
            for memory, score in current
            if score is not None and exchanges.source_of(memory) not in loose
        ]
        hidden = {memory.id for memory, _score in scored} - {memory.id for memory, _score in current}
        if q:
            hits = self.searcher.search(
                principal, tag, q, limit=PROFILE_DYNAMIC_COUNT * PROFILE_READ_FACTOR, scope="all"
            )
            found = [
                hit.memory
                for hit in hits
                if not is_stored_exchange(hit.memory)
                and lasting_score(hit.memory.content) is not None
                and hit.memory.id not in hidden
            ]
            dynamic = [memory.content for memory in found[:PROFILE_DYNAMIC_COUNT]]
        else:
            dynamic = [briefing_text(memory.content) for memory in _briefing(kept)]
        recent = _recent(kept)
        return Profile(static=pinned, dynamic=dynamic, recent=recent, tags=tags[:-1])


def _current(scored: list[tuple[Memory, int | None]]) -> list[tuple[Memory, int | None]]:
    """Newest-first (memory, score) pairs without the facts a newer one states again near word for word
    (``same_fact``), states a change of (``changes``) or gives another version number of
    (``newer_version``): the newer wording is the one in force, and one fact is shown once. A newer
    fact counts whatever its score, one left out of the profile still says what changed; but a change
    or a version hides only a fact that lasts no longer than itself, so a report of an edit ("Replaced
    the `s3` backend …") never hides the decision it carried out."""
    out: list[tuple[Memory, int | None]] = []
    sharing: dict[str, list[int]] = {}  # a content word: the newer facts that hold it
    versioned: list[int] = []  # the newer facts with a version number
    for index, (memory, score) in enumerate(scored):
        older = memory.content
        words = content_words(older)
        shared = Counter(newer for word in words for newer in sharing.get(word, ()))
        candidates = {newer for newer, count in shared.items() if count >= SHARED_MIN_WORDS}
        if has_version(older):
            candidates.update(versioned)
            versioned.append(index)
        for word in words:
            sharing.setdefault(word, []).append(index)
        if not any(_hides(scored[newer], (memory, score)) for newer in sorted(candidates)):
            out.append((memory, score))
    return out


def _hides(newer: tuple[Memory, int | None], older: tuple[Memory, int | None]) -> bool:
    """Whether the newer fact hides the older one (see ``_current``)."""
    (new, new_score), (old, old_score) = newer, older
    return _text_hides(new.content, _rank(new_score), old.content, _rank(old_score))


@functools.lru_cache(maxsize=HIDES_CACHE_MAX)
def _text_hides(newer: str, newer_rank: int, older: str, older_rank: int) -> bool:
    """``_hides`` of two texts and their ranks, remembered: a session start asks it of every pair of
    the newest rows that share words, and the next session start asks most of the same pairs."""
    if same_fact(newer, older):
        return True
    return newer_rank >= older_rank and (changes(newer, older) or newer_version(newer, older))


def _rank(score: int | None) -> int:
    """A lasting score as a number, a fact that never belongs in the profile lowest."""
    return -1 if score is None else score


def _briefing(scored: list[tuple[Memory, int]]) -> list[Memory]:
    """The lasting facts scored at least PROFILE_BRIEFING_MIN_SCORE, chosen in ``_most_lasting``'s
    order while they fit in PROFILE_BRIEFING_MAX_CHARS together (one that does not fit is passed over
    for shorter ones after it), up to PROFILE_BRIEFING_COUNT facts, and shown most lasting first."""
    lasting = [(memory, score) for memory, score in scored if score >= PROFILE_BRIEFING_MIN_SCORE]
    score_of = {memory.id: score for memory, score in lasting}
    chosen: list[Memory] = []
    used = 0
    for memory in _most_lasting(lasting):
        size = len(briefing_text(memory.content))
        if used + size > PROFILE_BRIEFING_MAX_CHARS:
            continue
        chosen.append(memory)
        used += size
        if len(chosen) == PROFILE_BRIEFING_COUNT:
            break
    return sorted(chosen, key=lambda memory: -score_of[memory.id])  # shown most lasting first


def _recent(scored: list[tuple[Memory, int]]) -> list[Memory]:
    """The newest PROFILE_RECENT_COUNT facts in force, each as the briefing words it
    (``briefing_text``); the hook leaves out those the briefing already shows."""
    return [replace(memory, content=briefing_text(memory.content)) for memory, _score in scored][
        :PROFILE_RECENT_COUNT
    ]


def _most_lasting(scored: list[tuple[Memory, int]]) -> list[Memory]:
    """Newest-first (memory, lasting score) pairs in the order the briefing chooses them: decisions,
    conventions, preferences and who owns what (``lasting.DECISION_SCORE``) first; then the facts
    that name more of the project's things (``anchors.identifiers``: a host, a path, a version, a cron
    line, a person; up to BRIEFING_NAMES_COUNTED), then by score, then newest first. At most
    PROFILE_FACTS_PER_EXCHANGE facts of one saved exchange come before the others' facts, so one long
    exchange does not fill the profile.

    Most facts score alike (how things are), and a verbose project stores more of them than the
    briefing has room for; what a teammate asks about later is mostly where something runs and what
    it is called, which a fact naming nothing ("The scheduled run checks out the main branch like a
    push does") does not say, and a fact naming two things ("the proxy listens on 6432 on db-02")
    says more of than one naming one."""
    named = [min(len(identifiers(memory.content)), BRIEFING_NAMES_COUNTED) for memory, _score in scored]

    def rank(index: int) -> tuple[bool, int, int, int]:
        score = scored[index][1]
        return (score < DECISION_SCORE, -named[index], -score, index)

    order = sorted(range(len(scored)), key=rank)
    taken: dict[str, int] = {}
    first: list[Memory] = []
    later: list[Memory] = []
    for index in order:
        memory = scored[index][0]
        source = exchanges.source_of(memory)
        taken[source] = taken.get(source, 0) + 1
        (first if taken[source] <= PROFILE_FACTS_PER_EXCHANGE else later).append(memory)
    return first + later

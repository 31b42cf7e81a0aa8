"""The session-start profile: the pinned facts of a space, the facts that bear on the session's
query (or, without one, the facts that last longest) and the latest memories.

Separate from search: it reads pins and the newest rows as well as hits, and ranks what lasts
(``librarian.lasting``) rather than what matches.
"""

from __future__ import annotations

from dataclasses import dataclass

from bli_memory.door import exchanges
from bli_memory.door.exchanges import is_stored_exchange
from bli_memory.door.librarian.lasting import lasting_score
from bli_memory.door.model import Memory, Principal
from bli_memory.door.service.search import Searcher
from bli_memory.door.service.spaces import Spaces
from bli_memory.door.store.roles import Store

PROFILE_DYNAMIC_COUNT = 8
PROFILE_RECENT_COUNT = 10
#: the profile reads this many times its counts, so that stored exchanges left out do not leave it short.
PROFILE_READ_FACTOR = 3
#: the newest rows the profile ranks by how long they last (``librarian.lasting``) when no query is given.
PROFILE_POOL_COUNT = 200
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
        """Pinned facts, the facts bearing on `q` (or, without one, the facts that last longest), and
        the latest memories. What lasts is ranked by ``librarian.lasting.lasting_score`` over the newest
        PROFILE_POOL_COUNT rows (decisions, conventions and preferences, then standing orders, then how
        things are; newest first among equals); a question, a test count, a log line or a fragment
        without a verb is left out of all three, and so are stored exchanges (they are history, and
        each would fill the block with a whole turn)."""
        tags = self.spaces.scope_tags(principal, tag, "all")
        pinned = self.store.pinned(principal.team_id, tags)
        read = self.store.recent(principal.team_id, tags, max(PROFILE_POOL_COUNT, PROFILE_RECENT_COUNT))
        scored = [
            (memory, lasting_score(memory.content)) for memory in read if not is_stored_exchange(memory)
        ]
        kept = [(memory, score) for memory, score in scored if score is not None]
        recent = [memory for memory, _score in kept[:PROFILE_RECENT_COUNT]]
        if q:
            hits = self.searcher.search(
                principal, tag, q, limit=PROFILE_DYNAMIC_COUNT * PROFILE_READ_FACTOR, scope="all"
            )
            found = [
                hit.memory
                for hit in hits
                if not is_stored_exchange(hit.memory) and lasting_score(hit.memory.content) is not None
            ]
            dynamic = [memory.content for memory in found[:PROFILE_DYNAMIC_COUNT]]
        else:
            dynamic = [memory.content for memory in _most_lasting(kept)[:PROFILE_DYNAMIC_COUNT]]
        return Profile(static=pinned, dynamic=dynamic, recent=recent, tags=tags[:-1])


def _most_lasting(scored: list[tuple[Memory, int]]) -> list[Memory]:
    """Newest-first (memory, lasting score) pairs ordered by score, newest first among equals; at most
    PROFILE_FACTS_PER_EXCHANGE facts of one saved exchange come before the others' facts, so one long
    exchange does not fill the profile."""
    order = sorted(range(len(scored)), key=lambda index: (-scored[index][1], index))
    taken: dict[str, int] = {}
    first: list[Memory] = []
    later: list[Memory] = []
    for index in order:
        memory = scored[index][0]
        source = str((memory.metadata or {}).get(exchanges.FACT_EXCHANGE_FIELD) or memory.id)
        taken[source] = taken.get(source, 0) + 1
        (first if taken[source] <= PROFILE_FACTS_PER_EXCHANGE else later).append(memory)
    return first + later

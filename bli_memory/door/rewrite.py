"""Question rewrite: a search query that is a question is also searched as the statement that would
answer it, when a chat endpoint is configured.

Memories are statements ("The exporter writes CSV files to s3://acme-exports/daily/"); a question
("Where does the nightly job put its output?") shares few of their words and sits apart from them in
vector space. A chat model rewrites the question once into one short declarative sentence; the door
searches both and fuses the two result lists (`fuse_hits`: each memory once, at the better of its two
scores). The answer says what the question was rewritten as (`rewrittenAs`).

Best effort, never a cost the caller did not allow:

- off unless `BLI_MEMORY_LLM_URL` and `BLI_MEMORY_LLM_MODEL` are set (the librarian's endpoint,
  `BLI_MEMORY_LLM_KEY` optional), or when `BLI_MEMORY_QUERY_REWRITE=0`;
- only for a question (`is_question`: it ends with "?" or opens with a question word);
- one call under a deadline: `REWRITE_DEADLINE_S`, or less when the request says how long it may
  wait (`rewriteBudgetMs`; the client derives it from its own deadline, so a prompt hook's search
  rewrites only when the rewrite fits in what its budget leaves, `door_client.REWRITE_RESERVE_S`);
  below `REWRITE_MIN_BUDGET_S` no call is made;
- a rewrite is cached (`CACHE_ENTRIES` questions): a repeated question costs no call, whatever its
  budget;
- an endpoint that failed (unreachable, slow, an HTTP error, a malformed answer) is not asked again
  for `FAILURE_COOLDOWN_S`, so a broken endpoint costs at most one search its deadline;
- an answer that is not one plain sentence (empty, several lines, too long, another question, the
  question itself) is no rewrite; the search is the plain one.

Any failure leaves the search exactly as it would have been without the rewrite.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from bli_memory.door.config import LlmConfig
from bli_memory.door.librarian.llm import LibrarianError, chat_url, post_chat
from bli_memory.door.model import Hit

#: the longest one rewrite may take when the request sets no budget of its own
REWRITE_DEADLINE_S = 1.5
#: a budget shorter than this is not worth a call (a chat model rarely answers faster)
REWRITE_MIN_BUDGET_S = 0.2
#: after a failed call, no call for this long
FAILURE_COOLDOWN_S = 30.0
CACHE_ENTRIES = 512
STATEMENT_MAX_CHARS = 300
QUESTION_WORDS = frozenset("what when where who whom whose which why how".split())

REWRITE_SYSTEM_PROMPT = """You turn a search question into the statement that would answer it, for searching a
project's notes, which are written as statements. Answer with ONE short declarative sentence and
nothing else: no preamble, no quotes, no question mark. Keep every name, identifier, path, command,
version and number from the question byte for byte. Where you do not know the answer, write the
sentence with a general word in its place ("The nightly job writes its output to a folder")."""

Post = Callable[[str, dict[str, Any], "str | None", float], bytes]


def is_question(query: str) -> bool:
    """A question: it ends with "?" or its first word is a question word ("how do we deploy")."""
    text = query.strip()
    if text.endswith("?"):
        return True
    words = re.findall(r"[A-Za-z']+", text[:40].lower())
    return bool(words) and words[0] in QUESTION_WORDS


def _normalised(query: str) -> str:
    return " ".join(query.lower().split())


def statement_of(raw: bytes, question: str) -> str | None:
    """The sentence in a chat answer, or None when the answer is not one plain statement.

    Raises LibrarianError when the answer is not a chat completion at all."""
    try:
        content = json.loads(raw)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise LibrarianError("chat endpoint answered malformed JSON") from None
    if not isinstance(content, str):
        raise LibrarianError("chat endpoint answered no message content")
    text = content.strip().strip('"').strip()
    if not text or "\n" in text or len(text) > STATEMENT_MAX_CHARS or text.endswith("?"):
        return None
    if _normalised(text).rstrip(".") == _normalised(question).rstrip("?").strip():
        return None
    return text


class QuestionRewriter:
    """Rewrites questions through one OpenAI-compatible chat endpoint; thread-safe, never raises."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        deadline_s: float = REWRITE_DEADLINE_S,
        post: Post = post_chat,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._url = chat_url(base_url)
        self._model = model
        self._api_key = api_key
        self._deadline_s = deadline_s
        self._post = post
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._quiet_until = 0.0
        #: what happened to each question asked, by outcome (for tests and the door's log)
        self.counts: dict[str, int] = {}

    def _count(self, outcome: str) -> None:
        with self._lock:
            self.counts[outcome] = self.counts.get(outcome, 0) + 1

    def rewrite(self, query: str, budget_s: float | None = None) -> str | None:
        """The statement to search beside `query`, or None (not a question, no budget, failure)."""
        if not is_question(query):
            return None
        key = _normalised(query)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                self.counts["cached"] = self.counts.get("cached", 0) + 1
                return cached
            quiet = self._clock() < self._quiet_until
        if quiet:
            self._count("cooling_down")
            return None
        timeout_s = self._deadline_s if budget_s is None else min(self._deadline_s, budget_s)
        if timeout_s < REWRITE_MIN_BUDGET_S:
            self._count("no_budget")
            return None
        body = {
            "model": self._model,
            "temperature": 0,
            "max_tokens": 80,
            "messages": [
                {"role": "system", "content": REWRITE_SYSTEM_PROMPT},
                {"role": "user", "content": query.strip()[:1000]},
            ],
        }
        try:
            statement = statement_of(self._post(self._url, body, self._api_key, timeout_s), query)
        except (LibrarianError, OSError, ValueError):
            with self._lock:
                self._quiet_until = self._clock() + FAILURE_COOLDOWN_S
            self._count("failed")
            return None
        if statement is None:
            self._count("not_a_statement")
            return None
        with self._lock:
            self._cache[key] = statement
            while len(self._cache) > CACHE_ENTRIES:
                self._cache.popitem(last=False)
        self._count("rewritten")
        return statement


def rewriter_for(llm: LlmConfig, *, enabled: bool) -> QuestionRewriter | None:
    """The door's rewriter: on when the librarian's chat endpoint is configured, unless switched off
    (`enabled` False: `BLI_MEMORY_QUERY_REWRITE=0`)."""
    if not llm.configured or not enabled:
        return None
    return QuestionRewriter(llm.url, llm.model, llm.key)


def fuse_hits(first: Sequence[Hit], second: Sequence[Hit], limit: int) -> list[Hit]:
    """The two searches' hits as one list: each memory once, at the better of its two scores (with the
    channels that found it in either), best first; ties keep the question's own order. Pure."""
    merged: dict[str, Hit] = {}
    order: dict[str, int] = {}
    for hit in [*first, *second]:
        memory_id = hit.memory.id
        order.setdefault(memory_id, len(order))
        known = merged.get(memory_id)
        if known is None:
            merged[memory_id] = hit
            continue
        best = hit if hit.score > known.score else known
        channels = tuple(dict.fromkeys([*known.matched_by, *hit.matched_by]))
        relevances = [r for r in (known.relevance, hit.relevance) if r is not None]
        merged[memory_id] = replace(best, matched_by=channels, relevance=max(relevances, default=None))
    ranked = sorted(merged.values(), key=lambda hit: (-hit.score, order[hit.memory.id]))
    return ranked[:limit]

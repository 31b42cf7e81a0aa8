"""The search route's answer in-process (`MemoryService.search_answer`): the question's hits, and,
when the rewriter turns it into a statement, that statement's hits fused with them, exactly as the
route `/api/memory/search` composes `search`, `QuestionRewriter.rewrite` and `fuse_hits`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Hit, Principal
from bli_memory.door.rewrite import REWRITE_DEADLINE_S, QuestionRewriter, fuse_hits
from tests.door.helpers import device_principal, open_memories

TAG = "repo-answer"
QUESTION = "Where does the nightly job put its output?"
STATEMENT = "The nightly batch exporter writes its output files to s3."
MEMORIES = (
    "The batch exporter writes CSV files to s3://acme-exports/daily/.",
    "The nightly job runs at 02:00 UTC.",
    "Output of the linter goes to stdout.",
    "Files older than 30 days are removed from the bucket.",
)


def _rewriter(answer: str | None) -> tuple[QuestionRewriter, list[float]]:
    """A rewriter whose endpoint answers `answer` (None: a failing endpoint), and the budgets it was asked."""
    budgets: list[float] = []

    def post(url: str, body: dict[str, Any], key: str | None, timeout_s: float) -> bytes:
        budgets.append(timeout_s)
        if answer is None:
            raise OSError("the endpoint is down")
        return json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]}).encode()

    return QuestionRewriter("http://chat.invalid", "m", post=post), budgets


def _route(
    memories: MemoryService,
    caller: Principal,
    q: str,
    limit: int,
    rewriter: QuestionRewriter | None,
    budget_s: float | None,
) -> tuple[list[Hit], str | None]:
    """What the search route computed before it called `search_answer`, step for step."""
    hits = memories.search(caller, TAG, q, limit=limit, threshold=0.0, scope="project")
    statement = None
    if rewriter is not None:
        statement = rewriter.rewrite(q, budget_s)
        if statement is not None:
            also = memories.search(caller, TAG, statement, limit=limit, threshold=0.0, scope="project")
            hits = fuse_hits(hits, also, limit)
    return hits, statement


def _answer(
    memories: MemoryService,
    caller: Principal,
    q: str,
    limit: int,
    rewriter: QuestionRewriter | None,
    budget_s: float | None,
) -> tuple[list[Hit], str | None]:
    hits, statement, _ = memories.search_answer(
        caller,
        TAG,
        q,
        limit=limit,
        threshold=0.0,
        scope="project",
        rewriter=rewriter,
        rewrite_budget_s=budget_s,
    )
    return hits, statement


def test_the_search_answer_is_the_routes_search_rewrite_and_fusion(tmp_path: Path) -> None:
    memories = open_memories(tmp_path / "memory.db")
    caller = device_principal(memories)
    for text in MEMORIES:
        memories.save(caller, TAG, text)
    for limit in (1, 3, 10):
        for q in (QUESTION, "nightly exporter output"):
            for answer in (STATEMENT, None):
                for budget_s in (None, 0.5):
                    expected = _route(memories, caller, q, limit, _rewriter(answer)[0], budget_s)
                    rewriter, budgets = _rewriter(answer)
                    assert _answer(memories, caller, q, limit, rewriter, budget_s) == expected
                    asked = [] if q != QUESTION else [REWRITE_DEADLINE_S if budget_s is None else budget_s]
                    assert budgets == asked  # one call, with the route's budget, for a question only
            assert _answer(memories, caller, q, limit, None, None) == _route(
                memories, caller, q, limit, None, None
            )
    hits, statement = _answer(memories, caller, QUESTION, 3, _rewriter(STATEMENT)[0], None)
    assert statement == STATEMENT and hits  # the statement's hits are in the answer
    memories.close()

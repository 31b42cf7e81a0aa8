"""Hybrid search: a space's keyword and vector candidates fused with recency into one ranking, the
best rows' context, the answer-kind lift and the rules that put a fact before its stored exchange;
the search route's answer (the question also searched as the statement that would answer it); and
the closest fact by meaning that a forget by meaning takes.

Separate from the writes: it only reads (under the writer's lock while it reads the indexes), and
it is the one place a ranking is made, so every door ranks alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from bli_memory.door import answer_kind, keyword, ranking, relevance
from bli_memory.door.exchanges import fact_exchange, gave_no_facts, is_stored_exchange
from bli_memory.door.model import Hit, Memory, Principal
from bli_memory.door.rewrite import fuse_hits
from bli_memory.door.service.candidates import Candidates, Similarities, no_similarities
from bli_memory.door.service.spaces import Scope, Spaces
from bli_memory.door.service.writer import IndexedWriter

if TYPE_CHECKING:
    from bli_memory.door.rewrite import QuestionRewriter

#: forget by meaning looks this far down the nearest rows for one that is not a stored exchange.
CLOSEST_CANDIDATES = 8


class Searcher:
    """Searches the spaces `spaces` names through the channels of `candidates`."""

    def __init__(
        self,
        writer: IndexedWriter,
        spaces: Spaces,
        candidates: Candidates,
        own_calibrations: Mapping[str, relevance.Calibration] | None = None,
    ) -> None:
        """`own_calibrations`: the hits' relevance calibrations by embedder name, read from a file the
        door was given (None: the packaged ones)."""
        self.own_calibrations = own_calibrations
        self.writer = writer
        self.store = writer.store
        self.spaces = spaces
        self.candidates = candidates

    def search(
        self,
        principal: Principal,
        tag: str,
        q: str,
        *,
        limit: int = 5,
        threshold: float = 0.0,
        context: bool = True,
        weights: ranking.Weights = ranking.DEFAULT_WEIGHTS,
        scope: Scope = "project",
        keep_relevant: bool = False,
    ) -> list[Hit]:
        """Hybrid search of a space (every tag that names it): keyword, meaning and recency, fused,
        and then the best rows' context (`ranking.spread_context`) unless `context` is False.
        `weights` are the fusion's (an evaluation's channel-only runs pass their own).

        `similarity` is the cosine of query and memory where the memory has a
        vector; `threshold` filters on it (rows without one are not filtered:
        with no embedder the door ranks by keyword and recency alone).

        Deterministic: the same memories saved in the same order and the same query give the same
        hits with the same scores in every door and every run. Nothing reads the clock (age counts
        back from the newest candidate, `ranking.ages_days`), cosines do not depend on a row's place
        in the matrix (`Candidates.vector_candidates`), and every tie is broken by save order
        (`ranking.ordered`), never by id.

        `scope` `all` reads the space and the caller's global space as one: one ranking over both,
        the global space's rows after the project's in save order (`Spaces.scope_tags`). Pins are
        never among the hits (they are not indexed).

        Each hit carries its `relevance` (`door.relevance`), computed over the hits returned, which
        it never reorders. `keep_relevant`: `threshold` drops only rows whose relevance is below the
        door's floor as well, so a caller asking both never loses a row the floor keeps.
        """
        if keep_relevant and threshold > 0:
            unfiltered = self.search(
                principal, tag, q, limit=limit, context=context, weights=weights, scope=scope
            )
            floor = self.floor(_with_vectors(unfiltered))
            return [
                hit
                for hit in unfiltered
                if hit.similarity is None
                or hit.similarity >= threshold
                or (floor is not None and hit.relevance is not None and hit.relevance >= floor)
            ]
        tags = self.spaces.scope_tags(principal, tag, scope)
        query_vectors = self.writer.embed([q], "query")
        query_vector = None if query_vectors is None else query_vectors[0]
        terms = keyword.query_terms(q)
        with self.writer.lock:
            self.writer.check_outside_writes()
            keyword_ids = self.candidates.keyword_candidates(principal.team_id, tags, terms)
            worths = self.candidates.term_worths(principal.team_id, tags, terms)
            vector_ids: list[str] = []
            similarities_of: Similarities = no_similarities
            if query_vector is not None:
                similarities_of, vector_ids = self.candidates.vector_candidates(
                    principal.team_id, tags, query_vector
                )
            candidate_ids = set(keyword_ids).union(vector_ids)
            if not candidate_ids:
                return []
            position = self.candidates.save_positions(principal.team_id, tags, candidate_ids)
            updated = self.store.updated_at(principal.team_id, list(candidate_ids))
            cosines = similarities_of(list(candidate_ids))
        keyword_rank = {memory_id: rank for rank, memory_id in enumerate(keyword_ids)}
        # in save order, so that equal similarities take their vector ranks the same way in every door
        live = sorted(
            (memory_id for memory_id in candidate_ids if memory_id in updated), key=position.__getitem__
        )
        similarities = {memory_id: cosines.get(memory_id) for memory_id in live}
        ages = ranking.ages_days([updated[memory_id] for memory_id in live])
        signals = [
            ranking.Signals(
                keyword_rank=keyword_rank.get(memory_id),
                similarity=similarities[memory_id],
                age_days=age,
            )
            for memory_id, age in zip(live, ages, strict=True)
        ]
        fused = dict(zip(live, ranking.fuse(signals, weights), strict=True))
        if context and weights.context > 0:
            fused = self._with_context(principal.team_id, tags, fused, updated, position, weights)
        if threshold > 0:  # cosines can be negative: the default 0 must keep every row
            fused = {
                memory_id: score
                for memory_id, score in fused.items()
                if (sim := similarities[memory_id]) is None or sim >= threshold
            }
        window = ranking.ordered(fused, updated, position)[: limit + ranking.EXCHANGE_WINDOW]
        rows = self.store.current_by_ids(principal.team_id, window)
        if weights.answer_kind > 0:
            lifted = ranking.lift_answer_kinds(
                {memory_id: fused[memory_id] for memory_id in window},
                {memory_id: row.content for memory_id, row in rows.items() if not is_stored_exchange(row)},
                q,
                weights.answer_kind,
            )
            fused = {**fused, **lifted}
            window = ranking.ordered(lifted, updated, position)
        order, fused = ranking.represented_exchanges_yield(
            window,
            fused,
            {memory_id: key for memory_id, row in rows.items() if (key := fact_exchange(row)) is not None},
            {memory_id: row.custom_id or "" for memory_id, row in rows.items() if is_stored_exchange(row)},
        )
        top = order[:limit]
        vector_set = set(vector_ids)
        hits = [
            Hit(
                memory=rows[memory_id],
                similarity=similarities[memory_id],
                score=fused[memory_id],
                matched_by=tuple(
                    channel
                    for channel, found in (
                        ("keyword", memory_id in keyword_rank),
                        ("vector", memory_id in vector_set),
                    )
                    if found
                ),
            )
            for memory_id in top
            if memory_id in rows
        ]
        hits = _facts_before_their_exchanges(hits)
        near = [c for i in vector_ids if (c := cosines.get(i)) is not None]
        return self._with_relevance(
            hits, q, keyword_rank, terms, worths, relevance.median(near), max(near, default=None)
        )

    def floor(self, with_vectors: bool = True) -> float | None:
        """The relevance at which the prompt hook shows a row: the floor of the embedder's
        calibration (of `none` when the query had no vector), None without one."""
        calibration = self._calibration(with_vectors)
        return None if calibration is None else calibration.floor

    def _calibration(self, with_vectors: bool) -> relevance.Calibration | None:
        """The embedder's calibration, or keyword-only `none`'s when the query had no vector. A door
        given its own coefficients file takes `none` from the packaged one when the file has none:
        the file must calibrate the door's embedder, and an outage of it should not leave the hits
        without relevance."""
        name = (self.writer.vector_model if with_vectors else None) or "none"
        if self.own_calibrations is None:
            return relevance.calibration_for(name)
        own = self.own_calibrations.get(name)
        if own is None and name == "none":
            return relevance.calibration_for(name)
        return own

    def _with_relevance(
        self,
        hits: list[Hit],
        q: str,
        keyword_rank: Mapping[str, int],
        terms: Sequence[keyword.Term],
        worths: Sequence[float],
        background: float | None,
        best_similarity: float | None,
    ) -> list[Hit]:
        """`hits`, in the same order, each with its signals and, when the embedder has a
        calibration, its relevance: the embedder's own when the vector channel took part
        (`background` is known), else keyword-only `none`'s. `background` and `best_similarity` are
        the median and the best cosine of the vector channel's candidates, not of the hits, so that
        a hit's relevance does not depend on how many hits were asked for. `worths` are the idfs of the
        query's keyword `terms` in the space (`keyword.term_worths`), in their order."""
        if not hits:
            return hits
        calibration = self._calibration(background is not None)
        kinds = answer_kind.asked(q)
        best = max(hit.score for hit in hits)
        out = []
        for rank, hit in enumerate(hits):
            terms_held, worth_held = _held_shares(terms, worths, hit.memory.content)
            signals = relevance.HitSignals(
                similarity=hit.similarity,
                keyword_rank=keyword_rank.get(hit.memory.id),
                rank=rank,
                score=hit.score,
                best_score=best,
                background=background,
                answer_kind_share=answer_kind.held_share(hit.memory.content, kinds) if kinds else None,
                both_channels=len(hit.matched_by) == 2,
                stored_exchange=is_stored_exchange(hit.memory),
                query_terms_held=terms_held,
                query_worth_held=worth_held,
                exchange_without_facts=gave_no_facts(hit.memory),
                best_similarity=best_similarity,
            )
            value = None if calibration is None else calibration.relevance(signals)
            out.append(replace(hit, relevance=value, signals=signals))
        return out

    def search_answer(
        self,
        principal: Principal,
        tag: str,
        q: str,
        *,
        limit: int,
        threshold: float,
        scope: Scope,
        rewriter: QuestionRewriter | None,
        rewrite_budget_s: float | None,
        keep_relevant: bool = False,
    ) -> tuple[list[Hit], str | None, float | None]:
        """What the search route answers: the hits for `q`, and, when `rewriter` turns the question
        into the statement that would answer it (`door.rewrite`, within `rewrite_budget_s`), the
        statement too, its own hits fused with the question's (`rewrite.fuse_hits`); and the floor
        of the hits' relevance (None when they carry none)."""
        hits = self.search(
            principal, tag, q, limit=limit, threshold=threshold, scope=scope, keep_relevant=keep_relevant
        )
        statement = None
        if rewriter is not None:
            statement = rewriter.rewrite(q, rewrite_budget_s)
            if statement is not None:
                also = self.search(
                    principal,
                    tag,
                    statement,
                    limit=limit,
                    threshold=threshold,
                    scope=scope,
                    keep_relevant=keep_relevant,
                )
                hits = fuse_hits(hits, also, limit)
        return hits, statement, self.floor(_with_vectors(hits))

    def _with_context(
        self,
        team_id: int,
        tags: Sequence[str],
        fused: dict[str, float],
        updated: Mapping[str, float],
        position: Mapping[str, ranking.SavePosition],
        weights: ranking.Weights,
    ) -> dict[str, float]:
        """`fused` after the best rows lend score to their context (`ranking.spread_context`).
        Neighbours come from the keyword indexes (save order, device, time)."""
        seeds = ranking.ordered(fused, updated, position)
        neighbours: dict[str, list[tuple[str, int]]] = {}
        with self.writer.lock:
            indexes = [self.candidates.keyword_index(team_id, tag) for tag in tags]
            for seed in seeds[: ranking.CONTEXT_SEEDS]:
                for index in indexes:
                    if seed in index.slot_of:
                        neighbours[seed] = index.neighbours(
                            seed, ranking.CONTEXT_STEPS, ranking.CONTEXT_WINDOW_S
                        )
                        break
        return ranking.spread_context(fused, neighbours, weights)

    def closest(self, principal: Principal, tags: Sequence[str], query: str) -> tuple[Memory, float] | None:
        """The current memory of the space most similar in meaning to `query`, with its cosine.

        Never a stored exchange: forgetting by meaning means a fact (forgetting a fact also takes its
        sentence out of its exchange); an exchange is forgotten by id or exact text."""
        vectors = self.writer.embed([query], "query")
        if vectors is None:
            return None
        with self.writer.lock:
            self.writer.check_outside_writes()
            similarities_of, ranked = self.candidates.vector_candidates(principal.team_id, tags, vectors[0])
            top = ranked[:CLOSEST_CANDIDATES]
            similarities = similarities_of(top)
            rows = self.store.current_by_ids(principal.team_id, top)
        for memory_id in top:
            memory = rows.get(memory_id)
            if memory is not None and not is_stored_exchange(memory):
                return memory, similarities.get(memory_id) or 0.0
        return None


def _held_shares(terms: Sequence[keyword.Term], worths: Sequence[float], text: str) -> tuple[float, float]:
    """The shares of the query's keyword terms `text` holds (a phrase: all of its stems): of their
    number, and of their worth (their idfs in the space, `worths`), each 0 for none. By worth,
    holding the one rare word of a question says more than holding its three common ones."""
    if not terms:
        return 0.0, 0.0
    stems = set(keyword.tokens(text))
    held = [all(stem in stems for stem in term) for term in terms]
    total = sum(worths)
    worth = sum(w for w, is_held in zip(worths, held, strict=True) if is_held) / total if total > 0 else 0.0
    return sum(held) / len(terms), worth


def _with_vectors(hits: Sequence[Hit]) -> bool:
    """Whether `hits` were scored with the embedder's calibration (the vector channel took part);
    no hits: as the door's embedder would be."""
    signals = hits[0].signals if hits else None
    return signals is None or signals.background is not None


def _facts_before_their_exchanges(hits: list[Hit]) -> list[Hit]:
    """`hits` with each stored exchange moved to just after the last of its facts that they hold,
    its score lowered to that fact's: a fact says what its exchange says, in fewer words, so an
    agent reads the fact first. An exchange none of whose facts is in `hits` keeps its place."""
    last_fact: dict[str, int] = {}
    for index, hit in enumerate(hits):
        key = fact_exchange(hit.memory)
        if key is not None:
            last_fact[key] = index
    if not last_fact:
        return hits
    waiting: dict[int, list[Hit]] = {}
    ordered: list[Hit] = []
    for index, hit in enumerate(hits):
        after = last_fact.get(hit.memory.custom_id or "", -1) if is_stored_exchange(hit.memory) else -1
        if after > index:
            waiting.setdefault(after, []).append(hit)
            continue
        ordered.append(hit)
        for moved in waiting.pop(index, []):
            ordered.append(replace(moved, score=min(moved.score, hit.score)))
    return ordered

"""The table and the verbose report of scripts/eval_capture.py, from what a replay made of a capture
file (scripts/capture_data.py): one column per librarian, capture file and part of its projects."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from capture_blocks import is_fragment, is_question  # scripts/capture_blocks.py
from capture_data import Exchange, Fact, FactResult, Run, holds, in_force_flags  # scripts/capture_data.py

RECALL_BAR = 0.95
#: what reaches the agent (the data set's bar): the prompt hook's block holds the answer this often, ...
SHOWN_BAR = 0.70
#: ... with at most this many rows a prompt when the question is asked where nothing answers it
UNRELATED_ROWS_BAR = 0.10
#: lasting facts in the session-start block at least this often
LASTING_BAR = 0.80
#: questions whose answer is not stored get no row at least this often
UNANSWERED_QUIET_BAR = 0.80
#: how much of a result a verbose line shows when it is not the fact itself.
SHOWN_CHARS = 160


@dataclass(frozen=True)
class Column:
    """One column of the table: a librarian's run on one capture file, scored over some projects."""

    label: str
    run: Run
    projects: frozenset[str]


@dataclass(frozen=True)
class Briefing:
    """The session-start blocks of some spaces, line by line."""

    lasting: int
    lasting_shown: int
    lines: int
    superseded: int
    questions: int
    fragments: int


@dataclass(frozen=True)
class Summary:
    """The figures of one column. `facts`, `found`, `as_memory`, `shown` and `mrr` count the facts in
    force (`facts_in_force`); `all_facts` and `all_found` every fact, a corrected one included."""

    facts: int
    found: int
    as_memory: int
    shown: int
    mrr: float
    all_facts: int
    all_found: int
    corrected_shown: int
    asked_elsewhere: int
    unrelated_rows: int
    unanswered: int
    unanswered_shown: int
    briefing: Briefing
    wrong: int
    noise_kept: int
    noise_exchanges_keeping: int
    noise_exchanges: int
    corrections: int
    superseded: int
    still_current: int
    never_stored: int
    jobs: int
    jobs_failed: int
    added: int
    updated: int
    unchanged: int
    conflicted: int
    facts_at_end: int

    @property
    def recall(self) -> float:
        return self.found / self.facts if self.facts else 0.0

    @property
    def meets_bar(self) -> bool:
        return self.recall >= RECALL_BAR and self.wrong == 0 and self.jobs_failed == 0

    @property
    def unrelated_per_prompt(self) -> float | None:
        return self.unrelated_rows / self.asked_elsewhere if self.asked_elsewhere else None

    def bar_reaches_agent(self) -> str:
        """met / not met: the answer shown often enough, with few rows where nothing answers."""
        per_prompt = self.unrelated_per_prompt
        if not self.facts or per_prompt is None:
            return "–"
        met = self.shown / self.facts >= SHOWN_BAR and per_prompt <= UNRELATED_ROWS_BAR
        return _met(met)

    def bar_lasting(self) -> str:
        brief = self.briefing
        return _met(brief.lasting_shown / brief.lasting >= LASTING_BAR) if brief.lasting else "–"

    def bar_unanswered(self) -> str:
        if not self.unanswered:
            return "–"
        return _met((self.unanswered - self.unanswered_shown) / self.unanswered >= UNANSWERED_QUIET_BAR)


def _met(met: bool) -> str:
    return "met" if met else "not met"


def correction_outcomes(run: Run) -> list[tuple[str, str, str]]:
    """(exchange id, corrected value, superseded | still current | never stored) per correction."""
    out = []
    for result in run.exchanges:
        for value, was_current in result.old_current_before.items():
            now = run.spaces.get(result.tag, {}).values()
            # the correcting exchange's own statement may name the old value it retires ("Kwame has
            # moved on, Inès looks after it now"): that is not the old fact still current
            retiring = {row.id for row in result.own_statements()}
            if any(
                row.kind == "memory" and row.id not in retiring and holds(row.content, [value]) for row in now
            ):
                verdict = "still current"
            elif was_current:
                verdict = "superseded"
            else:
                verdict = "never stored"
            out.append((result.exchange.id, value, verdict))
    return out


def _retiring_facts(run: Run, project: str) -> dict[str, list[str]]:
    """Each `must_not` string of the project -> the facts its correcting exchange wrote in its own
    words, which may name the old value they retire ("Tomas has left; Mei Lin looks after billing
    now")."""
    out: dict[str, list[str]] = {}
    for result in run.exchanges:
        if result.exchange.project == project:
            for value in result.exchange.must_not:
                out.setdefault(value, []).extend(row.content for row in result.own_statements())
    return out


def wrong_values(run: Run, project: str) -> list[str]:
    """Every `must_not` string of the project's exchanges: what only a wrong or superseded fact holds."""
    return [
        m for result in run.exchanges if result.exchange.project == project for m in result.exchange.must_not
    ]


def line_verdicts(run: Run, project: str) -> list[tuple[str, list[str]]]:
    """Each line of the project's session-start block and what is wrong with it: superseded (it holds
    a `must_not` string of the project), question, fragment (scripts/capture_blocks.py says how)."""
    values = wrong_values(run, project)
    retiring = _retiring_facts(run, project)
    out = []
    for line in run.briefings.get(project, []):
        verdicts = []
        shown = line.removesuffix("…")
        if any(
            holds(line, [value]) and not any(fact.startswith(shown) for fact in retiring.get(value, ()))
            for value in values
        ):
            verdicts.append("superseded")
        if is_question(line):
            verdicts.append("question")
        if is_fragment(line):
            verdicts.append("fragment")
        out.append((line, verdicts))
    return out


def lasting_in_briefing(run: Run, project: str) -> list[tuple[Fact, bool]]:
    """(lasting fact, a line of its space's session-start block holds every key) per lasting fact in
    force. A lasting fact a later exchange of the project corrects (one of its keys holds a
    `must_not` string of that exchange: "owned by Dana Whitfield" then "not Whitfield") is no
    longer in force: the block must not show it, and the superseded count says when it does."""
    lines = run.briefings.get(project, [])
    flags = in_force_flags([result.exchange for result in run.exchanges])
    return [
        (fact, any(holds(line, fact.key) for line in lines))
        for result, in_force in zip(run.exchanges, flags, strict=True)
        if result.exchange.project == project
        for fact, fact_in_force in zip(result.exchange.facts, in_force, strict=True)
        if fact.lasting and fact_in_force
    ]


def facts_in_force(run: Run, projects: Iterable[str]) -> list[FactResult]:
    """The results of the facts of `projects` in force (`capture_data.in_force_flags`), in run order.

    Finding a corrected fact's old value is no success, and a librarian that supersedes it would be
    scored down for doing its job."""
    wanted = set(projects)
    flags = in_force_flags([result.exchange for result in run.exchanges])
    in_force = {
        id(fact): fact_in_force
        for result, exchange_flags in zip(run.exchanges, flags, strict=True)
        for fact, fact_in_force in zip(result.exchange.facts, exchange_flags, strict=True)
    }
    return [
        fact
        for result in run.exchanges
        if result.exchange.project in wanted
        for fact in result.facts
        if in_force[id(fact.fact)]
    ]


def corrected_count(exchanges: Sequence[Exchange]) -> int:
    """How many facts of `exchanges` a later exchange of their project corrects."""
    return sum(not fact_in_force for flags in in_force_flags(exchanges) for fact_in_force in flags)


def briefing_summary(run: Run, projects: Iterable[str]) -> Briefing:
    lasting = [shown for project in projects for _, shown in lasting_in_briefing(run, project)]
    verdicts = [v for project in projects for _, v in line_verdicts(run, project)]
    return Briefing(
        lasting=len(lasting),
        lasting_shown=sum(lasting),
        lines=len(verdicts),
        superseded=sum(1 for v in verdicts if "superseded" in v),
        questions=sum(1 for v in verdicts if "question" in v),
        fragments=sum(1 for v in verdicts if "fragment" in v),
    )


def summarise(run: Run, projects: Iterable[str] | None = None) -> Summary:
    """The figures of `run` over `projects` (all of them when None): each project's space is its own,
    so a half of the projects scores as if only its exchanges had been replayed, except that a
    question asked in another project's space may be asked in one of the other half."""
    wanted = set(projects) if projects is not None else {r.exchange.project for r in run.exchanges}
    exchanges = [result for result in run.exchanges if result.exchange.project in wanted]
    tags = {result.tag for result in exchanges}
    every = [fact for result in exchanges for fact in result.facts]
    facts = facts_in_force(run, wanted)
    in_force = {id(fact) for fact in facts}
    corrected = [fact for fact in every if id(fact) not in in_force]
    noise = [result for result in exchanges if result.exchange.noise]
    ids = {result.exchange.id for result in exchanges}
    corrections = [verdict for exchange_id, _, verdict in correction_outcomes(run) if exchange_id in ids]
    wrong_ids = {memory_id for result in exchanges for memory_id in result.wrong}
    elsewhere = [fact.unrelated for fact in every if fact.unrelated is not None]
    unanswered = [rows for project in wanted for _, rows in run.unanswered.get(project, [])]

    def outcome(name: str) -> int:
        return sum(int(result.outcome.get(name, 0) or 0) for result in exchanges)

    return Summary(
        facts=len(facts),
        found=sum(1 for fact in facts if fact.rank is not None),
        as_memory=sum(1 for fact in facts if fact.kind == "memory"),
        shown=sum(1 for fact in facts if fact.shown),
        mrr=sum(1 / fact.rank for fact in facts if fact.rank) / len(facts) if facts else 0.0,
        all_facts=len(every),
        all_found=sum(1 for fact in every if fact.rank is not None),
        corrected_shown=sum(1 for fact in corrected if fact.shown),
        asked_elsewhere=len(elsewhere),
        unrelated_rows=sum(elsewhere),
        unanswered=len(unanswered),
        unanswered_shown=sum(1 for rows in unanswered if rows),
        briefing=briefing_summary(run, sorted(wanted)),
        wrong=len(wrong_ids),
        noise_kept=sum(len(result.noise_kept) for result in noise),
        noise_exchanges_keeping=sum(1 for result in noise if result.noise_kept),
        noise_exchanges=len(noise),
        corrections=len(corrections),
        superseded=corrections.count("superseded"),
        still_current=corrections.count("still current"),
        never_stored=corrections.count("never stored"),
        jobs=len(exchanges),
        jobs_failed=sum(1 for result in exchanges if result.job_status != "done"),
        added=outcome("added"),
        updated=outcome("updated"),
        unchanged=outcome("unchanged"),
        conflicted=outcome("conflicted"),
        facts_at_end=sum(
            1 for tag in tags for row in run.spaces.get(tag, {}).values() if row.kind == "memory"
        ),
    )


def _share(part: int, whole: int) -> str:
    """Three decimals: 88 of 93 is 0.946, which two would print as the 0.95 it falls short of."""
    return f"{part / whole:.3f} ({part}/{whole})" if whole else "–"


def _per_prompt(s: Summary) -> str:
    per_prompt = s.unrelated_per_prompt
    if per_prompt is None:
        return "–"
    return f"{per_prompt:.2f} ({_rows(s.unrelated_rows)} / {s.asked_elsewhere} prompts)"


def _rows(count: int) -> str:
    return f"{count} row" if count == 1 else f"{count} rows"


def _briefing_cell(b: Briefing) -> str:
    return f"{b.superseded} / {b.questions} / {b.fragments} of {b.lines} lines"


def table(columns: Sequence[Column]) -> str:
    """The metrics, one column per librarian, capture file and part of its projects, as Markdown."""
    summaries = [summarise(column.run, column.projects) for column in columns]
    rows: list[tuple[str, list[str]]] = [
        (
            "facts found again, top 5 (recall@5; facts in force)",
            [_share(s.found, s.facts) for s in summaries],
        ),
        ("found as a distilled fact (kind memory)", [_share(s.as_memory, s.facts) for s in summaries]),
        ("MRR (top 5)", [f"{s.mrr:.3f}" for s in summaries]),
        (
            "shown by the prompt hook (a row of its block holds every key; facts in force)",
            [_share(s.shown, s.facts) for s in summaries],
        ),
        (
            "every fact, corrected ones too: found again, top 5",
            [_share(s.all_found, s.all_facts) for s in summaries],
        ),
        (
            "corrected facts whose old value the prompt hook still shows",
            [f"{s.corrected_shown} of {s.all_facts - s.facts}" for s in summaries],
        ),
        (
            "unrelated rows per prompt (the question asked in another project's space)",
            [_per_prompt(s) for s in summaries],
        ),
        (
            "questions with nothing stored: rows shown in",
            [f"{s.unanswered_shown} of {s.unanswered}" if s.unanswered else "–" for s in summaries],
        ),
        (
            "lasting facts in the session-start block",
            [_share(s.briefing.lasting_shown, s.briefing.lasting) for s in summaries],
        ),
        (
            "session-start block: superseded values / questions / fragments",
            [_briefing_cell(s.briefing) for s in summaries],
        ),
        ("wrong facts", [str(s.wrong) for s in summaries]),
        (
            "noise facts kept",
            [f"{s.noise_kept} (from {s.noise_exchanges_keeping} of {s.noise_exchanges})" for s in summaries],
        ),
        (
            "corrections superseded",
            [
                f"{s.superseded} of {s.corrections} (old fact still current {s.still_current}, "
                f"never stored {s.never_stored})"
                for s in summaries
            ],
        ),
        ("jobs failed", [f"{s.jobs_failed} of {s.jobs}" for s in summaries]),
        (
            "jobs: added / updated / unchanged / conflicted",
            [f"{s.added} / {s.updated} / {s.unchanged} / {s.conflicted}" for s in summaries],
        ),
        ("distilled facts current at the end", [str(s.facts_at_end) for s in summaries]),
    ]
    if any(column.run.librarian != "deterministic" for column in columns):
        rows.append(
            (
                "LLM answers that fell back to the deterministic one",
                [
                    "-" if column.run.librarian == "deterministic" else str(column.run.fallbacks)
                    for column in columns
                ],
            )
        )
    rows += [
        (
            f"bar: recall@5 >= {RECALL_BAR:.2f}, no wrong fact, no failed job",
            [_met(s.meets_bar) for s in summaries],
        ),
        (
            f"bar: shown >= {SHOWN_BAR:.2f} with <= {UNRELATED_ROWS_BAR:.2f} unrelated rows per prompt",
            [s.bar_reaches_agent() for s in summaries],
        ),
        (f"bar: lasting facts at session start >= {LASTING_BAR:.2f}", [s.bar_lasting() for s in summaries]),
        (
            f"bar: nothing shown for >= {UNANSWERED_QUIET_BAR:.2f} of the questions with nothing stored",
            [s.bar_unanswered() for s in summaries],
        ),
    ]
    lines = ["| | " + " | ".join(c.label for c in columns) + " |", "|---|" + "---:|" * len(columns)]
    lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows]
    return "\n".join(lines)


def _quote(text: str, limit: int | None = None) -> str:
    flat = " ".join(text.split())
    if limit is not None and len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return json.dumps(flat, ensure_ascii=False)


def details(run: Run) -> str:
    """Per exchange: the job, what it stored, each fact's rank, the wrong facts and the noise kept;
    then every space's current facts, each with the exchange that wrote it."""
    lines = [f"### {run.librarian}: per exchange"]
    verdicts = {(e, v): verdict for e, v, verdict in correction_outcomes(run)}
    in_force = {id(fact) for fact in facts_in_force(run, {r.exchange.project for r in run.exchanges})}
    for result in run.exchanges:
        exchange = result.exchange
        counts = ", ".join(
            f"{name} {result.outcome.get(name, 0)}"
            for name in ("added", "updated", "unchanged", "conflicted")
        )
        job = f"job {result.job_status}" + (f" ({result.error})" if result.error else "")
        noise = " [noise]" if exchange.noise else ""
        lines.append(f"{exchange.id} {exchange.project}{noise}: {job}; {counts}")
        for row in result.added:
            if row.kind != "memory":
                lines.append(f"  + kept the exchange as a {row.kind} {_quote(row.content, SHOWN_CHARS)}")
                continue
            flag = " (conflict)" if row.conflicted else ""
            lines.append(f"  + stored{flag} {_quote(row.content)}")
        for old, new in result.updated:
            lines.append(f"  ~ updated {_quote(old.content)} -> {_quote(new.content)}")
        for row in result.removed:
            lines.append(f"  - gone {_quote(row.content)}")
        for fact in result.facts:
            keys = ", ".join(fact.fact.key) + ("" if id(fact) in in_force else "; corrected later")
            if fact.rank is None:
                lines.append(
                    f"  MISSED [{keys}] {_quote(fact.fact.query)}; first result: {_quote(fact.top, SHOWN_CHARS)}"
                )
            else:
                above = f"; first result: {_quote(fact.top, SHOWN_CHARS)}" if fact.rank > 1 else ""
                hook = "" if fact.shown else " (not shown by the prompt hook)"
                lines.append(
                    f"  found at {fact.rank} ({fact.kind}){hook} [{keys}] {_quote(fact.fact.query)}{above}"
                )
            if fact.unrelated:
                lines.append(
                    f"  {_rows(fact.unrelated)} unrelated for {_quote(fact.fact.query)} in another space"
                )
        for content in result.wrong.values():
            lines.append(f"  WRONG {_quote(content)}")
        for content in result.noise_kept.values():
            lines.append(f"  NOISE KEPT {_quote(content)}")
        for value in result.old_current_before:
            lines.append(f"  correction of {value!r}: {verdicts[(exchange.id, value)]}")
    lines += briefing_details(run)
    lines.append("")
    lines.append(f"### {run.librarian}: facts per space at the end")
    for tag, rows in run.spaces.items():
        facts = [row for row in rows.values() if row.kind == "memory"]
        lines.append(f"{tag}: {len(facts)} current, and {len(rows) - len(facts)} stored exchanges")
        for row in facts:
            version = f" v{row.version}" if row.version > 1 else ""
            lines.append(f"  [{run.origin.get(row.id, '?')}{version}] {_quote(row.content)}")
    return "\n".join(lines)


def briefing_details(run: Run) -> list[str]:
    """Per project: the questions with nothing stored that got rows, the session-start block's lines
    with what is wrong with each, and the lasting facts it misses."""
    lines = ["", f"### {run.librarian}: per project, what reaches the agent"]
    for project, briefing in run.briefings.items():
        lines.append(f"{project}: session-start block of {len(briefing)} lines")
        for question, rows in run.unanswered.get(project, []):
            if rows:
                lines.append(f"  {_rows(len(rows))} shown for {_quote(question)}, whose answer is not stored")
        for line, verdicts in line_verdicts(run, project):
            flag = f" ({', '.join(verdicts)})" if verdicts else ""
            lines.append(f"  | {_quote(line, SHOWN_CHARS)}{flag}")
        for fact, shown in lasting_in_briefing(run, project):
            if not shown:
                lines.append(f"  LASTING NOT AT SESSION START [{', '.join(fact.key)}] {_quote(fact.query)}")
    return lines

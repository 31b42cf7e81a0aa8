"""Extraction's two voices: the assistant's reply and the user's turn. Pure.

The reply is written impersonally, one fact per reported action, test runs left out; of the user's
turn only what the user decides or states is kept.
"""

from __future__ import annotations

import re

from bli_memory.door.librarian.prose import (
    _CONTEXT_DEPENDENT,
    _FUNCTION_WORDS,
    _GREETING_OR_FILLER,
    _IMPERATIVES,
    _INLINE_CODE_SPAN,
    _OUTPUT_LINE,
    _PROTECT,
    _REFERRING,
    _REQUEST,
    _STANDING_ORDER,
    _TOKEN,
    _WH_QUESTION,
    MAX_FACT_CHARS,
    MIN_WORDS_STRONG,
    POINTER_OPENERS,
    _bare,
    _capitalise,
    _clean,
    _finish,
    _is_question,
    _join,
    _leans_on_context,
    _sentences,
    held_now,
)
from bli_memory.door.librarian.signals import (
    _signals,
)
from bli_memory.door.librarian.words import SETTING_VERBS, tokens

# =====================================================================================================
# the assistant's voice: first person out, test runs out
# =====================================================================================================

_FIRST_PERSON_LEAD = re.compile(
    r"^I(?:'ve| have)?\s+(?:(?:also|then|now|just|already|first|finally|additionally)\s+)*(?=[a-z])"
)
_PARTICIPLES = {
    "set": "set",
    "made": "made",
    "wrote": "written",
    "ran": "run",
    "put": "put",
    "kept": "kept",
    "left": "left",
    "cut": "cut",
    "built": "built",
    "rebuilt": "rebuilt",
    "took": "taken",
    "gave": "given",
    "chose": "chosen",
    "split": "split",
}
_ACTION_ON_CODE = re.compile(
    r"^(?P<verb>[A-Za-z]+)\s+(?P<object>`[^`]+`)(?P<rest>\s+(?:in|to|into|on|at|for|from|with|as|under|"
    r"via|before|after|across|behind|inside|so|because|which|that|a|an)\b.*|\s*(?:[.,;:(].*)?)$"
)  # the object ends at its code span: "Updated `x` schedule to …" has a longer object and stays as is
_ACTION_START = re.compile(r"^(?:[A-Z][a-z]+ed|" + "|".join(w.title() for w in _PARTICIPLES) + r")\s")
#: where one action of a reported list ends and the next begins ("Set X in A, set Y in B, and bumped C").
_NEXT_ACTION = re.compile(
    r"(?:,\s+(?:and\s+)?|;\s+(?:and\s+)?(?:I\s+(?:also\s+)?)?|(?<!\s)\s+and\s+I\s+(?:also\s+)?)"
    r"(?=(?:[a-z]+ed|" + "|".join(_PARTICIPLES) + r")\s)"
)
_ACTION_SPLIT = re.compile(f"({_NEXT_ACTION.pattern})")
#: a pronoun in an action split off a list leans on an earlier action of the list: the two stay one.
_REFERS_BACK = re.compile(r"\b(?:it|its|them|their|they|this|that|these|those)\b", re.IGNORECASE)
_SENTENCE_I = re.compile(r";\s+(?=I\s+(?:also\s+)?[a-z]+\s)")
#: a second action joined to the first ("… and updated its 23 import sites"), found outside code
#: spans: its subject is the one who acted, so the first action cannot turn passive on its own.
_COORDINATED_ACTION = re.compile(
    r"`[^`\n]+`|(?P<joint>,?(?<!\s)\s+and\s+)(?=(?:[a-z]+ed|" + "|".join(_PARTICIPLES) + r")\s)"
)


def _second_action(rest: str) -> int | None:
    """Where "and <past verb>" joins a second action in `rest` (outside code spans), or None."""
    for match in _COORDINATED_ACTION.finditer(rest):
        if match.group("joint"):
            return match.start()
    return None


def _actions(sentence: str) -> list[str]:
    """A reported list of actions, one clause each; any sentence is also cut before "; I <verb>"."""
    spans: list[str] = []

    def hide(match: re.Match[str]) -> str:
        spans.append(match.group(0))
        return f"{_PROTECT}{len(spans) - 1}{_PROTECT}"

    masked = _INLINE_CODE_SPAN.sub(hide, sentence)
    parts = _SENTENCE_I.split(masked)
    clauses: list[str] = []
    for part in parts:
        part = _FIRST_PERSON_LEAD.sub("", part.strip())
        pieces = _ACTION_SPLIT.split(part) if _ACTION_START.match(_capitalise(part)) else [part]
        merged = [pieces[0]]
        for joint, piece in zip(pieces[1::2], pieces[2::2], strict=True):
            if _REFERS_BACK.search(piece):  # "…, created `v7` and pointed the alias to it": one action
                merged[-1] = f"{merged[-1]}{joint}{piece}"
            else:
                merged.append(piece)
        clauses.extend(p.strip() for p in merged if p.strip())
    restore = re.compile(f"{_PROTECT}(\\d+){_PROTECT}")
    return [_capitalise(restore.sub(lambda m: spans[int(m.group(1))], c)) for c in clauses]


def _impersonal(sentence: str) -> str:
    """ "I pinned `x==1` in A" -> "`x==1` is pinned in A"; "I changed the fixture" -> "Changed the fixture"."""
    lead = _FIRST_PERSON_LEAD.match(sentence)
    if lead:
        sentence = _capitalise(sentence[lead.end() :])
    match = _ACTION_ON_CODE.match(sentence)
    if match:
        verb = match.group("verb").lower()
        participle = verb if verb.endswith("ed") else _PARTICIPLES.get(verb)
        rest = match.group("rest")
        joint = _second_action(rest)
        if participle and joint is None:
            return f"{match.group('object')} is {participle}{rest}"
        if participle and joint is not None:
            # both turn passive only when the second also acts on a code span alone
            tail = rest[joint:]
            second = _impersonal(_capitalise(tail[tail.index("and") + len("and") :].strip()))
            if second.startswith("`"):
                return f"{match.group('object')} is {participle}{rest[:joint]}; {second}"
    return sentence


_PASS_WORDS = re.compile(
    r"\b(?:passes|passed|passing|green|clean|succeeds?|succeeded|fails|failed|ok)\b|"
    r"\bpass(?=\s*(?:[.,;:!]|$|\(\d|on\b|locally\b|again\b|now\b|too\b|cleanly\b))",
    re.IGNORECASE,
)
_RUN_WORDS = frozenset(
    "pass passes passed passing green clean succeed succeeds succeeded fail fails failed ok test tests "
    "suite run runs checks check jobs job locally stable full whole now again too out everything".split()
)
#: more words than this besides the run's own (passes, tests, locally …) and the sentence is not a run report.
RUN_REPORT_MAX_OTHER_WORDS = 3


#: a pass word after an article describes a thing, it is no run's verdict: "a clean exit", "a failed job".
_ATTRIBUTE = re.compile(r"\b(?:a|an)\s+(?:clean|green|passing|failed|failing)\b", re.IGNORECASE)
#: running something again only repeats evidence: "Re-ran the workflow for tag v0.9.2: all green".
_RERAN = re.compile(r"^\W*(?:I\s+)?(?:re-?ran|retried)\b", re.IGNORECASE)


#: a run's tally quoted as its output: a count, at most one word for what was counted, and a verdict
#: ("`0 chart(s) failed`", "`12 files linted`", "`2 errors`").
_QUOTED_TALLY = re.compile(
    r"\b\d+\s+(?:[\w()-]+\s+)?(?:passed|failed|linted|checked|errors?|warnings?|skipped|succeeded)\b",
    re.IGNORECASE,
)


def _is_run_report(sentence: str) -> bool:
    """ "`pytest -q`: 6 passed", "`cargo test` passes on 1.75.0", "30 passed in 4.87s": a test run's
    outcome, true the moment it was said and never worth remembering; so is a tool's tally quoted
    as its output ("`make lint` now prints `0 files failed`")."""
    prose = _ATTRIBUTE.sub(" ", _INLINE_CODE_SPAN.sub(" ", sentence))
    if _OUTPUT_LINE.search(prose) or _RERAN.match(prose):
        return True
    quoted_tally = any(_QUOTED_TALLY.search(span) for span in _INLINE_CODE_SPAN.findall(sentence))
    if not (_PASS_WORDS.search(prose) or quoted_tally):
        return False
    other = [
        w
        for w in tokens(prose)
        if w not in _FUNCTION_WORDS and w not in _RUN_WORDS and w not in _REFERRING and not w[:1].isdigit()
    ]
    return len(other) <= RUN_REPORT_MAX_OTHER_WORDS


# =====================================================================================================
# the user's turn: only what the user decides
# =====================================================================================================

_USER_DECISION = re.compile(
    r"\b(?:decided|decide|decision|agreed|agree|from now on|going forward|in future|from here on|prefer|"
    r"preference|anymore|any more|no longer|correction|actually|change of plan|convention|policy|"
    r"scratch that|i was wrong|my mistake|turns out|^\W*update(?=\s*:)|standing rule|stick(?:ing)? (?:to|with)|"
    r"(?:i|we)(?:'d| would) rather|from (?:this|next) (?:week|month|sprint|release)|as of (?:today|this week)|"
    r"starting (?:today|this week|next week)|"
    # a setting changed to a value: "drop the dedupe window to 2 hours", "raise the limit to 50"
    rf"(?:{SETTING_VERBS})\s+(?:the\s+)?(?:[\w-]+\s+){{0,4}}?to\s+~?\d|"
    r"we(?:'re| are) (?:replacing|moving|switching|migrating|dropping|standardi[sz]ing|adopting|using)|"
    r"(?:i'm|i am|we're|we are) (?:done with|dropping|ditching|getting rid of)|"
    r"we (?:moved|switched|migrated|replaced|cut|dropped|standardi[sz]ed|adopted|use|always|never)|"
    # a change someone else made for the team: "dan's moved us to mailgun", "ops switched us over to X"
    r"(?:moved|switched|migrated|moving|switching|migrating) us (?:all )?(?:over )?(?:to|onto|off)|"
    r"(?:has|have) to be|must (?:always|never|be)|should (?:always|never))\b|"
    r"^(?:always|never|only)\b|\bnot [\w.`-]+(?: [\w.`-]+)?,? but\b|,\s+not\s+v?\d[\w.]*\b",
    re.IGNORECASE,
)
#: a correction keeps a word that says so, so reconciliation lets it replace the value it corrects.
_CORRECTION_LEAD = re.compile(
    r"^\W*(?:actually|correction|to correct|scratch that|I was wrong(?: earlier| before)?|my mistake|"
    r"(?:it )?turns out(?: that)?|update(?=\s*:))\b[\s,:;–—-]*",
    re.IGNORECASE,
)
#: a condition with no main clause after it: "Always when app comes back from background." (a rule
#: says what to do when: "Always when you touch the schema, run `make migrate`").
_ONLY_A_CONDITION = re.compile(
    r"^(?:always|never|only)\s+(?:when|if|after|before|while|once)\b[^,;:]*$", re.IGNORECASE
)
#: a sentence that only announces a change: "Change of plan.", "Correction:".
_ONLY_A_LEAD = re.compile(r"^\W*(?:change of plan|correction|update)\W*$", re.IGNORECASE)
_CORRECTION = re.compile(
    r"^\W*(?:actually|correction|to correct|change of plan|scratch that|I was wrong|my mistake|"
    r"(?:it )?turns out|update(?=\s*:))\b",
    re.IGNORECASE,
)
#: the verbs of a standing instruction ("Use expect …", "Name the files …"); others are one-off tasks.
_CONVENTION_VERBS = frozenset(
    "use name keep prefer avoid put write wrap call prefix suffix stick always never only don't do "
    "pin place store commit tag format sort no not set run switch".split()
)
#: a request that carries a choice ("… with APScheduler instead?") is part of the decision.
#: ("content-only", "read-only": a word of a compound is no choice)
_CHOICE = re.compile(
    r"(?<![\w-])(?:instead|rather than|switch(?:ing)? to|replac(?:e|ing) \S+ with|mov(?:e|ing) \S+(?: \S+){0,6} (?:to|into)|"
    r"from now on|always|never|only)(?![\w-])",
    re.IGNORECASE,
)


#: a user's sentence reporting a problem is the reason for the exchange, true at that moment only.
_PROBLEM = re.compile(
    r"\b(?:fail(?:s|ed|ing)?|broke|breaks|broken|hangs?|hanging|crash(?:es|ed|ing)?|keeps|kept|again|wrong|"
    r"stall(?:s|ed|ing)?|freez(?:es|ing)|froze|times? out|timing out|flaky|leak(?:s|ing)?|"
    r"stopped|started|jumped|spiked|stale|slow|complain(?:s|ing)?|error|errors|bug|doesn't|does not|"
    r"isn't|aren't|won't|can't|cannot|yesterday|today|this morning|last night)\b",
    re.IGNORECASE,
)
#: a kind of problem as the subject of how it is handled ("errors go through `Result`", "failures are
#: reported to Sentry"): a convention about problems, not a report of one.
_HANDLED = re.compile(
    r"\b(?:errors?|failures?|exceptions?|crash(?:es)?|bugs?)\s+(?:go|goes|are|is|get|gets|must be|should be)\s+"
    r"(?:through|via|into|returned|reported|handled|logged|wrapped|sent|raised)\b",
    re.IGNORECASE,
)


#: a request to fix what the sentence describes: 'the tooltip says "Exposre", fix pls'.
_FIX_REQUEST = re.compile(
    r"\b(?:fix|correct|repair)\s+(?:it|this|that|them|pls|please|plz|asap)\b|\b(?:please|pls|plz)\s+fix\b",
    re.IGNORECASE,
)


#: where a sentence's main clause ends and an aside on it begins: "spark is now 3.5.3 — the bug we
#: hit is fixed there".
_ASIDE_MARK = re.compile(r"\s[—–]\s|;\s")


#: a problem given as the reason for a standing choice: "pydantic 2.8 broke our validators, so pin
#: pydantic to 2.7.4" (the order after "so" holds until changed; "…, so fix it" is a one-off task).
_SO_CHOICE = re.compile(
    r",\s+so\s+(?:(?:please|pls|plz|let's|we)\s+)?(?:pin|use|keep|stay|stick|hold|switch|avoid|prefer|lock)\b",
    re.IGNORECASE,
)


def _reports_problem(prose: str) -> bool:
    """Whether the user's sentence reports a problem in its main clause (``_PROBLEM``, or what it asks
    to have fixed), a convention about how problems are handled (``_HANDLED``) left aside; the reason
    after a dash ("spark is now 3.5.3 — the skew-join bug is fixed there") reports none, nor a problem
    given as the reason for a standing choice after it (``_SO_CHOICE``)."""
    if _SO_CHOICE.search(prose):
        return False
    main = _ASIDE_MARK.split(prose, 1)[0]
    if _NEW_STATE.search(main):  # "… migrated last night, new broker is X": when it changed, not a fault
        main = _EVENT_TIME.sub(" ", main)
    return bool(_PROBLEM.search(_HANDLED.sub(" ", main)) or _FIX_REQUEST.search(prose))


#: a sentence that gives something its new value: "new broker is rediss://…", "staging is now …",
#: "the catalog has us on Spring Boot 3.3.2 as of yesterday's merge".
_NEW_STATE = re.compile(
    r"\bnew\s+[\w-]+(?:\s+[\w-]+)?\s+(?:is|are|lives)\b|\b(?:is|are|lives)\s+now\b|\bnow\s+(?:is|are|lives)\b|"
    r"\b(?:has|have|puts?) us on\b|\bas of\b",
    re.IGNORECASE,
)
#: when a change happened, which says nothing of a problem when the sentence states the new value.
_EVENT_TIME = re.compile(r"\b(?:yesterday|today|this morning|last night)\b", re.IGNORECASE)


#: a lead-in, a colon and the first of a list: "Two housekeeping updates, please: first, …".
_ENUMERATION = re.compile(r":\s+(?=(?:first(?:ly)?|1[.)]|one)\b)", re.IGNORECASE)
#: a lead-in that frames a list of what follows its colon: "A few things we agreed, please respect
#: them: …", "Some rules for this repo: …" (three words or more, a plural of what a list holds, no
#: value of its own; "Decisions: …" is a label, which stays).
_LIST_LEAD = re.compile(
    r"^(?=(?:[^\s:]+\s+){2})[^:`\d]{0,120}?\b(?:things|rules|points|decisions|conventions|notes|updates|changes|constraints|"
    r"requirements|agreements|ground rules|basics)\b[^:`\d]{0,80}:\s+(?=\S)",
    re.IGNORECASE,
)
#: a one-off request hanging on a statement: "Marcus owns the webhooks now, please update CODEOWNERS";
#: not a standing order said with a please ("…, please no pip install", "…, pls apply everywhere from
#: now on: no secrets in config"), which is the statement's rule.
_TRAILING_REQUEST = re.compile(
    r",\s+(?:please|pls|plz)\s+(?!(?:no|not|don'?t|do not|never|always|only|keep|use|avoid|stick)\b)"
    r"(?![^,;:?]*\b(?:from now on|going forward|everywhere|always|never)\b)[^,;:?]*$",
    re.IGNORECASE,
)


def _stated_part(sentence: str) -> str:
    """What a user's sentence states: a list opened after a lead-in starts at its first item (the
    lead-in, "Two updates, please:", frames it), and a request hanging on a statement is cut ("…
    owns the webhooks now, please update CODEOWNERS"); a sentence that is a request stays whole."""
    found = _ENUMERATION.search(sentence) or _LIST_LEAD.match(sentence)
    item = sentence[found.end() :] if found else sentence
    return item if _REQUEST.match(item) else _TRAILING_REQUEST.sub(".", item)


#: a lead-in naming what it lists as standing: "Some ground rules: …", "Two conventions we keep: …".
_STANDING_LEAD = re.compile(r"\b(?:rules|conventions|decisions|agreements|policies)\b", re.IGNORECASE)


def _lead(sentence: str) -> str:
    """The lead-in ``_stated_part`` leaves out ("A few things we have agreed:"): a decision it names
    is the list's."""
    found = _ENUMERATION.search(sentence) or _LIST_LEAD.match(sentence)
    return sentence[: found.end()] if found else ""


#: "for now" in a user's decision hedges it; elsewhere it binds a sentence to the moment.
_FOR_NOW = re.compile(r"\bfor now\b", re.IGNORECASE)


#: an interjection opening a user's sentence that goes on to say something ("ok level loader is ported,
#: so we go to 4.3 now"): the rest is the statement; alone ("ok", "ok thanks") it is filler.
_INTERJECTION = re.compile(
    r"^(?:ok(?:ay)?|alright|all right|great|cool|nice|perfect|right|good)\b[,!.]?(?:\s+so\b,?)?\s+(?=\S+(?:\s+\S+){3})",
    re.IGNORECASE,
)


#: where a reason ends and what follows from it begins: "That fix costs gas, so the budget …".
_SO_CLAUSE = re.compile(r",\s+(?:and\s+)?so\s+(?!that\b|far\b|much\b|many\b)", re.IGNORECASE)


def _consequence(sentence: str) -> str | None:
    """The clause after a reason's ", so", capitalised, when it reads on its own and carries a durable
    signal; None otherwise."""
    found = _SO_CLAUSE.search(sentence)
    if found is None:
        return None
    clause = _capitalise(sentence[found.end() :].strip())
    if _leans_on_context(clause) or not _signals(clause)[0] or len(_TOKEN.findall(clause)) < MIN_WORDS_STRONG:
        return None
    return clause


#: a sentence opening on "he" or "she" says something of a person named before it
_PERSON_PRONOUN = re.compile(r"(?:he|she)(?:'(?:ll|s|d))?\b", re.IGNORECASE)
#: a sentence opening on a pointer ("They want …", "It's …") leans on the sentence before it; one
#: with its pointer further in ("the soil we sample every 10 min, this must …") points inside itself
_OPENS_ON_POINTER = re.compile(rf"(?:{POINTER_OPENERS})\b", re.IGNORECASE)


#: a line that only names a setting and its value: "topic: `orders.v2`", "consumer group `pricing`",
#: "region eu-west-1" (a label of at most four words, then one value written as code or as a name)
_LABEL_LINE = re.compile(
    r"[A-Za-z][\w./-]*(?: [\w./-]+){0,3}?(?::[ \t]*|[ \t]+)(?:`[^`\n]+`|[\w./:@-]*[\d_./:@-][\w./:@-]*)[.;,]?"
)
#: a longer line says more than a setting, and is never read against the pattern above.
_LABEL_LINE_MAX_CHARS = 80


def _merged_label_lines(units: list[str]) -> list[str]:
    """Consecutive lines that each name a setting and its value, as one line: a list of "topic: `x`",
    "consumer group `y`" under a request says one thing, and each item alone is a fragment."""
    merged: list[str] = []
    run: list[str] = []
    for unit in [*units, ""]:
        if unit and len(unit) <= _LABEL_LINE_MAX_CHARS and _LABEL_LINE.fullmatch(unit.strip()):
            run.append(unit.strip().rstrip(".;,"))
            continue
        if len(run) > 1:
            merged.append("; ".join(run) + ".")
        else:
            merged.extend(run)
        run = []
        if unit:
            merged.append(unit)
    return merged


def _user_facts(units: list[str]) -> list[str]:
    """What the user states: a decision, a convention, a preference, a correction, how things are.

    Questions, one-off tasks ("Fix the Button component") and problem reports ("the build fails
    again") are the reason for the exchange, not facts. A request carrying a choice ("Can you move
    the job to X instead?") is a decision without its question form; it and a bare instruction
    ("Name the files with the ticket first") join the decision before them, which says what they mean.
    A correction keeps a word saying so.
    """
    units = _merged_label_lines(units)
    parts: list[str] = []
    after_decision = False
    kept_last = False  # the sentence just before was kept, as parts[-1]
    stated_last: str | None = None  # the sentence just before, when it states (kept or not)
    for unit in units:
        for said in _sentences(unit):
            kept_before, kept_last = kept_last, False
            stated_before, stated_last = stated_last, None
            raw = _stated_part(said)
            lead = _CORRECTION_LEAD.match(raw)
            prose = _INLINE_CODE_SPAN.sub(" ", raw)
            decided = bool(
                _USER_DECISION.search(prose)
                or _USER_DECISION.search(_lead(said))
                or _STANDING_LEAD.search(_lead(said))
                or (_STANDING_ORDER.search(prose) and not _reports_problem(prose))
            )
            sentence = _INTERJECTION.sub("", _clean(raw[lead.end() :] if lead else raw))
            if not sentence or _GREETING_OR_FILLER.match(sentence) or _ONLY_A_LEAD.match(sentence):
                continue  # "Change of plan." says a correction follows, and nothing of it
            if _ONLY_A_CONDITION.match(sentence):
                continue  # "Always when app comes back from background.": when the crash before happens
            request = _REQUEST.match(sentence)
            if request:
                sentence = _capitalise(sentence[request.end() :])
            question = _is_question(sentence) or sentence.endswith(":")
            sentence = sentence.rstrip("?:").strip()
            if not (request or question):
                stated_last = sentence
            first = _bare(sentence.split(" ", 1)[0]) if sentence else ""
            if decided and not question:
                follows = False  # a decision of its own
            elif (
                _CHOICE.search(sentence) and not _WH_QUESTION.match(sentence)  # "When would I use X instead?"
                if (request or question)
                else first in _CONVENTION_VERBS and (after_decision or _signals(sentence)[1])
            ):
                # "… with APScheduler instead?"; "Name the files …" after its decision, or alone when it
                # names a value ("Set `POOL=20` in `.env`"): "Run the tests" alone is a one-off task
                follows = after_decision
            elif (
                not (request or question or first in _IMPERATIVES)
                and not _reports_problem(prose)
                and _signals(sentence)[0]
            ):
                follows = False  # how things are: "We run Node 20 in CI"
            else:
                after_decision = False
                continue
            # "we stay on Quarkus 3.8.4 for now": a decision in force until changed, not a moment's
            bound = _CONTEXT_DEPENDENT.search(_FOR_NOW.sub(" ", sentence) if decided else sentence)
            held = held_now(sentence) if bound else None
            if held:  # "it's X now, the old one is off as of this morning": when it changed
                sentence, bound = held, None
            leans = not follows and _leans_on_context(sentence)
            consequence = _consequence(sentence) if leans and not bound else None
            if consequence:
                # "That fix costs gas, so the withdrawal budget moves from 52000 to 55000": the
                # consequence reads on its own when only the reason leans on what came before
                sentence, leans = consequence, False
            person = not follows and _PERSON_PRONOUN.match(sentence) is not None
            if (
                ((leans and _OPENS_ON_POINTER.match(sentence)) or person)
                and not bound
                and (kept_before or (person and stated_before))
                and not _CORRECTION.match(raw)
                and (decided or _signals(sentence)[0])
            ):
                # "… host is sftp.x on port 2222. They want one CSV per day, named kp_20250301.csv":
                # the fact just kept names what "they" are; "… sent us Priya Raman as our new helper.
                # She'll take over the imports": the sentence before, kept or not, names who "she" is
                named = parts[-1] if kept_before else _finish(stated_before or "")
                joined = _join(named, _finish(sentence))
                if len(joined) <= MAX_FACT_CHARS:
                    if kept_before:
                        parts[-1] = joined
                    else:
                        parts.append(joined)
                    kept_last = True
                    continue
            if bound or leans:
                after_decision = False
                continue
            sentence = _finish(sentence)
            if _CORRECTION.match(raw):
                sentence = f"Correction: {sentence[:1].lower()}{sentence[1:]}"
            joined = f"{parts[-1]} {sentence}" if follows and parts else ""
            if joined and len(joined) <= MAX_FACT_CHARS:
                parts[-1] = joined  # "Use expect with a reason" says what it means after its decision
                kept_last = True
            elif len(_TOKEN.findall(sentence)) >= MIN_WORDS_STRONG and len(sentence) <= MAX_FACT_CHARS:
                parts.append(sentence)
                kept_last = True
            after_decision = decided or follows
    return parts

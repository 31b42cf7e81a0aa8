"""Deterministic fact extraction: the durable, self-contained sentences of a saved exchange, no model.

Pure (no I/O). It reads the text the hook saves (usually ``User: …\n\nAssistant: …``) turn by turn.
From the user's turn it keeps what the user states: decisions, conventions, preferences and
corrections (a request carrying the choice, "Can you move it to X instead?", counts, without its
question mark; a correction — "actually", "scratch that", "I was wrong", "turns out", "update:" —
keeps the word "Correction"), and how things are; never a question, a
one-off task or a problem report. From the reply it keeps the sentences with a durable signal (a
command, a path, a version, an identifier, a decision, a fix, an owner), written impersonally ("I
pinned `x==1`" becomes "`x==1` is pinned"), one fact per reported action; code spans stay byte for
byte. A sentence whose pronoun comes before anything it could mean ("Set it to 300") is never
rewritten with a guessed subject: it joins the sentence before it in the same paragraph, whose words
name the thing, or it is dropped. Only a demonstrative that says what it points at is replaced, and
only when the choice is certain: "that folder" or "this file" becomes the one folder or file the
sentence before it names in a code span. A trailing clause that points at other text (", so names like the
one above are rejected") is cut, and the main clause kept. Test-run reports, moment-bound reports (line numbers, "no other
hits"), thanks, re-run requests and general-knowledge answers leave nothing. The reply's direct
answer to a user's wh-question (a bare "Why?" asks about the statement before it, and so does a
problem report followed by "can you figure out why") carries that question when it shows that it answers it (a shared word
that names something, a pronoun, the instruction a how-to question asks for); so does a reply whose
first words name a cause ("Cause: …") answer the user's report of what they saw. A question needs no
question mark ("whats the difference between …"); a reply opening with a short block of commands
answers with them; a tool's tally quoted as output is a run report. Rule-based on purpose:
the same exchange always yields the same facts, so saving it twice adds nothing new.

This module reads the exchange turn by turn and decides; its rules live beside it: `prose` (text to
sentences, the pronoun rules), `signals` (what makes a sentence worth keeping, with examples) and
`voice` (the reply written impersonally, the user's turn). The rules `lasting` shares are
re-exported here by name (`_NOISE_LINE`, `_USER_DECISION`, `_CONVENTION_VERBS` …).
"""

from __future__ import annotations

import re

from bli_memory.door.librarian.prose import (
    _CONTEXT_DEPENDENT,
    _FUNCTION_WORDS,
    _GREETING_OR_FILLER,
    _IMPERATIVES,
    _INLINE_CODE_SPAN,
    _REFERRING,
    _REQUEST,
    _STANDING_ORDER,
    _TOKEN,
    _VERBS,
    _WH_QUESTION,
    MAX_FACT_CHARS,
    MAX_FACTS_PER_TEXT,
    MIN_WORDS,
    MIN_WORDS_STRONG,
    _bare,
    _capitalise,
    _clean,
    _finish,
    _is_question,
    _join,
    _leans_on_context,
    _only_commands,
    _opens_with_block,
    _prose_units,
    _resolve_demonstrative,
    _sentences,
    held_now,
)
from bli_memory.door.librarian.prose import (
    _NOISE_LINE as _NOISE_LINE,
)
from bli_memory.door.librarian.signals import (
    SIGNALS,
    _signals,
)
from bli_memory.door.librarian.voice import (
    _CONVENTION_VERBS as _CONVENTION_VERBS,
)
from bli_memory.door.librarian.voice import (
    _CORRECTION,
    _PROBLEM,
    _actions,
    _impersonal,
    _is_run_report,
    _user_facts,
)
from bli_memory.door.librarian.voice import (
    _USER_DECISION as _USER_DECISION,
)
from bli_memory.door.librarian.words import fact_key
from bli_memory.door.librarian.words import stem as stem_of

# =====================================================================================================
# the whole exchange
# =====================================================================================================

#: a speaker's label at the start of a line. Its leading space stays on its line (`[^\S\n]`, not `\s`):
#: from every line start `\s*` ran over all the blank lines after it (20 000 of them took 17 s).
_TURN = re.compile(
    r"^[^\S\n]*(?:\*\*)?(user|human|h|assistant|claude|ai|a)(?:\*\*)?[^\S\n]*:\s*",
    re.IGNORECASE | re.MULTILINE,
)
_USER_ROLES = frozenset({"user", "human", "h"})
#: words that tie a question to the asker's own project.
_OWN_WORDS = re.compile(
    r"\b(?:our|ours|my|mine|here|this (?:repo|project|codebase|service|app))\b", re.IGNORECASE
)
#: the words that mark a question as off the project's topic: "unrelated q", "random one", "side question".
_OFF_TOPIC_WORDS = r"unrelated|random|off[- ]topic|side|general"
_OFF_TOPIC = rf"(?:{_OFF_TOPIC_WORDS})\s+(?:q|qs|question|one)\b"
#: the asker saying the question is not about the project ("not about our code", "unrelated to this
#: repo"): the "our" in it ties nothing to the project.
_NOT_OURS = re.compile(
    r"\b(?:not|nothing)\s+(?:about|related to|specific to|to do with)\s+(?:our|my|this)\s+[\w-]+(?:\s+really)?|"
    r"\b(?:not|nothing)\s+(?:about|related to|specific to|to do with)\s+the\s+"
    r"(?:code|codebase|repo|repository|project|app|service|stack)\b|"
    r"\bunrelated to\s+(?:our|my|this)\s+(?:code|codebase|repo|repository|project|app|service|stack)\b|"
    rf"\b{_OFF_TOPIC}|\bq\s+unrelated\b",
    re.IGNORECASE,
)
#: the asker's first sentence saying the question is not about the project at all ("A small question which
#: has nothing to do with the project", "not code.", "random q not bot related", "totally off topic but
#: …"): what they say of "my" manuscript or "our" works council beside it is the question's context.
_DECLARED_NOT_OURS = re.compile(
    r"\b(?:nothing\s+to\s+do\s+with|not\s+(?:about|related to|specific to))\s+(?:our|my|this|the)\s+"
    r"(?:code|codebase|repo|repository|project|app|service|stack|bot|work)\b|"
    # "random one, not work.", "dumb q that came up at dinner", "side thing, …", "random git q while …"
    rf"^\W*(?:{_OFF_TOPIC_WORDS}|dumb|silly|stupid)\b[^.?!:]{{0,40}}?"
    r"\b(?:q|qs|question|one|thing)\b|"
    # "quick c question while …": a question of a kind named before it, not "quick question: how do we …"
    r"^\W*quick\s+(?!(?:q|qs|question|one|thing)\b)[\w+#.-]+\s+(?:q|question)\b|"
    r"\bnot\s+about\s+(?:code|coding|work|programming)\b|"
    r"\bnot\s+(?:\w+[- ])?related\b(?!\s+to\b)|"  # "the timeout is not related to the pool" is a finding
    r"^\W*not\s+(?:code|coding|work|programming)\b|"
    r"\bunrelated\b(?!\s+to\b)|\bunrelated\s+to\s+(?:anything|everything|work)\b|\boff[- ]topic\b|"
    # "Forgive a slightly off-piste question, nothing to do with the garden": a question the asker
    # says has nothing to do with what the project is about, whatever they call that
    r"\b(?:q|qs|question|one|thing)\b[^.?!]{0,20}?\bnothing\s+to\s+do\s+with\s+(?:the|our|my|this|work)\b",
    re.IGNORECASE,
)
#: a sentence that opens by saying the question is off the project's topic: "Random one while cargo
#: chews through a clean build (…)": what follows it says why it is asked, nothing of the project.
_OFF_TOPIC_LEAD = re.compile(
    rf"^\W*(?:quick\s+)?{_OFF_TOPIC}",
    re.IGNORECASE,
)
#: a question asked without its mark, in the clause that ends a sentence: "vapply vs sapply, why does
#: every style guide push vapply".
_UNMARKED_QUESTION = re.compile(
    r"(?:^|,\s)(?:why|how|what|when|which|where)\s+(?:does|do|is|are|should|would|can)\s"
    r"(?!(?:you|u|we|i)\b)[^,?]*$",  # "what did you change", "how do we deploy": about the session
    re.IGNORECASE,
)
#: words of a reply that did something or looked at the project ("I'd use X" is advice, not an action).
_ACTOR_WORDS = re.compile(
    r"\bI(?:'ve| have)?\s+(?:also\s+|just\s+|then\s+)?(?:[a-z]+ed|ran|made|set|wrote|found|put|took|saw|got|"
    r"built|left|kept|cut|read|looked|see|can see|checked)\b|\bI'm\s+(?:seeing|looking)\b|"
    r"(?i:\b(?:our|ours|your (?:repo|project|code|codebase|branch|config))\b)"
)
#: a user's turn about the surface of the text (a typo, the wording, the whitespace or indentation)
#: asks for a one-off fix; its reply holds nothing durable.
_TYPO = re.compile(
    r"\b(?:typos?|misspel\w*|spelling|wrong word|wording|grammar|indentation|whitespace|trailing spaces?)\b",
    re.IGNORECASE,
)
_THANKS = re.compile(
    r"\b(?:thanks|thank you|thx|ty|tysm|appreciated?|cheers|great job|nice work|well done|perfect|awesome|"
    r"lgtm)\b",
    re.I,
)
#: "run the tests once more": the reply is a run report.
_RERUN = re.compile(
    r"^(?:(?:please|can you|could you|now)\s+)*(?:run|rerun|re-run|retry|try)\b.*\b(?:again|once more|one more time)\b|"
    r"^(?:(?:please|can you|could you|now)\s+)*(?:rerun|re-run|retry)\b",
    re.IGNORECASE,
)
#: the longest request that is only a re-run.
RERUN_MAX_WORDS = 10
#: the longest reply to a typo's fix: a word or a line changed is told in a few lines; a reply this
#: long built something ("Tomasz will send the exact wording later" asked for a feature, not a fix).
TYPO_REPLY_MAX_CHARS = 1000
#: (a path is entered at the start of its token only: from each `\b` inside `a/b/c/…` the rest of the
#: token was read again)
_PATH_TOKEN = re.compile(
    r"(?:^|\s)(?:~/|\./|\.\./|/[a-z])\S*|(?<![\w./-])/*[\w.-]+/[\w./-]*\.\w{1,5}\b|(?<![\w-])[\w-]+/(?:\s|$)|"
    r"\b(?:Dockerfile|Makefile|package\.json|pyproject\.toml|Cargo\.toml|go\.mod)\b"
)
_GENERAL_QUESTION = re.compile(
    r"^(?:quick question\W+)?(?:what(?:'s|s| is| are)|how (?:does|do|is|are|can)|why (?:does|do|is|are)|"
    r"when (?:should|do|does)|which is|is it|explain|difference)\b",
    re.IGNORECASE,
)


#: a request that asks to be told something is a question: "Can you explain how X works?".
_ASKING_REQUEST = re.compile(
    r"^(?:(?:please|pls|can you|could you|would you|can u|could u|"
    r"(?:reckon|think|wonder if|any chance|do you think)\s+(?:you|u)\s+(?:could|can|would))\s+)*"
    r"(?:(?:quickly|kindly|briefly|just)\s+)?(?:explain|describe|clarify|tell me|remind me|eli5|"
    r"walk me through|help me understand)\b",
    re.IGNORECASE,
)


#: words a user's question needs to frame the answer to it.
QUESTION_MIN_WORDS = 4


#: a request to find the cause of the problem just reported: "can you figure out why", "find it".
_INVESTIGATE = re.compile(
    r"^(?:(?:can|could|would) you\s+|please\s+)*(?:figure out|find out|find|investigate|debug|check|"
    r"look into|dig into)(?:\s+(?:it|why|this|what happened))?\s*[?.!]?$",
    re.IGNORECASE,
)


def _asked(units: list[str]) -> str | None:
    """The user's one wh-question ("How do I run the tests against X?"), to frame the answer's first fact."""
    said = [_clean(s) for unit in units for s in _sentences(unit)]
    asked = [(i, s) for i, s in enumerate(said) if _is_question(s) and _WH_QUESTION.match(s)]
    if not asked:  # "X keeps failing on CI. Can you figure out why" asks why X fails
        asked = [
            (i, "Why?")
            for i, s in enumerate(said)
            if i > 0
            and _INVESTIGATE.match(s)
            and _PROBLEM.search(said[i - 1])
            and not said[i - 1].endswith("?")
        ]
    if len(asked) != 1:
        return None
    index, question = asked[0]
    if len(question.split()) < QUESTION_MIN_WORDS and index > 0 and not said[index - 1].endswith("?"):
        question = f"{said[index - 1]} {question}"  # "X hangs when piped into `head`. Why?" asks about X
    if len(question.split()) < QUESTION_MIN_WORDS or _CONTEXT_DEPENDENT.search(question):
        return None
    if _leans_on_context(question):
        return None  # "Where is it defined?" does not say what it asks about
    question = question if question.endswith("?") else f"{question.rstrip(' .')}?"
    return _capitalise(question)


#: the longest report of what the user saw that a cause can answer, in sentences.
REPORT_MAX_SENTENCES = 2
#: a reply whose first words name a cause: "Cause: …", "Root cause: …", "Found the cause: …", "The
#: cause is …", "It's the autoscaler.", "This is caused by …".
_CAUSE_OPENING = re.compile(
    r"^\W*(?:(?:found\s+)?(?:the\s+)?(?:root\s+)?cause(?:\s+(?:is|was))?\s*[:,—–-]?|"
    r"(?:it's|it is)\s+the\s+\S+|(?:it's|it is|this is|that's) caused by|"
    r"caused by|the (?:culprit|problem|issue|bug) (?:is|was))\b",
    re.IGNORECASE,
)


def _reported(units: list[str]) -> str | None:
    """What the user reports seeing, as the question a cause answers ("X is off by a cent. Why?"): a
    user's turn of at most :data:`REPORT_MAX_SENTENCES` statements, none a question or a request, that
    names what it is about."""
    said = [_clean(s) for unit in units for s in _sentences(unit)]
    said = [s for s in said if s]
    if not said or len(said) > REPORT_MAX_SENTENCES:
        return None
    if any(_is_question(s) or _REQUEST.match(s) or s.endswith(":") or _leans_on_context(s) for s in said):
        return None
    report = " ".join(s if s[-1:] in ".!" else f"{s}." for s in said)
    if len(report.split()) < QUESTION_MIN_WORDS:
        return None
    return f"{_capitalise(report)} Why?"


def _opens_with_cause(units: list[str]) -> bool:
    """Whether a reply's first sentence names a cause."""
    first = _sentences(units[0])[:1] if units else []
    return bool(first) and _CAUSE_OPENING.match(first[0]) is not None


#: words of a question or an answer that do not tie the two together: they say how, not what.
_GENERIC_WORDS = (
    _FUNCTION_WORDS
    | _VERBS
    | _IMPERATIVES
    | _REFERRING
    | frozenset(
        "are was were has have had will would should must may might its it's the and for are "
        "keep fail get make work way thing right wrong still yet ever today now".split()
    )
)
#: "How do I X?", "How can we X?", "How to X?": answered by an instruction ("Run `make x`.").
_HOW_TO = re.compile(r"^how (?:do|can|should|would) (?:i|we|you)\b|^how to\b", re.IGNORECASE)
#: the least length of a word that can tie an answer to its question (shorter ones are too common).
ANSWER_WORD_MIN_CHARS = 3


_WORD_PART = re.compile(r"[^\W_]+")


def _content_stems(text: str) -> set[str]:
    """The stems of the words of `text` that can name something (identifiers split at `_ . / -`),
    by `words.stem`, so that "configs" meets "config" and "failing" "fail"."""
    return {
        stem
        for word in _WORD_PART.findall(text.lower())
        if len(word) >= ANSWER_WORD_MIN_CHARS
        and not word.isdigit()
        and (stem := stem_of(word)) not in _GENERIC_WORDS
        and word not in _GENERIC_WORDS
    }


def _introduced(units: list[str]) -> str:
    """What a reply's opening lead-in ("We use the `directories` crate, so:") introduces: its next
    paragraph or list item; empty when the reply does not open with a lead-in."""
    return units[1] if len(units) > 1 and units[0].rstrip().endswith(":") else ""


def _answers(question: str, answer: str, introduced: str = "") -> bool:
    """Whether `answer` (a reply's first statement) shows that it answers `question`: it, or what it
    introduces when it is a lead-in ending in a colon, shares a word that names something with the
    question (`flaky_retry_hook`, "client", "config"); or it opens with a pronoun that stands for what
    was asked ("It copies rows …"); or it is the instruction a how-to question asks for ("Run …").
    A reply that opens with something else ("We run PostgreSQL 16 in production.") is left unframed:
    joining the two would store a claim that it answers the question."""
    first = _bare(answer.split(maxsplit=1)[0]) if answer.split() else ""
    if first in _REFERRING:
        return True
    if _HOW_TO.match(question) and first in _IMPERATIVES:
        return True
    return bool(_content_stems(question) & _content_stems(f"{answer} {introduced}"))


def _turns(text: str) -> list[tuple[str, str]]:
    """(role, text) per turn: "user", "assistant", or "note" for text with no speaker labels."""
    marks = list(_TURN.finditer(text))
    if not marks:
        return [("note", text)]
    turns = [("note", text[: marks[0].start()])] if text[: marks[0].start()].strip() else []
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
        role = "user" if mark.group(1).lower() in _USER_ROLES else "assistant"
        turns.append((role, text[mark.end() : end]))
    return turns


#: a file named after "a"/"an"/"any" is a kind of file, not one of this project's.
_KIND_OF_FILE = re.compile(
    r"\b(?:a|an|any|every)\s+(?:\S+\s+)?(?:[\w.-]+/)*[\w-]*(?:\.\w+|\w)file\b|"
    r"\b(?:a|an|any|every)\s+`?(?:package\.json|pyproject\.toml|Cargo\.toml|go\.mod)`?",
    re.IGNORECASE,
)
#: a path given as an example ("(e.g. `envs/prod/main.tf`)") illustrates; it names nothing of the project.
#: (an example holds no `(`: from each opening of a run of `(e.g.` the rest of the text was read)
_EXAMPLE = re.compile(r"\((?:e\.g\.|eg\.|for example|for instance|say)[^()]*\)", re.IGNORECASE)


#: a task the project defines for itself, as code (`make proto`, `pnpm gen:api`, `just seed`): an answer
#: naming one speaks of this project, whatever the question's words.
_OWN_TASK = re.compile(
    r"`(?:make|just|npm run|pnpm run|yarn run|poetry run|cargo xtask)\s+[\w:.-]+|"
    r"`(?:npm|pnpm|yarn|bun)\s+[\w-]+:[\w:-]+"
)
#: a team's channel or handle, outside code (`set -g @scroll-speed 3` is an option's name).
_TEAM_HANDLE = re.compile(r"(?:^|\s)[#@][a-z][a-z0-9]*-[\w-]+|(?:^|\s)@[\w-]+/[\w-]+")


#: a change the reply reports having made, opening its clause ("Bumped it to 50", "Bumping it to 50
#: fixed the throughput"); "someone else changed the row" or "X was added in 3.8" describes the world.
_CHANGE_MADE = re.compile(
    r"(?:^|[.;:]\s+|\band\s+)(?:[A-Za-z]+ing\b[^.;]{0,80}?\s)?(?:fixed|changed|bumped|raised|lowered|"
    r"switched|removed|updated|renamed|pinned|restarted|redeployed|reverted)\b",
    re.IGNORECASE,
)


#: words of an aside beside a question: why the user asks ("reviewing a PR and want to be sure").
ASIDE_MAX_WORDS = 10
#: a wh-question whose verb comes after a word of emphasis: "what even is that", "how exactly does it".
_WH_EMPHASIS = re.compile(
    r"^(?:what|how|why|when|where)\s+(?:even|exactly|actually|really)\s+(?:is|are|does|do|was|happens)\b",
    re.IGNORECASE,
)
#: the asker saying the question is asked out of curiosity or in general: "this is pure curiosity",
#: "in general how does MVCC work", "just curious": whatever else they say of their stack is context.
_CURIOSITY = re.compile(
    r"\b(?:pure|just|only)\s+(?:curiosity|curious)\b|\bjust\s+wondering\b|\bout of curiosity\b|"
    r"\bsettl(?:e|ing)\s+a\s+bet\b|\bbut\s+in\s+general\b|\bnot\s+just\s+for\b",
    re.IGNORECASE,
)
#: a question holding the assistant or the team asks about the session or the project.
_YOU_OR_WE = re.compile(r"\b(?:you|u|we|us|our)\b", re.IGNORECASE)
#: the team as the subject of an aside makes it a statement about the project ("we deploy on Fridays").
_WE = re.compile(r"\b(?:we|we're|we've|us|the team)\b", re.IGNORECASE)
#: a question about how the team stands ("what version are we on", "do we pin it"), not for advice
#: ("should we use X or Y?" is answered from general knowledge).
_ASKS_OUR_STATE = re.compile(
    r"\b(?:are|were|do|did|have|has)\s+we\b|\bwe(?:'re|\s+are)\s+(?:on|using|running)\b", re.IGNORECASE
)


#: the asker's own habit with the things asked about: "I always mix them up", "I never remember which".
_PERSONAL_ASIDE = re.compile(
    r"^I\s+(?:always|never|keep|often|usually|sometimes|still)\s+(?:[a-z]+\s+){0,3}?"
    r"(?:them|it|these|those|which|both|the two)\b|"
    r"^(?:I\s+)?(?:always|keep|often)\s+(?:mix(?:ing)?|confus(?:e|ing)|forget(?:ting)?)\b|"  # "always mix up"
    # why it is asked: "I want to be certain before the review", "the new grad asked me and I waffled"
    r"^I\s+(?:want|wanted|need|needed|'d like|would like)\s+to\s+(?:be\s+(?:sure|certain|clear)|understand|"
    r"double[- ]check)\b|"
    r"^(?:[\w']+\s+){0,3}?asked\s+me\b",
    re.IGNORECASE,
)
#: a personal aside may be longer than another: it says who asked and how the asker fared.
PERSONAL_ASIDE_MAX_WORDS = 16


def _is_aside(sentence: str) -> bool:
    """A short sentence beside a question that says why it is asked, nothing about the project: no
    durable signal (the asker's habit with the things asked about is none: "I always mix them up"),
    no request, not the team as its subject."""
    personal = _PERSONAL_ASIDE.match(sentence) is not None
    return (
        len(sentence.split()) <= (PERSONAL_ASIDE_MAX_WORDS if personal else ASIDE_MAX_WORDS)
        and (_signals(sentence)[0] == 0 or personal)
        and not _REQUEST.match(sentence)
        and not _WE.search(sentence)
    )


#: a word that may be a verb a topic line has none of: "-ed", or an "-s" form ("stalls", "lags").
_VERB_FORM = re.compile(r"^[a-z]{2,}(?:ed|(?<![su])s)$")


def _is_topic(sentence: str) -> bool:
    """A short line without a verb beside a question that names what the question is about ("quick C
    question, volatile vs atomic_t in zephyr"): it states nothing, so it does not make the question
    one about the project; the team ("we") or a path in it does."""
    words = [_bare(w).lower() for w in _INLINE_CODE_SPAN.sub(" code ", sentence).split()]
    return (
        0 < len(words) <= ASIDE_MAX_WORDS
        and not any(w in _VERBS or w in _IMPERATIVES or _VERB_FORM.match(w) for w in words)
        and not _WE.search(sentence)
        and not _PATH_TOKEN.search(sentence)
    )


def _answers_from_general_knowledge(user: str, reply: str) -> bool:
    """A question about the world ("What's the difference between X and Y?") answered without a word
    about this repository: the question names no file and says nothing of "our"/"my"/"this repo"
    nor of how "we" stand (an aside beside it may say why it is asked, a line without a verb what it is
    about; "not about our code" says so), and the reply reports no action ("I …"), names no
    path and says nothing of "our"/"your repo". When the asker's first sentence says the question is
    not about the project (``_DECLARED_NOT_OURS``: "not code.", "random one, not work.", "dumb q that
    came up at dinner", "quick c question while …"), the rest of their message is its context: "my
    supervisor" or "our works council" ties it to nothing, though a path in it still does; it may ask
    without a question ("give me the version I can say out loud"), and the reply's paths are its
    examples (`~/Pictures/trip`, `./phone3/`), though a reported change still ties the exchange."""
    units = " ".join(_prose_units(user))
    said = [s for s in (_clean(s) for s in _sentences(units)) if s]
    # the asker's first sentence may say the question is not about the project: "not code."
    declared = bool(said) and (
        _DECLARED_NOT_OURS.search(said[0]) is not None or any(_CURIOSITY.search(s) for s in said)
    )
    off_topic = [s for s in said if _OFF_TOPIC_LEAD.match(s)]  # "Random one while the build runs (…)."
    question = _NOT_OURS.sub(" ", " ".join(s for s in said if s not in off_topic)).strip()
    said = [s for s in (_clean(s) for s in _sentences(question)) if s]
    asked = [
        s
        for s in said
        if s.endswith("?")
        or _GENERAL_QUESTION.match(s)
        or _GENERAL_QUESTION.match(s.rsplit(": ", 1)[-1])  # "Quick one: whats the difference …"
        or _UNMARKED_QUESTION.search(s)
        # "like when do i actually need it" asks as a marked one would; "what did you change" asks of
        # the session, "how do we deploy" of the project
        or (_is_question(s) and not _YOU_OR_WE.search(s))
        or _ASKING_REQUEST.match(s)  # "walk me through how a TLS handshake works": asked, mark or not
        or _WH_EMPHASIS.match(s)  # "what even is that thing"
    ]
    if not declared and (not asked or not all(_is_aside(s) or _is_topic(s) for s in said if s not in asked)):
        return False  # a statement or a task beside the question makes it about the project
    if not declared and _REQUEST.match(question) and not _ASKING_REQUEST.match(question):
        return False  # "Can you add X?" is a task; "Can you explain X?" asks (declared: "give me …" asks)
    asked_words = _KIND_OF_FILE.sub(" ", question.replace("`", " "))  # "a Dockerfile" is any Dockerfile
    # "my intern asked me …": an aside's "my" says who asked, not whose project it is
    beside = " ".join(s for s in said if s in asked or not _PERSONAL_ASIDE.match(s))
    owned_words = _KIND_OF_FILE.sub(" ", beside.replace("`", " "))
    if (
        not declared and (_OWN_WORDS.search(owned_words) or _ASKS_OUR_STATE.search(owned_words))
    ) or _PATH_TOKEN.search(asked_words):
        return False  # "what version are we on" asks about the project
    marked = _EXAMPLE.sub(" ", " ".join(_prose_units(reply)))
    prose = marked.replace("`", " ")
    return not (
        _ACTOR_WORDS.search(prose)
        or (not declared and _PATH_TOKEN.search(prose))  # declared: its paths are the answer's examples
        or _OWN_TASK.search(marked)
        or _TEAM_HANDLE.search(_INLINE_CODE_SPAN.sub(" ", marked))
        or _CHANGE_MADE.search(_INLINE_CODE_SPAN.sub("code", marked))
    )


#: the narration that opens an assistant's filler ("Searching the code …") is, in the user's words, the
#: subject of a statement: "Searching for X returns nothing" reports a problem, it greets no one.
_GERUND_SUBJECT = re.compile(r"^(?:looking|checking|reading|searching|running)\b", re.IGNORECASE)


def _leaves_nothing(turns: list[tuple[str, str]]) -> bool:
    """An exchange with nothing durable: thanks or a greeting, a request to run something again (its
    reply is a run report), or a general-knowledge question answered from general knowledge."""
    users = [body for role, body in turns if role == "user"]
    replies = " ".join(body for role, body in turns if role == "assistant")
    if len(users) != 1 or not replies.strip():
        return False
    raw = [s for unit in _prose_units(users[0]) for s in _sentences(unit)]
    if raw and all(
        (_GREETING_OR_FILLER.match(_clean(s)) and not _GERUND_SUBJECT.match(_clean(s))) or _THANKS.search(s)
        for s in raw
    ):
        return True
    if (
        _TYPO.search(users[0])
        and len(replies) <= TYPO_REPLY_MAX_CHARS
        and not _user_facts(_prose_units(users[0]))
    ):
        return True
    sentences = [c for c in (_clean(s) for s in raw) if c]
    if len(sentences) == 1 and _RERUN.search(sentences[0]) and len(sentences[0].split()) <= RERUN_MAX_WORDS:
        return True
    return _answers_from_general_knowledge(users[0], replies)


def _statement_facts(
    units: list[str], *, assistant: bool, asked: str | None = None
) -> tuple[list[tuple[int, str]], str | None]:
    """(signal count, fact) for each durable sentence of an assistant's reply or a note, and the fact
    made of the text's first statement (its direct answer), if that one was kept. The user's question
    (``asked``) stands before the reply's first paragraph: "It copies rows …" joins it."""
    facts: list[tuple[int, str] | None] = []
    statements = 0
    answer: str | None = None
    said_before: str | None = None  # the sentence just before, kept or not, in any paragraph
    for number, unit in enumerate(units):
        previous: str | None = asked if number == 0 else None  # what a pronoun here may lean on
        previous_index: int | None = None
        previous_first = previous is not None
        for raw in _sentences(unit):
            cleaned = _resolve_demonstrative(_clean(raw), said_before)
            said_before = cleaned or said_before
            clauses = _actions(cleaned) if assistant and cleaned else [cleaned]
            for clause in clauses:
                sentence = _impersonal(clause) if assistant else clause
                candidate = _candidate(sentence) if sentence else None
                if candidate is None or _is_run_report(candidate):
                    previous, previous_index = None, None
                    continue
                statements += 1
                first_statement = statements == 1
                if _leans_on_context(candidate):
                    if previous is None:
                        continue
                    candidate = _join(previous, candidate)
                    first_statement = previous_first
                    if previous_index is not None:
                        facts[previous_index] = None
                fact = _finish(candidate)
                if _CORRECTION.match(raw) and not fact.startswith("Correction"):
                    fact = f"Correction: {fact[:1].lower()}{fact[1:]}"  # reconciliation reads the word
                previous, previous_index, previous_first = fact, None, first_statement
                words = len(_TOKEN.findall(fact))
                count, strong = _signals(fact)
                if count == 0 or words < (MIN_WORDS_STRONG if strong else MIN_WORDS):
                    continue
                if len(fact) > MAX_FACT_CHARS:
                    continue
                previous_index = len(facts)
                facts.append((count, fact))
                if first_statement:
                    answer = fact
    return [item for item in facts if item is not None], answer


#: "If you want X, the staging API is Y" states a fact under a condition; "If you want, I can …" offers.
_CONDITIONAL_STATEMENT = re.compile(
    r"^if you (?:want|need|like)\b[^,]{3,},\s+(?!(?:i|we|let me|just|feel free|you can ask)\b)", re.IGNORECASE
)


#: the word a lead-in ends on before its list, which says nothing once the list is gone.
#: (a run of space is entered at its first character only: from each of them, `\s+` ran to its end)
_DANGLING = re.compile(r",?(?<!\s)\s+(?:(?:and\s+)?then|so|and|as follows|like this|like so)$", re.IGNORECASE)


def _candidate(sentence: str) -> str | None:
    """Filter one cleaned sentence: None for questions, greetings, filler, requests and moment-bound reports."""
    if sentence.endswith("?"):
        return None
    if sentence.endswith(":"):
        if "`" not in sentence or len(_TOKEN.findall(sentence)) < MIN_WORDS:
            return None  # "Changes:", "The integration test:" introduce what follows
        sentence = sentence.rstrip(":").rstrip()  # "`a.go` now uses `kgo` v1.17:" states a fact
        sentence = _DANGLING.sub("", sentence)  # "We use the `directories` crate, so:" ends at "crate"
    if _GREETING_OR_FILLER.match(sentence) and not _CONDITIONAL_STATEMENT.match(sentence):
        return None
    request = _REQUEST.match(sentence)
    if request:
        if not _STANDING_ORDER.search(sentence):
            return None  # a one-off task ("Please fix the login bug") is not a durable fact
        sentence = _capitalise(sentence[request.end() :])
    if _CONTEXT_DEPENDENT.search(sentence):
        return _main_clause(sentence)
    return sentence


#: where a sentence's main clause ends and a clause hanging on it begins: ", so …", ", which …".
#: (entered at the comma only, so a long sentence is read once)
_TRAILING_CLAUSE = re.compile(r",\s+(?:so|which|and so|so that|because|since|while|whereas)\s", re.IGNORECASE)


#: words that point at other text of the exchange ("the one above"): a clause holding one leans on
#: the text, not on the moment ("expect slow pages tonight" binds the whole sentence to the moment).
_POINTS_AT_TEXT = re.compile(
    r"\b(?:above|below|the following|as (?:mentioned|discussed|shown|noted)|shown here|see here)\b",
    re.IGNORECASE,
)


def _main_clause(sentence: str) -> str | None:
    """The sentence up to its trailing clause, when only that clause leans on the context and it
    leans on other text, not on the moment: "`time_zone` must be an IANA identifier, so names like
    the one above are rejected" keeps its rule; None when the main clause leans on the context too,
    or says too little alone."""
    for cut in reversed(list(_TRAILING_CLAUSE.finditer(sentence))):
        head, tail = sentence[: cut.start()].rstrip(), sentence[cut.start() :]
        if _CONTEXT_DEPENDENT.search(head):
            continue
        leaning = [m.group() for m in _CONTEXT_DEPENDENT.finditer(tail)]
        if not leaning or any(not _POINTS_AT_TEXT.fullmatch(word) for word in leaning):
            return None  # "…, so expect slow pages tonight": the moment binds the whole sentence
        if len(_TOKEN.findall(head)) >= MIN_WORDS:
            return f"{head}."
    return held_now(sentence)


def extract_facts(text: str) -> list[str]:
    """Distil atomic, self-contained facts from a saved exchange without any model.

    Deterministic: the same text always yields the same list, in text order, deduplicated, each at
    most :data:`MAX_FACT_CHARS` and at most :data:`MAX_FACTS_PER_TEXT` of them (the sentences with the
    most kinds of signal win; the user's decision always stays).
    """
    turns = _turns(text)
    if _leaves_nothing(turns):
        return []
    scored: list[tuple[int, int, str]] = []
    seen: set[str] = set()
    question: str | None = None
    report: str | None = None
    for role, body in turns:
        units = _prose_units(body)
        if role == "user":
            user_facts = _user_facts(units)
            found = [(len(SIGNALS) + 1, fact) for fact in user_facts]
            question = None if user_facts else _asked(units)
            report = None if user_facts or question else _reported(units)
        else:
            cause = question is None and report is not None and _opens_with_cause(units)
            if cause:
                question = report  # "X is off by a cent." + "Cause: …" answers why X is off
            found, answer = _statement_facts(units, assistant=role == "assistant", asked=question)
            if (
                question
                and found
                and found[0][1] == answer
                and not answer.startswith(question)
                and (cause or _answers(question, answer, _introduced(units)))
            ):
                count, first = found[0]  # the answer says what it answers: "How do I X? Use Y."
                framed = f"{question} {first}"
                if len(framed) <= MAX_FACT_CHARS:
                    found[0] = (count, framed)
            if found and _opens_with_block(body) and _only_commands(found[0][1]):
                found = found[1:]  # the reply's opening commands, which no question asked for
            question, report = None, None
        for count, fact in found:
            key = fact_key(fact)
            if key in seen:
                continue
            seen.add(key)
            scored.append((count, len(scored), fact))
    best = sorted(scored, key=lambda item: (-item[0], item[1]))[:MAX_FACTS_PER_TEXT]
    return [fact for _count, _index, fact in sorted(best, key=lambda item: item[1])]

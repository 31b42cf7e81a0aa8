"""What lasts: which facts belong in a session's profile, and which facts break the librarian's contract.

Pure (no I/O), deterministic, and built from the librarian's own signals (the same word lists and
shapes extraction uses), so the door reads a fact the way the librarian wrote it.

:func:`lasting_score` ranks a fact for the profile, the block every session sees first. What lasts
is what stays true after the session that said it: a decision, a convention, a preference, a
standing order ("never", "from now on", "don't …") and a standing fact of the repository ("CI runs
with `.env.ci`"). What does not is a report of that session's moment. The score is ``None`` for a
fact that never belongs in the profile:

- a question (a restated "… keeps failing on CI?" is the reason for an exchange, not its answer);
- a test run's report or a test count ("With 2.7.4 all 612 tests pass.", "6 passed");
- a log line's shape (a timestamp, a level such as ``Warning``/``ERROR``, a kubelet event's age
  such as ``14m``, a stack frame);
- a fragment: two words ("Only arizona."), or no verb ("`README.md` line 31, the "Environments"
  table."), unless it lists a file's settings ("`prj_release.conf`: `CONFIG_LOG=n`, …") or gives a
  setting its value ("`DEPLOYMENT_TARGET = 14.0` in `project.pbxproj`"), which states how something
  is configured.

Otherwise the score adds up, highest first: a decision/convention/preference word or shape ("Plan is
…", "Moving X to Y") and who owns or approves what (3), a rule ("… never …", "Every model needs …"),
a standing order (one that opens the fact, "Stop adding force unwraps, I see …", counts whatever
reason follows it), an imperative convention or a version pin (2), a statement of how things are with a
durable verb (1). A finding ("Root cause: …", "Fix: …") scores 0. An
edit report ("`docker-compose.yml`: removed the `beat` service.") and a first-person account score
0: kept in the profile only when nothing more lasting fills it, and so does a past event of the
session ("The migration was applied to staging", "Then bumped `serde` …"). "Actually" is a decision word only
where it opens the fact (a correction); inside one it stresses ("had actually been delivered"). "Policy" is a decision
word only when the policy is the team's ("our policy", "the policy is …"): "the bucket policy allows
…" names a configured object, a standing fact.

:func:`same_fact`, :func:`changes` and :func:`newer_version` tell when a newer fact hides an older
one in the briefing (said again, changed, or another version of one pin); :func:`briefing_text` drops
a question the fact restates before its answer.

:func:`breaks_contract` is the post-filter the LLM extractor's facts pass, so a model held to the
same contract as the deterministic extractor cannot store what that extractor never would.
"""

from __future__ import annotations

import functools
import re

from bli_memory.door.librarian.extract import (
    _CONTEXT_DEPENDENT,
    _CONVENTION_VERBS,
    _FUNCTION_WORDS,
    _GREETING_OR_FILLER,
    _IMPERATIVES,
    _INLINE_CODE_SPAN,
    _NOISE_LINE,
    _USER_DECISION,
    _VERBS,
    _is_run_report,
    _leans_on_context,
)
from bli_memory.door.librarian.prose import POINTER_OPENERS
from bli_memory.door.librarian.words import tokens

#: a fact of at most this many words is a fragment, whatever it looks like ("Only arizona.").
FRAGMENT_MAX_WORDS = 2
#: score of a fact that records a decision, a convention or a preference.
DECISION_SCORE = 3
#: score of a standing order ("never …", "don't …") or a convention stated as an instruction.
STANDING_ORDER_SCORE = 2
#: score of a statement of how things are ("`x` is pinned", "CI runs with `.env.ci`").
DURABLE_VERB_SCORE = 1

#: a log line anywhere in the fact: an event age and level ("14m Warning"), a timestamp, a level tag.
_LOG_SHAPE = re.compile(
    r"\b\d+(?:ms|s|m|h|d)\s+(?:Normal|Warning|Error)\b|\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|"
    r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b|\[(?:INFO|DEBUG|WARN|WARNING|ERROR|TRACE|FATAL)\]|"
    r"^(?:INFO|DEBUG|WARN|WARNING|ERROR|TRACE|FATAL|CRITICAL)\b|\b(?:node|pod)/[\w.-]+\s|"
    r"\bat \S+\(\S+:\d+\)"
)
#: a count of tests or checks, whatever verb reports it: "all 612 tests pass", "30 passed".
#: (a count is entered at its first digit only: from each digit of `0,0,0,…` the run was read again)
_TEST_COUNT = re.compile(
    r"\b(?<![\d,])\d[\d,]*\s+(?:unit\s+|integration\s+|e2e\s+)?(?:tests?|specs?|checks?|cases?|examples?|failures?)\b|"
    r"\b(?<![\d,])\d[\d,]*\s+(?:passed|failed|failing|passing)\b",
    re.IGNORECASE,
)
#: the first person of the one who answered ("I pinned", "I'll", "my"): an account, not a fact.
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|me|my|mine|myself)\b")
#: "`file`: added …", "`file` (new) — loads the slots …": what one edit did, a changelog line.
_EDIT_REPORT = re.compile(r"^`[^`]+`(?:\s+\S+)?(?::|\s+(?:—|–|--))\s")
#: a report of what was done or seen in the session: "Ran 1,000 tasks …", "Checked: …".
_MOMENT_REPORT = re.compile(
    r"^\W*(?:ran|re-?ran|checked|verified|confirmed|tested|tried|reproduced|looked)\b", re.IGNORECASE
)
#: a problem as reported in the moment: "`test_x` keeps failing on CI but never locally".
_PROBLEM_REPORT = re.compile(
    r"\b(?:keeps|kept) (?:failing|breaking|crashing|timing out|flaking)\b|\bbut (?:never|not|works|passes) locally\b|"
    r"\b(?:is|are) (?:broken|failing|flaky) (?:again|now|today)\b|\b(?:yesterday|this morning|last night)\b",
    re.IGNORECASE,
)
#: a standing order opens the sentence: "Never …", "Don't edit … by hand" ("was always under" describes).
_STANDING_ORDER_START = re.compile(
    r"^\W*(?:(?:please|pls|plz)\s+)?(?:always|never|don't|do not|make sure|remember to|prefer|only|"
    r"stop [a-z]+ing)\b",
    re.IGNORECASE,
)
#: a file's settings listed after its name: "`prj_release.conf`: `CONFIG_LOG=n`, `CONFIG_ASSERT=n`."
#: how the file is configured, a standing fact, though it holds no verb.
_SETTINGS_LIST = re.compile(r"^`[^`\n]+`:\s*`[A-Za-z_][\w.-]*\s*[=:]\s*[^`\n]+`")
#: a setting given its value in a code span anywhere in a fact without a verb ("`DEPLOYMENT_TARGET = 14.0`
#: in `project.pbxproj`", "`ntp.yml`: `servers:`, then `- ntp1.lan`"): how something is configured. A
#: colon is a setting's only before a space or at the end (`node:20-alpine` is an image's name).
_SETTING_SPAN = re.compile(r"`[A-Za-z_][\w.-]*\s*(?:=\s*[^`\n]+|:(?:\s[^`\n]*)?)`")
#: a value named by a label of a few words and a colon: "CloudKit container: `iCloud.com.x`", "Topic:
#: `rates.v2`; consumer group `pricing`" (a report's label, "Fix:", "Summary:", "Root cause:", opens no setting).
_LABELLED_VALUE = re.compile(
    r"^(?!(?:fix|fixed|summary|root cause|cause|note|result|output|error|changes?|tests?|done|why|how|"
    r"before|after|update|updated|added|removed|new|old|plus|also|then|next|first|finally|what happened|"
    r"stack|trace|traceback|logs?|diff|verified|checked|grepped)\b)[A-Za-z][\w-]*(?: [\w-]+){0,3}:[ \t]+`[^`\n]+`",
    re.IGNORECASE,
)
#: a setting given its value in prose, outside a code span: "CRD grp = cache.kestrel.io, ver v1alpha1".
_PROSE_SETTING = re.compile(r"\b[A-Za-z][\w.-]*\s=\s*[\w`\"'./:-]")
#: versions a fact without a verb names to be a list of pins ("Kotlin 1.9.24, boot 3.2.5.").
PIN_LIST_MIN_VERSIONS = 2
#: a fact bound to the moment it was said: "until then the old pods keep …, expect a restart tonight".
_MOMENT = re.compile(
    r"\b(?:tonight|today|tomorrow|this (?:morning|afternoon|evening|week|sprint)|next deploy|until then|"
    r"for now|right now|at the moment)\b",
    re.IGNORECASE,
)
#: "for now" hedges a rule or a pin ("we stay on 3.8.4 for now"); elsewhere it binds to the moment.
_FOR_NOW = re.compile(r"\bfor now\b", re.IGNORECASE)
#: irregular past forms that open a report of what the session did ("Wrote that down in …").
_PAST_IRREGULAR = frozenset(
    "ran re-ran made wrote put left built rebuilt took found saw got kept cut".split()
)
#: a verb form that is not in the librarian's word lists: "pinned", "removed", "touched".
_PAST_FORM = re.compile(r"^[a-z]{3,}ed$")
#: a value a report of the session leaves in place: "Added a download cap: `--max-feed-bytes`, default
#: 64 MiB" says what the default is from then on, however it opens.
_SETTLED_VALUE = re.compile(
    r"\b(?:defaults?(?:\s+(?:is|of|to))?|capped at|limit(?:ed)? (?:of|to|at)|set to)\s+`?~?\d", re.IGNORECASE
)
#: a list of the files a change touched: what the session did, not how things are.
_FILES_TOUCHED = re.compile(r"^\W*files? (?:touched|changed|edited|modified|updated)\b", re.IGNORECASE)


#: "policy" after a noun names a configured object ("the bucket policy allows …"), not a decision;
#: a decision is the team's policy ("our policy", "the policy is …").
_OBJECT_POLICY = re.compile(
    r"\b(?!(?:our|the|a|an|team|team's|house|company|project|project's|same|new|this|that|its|their|my|"
    r"your|official|written|general)\b)[a-z][\w-]*\s+polic(?:y|ies)\b",
    re.IGNORECASE,
)
#: words that may open a report before its verb: "Then applied …", "Also bumped …".
_REPORT_OPENERS = frozenset("then also and finally first next afterwards so".split())
#: a passive past: "was applied", "were checked", "was quickly reverted".
_PASSIVE_PAST = re.compile(
    r"\b(?:was|were)\s+(?:\w+ly\s+)?(?:[a-z]{3,}ed|made|run|put|set|kept|left|built)\b"
)


#: words that open a noun phrase: a plural after one is a noun ("the tables"), before one a verb.
_DETERMINERS = frozenset(
    "the a an all some many few these those its their every each no any this that".split()
)
#: words a present-tense verb is often followed by ("restarts after", "frees the cache").
_AFTER_VERB = _DETERMINERS | frozenset(
    "to after before with on in at from into when if only once code off up out down back over away".split()
)


def _present_verb(previous: str, word: str, following: str) -> bool:
    """ "child restarts after", "and frees the": an -s form between a non-determiner and an object."""
    plural_like = len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is"))
    return (
        plural_like
        and previous not in _DETERMINERS
        and not previous[:1].isdigit()
        and following in _AFTER_VERB
    )


#: the base forms of the librarian's -s verbs ("comes" -> come, "fails" -> fail, "goes" -> go).
def _base_form(verb: str) -> str:
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    return verb[:-2] if verb.endswith(("shes", "xes", "oes", "sses")) else verb[:-1]


_BASE_VERBS = frozenset(
    base
    for base in (_base_form(verb) for verb in _VERBS if verb.endswith("s") and not verb.endswith("ss"))
    if len(base) >= 3 or base in {"go", "do"}
)


def _plural_subject(previous: str, word: str) -> bool:
    """ "colors come", "literals fail": a base verb after a plural noun."""
    return (
        word in _BASE_VERBS
        and len(previous) > 3
        and previous.endswith("s")
        and not previous.endswith(("ss", "us", "is"))
        and previous not in _DETERMINERS
    )


#: a subject pronoun: the word after it (or after an adverb after it) is its verb ("we read", "they
#: still run").
_SUBJECT_PRONOUNS = frozenset("we they you he she".split())
#: adverbs that stand between a subject and its verb ("devices now read", "we always tag").
_MID_ADVERBS = frozenset("now still also always never usually automatically".split())
#: determiners that open an object: a word right before one, that is no function word, is a verb
#: ("Build the jar", "tags every release"): the determiners above but "that" and "no", which also
#: join clauses, and "many" and "few" (measured without them); with "our" and "your".
_OBJECT_DETERMINERS = (_DETERMINERS - {"that", "no", "many", "few"}) | {"our", "your"}


def _placed_as_verb(before: str, previous: str, word: str, following: str) -> bool:
    """A verb known by its place, not by a word list: after a subject pronoun ("we read"), after an
    adverb that follows a noun ("devices now read"), or right before a determiner ("Build the jar")."""
    if not word.isalpha() or word in _FUNCTION_WORDS or word in _DETERMINERS or word in _MID_ADVERBS:
        return False
    after_subject = before.isalpha() and before not in _FUNCTION_WORDS and before not in _DETERMINERS
    return (
        previous in _SUBJECT_PRONOUNS
        or (previous in _MID_ADVERBS and after_subject and following != "")
        or following in _OBJECT_DETERMINERS
    )


def _has_verb(words: list[str]) -> bool:
    """Whether the words hold a verb: the librarian's verbs and imperatives, a regular past form, a
    present-tense form placed as a verb, a base form after a plural subject, or a word placed as a
    verb (``_placed_as_verb``)."""
    if any(w in _VERBS or w in _IMPERATIVES or _PAST_FORM.match(w) for w in words):
        return True
    padded = ["", "", *words, ""]
    return any(
        _present_verb(padded[i - 1], padded[i], padded[i + 1])
        or _plural_subject(padded[i - 1], padded[i])
        or _placed_as_verb(padded[i - 2], padded[i - 1], padded[i], padded[i + 1])
        for i in range(2, len(padded) - 1)
    )


#: "actually" inside a sentence stresses a fact ("had actually been delivered"); only at the start
#: does it correct one (read from the sentence's second word on: the first is never removed).
_EMPHASIS = re.compile(r"(?<=\S)\s+actually\b", re.IGNORECASE)
#: who owns, approves or maintains what: "owned by Lars Eriksen", "needs approval from Keiko", "belong to".
_OWNERSHIP = re.compile(
    r"\b(?:owned by|owners?|owns|ownership|belongs? to|administered by|maintainers?|maintained by|approv(?:al|es|ed) (?:from|by)|"
    r"sign-?off|signs? off|admins? (?:is|are)|is the (?:primary |main )?(?:owner|contact|lead)|lists \S+ \S+ for|"
    r"is (?:the )?(?:primary|secondary|on-?call)(?: \w+)? (?:for|on)|"
    r"the (?:owner|lead|maintainer|contact|approver)s? (?:is|are)|decides)\b",
    re.IGNORECASE,
)
#: a rule stated anywhere in the sentence: "Every model needs …", "Marts never use …", "must bump".
_RULE = re.compile(
    r"\b(?:must|(?<!was )(?<!were )(?<!had )(?:never|always)|not allowed|is required|are required|needs? (?:approval|sign-?off)|rules?)\b|"
    r"\bevery \w+(?: \w+)? (?:needs|goes|must|gets)\b|\bno [\w.`-]+(?: [\w.`-]+)? (?:anywhere|allowed)\b|"
    r"\bgoes (?:in|into|through)\b",
    re.IGNORECASE,
)
#: a version number, not a measure: "3.3.6", "v2.7.0", "17.0" (not "7.9 uA", "0.02%", "10.00 kg").
VERSION = re.compile(
    r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?![\w%]|\.\d)(?!\s*(?:%|ms|s|m|h|min|kb|mb|gb|tb|ua|ma|mc|kg|g|hz|khz|mhz|"
    r"px|x)\b)",
    re.IGNORECASE,
)
#: a version stated as the one in force: "pins `v2.6.1`", "go to NCS 2.7.0", "raising the minimum to 17.0".
_PIN_WORDS = re.compile(
    r"\b(?:pin|pins|pinned|minimum|requires?|required|go to|going to|raising|raised|upgrad\w*|bump\w*|"
    r"runs? on|release|version)\b",
    re.IGNORECASE,
)
#: a decision by its shape: "Plan is GoodJob: …", "Moving the silver layer from parquet to Delta Lake".
_DECISION_SHAPE = re.compile(
    r"\b(?:the |our )?plan is\b|^\W*(?:moving|switching|migrating|going) (?:\S+ ){0,6}?(?:to|onto)\b",
    re.IGNORECASE,
)
#: what an edit made true from now on: "the target now adds …", "the override is now …".
_NOW_STATE = re.compile(r"\b(?:is|are) now\b|\bnow (?!that\b)[a-z]+s\b")
#: a one-off finding: the cause of a failure, its fix, a measurement.
_FINDING = re.compile(
    r"^\W*(?:root cause|cause|fix|fixed|workaround|bench|result|results|measured|captured|rerun|first run)\b",
    re.IGNORECASE,
)


#: a decision named as a thing, not stated: "the convention", "a decision".
_DECISION_NOUN = re.compile(r"decisions?|conventions?|polic(?:y|ies)|preferences?", re.IGNORECASE)


#: what was decided, stated after a colon: "a convention for errors going forward: the library uses …".
_STATED_AFTER_COLON = re.compile(r":\s+\S+(?:\s+\S+){3}")
#: the one who asks wants something only one way, or never another: "I want deploys only via …".
_WANTED_RULE = re.compile(
    r"\b(?:i|we)\s+(?:want|'d like|would like)\b[^.;]{0,80}?\b(?:only|never|always)\b", re.IGNORECASE
)
#: a first-person preference for a named thing, not a task or a feature asked for: "For build I want
#: Vite with crxjs plugin", "I don't want big dependency" (not "I want you to …", "I want the page to
#: show …", "I want a button that exports …").
_WANTED_THING = re.compile(
    r"\b(?:i|we)\s+(?:really\s+)?(?:(?:want|prefer)\s+(?!a\b|an\b|the\b|some\b|more\b)|(?:don't|do not)\s+want\s+)"
    r"(?!to\b|you\b|u\b|it\b|this\b|that\b|them\b|him\b|her\b)(?![^.;,]{0,60}\bto\s+[a-z])",
    re.IGNORECASE,
)


def _reports_the_decision(prose: str, words: list[str]) -> bool:
    """Whether a fact that names a decision only by its noun reports what the session did with it
    ("Set up the convention and applied it to both RPCs") or that one was made ("I've just come out
    of the meeting and we have made a decision"), instead of saying what was decided."""
    opening = next((w for w in words if w not in _REPORT_OPENERS), words[0])
    return bool(
        _PAST_FORM.match(opening)
        or opening in _PAST_IRREGULAR
        or opening == "set"
        or _FIRST_PERSON.search(prose)
    )


#: where a sentence's main clause ends: a clause hanging on it ("while I am on sabbatical", ", so I …").
#: (a run of space is entered at its first character only: from each of them, `\s+` ran to its end)
_SUBORDINATE = re.compile(
    r"(?<!\s)\s+(?:while|since|because|as long as|until|so that|so)\s|[;:]\s|,\s+(?:and|but)\s+(?:i|we)\b",
    re.IGNORECASE,
)
#: an aside in brackets ("Daniel Cho (my manager) wants …").
_BRACKETED = re.compile(r"\([^()]*\)")


def _main_part(statement: str) -> str:
    """The statement without its asides in brackets and up to its first hanging clause: who speaks in
    "…, so I'd like …" or "(my manager)" does not make the main clause a report of the speaker."""
    bare = _BRACKETED.sub("", statement)
    cut = _SUBORDINATE.search(bare)
    return bare[: cut.start()].rstrip(" ,") if cut else bare


#: distinct facts whose score is remembered; the profile scores the same newest rows on every session start.
LASTING_CACHE_MAX = 8192


#: a statement opening on a pointer tells of what the sentence before it named.
_OPENS_ON_POINTER = re.compile(rf"(?:its|{POINTER_OPENERS})\b", re.IGNORECASE)
#: a lead that says a rule was set or written down: "I'd set a rule for the repo:", "Added a line to
#: `CONTRIBUTING.md`:" ("Fix:", "Options I considered:" introduce no rule).
_WRITES_DOWN = re.compile(
    r"\b(?:rules?|conventions?|polic(?:y|ies)|guidelines?|line to|note (?:in|to)|wrote (?:it )?down|"
    r"noted|documented|CONTRIBUTING|README|docs/|\.md\b)",
    re.IGNORECASE,
)
#: where a report's lead ends and what it introduces begins: a colon outside a code span, then a space.
_LEAD_COLON = re.compile(r"^[^`:]*(?:`[^`\n]*`[^`:]*)*:\s")


@functools.lru_cache(maxsize=LASTING_CACHE_MAX)
def lasting_score(fact: str) -> int | None:
    """How long the fact stays true, for ranking the profile: ``None`` for a fact that never belongs
    there (a question, a test count, a log line, a fragment), else a score, higher lasts longer.

    A report that introduces a rule after a colon ("Added a line to `CONTRIBUTING.md`: money is always
    integer cents") lasts as the rule does: the session's act passes, the rule it wrote down stays."""
    text = fact.strip()
    score = _lasting_score(text)
    lead = _LEAD_COLON.match(text) if score == 0 else None
    rest = text[lead.end() :] if lead and _WRITES_DOWN.search(lead.group()) else ""
    if rest and not _OPENS_ON_POINTER.match(rest):  # "Fixed the test: it never …" tells of the fix
        introduced = _lasting_score(rest)
        if introduced is not None and introduced >= STANDING_ORDER_SCORE:
            return introduced
    return score


def _lasting_score(fact: str) -> int | None:
    text = fact.strip()
    prose = _INLINE_CODE_SPAN.sub(" code ", text)
    words = tokens(prose)
    if text.endswith("?") or (len(words) < FRAGMENT_MAX_WORDS + 1 and not _SETTINGS_LIST.match(text)):
        return None  # "Only arizona.": two words name no subject and say nothing of it
    if (
        _TEST_COUNT.search(prose)
        or _FILES_TOUCHED.match(text)
        or _is_run_report(text)
        or _LOG_SHAPE.search(text)
        or _NOISE_LINE.match(text)
    ):
        return None
    decided = _USER_DECISION.search(_EMPHASIS.sub(" ", _OBJECT_POLICY.sub(" ", prose)))
    if (
        decided
        and _DECISION_NOUN.fullmatch(decided.group())
        and _reports_the_decision(prose, words)
        and not _STATED_AFTER_COLON.search(prose[decided.end() :])
    ):
        return 0  # "Set up the convention and applied it", "we have made a decision I'd like you to …"
    if decided or _DECISION_SHAPE.search(prose) or _WANTED_RULE.search(prose) or _WANTED_THING.search(prose):
        return DECISION_SCORE  # "From now on pnpm only." needs no verb
    statement = prose.rsplit("? ", 1)[-1]  # "How do I X? Use Y." is judged by its answer
    if _FINDING.match(statement):
        return 0
    main = _main_part(statement)
    if _OWNERSHIP.search(statement) and not _FIRST_PERSON.search(main):
        return DECISION_SCORE  # "On ownership, `docs/OWNERS.md`: the renderer belongs to Ingrid."
    rule = bool(_RULE.search(statement))
    if not rule and not _has_verb(words):
        # "Indexes always concurrently." is a rule without a verb; a listing of settings states them
        listed = (
            _SETTINGS_LIST.match(text)
            or _SETTING_SPAN.search(text)
            or _PROSE_SETTING.search(prose)
            or _LABELLED_VALUE.match(text)
        )
        pins = len(VERSION.findall(text)) >= PIN_LIST_MIN_VERSIONS  # "Kotlin 1.9.24, boot 3.2.5."
        return DURABLE_VERB_SCORE if listed or pins else None
    if _STANDING_ORDER_START.match(prose):
        return STANDING_ORDER_SCORE  # "Stop adding force unwraps, I see `!` everywhere": the order, then why
    if _FIRST_PERSON.search(main) or _MOMENT_REPORT.match(statement):
        return 0
    if _PROBLEM_REPORT.search(prose):
        return 0
    opening = next((w for w in words if w not in _REPORT_OPENERS), words[0])
    pinned = rule or (VERSION.search(text) and _PIN_WORDS.search(statement))
    moment = _MOMENT.search(_FOR_NOW.sub(" ", prose) if pinned else prose)  # "stay on 3.8.4 for now"
    reported = _PAST_FORM.match(opening) or opening in _PAST_IRREGULAR
    if moment or (reported and not _SETTLED_VALUE.search(statement)):
        return 0  # "Opened #413 …", "Then turned on the rule …": what the session did, its subject dropped
    if _PASSIVE_PAST.search(prose):
        return 0  # "The migration was applied to staging": an event of the session, not how things are
    if pinned:
        return STANDING_ORDER_SCORE
    if _EDIT_REPORT.match(text):
        return DURABLE_VERB_SCORE if _NOW_STATE.search(statement) else 0  # "`x.cmake`: the target now adds …"
    first = words[0]
    if _STANDING_ORDER_START.match(prose) or (first in _CONVENTION_VERBS and first in _IMPERATIVES):
        return STANDING_ORDER_SCORE
    return DURABLE_VERB_SCORE


#: words too common to tie two facts to one subject.
_COMMON_WORDS = frozenset(
    "the a an and or of to in on at for from with by is are was were be been it its this that these those "
    "as so but not no now new all any each every then than into only also our we you they there here "
    "go goes going use uses used".split()
)
#: a leading question the fact restates before its answer: "Which SDK do we require? The pin lives …".
_LEADING_QUESTION = re.compile(r"^[^?]*\?+\s+(?=[A-Z`(\"'])")
#: two facts share at least this share of the smaller one's content words to be the same fact.
NEAR_DUPLICATE_SHARE = 0.6
#: and at least this many content words, so two short facts are not merged on two words.
NEAR_DUPLICATE_MIN_WORDS = 4
#: a fact that states a change in force: "the owner is now …", "no longer requested", "instead of …"
#: (not an edit's report, "Replaced 31 calls": that tells what one session did).
_CHANGE = re.compile(
    r"\b(?:is|are) now\b|\bnow (?:runs?|uses?|lives?|goes|calls?|points?|reads?)\b|\bno longer\b|\binstead of\b|"
    r"\bnot (?:\S+ ){1,3}anymore\b",
    re.IGNORECASE,
)
#: a change replaces an older fact that shares this many of its content words …
CHANGE_MIN_WORDS = 3
#: … and at least this share of the smaller fact's content words.
CHANGE_SHARE = 0.2
#: the words before a version number that name what it is the version of ("Ruby 3.3.6", "NCS 2.7.0").
VERSION_NAME_WINDOW_WORDS = 5


def briefing_text(fact: str) -> str:
    """The fact as the briefing states it: a question it restates first ("Which SDK do we require?
    The pin lives in …") is dropped, so the line is the answer."""
    text = fact.strip()
    # a "?" inside a code span (`a ?? b`, `ok ? x : y`) ends no question: spans are masked, same length
    masked = _INLINE_CODE_SPAN.sub(lambda span: "`" + "x" * (len(span.group(0)) - 2) + "`", text)
    leading = _LEADING_QUESTION.match(masked)
    answer = text[leading.end() :] if leading else ""
    return answer if answer and not answer.endswith("?") else text


@functools.lru_cache(maxsize=LASTING_CACHE_MAX)
def content_words(fact: str) -> frozenset[str]:
    """The fact's words that carry its subject: not the commonest words, nor one-letter ones."""
    return frozenset(w for w in tokens(fact) if len(w) > 1 and w not in _COMMON_WORDS)


def same_fact(newer: str, older: str) -> bool:
    """Whether `newer` states what `older` does, near word for word (the older is then not shown)."""
    a, b = content_words(newer), content_words(older)
    shared = len(a & b)
    if shared < NEAR_DUPLICATE_MIN_WORDS or shared < NEAR_DUPLICATE_SHARE * min(len(a), len(b)):
        return False  # the cheap test first: a profile asks it of every pair of facts sharing words
    # numbered siblings ("note 3: module m3", "note 4: module m4") are not one fact twice
    return not all(any(c.isdigit() for c in word) for word in a ^ b)


@functools.lru_cache(maxsize=LASTING_CACHE_MAX)
def changes(newer: str, older: str) -> bool:
    """Whether `newer` states a change (``_CHANGE``) of what `older` says: they share CHANGE_MIN_WORDS
    content words and CHANGE_SHARE of the smaller one's ("owned by Dana" then "owner is now Emeka")."""
    if not _CHANGE.search(newer):
        return False
    a, b = content_words(newer), content_words(older)
    shared = len(a & b)
    return shared >= CHANGE_MIN_WORDS and shared >= CHANGE_SHARE * min(len(a), len(b))


@functools.lru_cache(maxsize=LASTING_CACHE_MAX)
def _version_names(fact: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """Each version number of the fact with the content words just before it (what it versions)."""
    names: list[tuple[str, frozenset[str]]] = []
    for match in VERSION.finditer(fact):
        before = tokens(fact[: match.start()])[-VERSION_NAME_WINDOW_WORDS:]
        words = frozenset(w for w in before if len(w) > 1 and w not in _COMMON_WORDS and not w[:1].isdigit())
        names.append((match.group().lower().lstrip("v"), words))
    return tuple(names)


def newer_version(newer: str, older: str) -> bool:
    """Whether `newer` names another version of what `older` pins: a version number of each with a
    word in common just before it ("NCS `v2.6.1`" then "go to NCS 2.7.0"), as many parts each (not
    "pnpm@9.1.4" and "node >=20.12"), and the numbers differ."""
    old, new = _version_names(older), _version_names(newer)
    old_numbers = {_bare(number) for number, _name in old}
    new_numbers = {_bare(number) for number, _name in new}
    return any(
        name_old & name_new
        and number_old.count(".") == number_new.count(".")
        and _bare(number_old) not in new_numbers
        and _bare(number_new) not in old_numbers
        for number_old, name_old in old
        for number_new, name_new in new
    )


def has_version(fact: str) -> bool:
    """Whether the fact holds a version number (``newer_version`` compares only such facts)."""
    return bool(_version_names(fact))


#: the fewest content words two facts share for ``same_fact`` or ``changes`` to hold.
SHARED_MIN_WORDS = min(NEAR_DUPLICATE_MIN_WORDS, CHANGE_MIN_WORDS)


def _bare(number: str) -> str:
    """The version without trailing zero parts: "2.3.0" and "2.3" are one version."""
    while number.endswith(".0"):
        number = number[:-2]
    return number


def breaks_contract(fact: str) -> str | None:
    """Why a fact breaks the extraction contract, or None when it keeps it.

    The contract: an impersonal, self-contained statement; never a question, a greeting or filler,
    a test run's report, a log line, or a sentence whose pronoun leans on words before it.
    """
    text = fact.strip()
    prose = _INLINE_CODE_SPAN.sub(" code ", text)
    if text.endswith("?"):
        return "question"
    if _GREETING_OR_FILLER.match(text):
        return "greeting or filler"
    if _FIRST_PERSON.search(prose):
        return "first person"
    if _TEST_COUNT.search(prose) or _is_run_report(text):
        return "test run"
    if _LOG_SHAPE.search(text) or _NOISE_LINE.match(text):
        return "log line"
    if _CONTEXT_DEPENDENT.search(prose) or _leans_on_context(text):
        return "leans on context"
    return None

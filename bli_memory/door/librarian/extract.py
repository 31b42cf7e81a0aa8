"""The librarian: distil durable facts from a saved exchange and reconcile each against the space.

Two halves, both pure (no store, no HTTP server; the door's job worker calls them):

- **Extraction.** :func:`extract_facts` is deterministic and needs no model. It reads the text the
  hook saves (usually ``User: …\\n\\nAssistant: …``), throws away what is never worth remembering
  (greetings, questions, filler such as "Let me check", tool noise, logs, code dumps, injected
  ``<bli-memory-…>`` blocks), splits the rest into sentences and keeps those that carry a durable
  signal: a decision, a convention, a command, a path, a version, a preference, a fix, an identifier.
  A sentence that leans on "it"/"this"/"they" is rewritten with the subject of the previous sentence
  when one can be found, and dropped otherwise, so every fact reads on its own a month later.
  :class:`LlmExtractor` does the same job through an OpenAI-compatible chat endpoint with a strict
  JSON contract; :func:`extractor_from_env` picks it when configured and falls back to the
  deterministic extractor on any failure.
- **Reconciliation.** :func:`decide` compares one fact with its nearest stored neighbours and says
  what to do: ``unchanged`` (a near-duplicate), ``update`` (the same subject with a new value),
  ``conflict`` (a negation it cannot settle) or ``add``.

Everything here is rule-based on purpose: the same exchange always yields the same facts, so saving
it twice adds nothing new.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

# --- extraction limits -----------------------------------------------------------------------------

#: a fact longer than this is not atomic; it is dropped rather than cut mid-thought.
MAX_FACT_CHARS = 500
#: facts kept per saved text; the strongest signals win, original order is kept.
MAX_FACTS_PER_TEXT = 12
#: a fenced block with more non-empty lines than this is a code dump and is dropped whole; a shorter
#: one that follows a line ending in ":" is folded into that line as inline code (a command).
CODE_BLOCK_MAX_LINES = 3
#: words a sentence needs when its only signal is a code span, a path or a version.
MIN_WORDS_STRONG = 2
#: words a sentence needs otherwise.
MIN_WORDS = 3
#: the longest subject (in words) that may stand in for "it"/"this"/"they".
MAX_SUBJECT_WORDS = 8

# --- reconciliation thresholds -----------------------------------------------------------------------

#: cosine similarity at or above which two facts say the same thing (unless their numbers differ).
NEAR_DUPLICATE_SIMILARITY = 0.92
#: Jaccard overlap of word sets at or above which two facts say the same thing.
NEAR_DUPLICATE_OVERLAP = 0.8
#: a fact whose words are all inside a stored fact at least this much longer... is already known;
#: a stored fact whose words are all inside the new one is updated to the richer wording.
CONTAINMENT_MIN_LENGTH_RATIO = 0.5
#: containment needs this many words on the smaller side, so "run tests" does not swallow everything.
CONTAINMENT_MIN_WORDS = 3
#: the longest changed span (in words, each side) that still counts as "the same subject, new value".
MAX_VALUE_WORDS = 3
#: share of the longer fact's words that must be unchanged around the changed span.
VALUE_CONTEXT_MIN_RATIO = 0.6

# --- LLM extractor -----------------------------------------------------------------------------------

LLM_TIMEOUT_S = 20.0
#: the exchange sent to the model is cut here so a huge paste cannot run up the bill or the context.
LLM_MAX_INPUT_CHARS = 24_000
#: the endpoint's answer is capped so a broken peer cannot exhaust memory.
LLM_RESPONSE_CAP_BYTES = 1024 * 1024
ENV_LLM_URL = "BLI_MEMORY_LLM_URL"
ENV_LLM_MODEL = "BLI_MEMORY_LLM_MODEL"
ENV_LLM_KEY = "BLI_MEMORY_LLM_KEY"

Action = Literal["add", "unchanged", "update", "conflict"]
ExtractorName = Literal["llm", "deterministic"]


class LibrarianError(Exception):
    """The LLM extractor could not produce facts (unreachable, slow, HTTP error, bad answer)."""


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A current memory of the space close to the fact being reconciled."""

    id: str
    content: str
    similarity: float | None


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with one fact; ``target_id`` names the memory to update or flag."""

    action: Action
    target_id: str | None
    reason: str


# =====================================================================================================
# Extraction: text -> lines of prose
# =====================================================================================================

_DROPPED_TAGS = (
    "system-reminder|bli-memory-recall|bli-memory-context|function_calls|function_results|tool_use|"
    "tool_result|command-name|command-message|command-args|local-command-stdout|local-command-stderr|"
    "thinking|antml:[\\w-]+"
)
_TAGGED_BLOCK = re.compile(rf"<({_DROPPED_TAGS})\b[^>]*>.*?</\1>", re.DOTALL | re.IGNORECASE)
#: terminal colour codes and control characters are never part of a fact, and NUL is the sentence
#: splitter's placeholder mark.
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]")
_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+.-]*)")
_SPEAKER = re.compile(r"^\s*(?:\*\*)?(user|human|assistant|claude|ai|h|a)(?:\*\*)?\s*:\s*", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_NOISE_LINE = re.compile(
    r"""^\s*(?:
        [⏺⎿●✻│╭╰└├┌┐┘┤┬┴┼─═▶►✓✔✗✘❯›»]                  # Claude Code / TUI glyphs
      | \$\s | >>>\s? | >\s? | \#!                           # shell prompts, REPLs, quotes
      | Traceback\s\(most\srecent | File\s" | at\s\S+\s\(.*:\d+
      | \w+(?:Error|Exception|Warning):
      | (?:INFO|DEBUG|WARN|WARNING|ERROR|TRACE|FATAL|CRITICAL)\b[:\s\]]
      | \[?\d{4}-\d{2}-\d{2}[\sT]\d{2}: | \[?\d{2}:\d{2}:\d{2}
      | (?:PASSED|FAILED|SKIPPED|XFAIL|ok\s\d|not\sok)\b
      | [=_~*#-]{3,}
      | (?:Tool\s(?:use|result|call)|Called\sthe\s\w+\stool|Result\sof\scalling|\[Tool|\[Request\sinterrupted)
      | (?:Read|Wrote|Edited|Updated|Created|Searched|Found|Listed|Ran)\s\d+\s(?:lines?|files?|matches|results?)
      | (?:npm\s(?:ERR|WARN)|warning:|error:|fatal:|hint:)
      | \[bli\]
      | \|
    )""",
    re.VERBOSE,
)
_CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import |function |const |let |var |return\b|if \(|for \(|"
    r"while \(|#include|public |private |package |fn |impl |use [\w:]+;|SELECT |INSERT |CREATE TABLE|@\w+)"
    r"|[{;(]\s*$|^\s*[})\]]"
)
_SHELL_LANGS = frozenset({"", "bash", "sh", "shell", "console", "zsh", "fish", "powershell", "ps1", "cmd"})
_LEAD_IN_PRONOUN = re.compile(
    r"\b(?:the following(?: (?:command|commands|line|lines|snippet|setting|settings|config))?|"
    r"these(?: commands)?|this(?: command| snippet| line)?|it)\b",
    re.IGNORECASE,
)


def _is_noise_line(line: str) -> bool:
    """A line that is tool output, a log, a stack trace, a table or code rather than prose."""
    if _NOISE_LINE.match(line) or _CODE_LINE.search(line):
        return True
    visible = line.strip()
    if len(visible) >= 8:
        wordish = sum(ch.isalnum() or ch.isspace() or ch == "`" for ch in visible)
        if wordish / len(visible) < 0.6:
            return True
    return False


def _fold_code(lead_in: str, code_lines: list[str]) -> str:
    """Fold a short command block into the line that introduced it ("Run this:" + ``make dev``)."""
    spans = ", then ".join(f"`{c}`" for c in code_lines)
    head, sep, tail = lead_in.rstrip().rpartition(". ")
    last = tail if sep else lead_in.rstrip()
    last = last.rstrip(":").rstrip()
    folded, count = _LEAD_IN_PRONOUN.subn(spans, last, count=1)
    if not count:
        folded = f"{last}: {spans}"
    return f"{head}{sep}{folded}." if sep else f"{folded}."


def _prose_units(text: str) -> list[str]:
    """Split the exchange into prose units (a line or a bullet), dropping code, noise and markup."""
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _TAGGED_BLOCK.sub("\n", text)
    units: list[str] = []
    fence: list[str] | None = None
    fence_lang = ""
    lead_in_index: int | None = None  # the unit right before a fence, if it ended with ":"
    last_was_unit = False
    for raw in text.split("\n"):
        if fence is not None:
            closing = _FENCE.match(raw)
            if closing and not closing.group(2):
                body = [ln.strip() for ln in fence if ln.strip()]
                if lead_in_index is not None and 0 < len(body) <= CODE_BLOCK_MAX_LINES:
                    if fence_lang in _SHELL_LANGS:
                        body = [re.sub(r"^(?:\$|>)\s+", "", ln) for ln in body]
                    if all("`" not in ln and len(ln) <= 200 for ln in body):
                        units[lead_in_index] = _fold_code(units[lead_in_index], body)
                fence, lead_in_index, last_was_unit = None, None, False
            else:
                fence.append(raw)
            continue
        opened = _FENCE.match(raw)
        if opened:
            fence, fence_lang = [], opened.group(2).lower()
            if last_was_unit and units and units[-1].rstrip().endswith(":"):
                lead_in_index = len(units) - 1
            continue
        line = _SPEAKER.sub("", raw, count=1) if _SPEAKER.match(raw) else raw
        if not line.strip():
            continue  # blank lines keep a lead-in alive for the fence that follows
        if _HEADING.match(line) or _is_noise_line(line):
            last_was_unit = False
            continue
        if (raw.startswith("    ") or raw.startswith("\t")) and not _BULLET.match(line):
            last_was_unit = False  # an indented code block
            continue
        bullet = _BULLET.match(line)
        content = line[bullet.end() :] if bullet else line.strip()
        previous = units[-1] if units and last_was_unit else ""
        continues = (
            previous
            and not bullet
            and previous[-1:] not in ".!?:"
            and content[:1].islower()
            and not _SPEAKER.match(raw)
        )
        if continues:
            units[-1] = f"{previous} {content.strip()}"
        else:
            units.append(content.strip())
        last_was_unit = True
    return units


# =====================================================================================================
# Extraction: prose -> sentences
# =====================================================================================================

_INLINE_CODE = re.compile(r"`[^`\n]+`")
_URL = re.compile(r"https?://[^\s)>\]]+")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|approx|incl|cf|no|fig|mr|mrs|dr)\.", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_PROTECT = "\x00"


def _sentences(unit: str) -> list[str]:
    """Split one unit into sentences without breaking code spans, URLs, paths or "e.g."."""
    kept: list[str] = []

    def protect(match: re.Match[str]) -> str:
        kept.append(match.group(0))
        return f"{_PROTECT}{len(kept) - 1}{_PROTECT}"

    masked = _ABBREVIATION.sub(protect, _URL.sub(protect, _INLINE_CODE.sub(protect, unit)))
    restore = re.compile(f"{_PROTECT}(\\d+){_PROTECT}")

    def unmask(part: str) -> str:
        for _depth in range(3):  # code spans, then URLs, then abbreviations were masked in turn
            part = restore.sub(lambda m: kept[int(m.group(1))], part)
        return part

    return [unmask(p).strip() for p in _SENTENCE_END.split(masked) if p.strip()]


_MARKDOWN_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")
_LEADING_JUNK = re.compile(r"^[^\w`\"'(~./\[]+")
_DISCOURSE = re.compile(
    r"^(?:(?:so|and|but|also|then|now|actually|anyway|btw|by the way|fyi|note that|note|remember that|"
    r"remember|important|just so you know|for the record)\b[\s,:;–—-]*|"
    r"(?:ok|okay|alright|right|yes|yeah|yep|no|nope|great|perfect|awesome|excellent|nice|cool|sure|"
    r"certainly|absolutely|of course|got it|understood|sounds good|makes sense|good|done|noted|thanks|"
    r"thank you)\s*[,.:;!–—-]+\s*)",
    re.IGNORECASE,
)
_GREETING_OR_FILLER = re.compile(
    r"^(?:hi|hello|hey|howdy|good (?:morning|afternoon|evening)|thanks|thank you|thx|cheers|sure|"
    r"certainly|absolutely|of course|great|perfect|awesome|excellent|nice|cool|ok|okay|alright|got it|"
    r"understood|sounds good|no problem|you're welcome|you are welcome|happy to help|done|yes|yep|no|"
    r"nope|right|let me|let's|lemme|let us|i'll|i will|i'm going to|i am going to|i'm gonna|i need to|"
    r"i should|i can|i could|i see|i notice|i understand|i think|i believe|i'm not sure|i am not sure|"
    r"now i'll|now let me|first,? (?:let me|i'll)|next,? (?:let me|i'll)|looking at|checking|reading|"
    r"searching|running|here's|here is|here are|below is|the following|hope this helps|let me know|"
    r"feel free|is there anything|would you like|do you want|want me to|shall i|should i|"
    r"if you (?:want|need|like)|happy to|glad|great question|good question|all (?:tests|checks) pass|"
    r"that's it|that is it|that should|this should)\b",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"^(?:please|can you|could you|would you|will you|help me|i need you to|i want you to|"
    r"i'd like you to|i would like you to|go ahead and|try to|try)\b[\s,]*",
    re.IGNORECASE,
)
_STANDING_ORDER = re.compile(
    r"\b(?:always|never|from now on|going forward|in future|in the future|don't|do not|prefer|"
    r"make sure to|remember to)\b",
    re.IGNORECASE,
)
_CONTEXT_DEPENDENT = re.compile(
    r"\b(?:above|below|the following|as (?:mentioned|discussed|shown|noted)|shown here|see here|"
    r"the previous|earlier|just now|right now|for now|this session|this conversation|accordingly|"
    r"as requested|as well|the same)\b",
    re.IGNORECASE,
)


def _clean(sentence: str) -> str:
    """Strip markdown, leading glyphs and discourse markers; the wording itself is kept."""
    sentence = _LINK.sub(r"\1 (\2)", _MARKDOWN_EMPHASIS.sub(r"\2", sentence))
    sentence = _LEADING_JUNK.sub("", sentence.strip())
    previous = None
    while previous != sentence:
        previous = sentence
        sentence = _DISCOURSE.sub("", sentence, count=1).strip()
    return re.sub(r"\s+", " ", sentence).strip()


def _capitalise(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:] if sentence[:1].isalpha() else sentence


def _finish(sentence: str) -> str:
    """Trim and close the fact with a full stop when it has no terminal punctuation."""
    sentence = sentence.strip().rstrip(",;:–—- ").strip()
    if sentence and sentence[-1] not in ".!)":
        sentence += "."
    return _capitalise(sentence)


# =====================================================================================================
# Extraction: signals
# =====================================================================================================

_COMMANDS = (
    "npm|pnpm|yarn|npx|bun|bunx|uv|uvx|pip|pip3|pipx|poetry|pytest|make|git|docker|docker-compose|"
    "podman|kubectl|helm|cargo|go|rustc|python|python3|node|deno|ruff|mypy|black|tsc|eslint|prettier|"
    "terraform|ansible|brew|apt|apt-get|systemctl|journalctl|curl|wget|just|nox|tox|gradle|gradlew|mvn|"
    "dotnet|psql|sqlite3|alembic|rails|bundle|rake|composer|php|java|ssh|scp|rsync|tar|gh|aws|gcloud|az|"
    "bli-memory-mcp|bli-memory-door|claude|codex|vite|next|jest|vitest|playwright|cmake|ninja|bazel"
)
_SIGNALS: tuple[tuple[str, re.Pattern[str], bool], ...] = (
    # (name, pattern, strong): a strong signal lets a short sentence through.
    ("code", re.compile(r"`[^`\n]+`"), True),
    ("command", re.compile(rf"(?:^|\s)(?:{_COMMANDS})\s+(?:-{{1,2}}\w|run\b|install\b|add\b|test\b)"), True),
    (
        "path",
        re.compile(
            r"(?:^|[\s(\"'])(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w.@-]+|"
            r"\b[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonl|toml|yaml|yml|md|rs|go|java|kt|rb|sh|"
            r"sql|cfg|ini|env|lock|txt|html|css|scss|vue|svelte|c|h|cpp|hpp|cs|swift|php|proto|tf|db|sqlite)\b|"
            r"(?:^|\s)(?:Dockerfile|Makefile|Justfile|Procfile|\.env|\.gitignore|\.github)\b"
        ),
        True,
    ),
    (
        "version",
        re.compile(
            r"\bv?\d+\.\d+(?:\.\d+)*\b|\b(?:version|v)\s?\d+\b|[<>=~^]=?\s?\d|"
            r"\b(?:Postgres|PostgreSQL|MySQL|Python|Node|Node\.js|Java|Go|Rust|Ruby|PHP|Django|Rails|React|"
            r"Vue|Angular|Next\.js|Ubuntu|Debian|Alpine|Redis|Kubernetes|Terraform|TypeScript|Swift|Kotlin|"
            r"Elixir|Erlang|Scala|\.NET|Spring|Laravel|Bun|Deno|Gradle|Java)\s\d+\b",
            re.IGNORECASE,
        ),
        True,
    ),
    (
        "identifier",
        re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|\b\w+_\w+\b|\b\w+\(\)|\b[\w.-]+=\S+"),
        True,
    ),
    ("url", re.compile(r"https?://\S+"), True),
    (
        "decision",
        re.compile(
            r"\b(?:decided|decide|decision|agreed|chose|choose|chosen|going with|go with|settled on|"
            r"switch(?:ed)? (?:to|from)|migrat(?:e|ed|ing) (?:to|from)|moved? (?:to|from)|replac(?:e|ed|es|ing)|"
            r"instead of|rather than|adopt(?:ed)?|standardi[sz]ed? on|from now on|going forward|deprecated?)\b",
            re.IGNORECASE,
        ),
        False,
    ),
    (
        "convention",
        re.compile(
            r"\b(?:always|never|must|mustn't|should|shouldn't|don't|do not|convention|rule|policy|naming|"
            r"prefix(?:ed)?|suffix(?:ed)?|by default|defaults? to|default|required|requires?|expected to|"
            r"lives? in|goes in|belongs? in|(?:is|are) (?:stored|kept|located|defined|configured|set) (?:in|at|via|to)|"
            r"we use|we're using|we are using|uses|we run|runs on|is set to|are set to|port|timeout|limit|"
            r"needs?|need to)\b",
            re.IGNORECASE,
        ),
        False,
    ),
    (
        "preference",
        re.compile(
            r"\b(?:prefer(?:s|red)?|i like|i'd like|i want|we want|i don't like|i do not like|i hate|"
            r"rather|favou?r)\b",
            re.IGNORECASE,
        ),
        False,
    ),
    (
        "fix",
        re.compile(
            r"\b(?:fix(?:ed|es)?|the fix|bug|root cause|caused by|because|was failing|fails|broke|"
            r"breaks|broken|resolved?|workaround|work around|regression|the (?:issue|problem) was|"
            r"turned out|crash(?:es|ed)?|leak(?:s|ed)?|race condition|comes from|due to|happens when|hangs?)\b",
            re.IGNORECASE,
        ),
        False,
    ),
)


def _signals(sentence: str) -> tuple[int, bool]:
    """How many kinds of durable signal the sentence carries, and whether one of them is strong."""
    count, strong = 0, False
    for _name, pattern, is_strong in _SIGNALS:
        if pattern.search(sentence):
            count += 1
            strong = strong or is_strong
    return count, strong


# =====================================================================================================
# Extraction: pronouns
# =====================================================================================================

_TOKEN = re.compile(r"`[^`]+`|\S+")
_PRONOUN_SUBJECTS = frozenset(
    "it this that these those they them we i you he she there here what which who whom how why when "
    "where one everything something nothing anything someone all both each".split()
)
_VERBS = frozenset(
    (
        "is are was were be been being 's has have had does do did will would should can could must may "
        "might shall uses use used runs run lives live needs need requires require reads writes returns "
        "handles stores calls contains takes gets sets loads starts depends expects points sits defaults "
        "goes comes lets makes keeps supports caches sends creates fails failed broke breaks crashes crashed "
        "works worked checks validates owns wraps exposes accepts generates builds listens serves talks "
        "connects holds lacks misses means fixes fixed causes caused happens happened allows ensures avoids "
        "prevents times expires retries logs prints blocks copies moves syncs parses renders deletes updates "
        "migrates imports exports reads emits publishes consumes schedules triggers spawns wraps resolves "
        "maps converts compiles bundles deploys ships tracks stays remains becomes became lives sits"
    ).split()
)
_AFTER_PRONOUN = _VERBS | frozenset(
    "also only by to in on at with for from and or but because so when if as into after before "
    "instead again now too first once just still already never always".split()
)
_REFERRING = frozenset("it its it's this that these those they them their".split())
_STOP_IN_SUBJECT = frozenset("to for with in on at from by into when if locally now again here there".split())
_SPACE_NOUNS = frozenset("project repo repository codebase team workspace monorepo".split())
_ARTICLES = frozenset({"the", "a", "an"})
_WH = frozenset("what how where why when which who".split())
_AUX = frozenset("is are was were does do did should can could will would".split())
_IT = re.compile(r"\b(?:it's|it is|its|it)\b", re.IGNORECASE)
_PLURAL = re.compile(r"\b(?:they're|they are|their|they|them)\b", re.IGNORECASE)
_DEMONSTRATIVE = re.compile(r"\b(this|that|these|those)\b(?:\s+([\w'`-]+))?", re.IGNORECASE)


def _bare(token: str) -> str:
    return token.strip(".,;:!?()[]{}\"'").lower()


def _subject(sentence: str) -> str | None:
    """The noun phrase a later "it" would point at: the words before the first verb.

    For a question ("What does the `sync` job do?", "How do I run the tests?") it is the phrase the
    question is about. Returns None when the subject is itself a pronoun, too long, or not found.
    """
    tokens = _TOKEN.findall(sentence.rstrip("?.! "))
    if not tokens:
        return None
    if _bare(tokens[0]) in _WH and len(tokens) > 1 and _bare(tokens[1]) in _AUX:
        rest = tokens[2:]
        if len(rest) >= 2 and _bare(rest[0]) in {"i", "we", "you"}:
            rest = rest[2:]
        phrase: list[str] = []
        for token in rest:
            if _bare(token) in _VERBS or _bare(token) in _STOP_IN_SUBJECT:
                break
            phrase.append(token)
    else:
        phrase = []
        for token in tokens:
            if _bare(token) in _VERBS:
                break
            phrase.append(token)
        else:
            return None
    words = [w.strip(",;:") for w in phrase]
    if not words or len(words) > MAX_SUBJECT_WORDS or _bare(words[0]) in _PRONOUN_SUBJECTS:
        return None
    if all(_bare(w) in _ARTICLES for w in words):
        return None
    if any(_bare(w) in _REFERRING for w in words):
        return None  # "the config of this" only moves the question; it also keeps _resolve finite
    return " ".join(words)


def _as_object(subject: str) -> str:
    """Lower-case a leading article so the subject reads naturally mid-sentence."""
    first, _, rest = subject.partition(" ")
    return f"{first.lower()} {rest}" if first in {"The", "A", "An"} and rest else subject


def _resolve(sentence: str, subject: str | None) -> str | None:
    """Replace "it"/"this"/"they" with ``subject``; None when the sentence leans on context it lacks."""
    for match in _DEMONSTRATIVE.finditer(sentence):
        following = _bare(match.group(2) or "")
        if following in _SPACE_NOUNS:
            continue  # "this project": memories live per project, so it reads on its own
        if (
            following
            and following not in _AFTER_PRONOUN
            and match.group(1).lower() in {"this", "these", "those"}
        ):
            return None  # "this file": a determiner pointing at something we cannot name
        if match.group(1).lower() == "that" and match.start() > 0:
            continue  # mid-sentence "that" is nearly always a conjunction or a relative pronoun
        if subject is None:
            return None
        sentence = _swap(sentence, match.start(), match.end(1), subject)
        return _resolve(sentence, subject)
    if _IT.search(sentence) or _PLURAL.search(sentence):
        if subject is None:
            return None

        def swap_it(match: re.Match[str]) -> str:
            word = match.group(0).lower()
            noun = subject if match.start() == 0 else _as_object(subject)
            if word in {"it's", "it is", "they're", "they are"}:
                return f"{noun} {'is' if word.startswith('it') else 'are'}"
            if word in {"its", "their"}:
                return f"{noun}'s" if not noun.endswith("s") else f"{noun}'"
            return noun

        sentence = _PLURAL.sub(swap_it, _IT.sub(swap_it, sentence))
    return sentence


def _swap(sentence: str, start: int, end: int, subject: str) -> str:
    noun = subject if start == 0 else _as_object(subject)
    return sentence[:start] + noun + sentence[end:]


# =====================================================================================================
# Extraction: the public function
# =====================================================================================================


def _fact_key(fact: str) -> str:
    """Case, punctuation and markup-insensitive key used to deduplicate facts."""
    return " ".join(_tokens(fact))


def _candidate(sentence: str) -> str | None:
    """Filter one cleaned sentence: None for questions, greetings, filler and requests."""
    if sentence.endswith("?") or sentence.endswith(":"):
        return None
    if _GREETING_OR_FILLER.match(sentence):
        return None
    request = _REQUEST.match(sentence)
    if request:
        if not _STANDING_ORDER.search(sentence):
            return None  # a one-off task ("Please fix the login bug") is not a durable fact
        sentence = _capitalise(sentence[request.end() :])
    if _CONTEXT_DEPENDENT.search(sentence):
        return None
    return sentence


def extract_facts(text: str) -> list[str]:
    """Distil atomic, self-contained facts from a saved exchange without any model.

    Deterministic: the same text always yields the same list, in text order, deduplicated, each at
    most :data:`MAX_FACT_CHARS` and at most :data:`MAX_FACTS_PER_TEXT` of them (the sentences with the
    most kinds of signal win).
    """
    scored: list[tuple[int, int, str]] = []
    seen: set[str] = set()
    subject: str | None = None
    for unit in _prose_units(text):
        for raw in _sentences(unit):
            sentence = _clean(raw)
            if not sentence or _GREETING_OR_FILLER.match(sentence):
                continue  # "Sure!", "Let me check": the subject of the conversation is unchanged
            if sentence.endswith("?"):
                subject = _subject(sentence)
                continue
            candidate = _candidate(sentence)
            resolved = _resolve(candidate, subject) if candidate is not None else None
            if resolved is None:
                subject = None
                continue
            if resolved != candidate and subject is not None and resolved.startswith(subject):
                pass  # "It reads …" became "<subject> reads …": the subject carries on
            else:
                subject = _subject(resolved)
            fact = _finish(resolved)
            words = len(_TOKEN.findall(fact))
            count, strong = _signals(fact)
            if count == 0 or words < (MIN_WORDS_STRONG if strong else MIN_WORDS):
                continue
            if len(fact) > MAX_FACT_CHARS:
                continue
            key = _fact_key(fact)
            if key in seen:
                continue
            seen.add(key)
            scored.append((count, len(scored), fact))
    best = sorted(scored, key=lambda item: (-item[0], item[1]))[:MAX_FACTS_PER_TEXT]
    return [fact for _count, _index, fact in sorted(best, key=lambda item: item[1])]


# =====================================================================================================
# Reconciliation
# =====================================================================================================

_CONTRACTIONS = (
    (re.compile(r"\bcan't\b|\bcannot\b"), "can not"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\bshan't\b"), "shall not"),
    (re.compile(r"\b(\w+)n't\b"), r"\1 not"),
)
_NEGATIONS = frozenset({"not", "no", "never"})
_POLARITY_MARKERS = _NEGATIONS | {"always"}
_DO_AUX = frozenset({"do", "does", "did"})
_VALUE_LEADS = frozenset("is are was were be = : to at on of as with via using equals uses use runs".split())
_WEAK_CONTEXT = frozenset("it this that we i you they the a an is are to of".split())
_NUMBER = re.compile(r"\d")
_KEY_VALUE = re.compile(r"^\s*`?([A-Za-z_][\w.-]*)`?\s*[=:]\s*`?(.+?)`?\s*\.?\s*$")


def _tokens(text: str) -> list[str]:
    """Lower-case words with markup, quotes and edge punctuation removed and contractions expanded."""
    lowered = text.lower().replace("`", " ").replace("*", " ").replace("“", " ").replace("”", " ")
    for pattern, replacement in _CONTRACTIONS:
        lowered = pattern.sub(replacement, lowered)
    out = []
    for raw in lowered.split():
        token = raw.strip(".,;:!?()[]{}\"'")
        if token:
            out.append(token)
    return out


def _jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def _numbers(tokens: Sequence[str]) -> list[str]:
    return [t for t in tokens if _NUMBER.search(t)]


def _polarity(tokens: Sequence[str]) -> tuple[bool, list[str]]:
    """(negated?, the statement with negations, "always" and the "do" of "do not" removed)."""
    negated = sum(t in _NEGATIONS for t in tokens) % 2 == 1
    core: list[str] = []
    for i, token in enumerate(tokens):
        if token in _POLARITY_MARKERS:
            continue
        if token in _DO_AUX and i + 1 < len(tokens) and tokens[i + 1] in _NEGATIONS:
            continue
        # "lives" and "does not live" must meet: a crude singular is enough for the comparison.
        core.append(
            token[:-1] if len(token) > 3 and token.endswith("s") and not token.endswith("ss") else token
        )
    return negated, core


def _value_change(old: list[str], new: list[str]) -> tuple[str, str, str] | None:
    """(subject, old value, new value) when both say the same thing about the same subject.

    The two must share a prefix and suffix covering :data:`VALUE_CONTEXT_MIN_RATIO` of the longer one,
    differ in one short span, and that span must be a value: it holds a number, or it follows an
    assignment-like word ("is", "=", "to", "with" …) after a subject with real content.
    """
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(old), len(new)) - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]
    ):
        suffix += 1
    old_span, new_span = old[prefix : len(old) - suffix], new[prefix : len(new) - suffix]
    if not (1 <= len(old_span) <= MAX_VALUE_WORDS and 1 <= len(new_span) <= MAX_VALUE_WORDS):
        return None
    if prefix == 0 or (prefix + suffix) / max(len(old), len(new)) < VALUE_CONTEXT_MIN_RATIO:
        return None
    context = old[:prefix] + old[len(old) - suffix :]
    if all(t in _WEAK_CONTEXT or t in _VALUE_LEADS for t in context):
        return None
    numeric = bool(_numbers(old_span)) or bool(_numbers(new_span))
    if not numeric:
        if old[prefix - 1] in {"uses", "use", "runs"}:
            return None  # "we use pnpm" and "we use Docker" can both be true
        if not any(t in _VALUE_LEADS for t in old[max(0, prefix - 2) : prefix]):
            return None  # the span is not in a value position ("with `make <deploy>`" is)
    return " ".join(old[:prefix]), " ".join(old_span), " ".join(new_span)


def _key_value(text: str) -> tuple[str, str] | None:
    match = _KEY_VALUE.match(text)
    if not match or " " in match.group(1):
        return None
    return match.group(1).lower(), match.group(2).strip().lower()


_RANK: dict[Action, int] = {"unchanged": 0, "conflict": 1, "update": 2, "add": 3}


def _judge(fact: str, new: list[str], neighbour: Neighbour) -> tuple[Action, str]:
    """The verdict of one fact against one neighbour, with its reason."""
    old = _tokens(neighbour.content)
    if old == new:
        return "unchanged", f"same text as {neighbour.id}"
    new_negated, new_core = _polarity(new)
    old_negated, old_core = _polarity(old)
    if new_negated != old_negated and (
        new_core == old_core or _jaccard(new_core, old_core) >= NEAR_DUPLICATE_OVERLAP
    ):
        return "conflict", f"negates {neighbour.id}; both kept for a person to settle"
    new_kv, old_kv = _key_value(fact), _key_value(neighbour.content)
    if new_kv and old_kv and new_kv[0] == old_kv[0] and new_kv[1] != old_kv[1]:
        return "update", f"{new_kv[0]}: {old_kv[1]!r} -> {new_kv[1]!r}"
    change = _value_change(old, new) if new_negated == old_negated else None
    if change:
        subject, before, after = change
        return "update", f"{subject!r}: {before!r} -> {after!r}"
    same_numbers = sorted(_numbers(old)) == sorted(_numbers(new))
    similarity = neighbour.similarity
    if new_negated != old_negated:
        return "add", "the opposite polarity of a different statement"
    if similarity is not None and similarity >= NEAR_DUPLICATE_SIMILARITY and same_numbers:
        return "unchanged", f"similarity {similarity:.3f} >= {NEAR_DUPLICATE_SIMILARITY} with {neighbour.id}"
    overlap = _jaccard(old, new)
    if overlap >= NEAR_DUPLICATE_OVERLAP and same_numbers:
        return "unchanged", f"word overlap {overlap:.2f} >= {NEAR_DUPLICATE_OVERLAP} with {neighbour.id}"
    old_set, new_set = set(old), set(new)
    if min(len(old), len(new)) / max(len(old), len(new), 1) >= CONTAINMENT_MIN_LENGTH_RATIO:
        if len(new) >= CONTAINMENT_MIN_WORDS and new_set <= old_set:
            return "unchanged", f"already contained in {neighbour.id}"
        if len(old) >= CONTAINMENT_MIN_WORDS and old_set <= new_set:
            return "update", f"adds detail to {neighbour.id}"
    return "add", "no stored fact says the same or the opposite"


def decide(fact: str, neighbours: Sequence[Neighbour]) -> Decision:
    """Reconcile one fact with its nearest stored neighbours.

    Each neighbour gets a verdict; the strongest wins: ``unchanged`` (the space already knows it) over
    ``conflict`` (a negation: both are kept and flagged) over ``update`` (same subject, new value; the
    old version becomes history) over ``add``. Ties go to the most similar neighbour, then to the first.
    """
    new = _tokens(fact)
    best: tuple[int, float, int, Decision] | None = None
    for index, neighbour in enumerate(neighbours):
        action, reason = _judge(fact, new, neighbour)
        if action == "add":
            continue
        similarity = neighbour.similarity if neighbour.similarity is not None else -1.0
        key = (_RANK[action], -similarity, index, Decision(action, neighbour.id, reason))
        if best is None or key[:3] < best[:3]:
            best = key
    if best is None:
        return Decision("add", None, "no stored fact says the same or the opposite")
    return best[3]


# =====================================================================================================
# LLM extractor
# =====================================================================================================

LLM_SYSTEM_PROMPT = f"""You extract durable memory from one exchange between a developer and a coding agent.
Return ONLY a JSON object of the form {{"facts": ["...", "..."]}} and nothing else.
Keep: decisions, conventions, commands, file paths, versions, preferences, fixes and their causes.
Drop: greetings, questions, plans ("let me check"), tool output, logs, code listings, one-off tasks.
Each fact is one atomic sentence that makes sense on its own a month later: name the subject instead
of "it", "this" or "they"; keep identifiers, paths, commands and versions exactly as written (in
backticks when they are code); write in the first person plural for team decisions ("We use ...").
At most {MAX_FACTS_PER_TEXT} facts, each under {MAX_FACT_CHARS} characters. If nothing is worth
remembering, return {{"facts": []}}."""


def _chat_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base + "/chat/completions" if base.endswith("/v1") else base + "/v1/chat/completions"


def _strip_fence(content: str) -> str:
    """Models often wrap JSON in a ```json fence despite being told not to; the shape stays strict."""
    content = content.strip()
    if content.startswith("```"):
        content = content.split("\n", 1)[1] if "\n" in content else ""
        content = content.rsplit("```", 1)[0]
    return content.strip()


def _validated_facts(payload: Any) -> list[str]:
    """The ``facts`` of an answer, cleaned, deduplicated and capped; LibrarianError if malformed."""
    if not isinstance(payload, dict) or not isinstance(payload.get("facts"), list):
        raise LibrarianError('chat endpoint answer is not {"facts": [...]}')
    facts: list[str] = []
    seen: set[str] = set()
    for item in payload["facts"]:
        if not isinstance(item, str):
            raise LibrarianError("chat endpoint answered a fact that is not a string")
        fact = re.sub(r"\s+", " ", item).strip()
        key = _fact_key(fact)
        if not fact or len(fact) > MAX_FACT_CHARS or key in seen:
            continue
        seen.add(key)
        facts.append(fact)
    return facts[:MAX_FACTS_PER_TEXT]


class LlmExtractor:
    """Facts from an OpenAI-compatible ``POST {base_url}/v1/chat/completions``.

    The answer must be ``{"facts": [string, ...]}`` (a surrounding ```json fence is tolerated);
    anything else, an HTTP error, an unreachable endpoint or no whole answer within ``timeout_s``
    raises :class:`LibrarianError`. The key travels only in the ``Authorization``
    header and never appears in an error.
    """

    def __init__(
        self, base_url: str, model: str, api_key: str | None = None, timeout_s: float = LLM_TIMEOUT_S
    ) -> None:
        self._url = _chat_url(base_url)
        self._model = model
        self._api_key = api_key
        self._timeout_s = timeout_s

    def _post(self, body: dict[str, Any]) -> bytes:
        """POST `body`; the whole exchange (connect, send, every byte of the answer) within the timeout.

        The door's own HTTP client (`wire/http.py`) keeps one absolute deadline; urllib's timeout is
        per socket operation, so an endpoint that trickled its answer could hold a job for ever.
        """
        from bli_memory.wire.http import BadResponse, Connection, WireError, WireTimeout

        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        deadline = time.monotonic() + self._timeout_s
        try:
            with Connection(self._url) as connection:
                response = connection.request(
                    "POST",
                    self._url,
                    body=json.dumps(body).encode("utf-8"),
                    headers=headers,
                    deadline=deadline,
                    max_body_bytes=LLM_RESPONSE_CAP_BYTES,
                )
        except WireTimeout:
            raise LibrarianError(f"chat endpoint gave no answer within {self._timeout_s:g}s") from None
        except BadResponse as exc:  # not HTTP, or over the size cap
            raise LibrarianError(f"chat endpoint answered badly: {exc}") from None
        except WireError as exc:
            raise LibrarianError(f"chat endpoint unreachable: {exc.reason}") from None
        except ValueError as exc:  # a base URL that cannot be used
            raise LibrarianError(f"chat endpoint unreachable: {type(exc).__name__}") from None
        if response.status >= 300:
            raise LibrarianError(f"chat endpoint answered HTTP {response.status}")
        return response.body

    def extract(self, text: str) -> list[str]:
        """Ask the model for facts; raises LibrarianError on any failure."""
        body = {
            "model": self._model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": LLM_SYSTEM_PROMPT},
                {"role": "user", "content": text[:LLM_MAX_INPUT_CHARS]},
            ],
        }
        raw = self._post(body)
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LibrarianError("chat endpoint answered malformed JSON") from None
        if not isinstance(content, str):
            raise LibrarianError("chat endpoint answered no message content")
        try:
            payload = json.loads(_strip_fence(content))
        except ValueError:
            raise LibrarianError("chat endpoint answered content that is not JSON") from None
        return _validated_facts(payload)


def extractor_from_env(
    env: Mapping[str, str] | None = None,
    *,
    on_fallback: Callable[[str], None] | None = None,
) -> Callable[[str], tuple[list[str], ExtractorName]]:
    """The extractor the door's worker should run: ``text -> (facts, "llm" | "deterministic")``.

    The LLM runs when ``BLI_MEMORY_LLM_URL`` and ``BLI_MEMORY_LLM_MODEL`` are set
    (``BLI_MEMORY_LLM_KEY`` optional); any :class:`LibrarianError` falls back to
    :func:`extract_facts` and, when given, ``on_fallback`` hears the one-line reason (never the key).
    """
    import os

    environ = os.environ if env is None else env
    url = environ.get(ENV_LLM_URL, "").strip()
    model = environ.get(ENV_LLM_MODEL, "").strip()
    if not url or not model:

        def deterministic(text: str) -> tuple[list[str], ExtractorName]:
            return extract_facts(text), "deterministic"

        return deterministic
    llm = LlmExtractor(url, model, api_key=environ.get(ENV_LLM_KEY) or None)

    def with_fallback(text: str) -> tuple[list[str], ExtractorName]:
        started = time.monotonic()
        try:
            return llm.extract(text), "llm"
        except LibrarianError as exc:
            if on_fallback is not None:
                on_fallback(
                    f"{exc} after {time.monotonic() - started:.1f}s; used the deterministic extractor"
                )
            return extract_facts(text), "deterministic"

    return with_fallback

"""Deterministic fact extraction: the durable, self-contained sentences of a saved exchange, no model.

Pure (no I/O). It reads the text the hook saves (usually ``User: …\\n\\nAssistant: …``), throws away
what is never worth remembering (greetings, questions, filler such as "Let me check", tool noise, logs,
code dumps, injected ``<bli-memory-…>`` blocks), splits the rest into sentences and keeps those that
carry a durable signal: a decision, a convention, a command, a path, a version, a preference, a fix,
an identifier. A sentence that leans on "it"/"this"/"they" is rewritten with the subject of the
previous sentence when one can be found, and dropped otherwise, so every fact reads on its own a month
later. Rule-based on purpose: the same exchange always yields the same facts, so saving it twice adds
nothing new.
"""

from __future__ import annotations

import re

from bli_memory.door.librarian.words import fact_key

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


# =====================================================================================================
# text -> lines of prose
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
# prose -> sentences
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
# signals
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
# pronouns
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
# the public function
# =====================================================================================================


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
            key = fact_key(fact)
            if key in seen:
                continue
            seen.add(key)
            scored.append((count, len(scored), fact))
    best = sorted(scored, key=lambda item: (-item[0], item[1]))[:MAX_FACTS_PER_TEXT]
    return [fact for _count, _index, fact in sorted(best, key=lambda item: item[1])]

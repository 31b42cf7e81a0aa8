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
sentence before it names in a code span. Test-run reports, moment-bound reports (line numbers, "no other
hits"), thanks, re-run requests and general-knowledge answers leave nothing. The reply's direct
answer to a user's wh-question (a bare "Why?" asks about the statement before it, and so does a
problem report followed by "can you figure out why") carries that question when it shows that it answers it (a shared word
that names something, a pronoun, the instruction a how-to question asks for); so does a reply whose
first words name a cause ("Cause: …") answer the user's report of what they saw. A question needs no
question mark ("whats the difference between …"); a reply opening with a short block of commands
answers with them; a tool's tally quoted as output is a run report. Rule-based on purpose:
the same exchange always yields the same facts, so saving it twice adds nothing new.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bli_memory.door.librarian.words import fact_key, tokens

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
MIN_WORDS = 4


# =====================================================================================================
# text -> lines of prose
# =====================================================================================================

_DROPPED_TAGS = (
    "system-reminder|bli-memory-recall|bli-memory-context|function_calls|function_results|tool_use|"
    "tool_result|command-name|command-message|command-args|local-command-stdout|local-command-stderr|"
    "thinking|antml:[\\w-]+(?![\\w-])"
)
#: a dropped block is found as its opening tag and the first closing tag of the same name after it,
#: read in two linear passes: one pattern `<(tag)…>.*?</\1>` scanned to the end of the text from
#: every unclosed opening (85 KB of `<system-reminder>` took 2.2 s).
_TAG_OPEN = re.compile(rf"<({_DROPPED_TAGS})\b[^<>]*>", re.IGNORECASE)
_TAG_CLOSE = re.compile(rf"</({_DROPPED_TAGS})>", re.IGNORECASE)
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
_CODE_LINE_START = re.compile(_CODE_LINE.pattern.split("|[{;(]")[0])
_SHELL_LANGS = frozenset({"", "bash", "sh", "shell", "console", "zsh", "fish", "powershell", "ps1", "cmd"})
_LEAD_IN_PRONOUN = re.compile(
    r"\b(?:the following(?: (?:command|commands|line|lines|snippet|setting|settings|config))?|"
    r"these(?: commands)?|this(?: command| snippet| line)?|it)\b",
    re.IGNORECASE,
)


_INLINE_CODE_SPAN = re.compile(r"`[^`\n]+`")
#: the shape of a test runner's or a checker's report: "30 passed in 4.87s", "ok  pkg 0.8s", "[100%]".
_OUTPUT_LINE = re.compile(
    r"\b\d+ (?:passed|failed|errors?|skipped|tests?|checks?)\b|\[\s*\d+%\]|^\s*(?:ok|PASS|FAIL|---)\b|"
    r"^\s*[.FEsx]{5,}|\[no test files\]",
    re.IGNORECASE,
)
#: a lead-in that reports what was run ("Ran `pytest`:", "Output:") introduces output, not a command.
_REPORT_LEAD_IN = re.compile(r"^(?:I\s+)?(?:ran|re-?ran|output|result|results|got|saw)\b", re.IGNORECASE)


def _is_noise_line(line: str) -> bool:
    """A line that is tool output, a log, a stack trace, a table or code rather than prose."""
    if _NOISE_LINE.match(line):
        return True
    if _CODE_LINE.search(line) and not (_BULLET.match(line) and _CODE_LINE_START.match(line) is None):
        return True  # a prose bullet may end in ";" or "(": only its start can make it code
    visible = _INLINE_CODE_SPAN.sub("code", line.strip())  # a code span is a word, whatever it holds
    if len(visible) >= 8:
        wordish = sum(ch.isalnum() or ch.isspace() or ch == "`" for ch in visible)
        if wordish / len(visible) < 0.6:
            return True
    return False


def _drop_tagged_blocks(text: str) -> str:
    """The text with each tool, reminder or recall block (`<system-reminder>…</system-reminder>`)
    replaced by a line break; an opening tag never closed stays as it is. Linear in the text: the
    closing tags are listed once, and each name's list is walked forward as the openings are met."""
    closes: dict[str, list[tuple[int, int]]] = {}
    for close in _TAG_CLOSE.finditer(text):
        closes.setdefault(close.group(1).lower(), []).append(close.span())
    if not closes:
        return text
    walked = dict.fromkeys(closes, 0)  # name -> its first close not yet behind the reading
    out: list[str] = []
    kept = at = 0
    while (opening := _TAG_OPEN.search(text, at)) is not None:
        name = opening.group(1).lower()
        spans = closes.get(name, [])
        index = walked.get(name, 0)
        while index < len(spans) and spans[index][0] < opening.end():
            index += 1
        walked[name] = index
        if index == len(spans):  # never closed: the tag stays, the search goes on after it
            at = opening.end()
            continue
        out.append(text[kept : opening.start()])
        out.append("\n")
        kept = at = spans[index][1]
    out.append(text[kept:])
    return "".join(out)


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
    text = _drop_tagged_blocks(text)
    units: list[str] = []
    fence: list[str] | None = None
    fence_lang = ""
    lead_in_index: int | None = None  # the unit right before a fence, if it ended with ":"
    opening_block = False  # the fence opens the text: its commands lead the first paragraph
    commands = ""  # those commands, waiting for the paragraph they lead
    block_lead_in: int | None = None  # the lead-in of the block just closed
    list_lead_in: int | None = None  # a prose line ending in ":" that its list items may complete
    last_was_unit = False
    for raw in text.split("\n"):
        if fence is not None:
            closing = _FENCE.match(raw)
            if closing and not closing.group(2):
                body = [ln.strip() for ln in fence if ln.strip()]
                lead_in = _sentences(units[lead_in_index])[-1] if lead_in_index is not None else ""
                if (lead_in_index is not None or opening_block) and _is_command_block(
                    fence_lang, body, lead_in
                ):
                    if fence_lang in _SHELL_LANGS:
                        body = [re.sub(r"^(?:\$|>)\s+", "", ln) for ln in body]
                    if lead_in_index is not None:
                        units[lead_in_index] = _fold_code(units[lead_in_index], body)
                    elif fence_lang in _SHELL_LANGS:
                        commands = ", then ".join(f"`{line}`" for line in body) + "."
                block_lead_in = lead_in_index
                said = _sentences(units[lead_in_index]) if lead_in_index is not None else []
                if lead_in_index is not None and said and _REPORT_LEAD_IN.match(said[-1]):
                    # "I ran `make check`:" + its output: an event of the session, the rest of it stays
                    units[lead_in_index] = " ".join(said[:-1])
                    if not units[lead_in_index]:
                        del units[lead_in_index]
                    block_lead_in = None
                fence, lead_in_index, opening_block, last_was_unit = None, None, False, False
            else:
                fence.append(raw)
            continue
        opened = _FENCE.match(raw)
        if opened:
            fence, fence_lang = [], opened.group(2).lower()
            opening_block = not units and not commands
            list_lead_in = None
            if last_was_unit and units and units[-1].rstrip().endswith(":"):
                lead_in_index = len(units) - 1
            continue
        line = _SPEAKER.sub("", raw, count=1) if _SPEAKER.match(raw) else raw
        if not line.strip():
            continue  # blank lines keep a lead-in alive for the fence that follows
        if _HEADING.match(line) or _is_noise_line(line):
            last_was_unit = False
            if _HEADING.match(line):
                commands, block_lead_in, list_lead_in = "", None, None  # a new section: nothing before leads
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
        elif (
            bullet
            and list_lead_in is not None
            and _verbless(content)
            and len(units[list_lead_in]) + len(content) < MAX_FACT_CHARS
        ):
            # "Renamed in `db/`:" + "- `V1__a.sql` to `V2__a.sql`": an item that is only values completes its lead-in
            lead_in = units[list_lead_in].rstrip()
            joint = " " if lead_in.endswith(":") else "; "
            units[list_lead_in] = f"{lead_in}{joint}{content.strip().rstrip('.;,')}"
            commands, block_lead_in = "", None
            continue
        elif commands and not units and not bullet:
            units.append(f"{commands} {content.strip()}")  # "`make seed`. That loads …": what "That" means
        elif block_lead_in is not None and not bullet and _opens_leaning(content):
            # "… writes `out.json`:" + its output + "I copied it to …": the block did not end the thought
            lead_in = units[block_lead_in].rstrip().rstrip(":").rstrip()
            units[block_lead_in] = f"{lead_in}. {content.strip()}"
        else:
            units.append(content.strip())
        list_lead_in = len(units) - 1 if not bullet and units[-1].rstrip().endswith(":") else None
        commands, block_lead_in = "", None
        last_was_unit = True
    return units


#: the words that join values in a list item with no verb: "`a.sql` to `b.sql`", "`x` -> `y`".
_CONNECTIVES = frozenset("to from and or with as in on at for -> → => = , ;".split())


def _verbless(item: str) -> bool:
    """A list item made only of code spans and the words that join them ("`V1__a.sql` to `V2__a.sql`")."""
    if "`" not in item:
        return False
    rest = _INLINE_CODE_SPAN.sub(" ", item).replace(",", " ").replace(";", " ").rstrip(". ")
    return all(word.lower() in _CONNECTIVES for word in rest.split())


def _opens_leaning(paragraph: str) -> bool:
    """Whether a paragraph's first sentence opens on a pronoun that leans on what came before."""
    first = _sentences(paragraph.strip())[:1]
    return bool(first) and _leans_on_context(_clean(first[0]))


def _opens_with_block(body: str) -> bool:
    """Whether a turn's first non-blank line opens a fenced block."""
    first = next((line for line in body.splitlines() if line.strip()), "")
    return _FENCE.match(first) is not None


def _only_commands(fact: str) -> bool:
    """ "`npm ci`, then `npm test`.": commands and nothing that says what they are for; kept only as the
    answer to a question that asks for them (then the question leads the fact)."""
    return "`" in fact and not _INLINE_CODE_SPAN.sub(" ", fact).replace("then", " ").strip(" ,.;:")


def _is_command_block(lang: str, body: list[str], lead_in: str) -> bool:
    """A short fenced block of commands, not their output, a report of a run or a patch: at most
    :data:`CODE_BLOCK_MAX_LINES` lines, no test tally, no backticks, not introduced as output ("Ran
    …:"), and not a diff (its lines open with "+" and "-")."""
    if not 0 < len(body) <= CODE_BLOCK_MAX_LINES or _REPORT_LEAD_IN.match(lead_in):
        return False
    if lang in {"diff", "patch"} or all(ln[:1] in "+-" for ln in body):
        return False
    return not any(
        _OUTPUT_LINE.search(ln) or _LOG_LINE.match(ln) or "`" in ln or len(ln) > 200 for ln in body
    )


#: a log line: a level tag or a time stamp first ("INFO - Built in 2.3 s", "[12:01:33] …"); output, no command.
_LOG_LINE = re.compile(
    r"^\s*\[?(?:INFO|DEBUG|WARN|WARNING|ERROR|TRACE|FATAL|CRITICAL)\b|^\s*\[?\d{4}-\d{2}-\d{2}[\sT]\d{2}:|"
    r"^\s*\[?\d{2}:\d{2}:\d{2}"
)


# =====================================================================================================
# prose -> sentences
# =====================================================================================================

_INLINE_CODE = re.compile(r"`[^`\n]+`")
_URL = re.compile(r"https?://[^\s)>\]]+")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|approx|incl|cf|no|fig|mr|mrs|dr)\.", re.IGNORECASE)
#: a sentence ends after ".", "!" or "?" and a space; a trailing-off "..." before a lower-case word
#: ("V1, V2... because of …") does not end it.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\.\.\.)\s+(?=\S)|(?<=\.\.\.)\s+(?=[^\s a-z])")
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
#: a link's text and address hold no `[` (from each `[` of a run the rest of the text was read again)
_LINK = re.compile(r"\[([^\[\]]+)\]\((https?://[^)\s\[]+)\)")
_LEADING_JUNK = re.compile(r"^[^\w`\"'(~./\[]+")
_DISCOURSE = re.compile(
    r"^(?:(?:so|and|but|also|then|now|actually|anyway|btw|by the way|fyi|note that|note|remember that|"
    r"remember|important|just so you know|for the record)\b[\s,:;–—-]*|"
    r"(?:ok|okay|alright|right|yes|yeah|yep|no|nope|great|perfect|awesome|excellent|nice|cool|sure|"
    r"certainly|absolutely|of course|got it|understood|sounds good|makes sense|good|done|noted|thanks|"
    r"thank you|found it|found the (?:cause|culprit|bug|problem)|root cause found|fixed|updated|migrated|"
    r"ported|changes|changed)\s*[,.:;!–—-]+\s*)",
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
    r"as requested|the same (?:way|thing|as before)|this time|since the last|last run|"
    r"line \d+|lines \d+|typos?|misspel\w*|no (?:other )?(?:hits|matches|diff|changes)|working tree|nothing (?:new )?to commit|"
    r"tonight|tomorrow|until then|the next deploy|this (?:morning|afternoon|evening))\b",
    re.IGNORECASE,
)


def _outside_code(text: str, change: Callable[[str], str]) -> str:
    """Apply ``change`` to the prose between code spans; a code span is kept byte for byte."""
    parts: list[str] = []
    last = 0
    for match in _INLINE_CODE_SPAN.finditer(text):
        parts.append(change(text[last : match.start()]))
        parts.append(match.group(0))
        last = match.end()
    parts.append(change(text[last:]))
    return "".join(parts)


def _clean(sentence: str) -> str:
    """Strip markdown, leading glyphs and discourse markers; the wording itself is kept."""
    sentence = _outside_code(
        sentence, lambda prose: _LINK.sub(r"\1 (\2)", _MARKDOWN_EMPHASIS.sub(r"\2", prose))
    )
    sentence = _LEADING_JUNK.sub("", sentence.strip())
    previous = None
    while previous != sentence:
        previous = sentence
        sentence = _DISCOURSE.sub("", sentence, count=1).strip()
    return re.sub(r"\s+", " ", sentence).strip()


def _capitalise(sentence: str) -> str:
    """The sentence with its first letter upper-cased, unless its first word is an identifier
    (`test_refund_webhook`, `pnpm`, `v2.json`, `useMemo`): identifiers are kept byte for byte."""
    first = sentence.split(" ", 1)[0]
    if not sentence[:1].isalpha() or _IDENTIFIER_WORD.search(first.rstrip(".,;:!?")):
        return sentence
    return sentence[:1].upper() + sentence[1:]


#: a word that is an identifier, not English: an underscore, a digit, an inner dot or slash, camelCase.
_IDENTIFIER_WORD = re.compile(r"_|\d|\w[./]\w|^[a-z]+[A-Z]")


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
            r"Elixir|Erlang|Scala|\.NET|Spring|Laravel|Bun|Deno|Gradle|Java|JDK|JRE)\s\d+\b",
            re.IGNORECASE,
        ),
        True,
    ),
    (
        "identifier",
        # (a `key=value` is read from the start of its token: from each `\b` of `v1.v1.…` it ran to the end)
        re.compile(
            r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|\b\w+_\w+\b|\b\w+\(\)|(?<![\w.-])[\w.-]+=\S+"
        ),
        True,
    ),
    ("url", re.compile(r"https?://\S+"), True),
    ("handle", re.compile(r"(?:^|\s)[#@][A-Za-z][\w-]+"), True),
    (
        "ownership",
        re.compile(
            r"\b(?:owns?|owners?|ownership|maintain(?:s|ed|er|ers)|handled by|responsible|on-?call|channel|"
            r"lead|reviewers?|sign-?off|approv(?:e|es|al))\b",
            re.IGNORECASE,
        ),
        False,
    ),
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
# pronouns: replaced never, attached when certain
# =====================================================================================================

_TOKEN = re.compile(r"`[^`]+`|\S+")
_VERBS = frozenset(
    (
        "is are was were be been being 's has have had does do did will would should can could must may "
        "might shall uses use used runs run lives live needs need requires require reads writes returns "
        "handles stores calls contains takes gets sets set loads starts depends expects points sits defaults "
        "goes comes lets makes keeps supports caches sends creates fails broke breaks crashes "
        "works checks validates owns wraps exposes accepts generates builds listens serves talks "
        "connects holds lacks misses means fixes causes happens allows ensures avoids "
        "prevents times expires retries logs prints blocks copies moves syncs parses renders deletes updates "
        "migrates imports exports emits publishes consumes schedules triggers spawns resolves "
        "maps converts compiles bundles deploys ships tracks stays remains becomes became made wrote ran put "
        "kept left cut built rebuilt took gave chose found saw got"
    ).split()
)
_AFTER_PRONOUN = _VERBS | frozenset(
    "also only by to in on at with without for from and or but because so when if as into after before "
    "until unless here there "
    "instead again now too first once just still already never always".split()
)
#: words that point back at something said earlier.
_REFERRING = frozenset("it its it's itself this that these those they them their they're theirs".split())
_DEMONSTRATIVES = frozenset({"this", "that", "these", "those"})
_SPACE_NOUNS = frozenset("project repo repository codebase team workspace monorepo".split())
#: words that never name the thing a pronoun could stand for.
_FUNCTION_WORDS = frozenset(
    "a an the and or but so to of in on at by for with from into onto as if when once then than via "
    "don't do does did not can't cannot won't please "
    "i we you he she me us my our your his her also just still only now again too all both each "
    "not no never always there here what which who how why where every any some one".split()
)


#: verbs that open an instruction.
_IMPERATIVES = frozenset(
    "pin set use run add remove move update fix change make put keep call check try rename delete bump revert "
    "clean port migrate redo tell show find write name wrap drop replace switch upgrade downgrade install "
    "enable disable turn stick ship deploy merge push commit go look investigate figure review refactor "
    "implement".split()
)


def _bare(token: str) -> str:
    return token.strip(".,;:!?()[]{}\"'").lower()


def _names_something(token: str) -> bool:
    """A code span, a number or a word that can be a noun (not a function word, a verb or an adverb)."""
    if token.startswith("`"):
        return True
    word = _bare(token)
    if not word or word in _FUNCTION_WORDS or word in _VERBS or word in _REFERRING:
        return False
    if any(ch.isdigit() for ch in word):
        return True
    return not word.endswith(("ed", "ly", "ing"))


def _leans_on_context(sentence: str) -> bool:
    """True when a pronoun or a demonstrative comes before anything it could stand for in the sentence.

    "It reads the file", "Set it to 300", "Don't touch this file": the thing meant was named earlier,
    so the sentence alone does not say what it is about. A pronoun after a noun of its own sentence
    ("Celery beat keeps double-firing, it …") keeps its own words: the fact reads on its own. The
    word after a modal is a verb, not a name: "You can watch it at …" leans on what came before.
    """
    tokens = _TOKEN.findall(sentence)
    named = False
    for index, token in enumerate(tokens):
        word = _bare(token)
        if index == 0 and word in _IMPERATIVES:
            continue  # "Pin it back": the verb of an instruction names nothing
        if word in _REFERRING and not token.startswith("`"):
            following = _bare(tokens[index + 1]) if index + 1 < len(tokens) else ""
            if word in _DEMONSTRATIVES and following in _SPACE_NOUNS:
                continue  # "this project": memories live per project, so it reads on its own
            if word == "that" and index > 0 and _conjunction_that(_bare(tokens[index - 1]), following):
                continue  # "we agreed that every …", "a step that fails": not a pointer
            if word in _DEMONSTRATIVES and (not following or following in _AFTER_PRONOUN):
                return True  # "this is cached", "the config of this": a pointer, whatever came before
            if not named:
                return True
            continue
        after_modal = index > 0 and _bare(tokens[index - 1]) in _MODALS
        named = named or (_names_something(token) and not after_modal)
    return False


#: the auxiliaries whose next word is a verb: "You can watch it at …" names nothing before its "it".
_MODALS = frozenset("can could should would will shall may might must can't won't couldn't shouldn't".split())


#: the particles of phrasal verbs ("write down", "roll back") and the prepositions of a verb's object
#: ("switched that to …"): after one, "that" was the verb's object, never a clause's start.
_PARTICLES = frozenset("down up out off away back aside to into from with for as at".split())


def _conjunction_that(before: str, after: str) -> bool:
    """Mid-sentence "that" joining clauses: after a verb ("agreed that") or a noun ("a step that
    fails"), or before a determiner or a pronoun ("that every", "that we"). Before a verb's particle
    or at the end ("wrote that down", "undid that") it is the verb's object: a pointer."""
    if not after or after in _PARTICLES:
        return False
    if before.endswith("ed") or before in _VERBS or before in {"so", "such", "means", "says", "sure"}:
        return True
    if after in _FUNCTION_WORDS or after in {"it", "they", "this"} or after in _VERBS:
        return True
    return bool(before) and before not in _FUNCTION_WORDS and after.endswith(("s", "ed"))


#: "that folder", "this file": a demonstrative naming the sort of thing it points at.
_NAMED_DEMONSTRATIVE = re.compile(
    r"\b(?:that|this|the same)\s+(?P<noun>folder|directory|dir|file)\b", re.IGNORECASE
)


#: words that may follow a demonstrative's noun when it points ("that folder by hand", "this file
#: needs …"); any other word starts a compound ("that file permissions")
_POINTER_FOLLOWERS = _AFTER_PRONOUN | _FUNCTION_WORDS
#: a file's name: a suffix of a letter and up to four more characters (`.eslintignore` has none)
_FILE_NAME = re.compile(r"[\w.-]*[\w-]\.[A-Za-z][A-Za-z0-9]{0,4}")


def _is_folder(span: str) -> bool:
    """`src/lib/api/generated/`: a path ending in a slash, not a URL."""
    return span.endswith("/") and "://" not in span and not any(ch.isspace() for ch in span)


def _is_file(span: str) -> bool:
    """`config/settings.toml`, `.env.ci`: a path whose last part has a suffix, not a URL."""
    if "://" in span or any(ch.isspace() for ch in span):
        return False
    return _FILE_NAME.fullmatch(span.rsplit("/", 1)[-1]) is not None


_OF_NOUN = {"folder": _is_folder, "directory": _is_folder, "dir": _is_folder, "file": _is_file}


def _resolve_demonstrative(sentence: str, before: str | None) -> str:
    """`sentence` with "that folder" / "this file" replaced by the one folder or file the sentence
    before it names in a code span, when it names exactly one; else `sentence` as it is.

    "Don't edit that folder by hand" after "… writes typed clients into `src/lib/api/generated/`"
    becomes "Don't edit `src/lib/api/generated/` by hand". The choice is certain or not made: two
    folders before it, or none, leave the words alone (and the pronoun rule decides)."""
    if not before:
        return sentence
    match = _NAMED_DEMONSTRATIVE.search(sentence)
    if match is None or _NAMED_DEMONSTRATIVE.search(sentence, match.end()):
        return sentence
    following = _TOKEN.findall(sentence[match.end() :])[:1]
    after = _bare(following[0]) if following else ""
    if after.isalpha() and following[0][:1].isalpha() and after not in _POINTER_FOLLOWERS:
        return sentence  # "check that file permissions are …": the noun starts a compound, not a pointer
    fits = _OF_NOUN[match.group("noun").lower()]
    spans = {span for span in _INLINE_CODE_SPAN.findall(before) if fits(span.strip("`"))}
    if len(spans) != 1:
        return sentence
    return f"{sentence[: match.start()]}{spans.pop()}{sentence[match.end() :]}"


def _join(previous: str, sentence: str) -> str:
    """One fact from a sentence and the one before it (or the question it answers) that names what
    its pronoun means."""
    if previous.endswith("?"):
        return f"{previous} {sentence}"
    first = sentence[:1].lower() + sentence[1:] if sentence[1:2].islower() else sentence
    return f"{previous.rstrip(' .;:')}; {first}"


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
    r"scratch that|i was wrong|my mistake|turns out|^\W*update(?=\s*:)|"
    r"we(?:'re| are) (?:replacing|moving|switching|migrating|dropping|standardi[sz]ing|adopting|using)|"
    r"we (?:moved|switched|migrated|replaced|cut|dropped|standardi[sz]ed|adopted|use|always|never)|"
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
_CORRECTION = re.compile(
    r"^\W*(?:actually|correction|to correct|change of plan|scratch that|I was wrong|my mistake|"
    r"(?:it )?turns out|update(?=\s*:))\b",
    re.IGNORECASE,
)
#: the verbs of a standing instruction ("Use expect …", "Name the files …"); others are one-off tasks.
_CONVENTION_VERBS = frozenset(
    "use name keep prefer avoid put write wrap call prefix suffix stick always never only don't do "
    "pin place store commit tag format sort no not set run".split()
)
#: a request that carries a choice ("… with APScheduler instead?") is part of the decision.
_CHOICE = re.compile(
    r"\b(?:instead|rather than|switch(?:ing)? to|replac(?:e|ing) \S+ with|mov(?:e|ing) \S+(?: \S+){0,6} (?:to|into)|"
    r"from now on|always|never|only)\b",
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


def _user_facts(units: list[str]) -> list[str]:
    """What the user states: a decision, a convention, a preference, a correction, how things are.

    Questions, one-off tasks ("Fix the Button component") and problem reports ("the build fails
    again") are the reason for the exchange, not facts. A request carrying a choice ("Can you move
    the job to X instead?") is a decision without its question form; it and a bare instruction
    ("Name the files with the ticket first") join the decision before them, which says what they mean.
    A correction keeps a word saying so.
    """
    parts: list[str] = []
    after_decision = False
    for unit in units:
        for raw in _sentences(unit):
            lead = _CORRECTION_LEAD.match(raw)
            prose = _INLINE_CODE_SPAN.sub(" ", raw)
            decided = bool(
                _USER_DECISION.search(prose) or (_STANDING_ORDER.search(prose) and not _PROBLEM.search(prose))
            )
            sentence = _clean(raw[lead.end() :] if lead else raw)
            if not sentence or _GREETING_OR_FILLER.match(sentence):
                continue
            request = _REQUEST.match(sentence)
            if request:
                sentence = _capitalise(sentence[request.end() :])
            question = _is_question(sentence) or sentence.endswith(":")
            sentence = sentence.rstrip("?:").strip()
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
                and not _PROBLEM.search(prose)
                and _signals(sentence)[0]
            ):
                follows = False  # how things are: "We run Node 20 in CI"
            else:
                after_decision = False
                continue
            if _CONTEXT_DEPENDENT.search(sentence) or (not follows and _leans_on_context(sentence)):
                after_decision = False
                continue
            sentence = _finish(sentence)
            if _CORRECTION.match(raw):
                sentence = f"Correction: {sentence[:1].lower()}{sentence[1:]}"
            joined = f"{parts[-1]} {sentence}" if follows and parts else ""
            if joined and len(joined) <= MAX_FACT_CHARS:
                parts[-1] = joined  # "Use expect with a reason" says what it means after its decision
            elif len(_TOKEN.findall(sentence)) >= MIN_WORDS_STRONG and len(sentence) <= MAX_FACT_CHARS:
                parts.append(sentence)
            after_decision = decided or follows
    return parts


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
    r"^(?:(?:please|can you|could you|would you)\s+)*(?:explain|describe|clarify|tell me|remind me|"
    r"walk me through|help me understand)\b",
    re.IGNORECASE,
)


_WH_QUESTION = re.compile(r"^(?:how|where|what|which|who|why|when)(?:'?s)?\b", re.IGNORECASE)
#: a question typed without its question mark: a wh-word and then the verb that asks ("whats the
#: difference between …", "how do I …", "where is …"); "What we ship is …" states, and so does
#: "Which is why …" (so "which" is left out).
_UNMARKED_QUESTION = re.compile(
    r"^(?:what|how|where|when|why|who)(?:'?s|'re|\s+(?:is|are|was|were|do|does|did|can|could|should|"
    r"would|will|has|have))\b",
    re.IGNORECASE,
)


def _is_question(sentence: str) -> bool:
    """A question, with its question mark or without it ("whats the difference between X and Y")."""
    return sentence.rstrip().endswith("?") or _UNMARKED_QUESTION.match(sentence.lstrip()) is not None


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
#: endings cut before two words are compared, so that "configs" meets "config" and "failing" "fail".
_ENDINGS = ("ing", "ed", "es", "s")


def _stem(word: str) -> str:
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= ANSWER_WORD_MIN_CHARS:
            return word[: -len(ending)]
    return word


def _content_stems(text: str) -> set[str]:
    """The stems of the words of `text` that can name something (identifiers split at `_ . / -`)."""
    return {
        stem
        for word in _WORD_PART.findall(text.lower())
        if len(word) >= ANSWER_WORD_MIN_CHARS
        and not word.isdigit()
        and (stem := _stem(word)) not in _GENERIC_WORDS
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
    r"`(?:npm|pnpm|yarn|bun)\s+[\w-]+:[\w:-]+|"
    r"(?:^|\s)[#@][a-z][a-z0-9]*-[\w-]+|(?:^|\s)@[\w-]+/[\w-]+"  # a team's channel or handle
)


#: a change the reply reports having made, opening its clause ("Bumped it to 50", "Bumping it to 50
#: fixed the throughput"); "someone else changed the row" or "X was added in 3.8" describes the world.
_CHANGE_MADE = re.compile(
    r"(?:^|[.;:]\s+|\band\s+)(?:[A-Za-z]+ing\b[^.;]{0,80}?\s)?(?:fixed|changed|bumped|raised|lowered|"
    r"switched|removed|updated|renamed|pinned|restarted|redeployed|reverted)\b",
    re.IGNORECASE,
)


def _answers_from_general_knowledge(user: str, reply: str) -> bool:
    """A question about the world ("What's the difference between X and Y?") answered without a word
    about this repository: the question names no file and says nothing of "our"/"my"/"this repo",
    and the reply reports no action ("I …"), names no path and says nothing of "our"/"your repo"."""
    question = " ".join(_prose_units(user)).strip()
    asked = [_clean(s) for s in _sentences(question)]
    if not asked or not all(s.endswith("?") or _GENERAL_QUESTION.match(s) for s in asked if s):
        return False  # a statement or a task beside the question makes it about the project
    if _REQUEST.match(question) and not _ASKING_REQUEST.match(question):
        return False  # "Can you add X?" is a task; "Can you explain X?" asks
    asked_words = _KIND_OF_FILE.sub(" ", question.replace("`", " "))  # "a Dockerfile" is any Dockerfile
    if _OWN_WORDS.search(asked_words) or _PATH_TOKEN.search(asked_words):
        return False
    marked = _EXAMPLE.sub(" ", " ".join(_prose_units(reply)))
    prose = marked.replace("`", " ")
    return not (
        _ACTOR_WORDS.search(prose)
        or _PATH_TOKEN.search(prose)
        or _OWN_TASK.search(marked)
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
    if _TYPO.search(users[0]) and not _user_facts(_prose_units(users[0])):
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
        return None
    return sentence


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
            found = [(len(_SIGNALS) + 1, fact) for fact in user_facts]
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

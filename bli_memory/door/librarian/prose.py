"""Extraction's reading of a saved exchange: lines of prose, clean sentences, the pronoun rules. Pure.

Tags a tool wraps its output in, terminal control codes, speaker labels, bullets, headings, log
lines and code dumps go; a short fenced block after a line ending in ":" joins that line as inline
code (a command). Sentences are split without breaking abbreviations, versions, paths or code spans,
and cleaned: markdown emphasis and links unwrapped, filler and discourse openers dropped, a full stop
added. A pronoun is never replaced with a guessed subject: a sentence that leans on the one before
joins it, and only a demonstrative that says what it points at ("that folder") is replaced, when the
sentence before names exactly one such thing. The sizes every part of extraction shares live here.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bli_memory.door.librarian.tables import role_tables_as_prose

#: a fact longer than this is not atomic; it is dropped rather than cut mid-thought.
MAX_FACT_CHARS = 500
#: facts kept per saved text; the strongest signals win, original order is kept.
MAX_FACTS_PER_TEXT = 12
#: a fenced block with more non-empty lines than this is a code dump and is dropped whole; a shorter
#: one that follows a line ending in ":" is folded into that line as inline code (a command).
CODE_BLOCK_MAX_LINES = 3
#: a paragraph a fenced block interrupts and a leaning line continues ("… writes `out.json`:" + block +
#: "I copied it to …") grows to this at most: longer, it is a chain of blocks, not one thought (and
#: each block re-read it whole).
CONTINUED_PARAGRAPH_MAX_CHARS = 4 * MAX_FACT_CHARS
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
#: a list number inside the bold that opens a line ("**3. Summary email.** It goes …"): the number is
#: the item's, the bold its label's.
_BOLD_NUMBER = re.compile(r"^(\s*)\*\*(\d{1,3}[.)]\s+)(?=\S)")
#: a lead-in set in bold, its colon inside ("**Set the secret with this:**"): a lead-in like any other.
_BOLD_LEAD_IN = re.compile(r"^(\s*)\*\*([^*\n]+:)\*\*\s*$")
#: a Markdown heading, a numbered section title set in bold ("**1. Switch to v2**") or a line that is
#: all bold and no sentence ("**Postmark (config/runtime.exs, prod block)**", "**Tests**"): a title,
#: not a statement; what the section says follows it. A bold sentence ("**Never push to main.**") or
#: lead-in ("**Run this:**") is none.
_HEADING = re.compile(r"^\s*(?:#{1,6}\s|\*\*\d{1,3}[.)]\s[^*\n]+\*\*:?\s*$|\*\*[^*\n]*[^*.!?:\s]\*\*:?\s*$)")
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


#: a lead-in that ends on its verb, waiting for what the block is: "… and staging is:".
_LINK_ENDS = re.compile(r"\b(?:is|are|is now|are now)\s*:\s*$", re.IGNORECASE)
#: a block's first line that is only a comment naming a file: "# fly.staging.toml", "// src/app.ts".
_FILE_COMMENT = re.compile(r"^(?:#|//|--|;)\s*((?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{1,8})\s*$")


def _fold_code(lead_in: str, code_lines: list[str]) -> str:
    """Fold a short command block into the line that introduced it ("Run this:" + ``make dev``)."""
    spans = ", then ".join(f"`{c}`" for c in code_lines)
    head, sep, tail = lead_in.rstrip().rpartition(". ")
    last = tail if sep else lead_in.rstrip()
    last = last.rstrip(":").rstrip()
    # a function, not a template: the commands are data (`C:\Tools`, `grep -E '\d+'` hold backslashes)
    folded, count = _LEAD_IN_PRONOUN.subn(lambda _: spans, last, count=1)
    if not count:
        folded = f"{last}: {spans}"
    return f"{head}{sep}{folded}." if sep else f"{folded}."


def _prose_units(text: str) -> list[str]:
    """Split the exchange into prose units (a line or a bullet), dropping code, noise and markup."""
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = role_tables_as_prose(_drop_tagged_blocks(text))
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
                prompted = _prompted_commands(fence_lang, body, lead_in)
                if lead_in_index is not None and prompted:
                    # "the exact command to run locally:" + `$ cargo clippy …` and its output: the commands
                    units[lead_in_index] = _fold_code(units[lead_in_index], prompted)
                elif (lead_in_index is not None or opening_block) and _is_command_block(
                    fence_lang, body, lead_in
                ):
                    if fence_lang in _SHELL_LANGS:
                        body = [re.sub(r"^(?:\$|>)\s+", "", ln) for ln in body]
                    if lead_in_index is not None:
                        units[lead_in_index] = _fold_code(units[lead_in_index], body)
                    elif fence_lang in _SHELL_LANGS:
                        commands = ", then ".join(f"`{line}`" for line in body) + "."
                elif (
                    lead_in_index is not None
                    and body
                    and _LINK_ENDS.search(lead_in)
                    and (named := _FILE_COMMENT.match(body[0]))
                ):
                    # "… and staging is:" + a block whose first line names its file: the file is what it is
                    head = units[lead_in_index].rstrip().rstrip(":").rstrip()
                    units[lead_in_index] = f"{head} `{named.group(1)}`."
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
        line = _BOLD_NUMBER.sub(r"\1\2**", line, count=1)  # "**3. Email.** It …" -> "3. **Email.** It …"
        line = _BOLD_LEAD_IN.sub(r"\1\2", line, count=1)  # "**Set it with this:**" leads what follows
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
        elif (
            block_lead_in is not None
            and not bullet
            and len(units[block_lead_in]) + len(content) < CONTINUED_PARAGRAPH_MAX_CHARS
            and _opens_leaning(content)
        ):
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


#: a shell prompt opening a line of a terminal session: what follows it is a command, the rest its output.
_PROMPT = re.compile(r"^\$\s+(?=\S)")


def _prompted_commands(lang: str, body: list[str], lead_in: str) -> list[str]:
    """The commands of a terminal session shown after a lead-in ("Production is a manual step:" +
    ``$ pulumi up --stack prod`` and what it printed): the lines a ``$`` prompt opens, at most
    :data:`CODE_BLOCK_MAX_LINES` of them, without their output. A session introduced as a report of
    what was run ("Ran the suite:") gives none, nor one whose commands hold backticks or run long."""
    if lang not in _SHELL_LANGS or _REPORT_LEAD_IN.match(lead_in):
        return []
    commands = [_PROMPT.sub("", line) for line in body if _PROMPT.match(line)]
    if len(commands) == len(body) or not 0 < len(commands) <= CODE_BLOCK_MAX_LINES:
        return []  # a block of commands alone is the short block's (``_is_command_block``)
    if any("`" in command or len(command) > 200 for command in commands):
        return []
    return commands


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


#: `**bold**` anywhere, `__bold__` only between non-word characters and around more than one word: as
#: in CommonMark, the underscores inside `orders__shopify__daily` are part of the name, and `__init__`
#: in a coding chat is Python's name, not emphasis. The text inside never crosses another marker, so each
#: opening marker reads on to the next one at most.
_MARKDOWN_EMPHASIS = re.compile(
    r"\*\*(?=\S)((?:(?!\*\*).)+?)(?<=\S)\*\*|(?<!\w)__(?=\S)(?!\w+__(?!\w))((?:(?!__).)+?)(?<=\S)__(?!\w)"
)
#: a link's text and address hold no `[` (from each `[` of a run the rest of the text was read again)
_LINK = re.compile(r"\[([^\[\]]+)\]\((https?://[^)\s\[]+)\)")
_LEADING_JUNK = re.compile(r"^[^\w`\"'(~./\[]+")
_DISCOURSE = re.compile(
    r"^(?:(?:so|and|but|also|then|now|actually|anyway|btw|by the way|fyi|note that|note|remember that|heads up that|"
    r"remember|important|just so you know|for the record)\b[\s,:;–—-]*|"
    r"(?:ok|okay|alright|right|yes|yeah|yep|no|nope|great|perfect|awesome|excellent|nice|cool|sure|"
    r"certainly|absolutely|of course|got it|understood|sounds good|makes sense|good|done|noted|thanks|"
    r"thank you|found it|found the (?:cause|culprit|bug|problem)|root cause found|fixed|updated|migrated|"
    r"ported|changes|changed|first(?:ly)?|second(?:ly)?|third(?:ly)?|finally|lastly|heads up)\s*[,.:;!–—-]+\s*)",
    re.IGNORECASE,
)
_GREETING_OR_FILLER = re.compile(
    r"^(?:hi|hello|hey|howdy|good (?:morning|afternoon|evening)|thanks|thank you|thx|cheers|sure|"
    r"certainly|absolutely|of course|great|perfect|awesome|excellent|nice|cool|amazing|brilliant|fantastic|"
    r"wonderful|lovely|ok|okay|alright|got it|understood|sounds good|no problem|you're welcome|you are welcome|"
    r"happy to help|done|yes|yep|"
    # "No, …", "No problem": an answer; "No unittest TestCase classes in this repo": a rule
    r"no(?=\s*$|[,.!;:]|\s+(?:problems?|worries|need|luck|idea|thanks|way|wait|rush|hurry|pressure|changes?|"
    r"issues?|errors|hits|matches|output|diff|longer|more|one)\b)|"
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
    r"^(?:please|can you|could you|would you|will you|can u|could u|help me|i need you to|i want you to|"
    r"i'd like you to|i would like you to|go ahead and|try to|try)\b[\s,]*",
    re.IGNORECASE,
)
_STANDING_ORDER = re.compile(
    r"\b(?:always|never|from now on|going forward|in future|in the future|don't|do not|prefer|"
    r"make sure to|remember to)\b",
    re.IGNORECASE,
)
_CONTEXT_DEPENDENT = re.compile(
    # "above"/"below" point at other text, but not before a number: "below 15% battery" is a bound
    r"\b(?:(?:above|below)(?!\s+~?\d)|the following|as (?:mentioned|discussed|shown|noted)|shown here|see here|"
    r"the previous|earlier|just now|right now|for now|this session|this conversation|accordingly|"
    r"as requested|the same (?:way|thing|as before)|this time|since the last|last run|"
    r"line \d+|lines \d+|typos?|misspel\w*|no (?:other )?(?:hits|matches|diff|changes)|working tree|nothing (?:new )?to commit|"
    r"tonight|tomorrow|until then|the next deploy|this (?:morning|afternoon|evening))\b",
    re.IGNORECASE,
)


#: a comma between two clauses.
_CLAUSE_COMMA = re.compile(r",\s")
#: the fewest words a clause kept alone has.
HELD_NOW_MIN_WORDS = 4


def _holds_now(clause: str) -> bool:
    """Whether a clause ends by giving a value that holds now: "it's https://gtfs.example/v2 now"
    (a URL, a code span or a token with a digit, then "now"), "the default is now 3.2"."""
    words = clause.split()
    if len(words) >= 2 and words[-1].lower() == "now":
        value = words[-2]
        return "://" in value or value.endswith("`") or any(ch.isdigit() for ch in value)
    return len(words) >= 3 and words[-3].lower() in ("is", "are") and words[-2].lower() == "now"


def held_now(sentence: str) -> str | None:
    """The sentence up to the clause that binds it to the moment, when what comes before gives a value
    that holds now: the moment says when it changed, not that the sentence is the moment's ("it's
    https://gtfs.example/v2 now, old one is switched off as of this morning"). None otherwise."""
    for cut in reversed(list(_CLAUSE_COMMA.finditer(sentence))):
        head = sentence[: cut.start()].rstrip()
        if (
            not _CONTEXT_DEPENDENT.search(head)
            and _holds_now(head)
            and len(head.split()) >= HELD_NOW_MIN_WORDS
        ):
            return f"{head}."
    return None


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


def _emphasised(match: re.Match[str]) -> str:
    return match.group(1) if match.group(1) is not None else match.group(2)


def _clean(sentence: str) -> str:
    """Strip markdown, leading glyphs and discourse markers; the wording itself is kept."""
    sentence = _outside_code(
        sentence, lambda prose: _LINK.sub(r"\1 (\2)", _MARKDOWN_EMPHASIS.sub(_emphasised, prose))
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
#: the pointers a sentence may open on when it leans on the one before it ("They want …", "It's …"):
#: read as a pattern's alternatives, each then ends a word ("it's" opens on "it").
POINTER_OPENERS = "it|this|that|these|those|they"
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


#: the punctuation a token may carry at its edges: "(it", "file,", "\"done\"".
_EDGE_PUNCTUATION = ".,;:!?()[]{}\"'"


def _bare(token: str) -> str:
    return token.strip(_EDGE_PUNCTUATION).lower()


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
    named = named_before = False  # named_before: before the previous word
    for index, token in enumerate(tokens):
        word = _bare(token)
        if index == 0 and word in _IMPERATIVES:
            continue  # "Pin it back": the verb of an instruction names nothing
        if word in {"one", "ones"} and index > 0 and _bare(tokens[index - 1]) in _ONE_OF_KIND:
            if not named_before:
                return True  # "The new one is …": one of a kind named before the sentence
            continue
        named_before = named
        if _is_acronym_it(token, sentence):
            named = True  # "IT moved the database to …": the IT department, not a pointer
            continue
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


def _is_acronym_it(token: str, sentence: str) -> bool:
    """Whether `token` is "IT" written as the acronym (the IT department) rather than the pronoun:
    in capitals inside a sentence that is not written all in capitals."""
    return token.strip(_EDGE_PUNCTUATION) == "IT" and not sentence.isupper()


#: the words that make "one" stand for a thing of a kind named elsewhere ("the new one", "the other one").
_ONE_OF_KIND = frozenset("new old other previous current same first second last".split())


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
# questions
# =====================================================================================================

_WH_QUESTION = re.compile(r"^(?:how|where|what|which|who|why|when)(?:'?s)?\b", re.IGNORECASE)
#: a question typed without its question mark: a wh-word and then the verb that asks ("whats the
#: difference between …", "how do I …", "where is …"); "What we ship is …" states, and so does
#: "Which is why …" (so "which" is left out).
_UNMARKED_QUESTION = re.compile(
    # (a spoken lead may come first: "like when do i need it", "so how does it pick one")
    r"^(?:(?:like|so|and|also|basically|or)\s+)?"
    r"(?:what|how|where|when|why|who)(?:'?s|'re|\s+(?:is|are|was|were|do|does|did|can|could|should|"
    r"would|will|has|have))\b",
    re.IGNORECASE,
)


def _is_question(sentence: str) -> bool:
    """A question, with its question mark or without it ("whats the difference between X and Y")."""
    return sentence.rstrip().endswith("?") or _UNMARKED_QUESTION.match(sentence.lstrip()) is not None

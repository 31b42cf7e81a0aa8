"""Cut a recalled row to the sentences that bear on the prompt (pure, deterministic, standard library).

The recall block is read by the model before every answer, so it must be short, and a stored exchange
(a whole turn, up to a few KB) shown by its first characters is mostly the question it answered. So a
row is split into units — sentences, and whole lines for bullets, table rows and each fenced code
block — and each unit is scored against the prompt's words: a word the prompt and the unit share
counts 1 (lower case, a plural `s` stripped, common function words ignored), an identifier the prompt
names (`trivial.identifiers`: snake_case, CamelCase, a path, a version, a ticket) counts
IDENTIFIER_WEIGHT when the unit holds it. The best units are kept, in their original order, while
they fit the row's budget; `" … "` marks text left out. A row where no unit shares a word with the
prompt keeps its first unit, so every row shown still says what it is about.

No `re`, no imports at all beyond `trivial` (itself import-free): this runs on the prompt hook's
recall path, where every millisecond of import is paid on every prompt.
"""

from __future__ import annotations

from bli_memory.hooks.trivial import identifiers, normalise

#: an identifier of the prompt found in a unit outweighs this many shared plain words: a name such as
#: `PHX_HOST` or `v0.2.83` picks the sentence out, where "the" or "config" could be anywhere
IDENTIFIER_WEIGHT = 3
ELLIPSIS = " … "
#: room left in a row's budget worth beginning one more unit in
PARTIAL_MIN_CHARS = 30
#: words too common to say that a sentence bears on the prompt
STOPWORDS = frozenset(
    """a an the and or but if then so of to in on at by for from with without into onto over under
    about as is are was were be been being am do does did done doing have has had having can could
    will would shall should may might must not no yes it its it's this that these those there here
    i me my we us our you your he she they them their his her what which who whom whose when where
    why how all any some each every more most other such only own same than too very just also
    again once up down out off via per get got use used using make made one two new now""".split()
)
#: a token ending in a full stop that does not end a sentence
_ABBREVIATIONS = frozenset({"e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "fig.", "mr.", "ms.", "dr."})
_SENTENCE_ENDS = (".", "?", "!")
_CLOSERS = "\"')]*`”’"


def stem(word: str) -> str:
    """The tiniest stemmer: a plural `s` off (`hosts` → `host`), not `ss`, `us` or `is`."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> set[str]:
    """The stemmed, lower-cased words of `text` that may carry meaning (stopwords and 1-letter out)."""
    return {stem(word) for word in normalise(text).split() if len(word) > 1 and word not in STOPWORDS}


def _is_bullet(line: str) -> bool:
    """`- x`, `* x`, `+ x`, `• x`, `1. x`, `2) x`, or a table row `| a | b |`."""
    if line.startswith(("- ", "* ", "+ ", "• ", "|")):
        return True
    head, _, rest = line.partition(" ")
    return bool(rest) and len(head) >= 2 and head[:-1].isdigit() and head[-1] in ".)"


def _ends_sentence(token: str) -> bool:
    word = token.rstrip(_CLOSERS)
    if not word.endswith(_SENTENCE_ENDS) or word.lower() in _ABBREVIATIONS:
        return False
    return len(word) > 2 or not word[:1].isalpha()  # "A." of an initial, "U.S." excepted


def sentences(line: str) -> list[str]:
    """A line split after `.`, `?` or `!` followed by a space, outside `code spans` (a path such as
    `foo.py` or a version `0.2.83` has no space after its dot, so it is never a boundary)."""
    out: list[str] = []
    current: list[str] = []
    in_code = False
    for token in line.split(" "):
        current.append(token)
        in_code ^= token.count("`") % 2 == 1
        if not in_code and _ends_sentence(token):
            out.append(" ".join(current).strip())
            current = []
    if current and " ".join(current).strip():
        out.append(" ".join(current).strip())
    return [sentence for sentence in out if sentence]


def units(text: str) -> list[str]:
    """`text` as the pieces an excerpt keeps or leaves out: each fenced code block whole, each bullet
    or table line whole, and every other line split into sentences. Blank lines separate only."""
    out: list[str] = []
    fence: list[str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if fence is not None:
            fence.append(line)
            if line.startswith("```"):
                out.append(" ".join(part for part in fence if part))
                fence = None
        elif line.startswith("```"):
            fence = [line]
        elif not line:
            continue
        elif _is_bullet(line):
            out.append(" ".join(line.split()))
        else:
            out += [" ".join(sentence.split()) for sentence in sentences(line)]
    if fence is not None:  # a fence never closed: what there is of it is still one unit
        out.append(" ".join(part for part in fence if part))
    return out


class Prompt:
    """The prompt's words and identifiers, computed once and scored against every unit of every row."""

    __slots__ = ("names", "words")

    def __init__(self, prompt: str) -> None:
        self.words = words(prompt)
        self.names = [name.lower() for name in identifiers(prompt)]

    def score(self, unit: str) -> int:
        """Shared words count 1 each, identifiers of the prompt the unit contains IDENTIFIER_WEIGHT."""
        lowered = unit.lower()
        named = sum(IDENTIFIER_WEIGHT for name in self.names if name in lowered)
        return len(self.words & words(unit)) + named


def _is_question(unit: str) -> bool:
    return unit.rstrip(_CLOSERS).endswith("?")


def answer_scores(pieces: list[str], prompt: Prompt) -> list[int]:
    """Each unit's score, where a question answers nothing: its score goes to the unit after it.

    A later prompt is most often the same question asked again, in other words; it shares most with
    the question a stored turn (or a fact that kept it) starts with, and the answer is what follows."""
    scores: list[int] = []
    carried = 0
    for piece in pieces:
        score = prompt.score(piece) + carried
        if _is_question(piece):
            scores.append(0)
            carried = score
        else:
            scores.append(score)
            carried = 0
    return scores


def _window(unit: str, limit: int, prompt: Prompt) -> tuple[int, int]:
    """(start, end) of at most `limit` characters of a long unit: from a word boundary shortly before
    the first word or identifier of the prompt in it (or from its start)."""
    lowered = unit.lower()
    hits = [lowered.find(name) for name in prompt.names] + [lowered.find(word) for word in prompt.words]
    first = min((at for at in hits if at >= 0), default=0)
    start = max(0, min(first - limit // 4, len(unit) - limit))
    if start > 0:
        start = unit.rfind(" ", 0, start) + 1
    return start, min(len(unit), start + limit)


def excerpt(text: str, prompt: Prompt, limit: int) -> str:
    """`text` cut to the units that bear on `prompt`, in their order, in at most `limit` characters.

    Units are taken best score first (`answer_scores`; the earlier one on a tie) while they fit; a
    unit scoring 0 is not taken, unless none scores anything, when the first unit is. Room left
    after them begins the unit that follows the last one taken. A best unit longer than `limit` is
    shown by a window of it. `" … "` marks text left out, `…` a unit cut."""
    pieces = units(text)
    flat = " ".join(pieces)
    if len(flat) <= limit:
        return flat
    scores = answer_scores(pieces, prompt)
    ranked = sorted((i for i, score in enumerate(scores) if score > 0), key=lambda i: (-scores[i], i))
    best = ranked[0] if ranked else 0
    if len(_join(pieces, [best])) > limit:
        return _clipped(pieces, best, limit, prompt)
    chosen: list[int] = []
    for index in ranked or [best]:
        trial = sorted([*chosen, index])
        if len(_join(pieces, trial)) <= limit:
            chosen = trial
    return _begin_next(pieces, chosen, limit)


def _begin_next(pieces: list[str], chosen: list[int], limit: int) -> str:
    """The chosen units joined, and the room left, when worth it, given to the head of the unit after
    the last one chosen, cut at a word: a long answer after what it answers is still begun."""
    joined = _join(pieces, chosen)
    after = chosen[-1] + 1
    room = limit - len(joined)
    if after >= len(pieces) or room < PARTIAL_MIN_CHARS:
        return joined
    head = pieces[after][: room - 3]
    head = head[: head.rfind(" ")] if " " in head else head
    begun = [*pieces[:after], head + "…", *pieces[after + 1 :]]
    out = _join(begun, [*chosen, after])
    return out if len(out) <= limit else joined


def _join(pieces: list[str], chosen: list[int]) -> str:
    """The chosen pieces in order, `" … "` between pieces that are not neighbours, and at either end
    where the text goes on (a piece already cut ends in `…` of its own)."""
    out = "… " if chosen and chosen[0] > 0 else ""
    for position, index in enumerate(chosen):
        if position:
            out += " " if index == chosen[position - 1] + 1 else ELLIPSIS
        out += pieces[index]
    if chosen and chosen[-1] < len(pieces) - 1 and not out.endswith("…"):
        out += " …"
    return out


def _clipped(pieces: list[str], index: int, limit: int, prompt: Prompt) -> str:
    """One unit too long for `limit`, shown by a window of it, `…` where text goes on either side."""
    unit = pieces[index]
    start, end = _window(unit, limit - 4, prompt)
    before = "… " if start > 0 or index > 0 else ""
    after = " …" if end < len(unit) or index < len(pieces) - 1 else ""
    return before + unit[start:end].strip() + after

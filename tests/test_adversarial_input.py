"""Every regular expression that reads untrusted text stays linear on 100 KB built against it.

Python's `re` has no timeout: a pattern that rescans a run from each of its starts turns a long run
into minutes (85 KB of `<system-reminder>` cost the librarian 2.2 s, a 12 KB heading line cost the
instruction importer 476 s). This module inventories the compiled patterns of every module that
reads what a person, a transcript, a model or an imported file wrote, builds hostile input for each
from its own parse tree, and bounds the CPU each costs. It fails when a module gains a pattern that
is neither driven here nor listed, with a reason, as reading nothing untrusted; and when a module
starts using `re` without being listed at all.

The shapes, each filled to 100 KB: the pattern's opening literal (every prefix of a string it
matches) repeated, that opening before a long run of what the next quantifier takes (with and
without a character that ends it badly), runs of every character any quantifier takes and of a word
character with another (`a.a.a.`, a word boundary at every other character), and whole matches back
to back. Each case is run first at 1 KB and 10 KB (a cubic pattern shows at the first, a quadratic
one at the second, within a second instead of hanging at 100 KB), then at 100 KB. The public entry points (extracting a job,
reading a question, importing a file, redacting a text) are driven with 100 KB too.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import re
import sys
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO

#: the parser of `re` (`re._parser` since 3.11, `sre_parse` before), read for each pattern's tree
_NEW_RE = sys.version_info >= (3, 11)
sre_parse: Any = importlib.import_module("re._parser" if _NEW_RE else "sre_parse")
sre_constants: Any = importlib.import_module("re._constants" if _NEW_RE else "sre_constants")

HOSTILE_CHARS = 100 * 1024
#: each case is first run at these sizes, under these CPU bounds: a cubic pattern shows at 1 KB (the
#: heading rule took 1.2 s there) and a quadratic one at 10 KB, instead of hanging at 100 KB
PROBES = ((1024, 0.1), (10 * 1024, 0.3))
#: CPU seconds for one hostile case: a linear pattern takes a few ms at 100 KB on a slow machine; a
#: quadratic one takes seconds at 10 KB already and minutes at 100 KB.
MAX_CASE_CPU_S = 1.5
#: CPU seconds for one call of a public entry point on 100 KB (each runs dozens of patterns).
MAX_ENTRY_CPU_S = 5.0

PACKAGE = REPO / "bli_memory"

#: the modules whose patterns read untrusted text: what they read.
DRIVEN_MODULES = {
    "bli_memory.door.librarian.extract": "a saved exchange (a transcript's turns, a tool's output)",
    "bli_memory.door.librarian.prose": "a saved exchange's turns, cut into lines and sentences",
    "bli_memory.door.librarian.signals": "each sentence of a saved exchange",
    "bli_memory.door.librarian.voice": "each sentence of a saved exchange's turns",
    "bli_memory.door.librarian.lasting": "the facts extraction or a model proposes",
    "bli_memory.door.librarian.reconcile": "a new fact and the memories close to it",
    "bli_memory.door.librarian.corrections": "a new fact and the memories close to it",
    "bli_memory.door.librarian.values": "a new fact and the memories close to it",
    "bli_memory.door.librarian.roles": "a new fact and the memories close to it",
    "bli_memory.door.librarian.moves": "a new fact and the memories close to it",
    "bli_memory.door.librarian.retiring": "a new fact and the memories close to it",
    "bli_memory.door.librarian.nearest": "a new fact and the memories close to it",
    "bli_memory.door.librarian.schedules": "a new fact and the memories close to it, each sentence of an exchange",
    "bli_memory.door.librarian.slots": "each line and sentence of a saved exchange, and the memories it finds",
    "bli_memory.door.librarian.words": "every fact's words",
    "bli_memory.door.librarian.tables": "a saved exchange's text, its tables read as sentences",
    "bli_memory.door.librarian.diffs": "a saved exchange's text, its diffs read as changed values",
    "bli_memory.door.librarian.llm": "a model's answer",
    "bli_memory.door.librarian.anchors": "the saved exchanges and facts of a space, for the briefing",
    "bli_memory.door.answer_kind": "a search query and the memories it finds",
    "bli_memory.door.keyword": "every memory's text and every query",
    "bli_memory.door.exchanges": "an exchange and the facts cut out of it",
    "bli_memory.door.rewrite": "a query and a model's rewrite of it",
    "bli_memory.door.migrate": "a database URL's error text (masked before it is shown)",
    "bli_memory.importers.instructions": "an imported CLAUDE.md/AGENTS.md",
    "bli_memory.importers.records": "an imported JSON export",
    "bli_memory.install.edits": "a settings.json that other tools also write",
    "bli_memory.install.plugin_state": "the names of the version folders in Codex's plugin cache",
}
#: modules that use `re` on nothing untrusted, or whose patterns another test drives: why.
OTHER_MODULES = {
    "bli_memory.redact": "tests/client/test_redact_linear.py drives every rule with 100 KB; redact() is driven below",
    "bli_memory.redact_judge": "judges the values redact.py found (bounded by its caps); driven through redact() below",
    "bli_memory.door.snapshots": "names of the door's own files in its own index folder",
    "bli_memory.commands.exporting": "names of the export's own temporary files beside its output",
    "bli_memory.space.gitconfig": "a glob from the person's own git config, matched against their own folder",
    "bli_memory.tools": "a tool's own schema pattern (ours), matched against an argument",
}
#: patterns built at run time, from what: (module, function) -> why they stay linear.
DYNAMIC_PATTERNS = {
    (
        "bli_memory.door.exchanges",
        "cut_fact",
    ): "the fact's words, escaped, joined by \\s+: literals between runs of space",
    ("bli_memory.door.librarian.reconcile", "_replaced"): "one escaped literal between look-arounds",
    ("bli_memory.door.librarian.schedules", "moved_in"): "one escaped literal between look-arounds",
    ("bli_memory.door.librarian.slots", "_holder_near"): "one escaped word between look-arounds",
    ("bli_memory.door.librarian.slots", "_people"): "one capitalised word of letters between look-arounds",
    ("bli_memory.door.librarian.slots", "_named_in"): "one escaped literal between look-arounds",
    ("bli_memory.door.librarian.slots", "with_value_moved"): "one escaped literal between look-arounds",
    ("bli_memory.door.librarian.retiring", "mentions"): "one escaped literal between look-arounds",
    ("bli_memory.door.librarian.reconcile", "_nearest_changed"): "one escaped literal between look-arounds",
    ("bli_memory.door.librarian.corrections", "restated"): (
        "one escaped literal between look-arounds, a first name then at most one capitalised word"
    ),
    ("bli_memory.door.librarian.roles", "departed_holder"): "one escaped name between word boundaries",
    ("bli_memory.door.librarian.corrections", "_mention"): "one escaped literal between look-arounds",
    ("bli_memory.door.librarian.corrections", "_same_setting"): (
        "a setting's name read from its first character only, then one escaped literal"
    ),
    ("bli_memory.door.librarian.corrections", "_told_by_name"): (
        "one escaped number and one escaped word of letters between look-arounds"
    ),
    ("bli_memory.door.librarian.corrections", "_port_at"): "one escaped number between look-arounds",
    ("bli_memory.door.librarian.nearest", "_word_after"): "one escaped number between look-arounds",
    ("bli_memory.door.librarian.nearest", "_number_mentions"): "one escaped number between look-arounds",
    (
        "bli_memory.door.librarian.prose",
        "_sentences",
    ): "a constant: \\x00 digits \\x00 (the splitter's own marks)",
    (
        "bli_memory.door.librarian.voice",
        "_actions",
    ): "a constant: \\x00 digits \\x00 (the splitter's own marks)",
    (
        "bli_memory.door.answer_kind",
        "_pattern",
    ): "its patterns are the module's constants, collected from the closures",
    (
        "bli_memory.importers.records",
        "keyed_array",
    ): "one escaped key, then \\s*:\\s*\\[ (driven below by keyed_array itself)",
}
#: compiled patterns of a driven module that read nothing untrusted: name -> why.
NOT_UNTRUSTED: dict[str, str] = {}

_RE_CALLS = {"compile", "search", "match", "fullmatch", "sub", "subn", "findall", "finditer", "split"}
_CANDIDATES = "a ZA0_-./:`<>\n\t@#*[](){}'\"=,;!?$%^&~|\\+é"


# ---------------------------------------------------------------------------- the inventory


def _uses_re(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return any(
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "re"
        and node.attr in _RE_CALLS
        for node in ast.walk(tree)
    )


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def _walk(value: Any, name: str, out: dict[str, re.Pattern[str]], seen: set[int]) -> None:
    """Every compiled pattern reachable from a module's global: in tuples, lists, dicts, dataclass
    fields and the closures of the module's own functions (answer_kind's `_pattern`)."""
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, re.Pattern):
        out[name] = value
    elif isinstance(value, (tuple, list)):
        for index, item in enumerate(value):
            _walk(item, f"{name}[{index}]", out, seen)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, f"{name}[{key!r}]", out, seen)
    elif isinstance(value, types.FunctionType) and value.__module__.startswith("bli_memory"):
        for cell, var in zip(value.__closure__ or (), value.__code__.co_freevars, strict=True):
            try:
                _walk(cell.cell_contents, f"{name}.<{var}>", out, seen)
            except ValueError:  # an empty cell
                continue
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            _walk(getattr(value, item.name), f"{name}.{item.name}", out, seen)


def _inline_calls(module: str) -> Iterator[tuple[str, ast.Call]]:
    """(enclosing function, call) for every `re.<fn>(...)` inside a function of `module`."""
    tree = ast.parse((REPO / (module.replace(".", "/") + ".py")).read_text())
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.func.attr in _RE_CALLS
            ):
                yield function.name, node


def _methods_used(module: str) -> dict[str, set[str]]:
    """Global name -> the pattern methods the module calls on it (`_HEADING.match` -> {"match"})."""
    tree = ast.parse((REPO / (module.replace(".", "/") + ".py")).read_text())
    used: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            used.setdefault(node.value.id, set()).add(node.attr)
    return used


@dataclasses.dataclass(frozen=True)
class Driven:
    name: str
    pattern: re.Pattern[str]
    #: how the code applies it: `search` (anywhere: search, finditer, sub …) or `match` (anchored)
    how: str


def inventory() -> list[Driven]:
    """Every pattern of the driven modules: module-level (reachable from a global) and inline literals."""
    found: list[Driven] = []
    for module in DRIVEN_MODULES:
        loaded = importlib.import_module(module)
        patterns: dict[str, re.Pattern[str]] = {}
        seen: set[int] = set()
        for name, value in vars(loaded).items():
            _walk(value, name, patterns, seen)
        used = _methods_used(module)
        short = module.rsplit(".", 1)[1]
        for name, pattern in patterns.items():
            if f"{short}.{name}" in NOT_UNTRUSTED:
                continue
            methods = used.get(name, set()) & {
                "search",
                "match",
                "fullmatch",
                "sub",
                "subn",
                "findall",
                "finditer",
                "split",
            }
            how = "match" if methods and methods <= {"match", "fullmatch"} else "search"
            found.append(Driven(f"{short}.{name}", pattern, how))
        for function, call in _inline_calls(module):
            first = call.args[0] if call.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                how = "match" if call.func.attr in ("match", "fullmatch") else "search"  # type: ignore[attr-defined]
                found.append(Driven(f"{short}.{function}:{first.value!r}", re.compile(first.value), how))
    return found


def test_every_module_that_uses_re_is_driven_or_says_why_not() -> None:
    using = {_module_name(path) for path in PACKAGE.rglob("*.py") if _uses_re(path)}
    unlisted = sorted(using - set(DRIVEN_MODULES) - set(OTHER_MODULES))
    assert not unlisted, f"modules using `re` that this test neither drives nor exempts: {unlisted}"
    gone = sorted(set(DRIVEN_MODULES) - using)
    assert not gone, f"driven modules that no longer use `re`: {gone}"


def test_every_pattern_built_at_run_time_is_listed_with_a_reason() -> None:
    dynamic = {
        (module, function)
        for module in DRIVEN_MODULES
        for function, call in _inline_calls(module)
        if not (call.args and isinstance(call.args[0], ast.Constant))
    }
    assert dynamic == set(DYNAMIC_PATTERNS), sorted(dynamic ^ set(DYNAMIC_PATTERNS))


def test_the_inventory_reaches_the_patterns_inside_tables_and_closures() -> None:
    names = {driven.name for driven in inventory()}
    assert {
        "prose._TAG_OPEN",
        "prose._TAG_CLOSE",
        "instructions._HEADING",
        "words._CONTRACTIONS[0][0]",
    } <= names
    assert any(name.startswith("answer_kind.KINDS[") and "<compiled>" in name for name in names)
    assert len(names) > 150


# ---------------------------------------------------------------------------- hostile shapes


def _in_set(items: list[tuple[Any, Any]], char: str) -> bool:
    hit = negate = False
    categories = {
        sre_constants.CATEGORY_DIGIT: char.isdigit(),
        sre_constants.CATEGORY_NOT_DIGIT: not char.isdigit(),
        sre_constants.CATEGORY_SPACE: char.isspace(),
        sre_constants.CATEGORY_NOT_SPACE: not char.isspace(),
        sre_constants.CATEGORY_WORD: char.isalnum() or char == "_",
        sre_constants.CATEGORY_NOT_WORD: not (char.isalnum() or char == "_"),
    }
    for op, arg in items:
        if op is sre_constants.NEGATE:
            negate = True
        elif op is sre_constants.LITERAL:
            hit |= ord(char) == arg
        elif op is sre_constants.RANGE:
            hit |= arg[0] <= ord(char) <= arg[1]
        elif op is sre_constants.CATEGORY:
            hit |= categories.get(arg, False)
    return hit != negate


def _chars_of(op: Any, arg: Any) -> list[str]:
    """Up to four characters one item of a parse tree takes."""
    if op is sre_constants.LITERAL:
        return [chr(arg)]
    if op is sre_constants.NOT_LITERAL:
        return [c for c in _CANDIDATES if ord(c) != arg][:3]
    if op is sre_constants.ANY:
        return ["a", " "]
    if op is sre_constants.IN:
        return [c for c in _CANDIDATES if _in_set(arg, c)][:4] or ["a"]
    return []


_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")


def _sample(items: Any, choice: int, groups: dict[int, str]) -> str:
    """A string the parse tree matches (or nearly), taking branch `choice` of every alternation."""
    out: list[str] = []
    for op, arg in items:
        name = str(op)
        chars = _chars_of(op, arg)
        if chars:
            out.append(chars[choice % len(chars)])
        elif name in _REPEATS:
            low, high, sub = arg
            count = max(low, 2) if high == sre_constants.MAXREPEAT else min(max(low, 2), high)
            out.append("".join(_sample(sub, choice, groups) for _ in range(count)))
        elif name == "SUBPATTERN":
            text = _sample(arg[3], choice, groups)
            groups[arg[0]] = text
            out.append(text)
        elif name == "ATOMIC_GROUP":
            out.append(_sample(arg, choice, groups))
        elif name == "BRANCH":
            out.append(_sample(arg[1][choice % len(arg[1])], choice, groups))
        elif name == "GROUPREF":
            out.append(groups.get(arg, ""))
    return "".join(out)


def _run_chars(items: Any, found: set[str]) -> None:
    """The characters every quantifier (and every literal) of the tree takes."""
    for op, arg in items:
        name = str(op)
        if name in _REPEATS:
            _run_chars(arg[2], found)
        elif name == "SUBPATTERN":
            _run_chars(arg[3], found)
        elif name == "ATOMIC_GROUP":
            _run_chars(arg, found)
        elif name == "BRANCH":
            for alternative in arg[1]:
                _run_chars(alternative, found)
        elif name in ("ASSERT", "ASSERT_NOT"):
            _run_chars(arg[1], found)
        else:
            found.update(_chars_of(op, arg))


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def hostile_shapes(pattern: re.Pattern[str], size: int) -> dict[str, str]:
    """Texts of `size` characters built against `pattern` (see the module's docstring)."""
    tree = list(sre_parse.parse(pattern.pattern, pattern.flags))
    shapes: dict[str, str] = {}
    for sample in {_sample(tree, choice, {}) for choice in range(4)} - {""}:
        shapes[f"matches {sample[:24]!r}"] = _fill(sample, size)
        for cut in sorted({1, len(sample) // 2, len(sample) - 1}):
            if not 0 < cut < len(sample):
                continue
            opening, next_char = sample[:cut], sample[cut]
            shapes[f"opening {opening[:24]!r}"] = _fill(opening, size)
            shapes[f"opening {opening[:24]!r} + spaces"] = _fill(opening + " ", size)
            shapes[f"opening {opening[:24]!r} + run of {next_char!r}"] = opening + _fill(
                next_char, size - cut
            )
            for stop in ("\x00", "\n"):
                run = _fill(next_char, size - cut - 1)
                shapes[f"opening {opening[:24]!r} + run of {next_char!r} + {stop!r}"] = opening + run + stop
    found: set[str] = set()
    _run_chars(tree, found)
    for char in sorted(found):
        shapes[f"run of {char!r}"] = _fill(char, size)
    # a word character and another, repeated: a word boundary every other character (`a.a.a.`),
    # where a pattern opening at `\b` starts again and again
    word = sorted(c for c in found if c.isalnum() or c == "_")[:3]
    other = sorted(c for c in found if not (c.isalnum() or c == "_"))[:4]
    for first in word:
        for second in other:
            shapes[f"run of {first + second!r}"] = _fill(first + second, size)
    return shapes


def _cpu(run: Callable[..., object], *args: Any) -> float:
    started = time.process_time()
    run(*args)
    return time.process_time() - started


def _apply(driven: Driven, text: str) -> None:
    if driven.how == "match":
        driven.pattern.match(text)
    else:
        for _ in driven.pattern.finditer(text):
            pass


def _drive(driven: Driven) -> float:
    """The slowest case of one pattern at 100 KB, after each passed its probes at 1 and 10 KB."""
    slowest = 0.0
    probes = [(size, bound, hostile_shapes(driven.pattern, size)) for size, bound in PROBES]
    for label, text in hostile_shapes(driven.pattern, HOSTILE_CHARS).items():
        for size, bound, shapes in probes:
            probe = _cpu(_apply, driven, shapes[label])
            assert probe < bound, f"{driven.name}: {label} at {size} characters took {probe:.2f} s"
        spent = _cpu(_apply, driven, text)
        assert spent < MAX_CASE_CPU_S, f"{driven.name}: {label} at 100 KB took {spent:.2f} s"
        slowest = max(slowest, spent)
    return slowest


INVENTORY = inventory()


@pytest.mark.parametrize("driven", INVENTORY, ids=[driven.name for driven in INVENTORY])
def test_each_pattern_is_linear_on_100_kb_built_against_it(driven: Driven) -> None:
    _drive(driven)


# ---------------------------------------------------------------------------- the entry points

ENTRY_UNITS = [
    "<system-reminder>",
    "<system-reminder ",
    "</system-reminder>",
    "<a-",
    "\n",
    " \n",
    "User: ",
    "**user**:\n",
    "`",
    "`a",
    "a ",
    "a-",
    "- ",
    "# ",
    "1. ",
    "```\n",
    "(e.g. ",
    "[a](",
    "0,",
    "1 ",
    "; and ",
    ", and fixed ",
    "I ",
    "http://",
    "a/",
    "a.",
    "=",
    "**",
    "@a",
    "v1.",
    "eyJ",
    "password=",
]


def _entry_texts() -> dict[str, str]:
    texts = {f"run of {unit!r}": _fill(unit, HOSTILE_CHARS) for unit in ENTRY_UNITS}
    texts["a heading line of spaces ending badly"] = "# a" + " " * HOSTILE_CHARS + "\x00"
    texts["words without a stop"] = _fill("the gateway uses port 8080 because ", HOSTILE_CHARS)
    # text that reaches a replacement must never be read as a template: "\\c" raised re.error
    texts["commands full of backslashes after a lead-in"] = _fill(
        "Run this:\n```\nGet-ChildItem C:\\Users\\ci\\Logs \\g<0> \\1 \\O\n```\n", HOSTILE_CHARS
    )
    return texts


ENTRY_TEXTS = _entry_texts()


def _entries() -> dict[str, Callable[[str], object]]:
    from bli_memory.door import answer_kind, exchanges, keyword, rewrite
    from bli_memory.door.librarian import anchors, extract, lasting, reconcile, words
    from bli_memory.importers import instructions, mem0
    from bli_memory.importers.records import keyed_array
    from bli_memory.redact import redact

    def decide(text: str) -> object:
        return reconcile.decide(text, [reconcile.Neighbour("mem_1", text, 0.9)])

    return {
        "extract a job": extract.extract_facts,
        "extract a two-turn job": lambda text: extract.extract_facts(f"User: {text}\n\nAssistant: {text}"),
        "score a fact": lambda text: (lasting.lasting_score(text), lasting.breaks_contract(text)),
        "reconcile a fact": decide,
        "a fact's words": words.fact_key,
        "judge a space's exchanges": lambda text: anchors.loose_sources(
            [(f"exchange:{number}", text) for number in range(anchors.LOOSE_MIN_SOURCES)]
        ),
        "read a question": lambda text: answer_kind.held_share(text, answer_kind.asked(text)),
        "search terms": keyword.query_terms,
        "rewrite a search": lambda text: (
            rewrite.is_question(text),
            rewrite.statement_of(json.dumps({"choices": [{"message": {"content": text}}]}).encode(), text),
        ),
        "cut a fact from an exchange": lambda text: exchanges.cut_fact(text, text[:2000]),
        "import an instruction file": lambda text: instructions.parse(text.encode(), "CLAUDE.md"),
        "import a mem0 export": lambda text: mem0.parse(
            json.dumps([{"id": "a", "memory": text}] * 3).encode()
        ),
        "find a key in an export": lambda text: keyed_array(text, "memories"),
        "redact a text": redact,
    }


ENTRIES = _entries()


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_each_entry_point_is_bounded_on_100_kb_of_hostile_text(entry: str) -> None:
    run = ENTRIES[entry]
    for label, text in ENTRY_TEXTS.items():
        spent = _cpu(run, text)
        assert spent < MAX_ENTRY_CPU_S, f"{entry}: {label} took {spent:.2f} s"


def test_a_mem0_export_of_200_000_records_is_read_in_linear_time() -> None:
    """Each element's line was counted from the start of the file: 40 000 records took 27 s and
    200 000 never finished."""
    from bli_memory.importers import mem0

    records = [{"id": f"id-{number}", "memory": f"memory {number}"} for number in range(200_000)]
    data = json.dumps(records, indent=2).encode()
    spent = _cpu(mem0.parse, data)
    assert spent < 20.0, spent  # ~2 s here; quadratic, it never finished

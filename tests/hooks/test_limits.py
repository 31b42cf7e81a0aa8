"""Hooks hold their deadlines on hostile inputs: a prompt of megabytes, a transcript path that is a FIFO,
a device or a directory.

The pure parts are timed in CPU seconds (a loaded machine barely moves them) and compared on 1 MB and
4 MB (linear work grows 4x, quadratic 16x); the hooks themselves run as real subprocesses against the
real door, and their receipts must show they finished well inside their own deadlines.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bli_memory.hooks import tinyjson, transcript
from bli_memory.hooks.run import DEADLINE_S
from bli_memory.hooks.stdin import STDIN_MAX_BYTES
from bli_memory.hooks.trivial import CLOSED_LIST_MAX_CHARS, identifiers, normalise, skip_reason
from tests.hooks.helpers import PROMPT, STOP, paired, run_hook

MB = 1_000_000
BIG_CHARS = 4 * MB
#: linear work grows 4x from 1 MB to 4 MB, quadratic work 16x
MAX_GROWTH = 9.0
#: a hook returns this long after it starts when nothing blocks it (interpreter start on a busy machine)
PROMPT_RETURNS_WITHIN_S = 3.0
STOP_RETURNS_WITHIN_S = 3.0


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def cpu_s(fn: Callable[[Any], object], arg: Any) -> float:
    """The least CPU time of three calls (noise only ever adds)."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        fn(arg)
        best = min(best, time.process_time() - start)
    return max(best, 1e-4)


def _code_prompt(chars: int) -> str:
    """A prompt of pasted code and prose: quotes, backslashes, tabs, newlines, non-ASCII."""
    lines = [
        "def parse_args(argv: list[str]) -> dict[str, str]:\n",
        '\treturn {"path": "C:\\\\Users\\\\x", "name": f"{argv[0]!r}"}  # café, 東京\n',
        'Why does BLI-3580 break `parse_args` when the path has a quote (") in it?\n',
    ]
    unit = "".join(lines)
    return (unit * (chars // len(unit) + 1))[:chars]


# -- the trivial-prompt rule ---------------------------------------------------------------------


def _normalise_by_hand(text: str) -> str:
    """The rule spelled out one character at a time (what `normalise` must equal)."""
    out: list[str] = []
    pending_space = False
    for char in text.lower():
        if char.isalnum():
            if pending_space and out:
                out.append(" ")
            pending_space = False
            out.append(char)
        else:
            pending_space = True
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=200))
def test_normalise_is_the_character_rule(text: str) -> None:
    assert normalise(text) == _normalise_by_hand(text)


def test_normalise_costs_a_few_plain_string_passes() -> None:
    text = ("def parse_args(argv): return x + str(argv)  # ok!\n" * (BIG_CHARS // 50))[:BIG_CHARS]
    plain_s = cpu_s(lambda t: t.lower().split(), text)
    assert cpu_s(normalise, text) <= 3.0 * plain_s + 0.01


@pytest.mark.parametrize(
    "prompt",
    [
        _code_prompt(BIG_CHARS),
        "ok" + "!" * BIG_CHARS,
        "/" + "x" * BIG_CHARS,
        "thanks " * (BIG_CHARS // 7),
    ],
    ids=["code", "ok_then_punctuation", "slash", "repeated_closed_word"],
)
def test_the_trivial_decision_and_its_identifiers_read_a_bounded_prefix(prompt: str) -> None:
    assert cpu_s(skip_reason, prompt) < 0.05
    assert cpu_s(identifiers, prompt) < 0.05


def test_only_a_short_prompt_can_be_a_closed_list_entry() -> None:
    assert skip_reason("Thanks" + "!" * (CLOSED_LIST_MAX_CHARS - 6)) == "trivial_prompt"
    assert skip_reason("Thanks" + "!" * (CLOSED_LIST_MAX_CHARS - 5)) is None


def test_identifiers_are_those_of_the_prompts_head() -> None:
    prompt = "why does parse_args fail? " + "and then " * MB + "BLI-3580"
    assert identifiers(prompt) == ["parse_args"]


# -- tinyjson on megabytes -------------------------------------------------------------------------


def _payload(value: str, ensure_ascii: bool = False) -> str:
    return json.dumps({"prompt": value, "session_id": "s1"}, ensure_ascii=ensure_ascii)


SHAPES: dict[str, Callable[[int], str]] = {
    "code": lambda n: _payload(_code_prompt(n)),
    "code_ascii_escaped": lambda n: _payload(_code_prompt(n), ensure_ascii=True),
    "newlines": lambda n: _payload("word\n" * (n // 5)),
    "escaped_quotes": lambda n: _payload('"' * (n // 2)),
    "backslash_run": lambda n: _payload("\\" * (n // 2) + '"'),
    "unicode_escapes": lambda n: _payload("é😀" * (n // 18), ensure_ascii=True),
    "whitespace_run": lambda n: '{"a":' + " " * n + "1}",
    "digit_run": lambda n: '{"a": 1.' + "5" * n + "}",
    "plain": lambda n: _payload("a" * n),
}


@pytest.mark.parametrize("shape", list(SHAPES.values()), ids=list(SHAPES))
def test_tinyjson_reads_megabytes_in_linear_time(shape: Callable[[int], str]) -> None:
    small, big = shape(MB), shape(BIG_CHARS)
    assert tinyjson.loads(big) == json.loads(big)
    small_s, big_s = cpu_s(tinyjson.loads, small), cpu_s(tinyjson.loads, big)
    assert big_s <= MAX_GROWTH * small_s + 0.02, (small_s, big_s)
    assert big_s < 1.0, big_s


def test_tinyjson_reads_a_4_mb_prompt_of_code_well_inside_the_prompt_deadline() -> None:
    payload = _payload(_code_prompt(BIG_CHARS))
    assert cpu_s(tinyjson.loads, payload) < 0.25


_PIECES = ["a", "é", "😀", '"', "\\", "\n", "\t", "/", "\x7f", "\u2028", "\x00", "\x1f", "\ud83d", "\ude00"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30), st.booleans())
def test_tinyjson_strings_agree_with_json(pieces: list[str], ascii_only: bool) -> None:
    text = json.dumps("".join(pieces), ensure_ascii=ascii_only)
    assert tinyjson.loads(text) == json.loads(text)


_RAW_PIECES = [
    "a", "é", "東", "😀", "\x7f", "\u2028", "\ud83d", '\\"', "\\\\", "\\n", "\\/", "\\b", "\\f", "\\u00e9",
    "\\u00E9", "\\ud83d", "\\uDE00", "\\udbff", "\\u0022", "\\u005c", "\\x41", "\\U0001f600", "\\u12",
    "\\u12g4", "\\N{DASH}", "\\101", "\\a", "\\'", "\\", "\n", "\x01", '"', "\\\\\\", "u0041",
]  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_RAW_PIECES), max_size=12))
def test_tinyjson_refuses_exactly_what_json_refuses(pieces: list[str]) -> None:
    text = '{"k": "' + "".join(pieces) + '"}'
    try:
        expected: object = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            tinyjson.loads(text)
        return
    assert tinyjson.loads(text) == expected


@pytest.mark.parametrize("seed", range(6))
def test_tinyjson_agrees_with_json_on_long_strings_of_backslashes_and_quotes(seed: int) -> None:
    """Long enough that the closing quote is looked for over many windows, each boundary a chance to
    split a backslash from what it escapes."""
    rng = random.Random(seed)
    value = "".join(rng.choice(["\\", '"', "a", "\\\\", '\\"', "é"]) for _ in range(200_000))
    text = json.dumps([value, "next"], ensure_ascii=seed % 2 == 0)
    assert tinyjson.loads(text) == json.loads(text)
    cut = text[: rng.randrange(len(text) // 2, len(text))]  # cut short: unterminated
    with pytest.raises(ValueError):
        tinyjson.loads(cut)


# -- transcript paths that are no regular file ---------------------------------------------------------


def _unblock_fifo_reader(path: Path) -> None:
    """Open the FIFO for writing (and close it), so a reader stuck in `open` is let go."""
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def test_a_fifo_as_transcript_is_refused_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "transcript.jsonl"
    os.mkfifo(fifo)
    outcome: list[object] = []

    def read() -> None:
        try:
            outcome.append(list(transcript.lines_backwards(str(fifo))))
        except OSError as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    started = time.monotonic()
    reader.start()
    reader.join(timeout=2.0)
    elapsed_s = time.monotonic() - started
    while reader.is_alive():  # a reader stuck in open(): let it go so the test ends
        _unblock_fifo_reader(fifo)
        reader.join(timeout=0.1)
    assert elapsed_s < 1.0
    assert len(outcome) == 1 and isinstance(outcome[0], OSError)


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "directory"])
def test_a_device_or_a_directory_as_transcript_is_refused(path: str, tmp_path: Path) -> None:
    target = str(tmp_path) if path == "directory" else path
    with pytest.raises(OSError):
        list(transcript.lines_backwards(target))
    assert transcript.last_exchange(target, "The reply.").assistant == "The reply."


def test_a_symlink_to_a_regular_transcript_is_still_read(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_text('{"type": "user", "message": {"role": "user", "content": "Where is the door?"}}\n')
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert transcript.last_exchange(str(link), None).user == "Where is the door?"


# -- the real hooks ------------------------------------------------------------------------------


def _prompt_payload() -> bytes:
    """A prompt hook payload as large as the stdin cap allows: megabytes of pasted code."""
    prompt = _code_prompt(BIG_CHARS)
    data = json.dumps({**PROMPT, "prompt": prompt}).encode()
    while len(data) > STDIN_MAX_BYTES:
        prompt = prompt[: len(prompt) - (len(data) - STDIN_MAX_BYTES) - 64]
        data = json.dumps({**PROMPT, "prompt": prompt}).encode()
    assert len(data) > 0.9 * STDIN_MAX_BYTES
    return data


def test_a_4_mb_prompt_is_answered_well_inside_the_prompt_deadline(home: Path, door: Any, tag: str) -> None:
    run = run_hook("prompt", _prompt_payload(), home, env=paired(home, door, tag))
    assert run.returncode == 0
    hook, status, fields = run.receipt()
    assert (hook, status) == ("prompt", "ok"), run.stderr
    assert fields["deadline_ms"] == int(DEADLINE_S["prompt"] * 1000)
    assert int(str(fields["elapsed_ms"])) < 0.75 * int(str(fields["deadline_ms"])), fields
    assert run.elapsed_s < PROMPT_RETURNS_WITHIN_S


def _special_path(kind: str, tmp_path: Path) -> str:
    if kind == "fifo":
        fifo = tmp_path / "transcript.jsonl"
        os.mkfifo(fifo)
        return str(fifo)
    return str(tmp_path) if kind == "directory" else "/dev/zero"


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_stop_with_a_transcript_path_that_is_no_file_saves_the_reply_at_once(
    kind: str, home: Path, door: Any, tag: str, tmp_path: Path
) -> None:
    path = _special_path(kind, tmp_path)
    needle = f"reply{random.Random(kind).randrange(10**9)}"
    payload = {**STOP, "transcript_path": path, "last_assistant_message": f"We decided {needle} ships."}
    unblock = threading.Timer(STOP_RETURNS_WITHIN_S + 1.0, _unblock_fifo_reader, args=(Path(path),))
    if kind == "fifo":
        unblock.start()  # a hook stuck opening the FIFO is let go after the bound (then fails it)
    try:
        run = run_hook("stop", payload, home, env=paired(home, door, tag))
    finally:
        unblock.cancel()
    assert run.returncode == 0
    hook, status, fields = run.receipt()
    assert (hook, status, fields.get("queued")) == ("stop", "ok", True), run.stderr
    assert run.elapsed_s < STOP_RETURNS_WITHIN_S
    assert int(str(fields["elapsed_ms"])) < STOP_RETURNS_WITHIN_S * 1000

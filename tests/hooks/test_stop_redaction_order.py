"""The Stop hook masks each part of the exchange whole, before it clips the exchange to 12 KB.

A long reply is sent as its head and tail. Masking only what is kept lost a private key whose BEGIN
line fell in the cut-out middle: the kept tail held the rest of its body and its END line, and lines
of the key left the machine. A real Stop hook (a subprocess with a temporary HOME) saves through a
loopback relay in front of the real door that keeps every byte the hook sent; no 16-character piece
of any key line may be among them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bli_memory.hooks.transcript import USER_MAX_BYTES, Exchange, compose
from bli_memory.settings import write_session
from tests.helpers import recording_relay
from tests.hooks.helpers import PROMPT, STOP, hook_env, run_hook

BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
KEY_LINES = 60
PIECE_CHARS = 16
#: the door behind a relay is asked under the relay's port: it must answer 127.0.0.1 on any port
RELAYED_DOOR_ARGS = ("--embedder", "none", "--allowed-host", "127.0.0.1")


def _key_lines(seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(BASE64) for _ in range(64)) for _ in range(KEY_LINES)]


def _prose(words: int, seed: int) -> str:
    rng = random.Random(seed)
    vocabulary = "the door keeps each turn and the librarian files what was decided about deploys".split()
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def _reply_with_key_across_the_cut(lines: list[str], user: str = "") -> str:
    """A reply whose key BEGINs in the middle `compose` cuts out, and whose kept tail starts inside a
    body line (its last 32 characters or more kept, not its start), then holds the rest and the END."""
    key = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----"
    for tail_words in range(400, 600):
        reply = f"{_prose(2400, 1)}\n\nHere is the deploy key:\n{key}\n\n{_prose(tail_words, 2)}"
        kept = compose(Exchange(user, reply))
        if "-----BEGIN" in kept or "-----END" not in kept:
            continue
        if any(line[-32:] in kept and line[:16] not in kept for line in lines):
            return reply
    raise AssertionError("no layout puts the cut inside a key line")


def _save_through_relay(
    tmp_path: Path, start_door: Callable[..., Any], tag: str, payload: dict[str, Any]
) -> tuple[Any, str]:
    door = start_door(*RELAYED_DOOR_ARGS)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    with recording_relay(door.url) as relay:
        write_session(relay.url, door.token, env={"HOME": str(home)})
        run = run_hook("stop", payload, home, env=hook_env(home, BLI_MEMORY_CONTAINER_TAG=tag))
        sent = relay.sent().decode("utf-8", "replace")
    hook, status, fields = run.receipt()
    assert (hook, status) == ("stop", "ok"), run.stderr
    assert int(str(fields["masked"])) >= 1
    assert "POST /api/memory" in sent and "[REDACTED:private_key]" in sent.replace("\\n", "\n")
    return run, sent


def _assert_no_key_piece(lines: list[str], *texts: str) -> None:
    for line in lines:
        for i in range(len(line) - PIECE_CHARS + 1):
            piece = line[i : i + PIECE_CHARS]
            assert not any(piece in text for text in texts), f"a piece of key line {lines.index(line)} left"


def test_a_key_whose_begin_line_is_cut_out_is_masked_in_the_kept_tail(
    tmp_path: Path, start_door: Callable[..., Any], tag: str
) -> None:
    lines = _key_lines(3)
    payload = {**STOP, "last_assistant_message": _reply_with_key_across_the_cut(lines)}
    run, sent = _save_through_relay(tmp_path, start_door, tag, payload)
    assert "[\\u2026]" in sent or "[…]" in sent  # the reply was clipped, head and tail
    _assert_no_key_piece(lines, sent, run.stderr, run.stdout)


def test_a_reply_read_from_the_transcript_is_masked_whole_too(
    tmp_path: Path, start_door: Callable[..., Any], tag: str
) -> None:
    """No `last_assistant_message`: the reply is tail-read from the transcript, then masked whole."""
    lines = _key_lines(4)
    reply = _reply_with_key_across_the_cut(lines, "Where does the deploy key live?")
    transcript = tmp_path / "session.jsonl"
    entries = [
        {"type": "user", "message": {"role": "user", "content": "Where does the deploy key live?"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": reply}]}},
    ]
    transcript.write_text("".join(json.dumps(entry) + "\n" for entry in entries), encoding="utf-8")
    payload = {key: value for key, value in STOP.items() if key != "last_assistant_message"}
    payload["transcript_path"] = str(transcript)
    run, sent = _save_through_relay(tmp_path, start_door, tag, payload)
    _assert_no_key_piece(lines, sent, run.stderr, run.stdout)


def test_a_token_across_the_prompt_clip_is_masked_whole(
    tmp_path: Path, start_door: Callable[..., Any], tag: str
) -> None:
    """The prompt Stop sends is the one the prompt hook remembered, clipped to 4 KB: it is remembered
    longer than that and masked before the clip, so a token straddling 4 KB leaves no piece."""
    rng = random.Random(5)
    token = "ghp_" + "".join(rng.choice(BASE64[:62]) for _ in range(36))
    lead = _prose(2000, 3)[: USER_MAX_BYTES - 31]  # the token starts 30 characters before the clip
    prompt = f"{lead} {token} and then {_prose(200, 4)}"
    assert prompt.index(token) < USER_MAX_BYTES < prompt.index(token) + len(token)
    door = start_door(*RELAYED_DOOR_ARGS)
    home = tmp_path / "home"
    home.mkdir()
    with recording_relay(door.url) as relay:
        write_session(relay.url, door.token, env={"HOME": str(home)})
        env = hook_env(home, BLI_MEMORY_CONTAINER_TAG=tag)
        asked = run_hook("prompt", {**PROMPT, "prompt": prompt, "cwd": str(home)}, home, env=env)
        saved = run_hook("stop", {**STOP, "last_assistant_message": "Rotated it."}, home, env=env)
        sent = relay.sent().decode("utf-8", "replace")
    assert saved.receipt()[:2] == ("stop", "ok"), saved.stderr
    assert "POST /api/memory/save" in sent and "and then" not in sent.split("/api/memory/save", 1)[1]
    body = token[len("ghp_") :]
    for i in range(len(body) - PIECE_CHARS + 1):
        piece = body[i : i + PIECE_CHARS]
        assert piece not in sent, f"a piece of the token left ({i})"
        assert piece not in asked.stderr + saved.stderr

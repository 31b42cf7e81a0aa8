"""The one stderr receipt of a hook run (`hooks/receipt.py`): its three shapes, and nothing a peer could
smuggle into it."""

from __future__ import annotations

from bli_memory.hooks import receipt
from bli_memory.hooks.stdin import StdinFailure


def test_receipt_lines_have_the_three_seed_shapes() -> None:
    ok = receipt.clean({**receipt.ok(hits=0), "elapsed_ms": 140, "deadline_ms": 2000, "via": "direct"})
    assert ok is not None
    assert receipt.line("prompt", ok) == (
        '[bli-memory] prompt ok {"hits":0,"elapsed_ms":140,"deadline_ms":2000,"via":"direct"}'
    )
    skipped = receipt.clean({**receipt.skipped("trivial_prompt"), "elapsed_ms": 3, "via": "direct"})
    assert skipped is not None
    assert (
        receipt.line("prompt", skipped)
        == '[bli-memory] prompt skipped {"reason":"trivial_prompt","via":"direct"}'
    )
    failed = receipt.clean(
        {**receipt.failed("dashboard_unreachable"), "elapsed_ms": 1502, "deadline_ms": 2000}
    )
    assert failed is not None
    assert receipt.line("prompt", failed) == (
        '[bli-memory] prompt failed {"reason":"dashboard_unreachable","elapsed_ms":1502,"deadline_ms":2000}'
    )


def test_clean_drops_everything_a_peer_could_smuggle() -> None:
    dirty = {
        "status": "ok",
        "hits": 2,
        "prompt": "my secret prompt",
        "content": "a memory",
        "path": "/home/me/.ssh/id_rsa",
        "token": "bli_abc",
        "queued": "yes",
        "elapsed_ms": -5,
        "via": "carrier pigeon",
    }
    assert receipt.clean(dirty) == {"status": "ok", "hits": 2}
    assert receipt.clean({"status": "failed", "reason": "Traceback (most recent call last): /etc/x"}) == {
        "status": "failed",
        "reason": "unknown_internal:Tracebackmostrecentcalllastetcx",
    }
    assert receipt.clean({"status": "weird"}) is None
    assert receipt.clean("ok") is None


def test_an_exception_becomes_its_reason_or_unknown_internal() -> None:
    assert receipt.failed(StdinFailure("stdin_timeout"))["reason"] == "stdin_timeout"
    assert receipt.failed(KeyError("x"))["reason"] == "unknown_internal:KeyError"


def test_a_recall_receipt_counts_the_rows_found_shown_and_held_back() -> None:
    outcome = receipt.clean({**receipt.ok(hits=2, found=5, held=3), "elapsed_ms": 90, "via": "direct"})
    assert outcome is not None
    assert receipt.line("prompt", outcome) == (
        '[bli-memory] prompt ok {"hits":2,"found":5,"held":3,"elapsed_ms":90,"via":"direct"}'
    )
    assert receipt.clean({"status": "ok", "found": -1, "held": True}) == {"status": "ok"}

"""Score bli_memory.redact against the redaction corpus and time it.

Usage: python scripts/eval_redaction.py [DIR] [--verbose]

DIR holds positives.jsonl, negatives.jsonl and ambiguous.jsonl: a synthetic corpus of fake secrets
(not committed: its fake secrets trip secret scanners; tests/fixtures/redaction/ holds hand-written
cases of the same shape). Criteria:

- positive: ``secret`` and every ``extra_secrets`` item are gone, and no 16-character window of the
  secret material (after the vendor ``prefix``, which may be kept) survives;
- negative: the text comes back byte-identical;
- ambiguous: reported (masked or kept) next to the corpus policy, never scored;
- our own device tokens (``bli_`` + ``secrets.token_urlsafe(32)``, as the door mints them), which
  the corpus cannot hold: freshly generated ones, in prose and in an assignment, must be masked.

Timing: throughput over the whole corpus concatenated (about 1 MB) and the median time of one 12 KB
slice, the Stop hook's budget.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bli_memory.door.model import TOKEN_PREFIX, new_token  # noqa: E402  (stdlib only)
from bli_memory.redact import redact  # noqa: E402

WINDOW_CHARS = 16
STOP_HOOK_SLICE_BYTES = 12 * 1024
THROUGHPUT_TARGET_BYTES = 1024 * 1024
SLICE_TARGET_MS = 5.0
TIMING_ROUNDS = 30


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def secret_survives(secret: str, prefix: str, redacted: str) -> bool:
    """True if the secret or any 16-character window of it (past the vendor prefix) is left."""
    if not secret:
        return False
    if secret in redacted:
        return True
    material = secret[len(prefix) :] if prefix and secret.startswith(prefix) else secret
    if len(material) < WINDOW_CHARS:
        return material in redacted
    return any(material[i : i + WINDOW_CHARS] in redacted for i in range(len(material) - WINDOW_CHARS + 1))


def score_positives(rows: Iterable[dict[str, Any]]) -> tuple[int, int, list[str]]:
    passed = total = 0
    failures: list[str] = []
    for row in rows:
        total += 1
        out = redact(row["text"]).text
        secrets = [(row["secret"], row.get("prefix") or "")]
        secrets += [(extra, "") for extra in row.get("extra_secrets") or []]
        leaked = [s for s, p in secrets if secret_survives(s, p, out)]
        if leaked:
            failures.append(f"{row['id']} {row['family']}: leaked {len(leaked)} secret(s) -> {out[:160]!r}")
        else:
            passed += 1
    return passed, total, failures


def score_negatives(rows: Iterable[dict[str, Any]]) -> tuple[int, int, list[str]]:
    passed = total = 0
    failures: list[str] = []
    for row in rows:
        total += 1
        out = redact(row["text"])
        if out.text == row["text"]:
            passed += 1
        else:
            failures.append(f"{row['id']} {row['category']}: changed ({out.kinds}) -> {out.text[:160]!r}")
    return passed, total, failures


def report_ambiguous(rows: Iterable[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    lines = []
    for row in rows:
        out = redact(row["text"])
        action = "masked" if out.masked else "kept"
        lines.append((row["id"], row["family"], row["policy"], action))
    return lines


DEVICE_TOKEN_SAMPLES = 1000
DEVICE_TOKEN_SHAPES = ("her new device token is {} - use it", "export BLI_MEMORY_DEVICE_TOKEN={}")


def score_device_tokens(samples: int = DEVICE_TOKEN_SAMPLES) -> tuple[int, int]:
    """(masked, total) over fresh device tokens, each in every shape of ``DEVICE_TOKEN_SHAPES``."""
    passed = total = 0
    for _ in range(samples):
        token = new_token()
        for shape in DEVICE_TOKEN_SHAPES:
            total += 1
            passed += not secret_survives(token, TOKEN_PREFIX, redact(shape.format(token)).text)
    return passed, total


def build_corpus_text(rows: list[dict[str, Any]]) -> str:
    return "\n\n".join(row["text"] for row in rows)


def time_throughput(corpus: str) -> tuple[float, int]:
    reps = max(1, THROUGHPUT_TARGET_BYTES // max(1, len(corpus.encode("utf-8"))))
    blob = "\n\n".join([corpus] * reps)
    size = len(blob.encode("utf-8"))
    redact(blob[:1000])  # compile what the corpus needs before timing
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        redact(blob)
        best = min(best, time.perf_counter() - start)
    return size / best / 1e6, size


def time_slice(corpus: str) -> tuple[float, float, float]:
    """Median wall and median CPU milliseconds of one 12 KB slice, and the worst wall time.

    CPU time is reported next to wall time because a loaded machine inflates wall time.
    """
    blob = corpus
    while len(blob.encode("utf-8")) < STOP_HOOK_SLICE_BYTES:
        blob += "\n\n" + corpus
    piece = blob.encode("utf-8")[:STOP_HOOK_SLICE_BYTES].decode("utf-8", "ignore")
    redact(piece)
    wall, cpu = [], []
    for _ in range(TIMING_ROUNDS):
        start, start_cpu = time.perf_counter(), time.process_time()
        redact(piece)
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return statistics.median(wall), statistics.median(cpu), max(wall)


def load_average() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def main(argv: list[str]) -> int:
    verbose = "--verbose" in argv
    args = [a for a in argv if a != "--verbose"]
    if len(args) != 1 or any(a.startswith("-") for a in args):
        print("usage: eval_redaction.py DIR [--verbose]  (DIR: the corpus folder)", file=sys.stderr)
        return 2
    directory = Path(args[0])
    needed = [directory / name for name in ("positives.jsonl", "negatives.jsonl", "ambiguous.jsonl")]
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        print(f"eval_redaction: corpus file missing: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        positives, negatives, ambiguous = (load_jsonl(p) for p in needed)
    except (OSError, ValueError) as exc:
        print(f"eval_redaction: cannot read corpus: {exc}", file=sys.stderr)
        return 2

    pos_ok, pos_n, pos_fail = score_positives(positives)
    neg_ok, neg_n, neg_fail = score_negatives(negatives)
    amb = report_ambiguous(ambiguous)
    own_ok, own_n = score_device_tokens()
    corpus = build_corpus_text(positives + negatives + ambiguous)
    mb_per_s, size = time_throughput(corpus)
    slice_median_ms, slice_cpu_ms, slice_max_ms = time_slice(corpus)

    rows = [
        ("positives redacted", f"{pos_ok}/{pos_n}", f"{100 * pos_ok / pos_n:.1f} %", "100 %"),
        ("negatives unchanged", f"{neg_ok}/{neg_n}", f"{100 * neg_ok / neg_n:.1f} %", "100 %"),
        ("own device tokens", f"{own_ok}/{own_n}", f"{100 * own_ok / own_n:.1f} %", "100 %"),
        ("ambiguous masked", f"{sum(a[3] == 'masked' for a in amb)}/{len(amb)}", "-", "report only"),
        ("throughput", f"{size / 1e6:.2f} MB", f"{mb_per_s:.1f} MB/s", "-"),
        (
            "12 KB slice, wall",
            "median / max",
            f"{slice_median_ms:.2f} / {slice_max_ms:.2f} ms",
            f"< {SLICE_TARGET_MS:.0f} ms",
        ),
        ("12 KB slice, CPU", "median", f"{slice_cpu_ms:.2f} ms", f"< {SLICE_TARGET_MS:.0f} ms"),
    ]
    print(f"Redaction corpus: {directory}  (load average {load_average()}, {os.cpu_count()} CPUs)")
    print(f"{'measure':<22} {'count':<14} {'result':<20} target")
    print("-" * 70)
    for name, count, result, target in rows:
        print(f"{name:<22} {count:<14} {result:<20} {target}")
    print()
    print("Ambiguous cases (corpus policy -> this redactor):")
    for ident, family, policy, action in amb:
        print(f"  {ident} {family:<26} policy={policy:<7} {action}")
    for title, failures in (("Positive failures", pos_fail), ("Negative failures", neg_fail)):
        if failures:
            print(f"\n{title}:")
            for line in failures if verbose else failures[:20]:
                print("  " + line)
    ok = pos_ok == pos_n and neg_ok == neg_n and own_ok == own_n and slice_cpu_ms < SLICE_TARGET_MS
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

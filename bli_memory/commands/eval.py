"""`bli-memory-mcp eval FILE`: how well the configured door finds what you expect, as hit@k and MRR.

FILE holds one JSON object per line, `{"query": "...", "expect": ...}`, where `expect` is a string or
a list of strings. A search result matches an expected string when its id is that string exactly (a
memory id, `mem_…`) or its content contains it (ignoring case). Each query is searched like the
search_memory tool does (masked the same way, same similarity floor unless --threshold says otherwise,
`--k` results); its rank is the position of the first matching result, if any within k.

- hit@k: the share of queries with a match in their first k results;
- MRR: the mean over queries of 1/rank (0 when no match within k).

Blank lines are skipped; a malformed line is named on stderr with its line number and skipped.
Exit status: 0 measured, 1 the door failed or the machine is unpaired, 2 bad input (an unreadable file,
no usable line).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bli_memory import render
from bli_memory.commands.base import (
    JSON_HELP,
    TAG_HELP,
    new_parser,
    paired_door_client,
    parse,
    print_json,
    usage_error,
)
from bli_memory.commands.search import limit_arg, threshold_arg
from bli_memory.errors import EXIT_FAILED, EXIT_OK, CliError
from bli_memory.settings import load_settings
from bli_memory.tools import (
    SEARCH_MIN_SIMILARITY,
    TOOL_DEADLINE_S,
    mask_secrets,
    project_dir,
)

K_DEFAULT = 5
#: a line longer than this is not a question (and would not fit a search).
MAX_LINE_CHARS = 20_000


@dataclass(frozen=True)
class Case:
    line: int
    query: str
    expect: list[str]


def parse_line(text: str) -> tuple[str, list[str]]:
    """(query, expected strings) of one line; ValueError saying what is wrong."""
    if len(text) > MAX_LINE_CHARS:
        raise ValueError(f"longer than {MAX_LINE_CHARS} characters")
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError("not JSON") from None
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    query, expect = value.get("query"), value.get("expect")
    if not isinstance(query, str) or not query.strip():
        raise ValueError("`query` must be a non-empty string")
    if isinstance(expect, str):
        expect = [expect]
    if (
        not isinstance(expect, list)
        or not expect
        or not all(isinstance(e, str) and e.strip() for e in expect)
    ):
        raise ValueError("`expect` must be a non-empty string or a list of them")
    return query.strip(), [e.strip() for e in expect]


def read_cases(path: Path) -> tuple[list[Case], list[dict[str, Any]]]:
    """The usable lines of `path`, and the skipped ones as {line, problem}."""
    cases: list[Case] = []
    skipped: list[dict[str, Any]] = []
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, raw in enumerate(lines, 1):
            text = raw.strip()
            if not text:
                continue
            try:
                query, expect = parse_line(text)
            except ValueError as problem:
                skipped.append({"line": number, "problem": str(problem)})
                continue
            cases.append(Case(number, query, expect))
    return cases, skipped


def matches(row: Any, expect: list[str]) -> bool:
    if not isinstance(row, dict):
        return False
    content = str(row.get("content", "")).casefold()
    return any(row.get("id") == wanted or wanted.casefold() in content for wanted in expect)


def rank_of(results: list[Any], expect: list[str], k: int) -> int | None:
    for position, row in enumerate(results[:k], 1):
        if matches(row, expect):
            return position
    return None


def main(argv: list[str]) -> int:
    parser = new_parser(
        "eval",
        "Measure how well the door finds what you expect: hit@k and MRR of question-style queries.\n\n"
        'FILE is JSON Lines, one {"query": ..., "expect": ...} object a line. `expect` is a string or a\n'
        "list of strings; a result matches when its id equals one of them exactly (a memory id such as\n"
        "mem_3f2c…) or its content contains one of them, ignoring case. A query's rank is its first\n"
        "matching result within the first k. hit@k is the share of queries with a match; MRR is the\n"
        "mean of 1/rank (0 without a match). Queries are searched as search_memory searches them.\n"
        "Blank lines are skipped; a malformed line is named (with its number) on stderr and skipped.",
        "example FILE:\n"
        '  {"query": "when do we deploy?", "expect": "Tuesdays"}\n'
        '  {"query": "who owns releases?", "expect": ["Ana", "mem_3f2c9a0b1c2d3e4f5a6b7c8d"]}\n\n'
        "examples:\n"
        "  bli-memory-mcp eval questions.jsonl\n"
        "  bli-memory-mcp eval --k 10 --json questions.jsonl\n\n"
        "exit status: 0 measured, 1 door failure or unpaired, 2 bad input (unreadable FILE, no usable line)",
    )
    parser.add_argument("file", metavar="FILE", help="JSON Lines of {query, expect}")
    parser.add_argument(
        "--k", type=limit_arg, default=K_DEFAULT, help=f"results per query that count (default {K_DEFAULT})"
    )
    parser.add_argument(
        "--threshold",
        type=threshold_arg,
        default=SEARCH_MIN_SIMILARITY,
        metavar="SIM",
        help=f"lowest cosine similarity that counts as a result (default {SEARCH_MIN_SIMILARITY}, as search_memory)",
    )
    parser.add_argument("--container-tag", metavar="TAG", help=TAG_HELP)
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    path = Path(args.file)
    try:
        cases, skipped = read_cases(path)
    except OSError as exc:
        raise usage_error(parser.prog, f"cannot read {path}: {exc.strerror}") from None
    for line in skipped:
        sys.stderr.write(f"{parser.prog}: {path}:{line['line']}: {line['problem']}; skipped\n")
    if not cases:
        raise usage_error(parser.prog, f"{path} has no usable {{query, expect}} line")
    settings = load_settings()
    client = paired_door_client(settings)
    try:
        if args.container_tag:
            tag = mask_secrets(args.container_tag)
        else:
            from bli_memory.space import resolve_space

            tag = resolve_space(settings, project_dir(os.environ))
        results: list[dict[str, Any]] = []
        for case in cases:
            query = mask_secrets(case.query)  # a query leaves the machine, as search_memory's does
            try:
                answer = client.search(
                    query,
                    tag,
                    limit=args.k,
                    threshold=args.threshold,
                    deadline=time.monotonic() + TOOL_DEADLINE_S,
                )
            except Exception as exc:
                from bli_memory.wire.reasons import to_log_reason

                reason = to_log_reason(exc)
                raise CliError(
                    f"{parser.prog}: the search of line {case.line} failed ({reason}): "
                    f"{render.explain_reason(reason, settings.door_url)}",
                    EXIT_FAILED,
                ) from None
            rows = answer.get("results")
            rank = rank_of(rows if isinstance(rows, list) else [], case.expect, args.k)
            results.append({"line": case.line, "query": query, "expect": case.expect, "rank": rank})
    finally:
        client.close()
    hits = [r for r in results if r["rank"] is not None]
    hit_at_k = len(hits) / len(results)
    mrr = sum(1.0 / r["rank"] for r in hits) / len(results)
    report = {
        "k": args.k,
        "containerTag": tag,
        "queries": len(results),
        "hitAtK": round(hit_at_k, 4),
        "mrr": round(mrr, 4),
        "skipped": skipped,
        "results": results,
    }
    if args.json:
        print_json(report)
        return EXIT_OK
    out = [f"{len(results)} queries against space {tag} (k={args.k}):"]
    for r in results:
        where = f"rank {r['rank']}" if r["rank"] is not None else "miss  "
        out.append(f"  line {r['line']:<4} {where}  {r['query']}")
    skipped_note = (
        f" ({len(skipped)} malformed line{'' if len(skipped) == 1 else 's'} skipped)" if skipped else ""
    )
    out.append(f"hit@{args.k} {hit_at_k:.3f}  MRR {mrr:.3f}{skipped_note}")
    sys.stdout.write("\n".join(out) + "\n")
    return EXIT_OK

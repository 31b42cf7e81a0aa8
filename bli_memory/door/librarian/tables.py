"""Tables of who owns what, read as sentences. Pure.

A reply often answers "who do I talk to about X" with a markdown table (``| Path | Team | Lead |``).
Prose extraction drops table lines as layout; a table whose header names a role (owner, lead,
maintainer, team, contact, approver, on-call) states who answers for each row, which lasts, so each
of its rows becomes one sentence, led by its first column's name: "Path `lib/geo/`: the team is
@rivet/routing; the lead is Marguerite Okafor." Other tables (timings, sizes, versions) stay layout: a row of figures is a measurement of
the moment. A table inside a code fence is code and is left alone.
"""

from __future__ import annotations

import re

#: a header cell that names a role: the column says who answers for the row.
_ROLE_HEADER = re.compile(
    r"^(?:owners?|owned by|lead|leads|maintainers?|maintained by|team|teams|contact|contacts|approvers?|"
    r"on-?call|reviewers?|responsible)$",
    re.IGNORECASE,
)
#: a cell that names nobody: the row says nothing of that role.
_EMPTY_CELL = re.compile(r"^(?:|-+|—|–|n/?a|none|none listed|nobody|tbd|\?)$", re.IGNORECASE)
#: the characters of the line under a table's header ("|---|:---:|").
_RULE_ROW_CHARS = frozenset("|:- \t")
_FENCE = re.compile(r"^\s*(?:```|~~~)")


def _is_rule_row(line: str) -> bool:
    """The line under a table's header: pipes, dashes and colons only (read once, no pattern)."""
    bare = line.strip()
    return "|" in bare and "--" in bare and set(bare) <= _RULE_ROW_CHARS


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _row_sentence(header: list[str], row: list[str]) -> str | None:
    """One row of a role table as a sentence, or None when it names nobody in a role column."""
    if len(row) != len(header) or _EMPTY_CELL.match(row[0]):
        return None
    parts = [
        f"the {name.lower()} is {cell}"
        for name, cell in zip(header[1:], row[1:], strict=True)
        if not _EMPTY_CELL.match(cell)
    ]
    named = [name for name, cell in zip(header[1:], row[1:], strict=True) if not _EMPTY_CELL.match(cell)]
    if not any(_ROLE_HEADER.match(name) for name in named):
        return None
    return f"{header[0]} {row[0]}: {'; '.join(parts)}."


def role_tables_as_prose(text: str) -> str:
    """The text with each table whose header names a role turned into one line per row (see the
    module's docstring); everything else, other tables included, as it was."""
    lines = text.split("\n")
    out: list[str] = []
    fenced = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if _FENCE.match(line):
            fenced = not fenced
        is_header = (
            not fenced
            and line.strip().startswith("|")
            and index + 1 < len(lines)
            and _is_rule_row(lines[index + 1])
        )
        if not is_header:
            out.append(line)
            index += 1
            continue
        header = _cells(line)
        end = index + 2
        while end < len(lines) and lines[end].strip().startswith("|"):
            end += 1
        if any(_ROLE_HEADER.match(name) for name in header[1:]):
            sentences = [_row_sentence(header, _cells(row)) for row in lines[index + 2 : end]]
            out.extend(f"- {sentence}" for sentence in sentences if sentence)
        else:
            out.extend(lines[index:end])
        index = end
    return "\n".join(out)

"""Extraction's signals: what makes a sentence of a reply worth keeping. Pure.

A command, a path, a version, an identifier, an address, a quantity, a decision, a fix, an owner.
Each signal is a rule as data: its name, its pattern, whether it is strong enough to let a short
sentence through, and examples the tests iterate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bli_memory.door.librarian.schedules import SCHEDULE
from bli_memory.door.librarian.values import FILE_EXTENSIONS

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


@dataclass(frozen=True, slots=True)
class Signal:
    """One kind of durable signal: a strong one lets a short sentence through; `examples` are
    sentences that carry it (the tests iterate them)."""

    name: str
    pattern: re.Pattern[str]
    strong: bool
    examples: tuple[str, ...]


SIGNALS: tuple[Signal, ...] = (
    Signal("code", re.compile(r"`[^`\n]+`"), True, ("The pool size lives in `config/db.toml`.",)),
    Signal(
        "command",
        re.compile(rf"(?:^|\s)(?:{_COMMANDS})\s+(?:-{{1,2}}\w|run\b|install\b|add\b|test\b)"),
        True,
        ("Run pytest -q before pushing.", "Check the crate with cargo test before tagging."),
    ),
    Signal(
        "path",
        re.compile(
            r"(?:^|[\s(\"'])(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w.@-]+|"
            r"\b[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonl|toml|yaml|yml|md|rs|go|java|kt|rb|sh|"
            r"sql|cfg|ini|env|lock|txt|html|css|scss|vue|svelte|c|h|cpp|hpp|cs|swift|php|proto|tf|db|sqlite)\b|"
            r"(?:^|\s)(?:Dockerfile|Makefile|Justfile|Procfile|\.env|\.gitignore|\.github)\b"
        ),
        True,
        ("The fixtures live in tests/fixtures/payments.", "Settings are read from settings.yaml at boot."),
    ),
    Signal(
        "version",
        re.compile(
            r"\bv?\d+\.\d+(?:\.\d+)*\b|\b(?:version|v)\s?\d+\b|[<>=~^]=?\s?\d|"
            r"\b(?:Postgres|PostgreSQL|MySQL|Python|Node|Node\.js|Java|Go|Rust|Ruby|PHP|Django|Rails|React|"
            r"Vue|Angular|Next\.js|Ubuntu|Debian|Alpine|Redis|Kubernetes|Terraform|TypeScript|Swift|Kotlin|"
            r"Elixir|Erlang|Scala|\.NET|Spring|Laravel|Bun|Deno|Gradle|Java|JDK|JRE)\s\d+\b",
            re.IGNORECASE,
        ),
        True,
        ("The service needs Python 3.12.", "We run Postgres 16 in production."),
    ),
    Signal(
        "identifier",
        # (a `key=value` is read from the start of its token: from each `\b` of `v1.v1.…` it ran to the end)
        re.compile(
            r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|\b\w+_\w+\b|\b\w+\(\)|(?<![\w.-])[\w.-]+=\S+|"
            r"(?<![\w:])\w+::\w+|"  # a namespaced name (C++, Rust, Ruby, PHP): `ember::Result`, `Foo::Bar`
            # a kebab-case name of three parts or more, none a joining word ("orbit-files-prod"; not
            # "end-to-end", "up-to-date")
            r"(?<![\w.-])(?![\w-]*-(?:to|of|the|and|a|an|in|on|by|for|or|at)-)(?!(?:to|of|the)-)"
            r"[a-z][a-z0-9]*(?:-[a-z0-9]+){2,}(?![\w.-])"
        ),
        True,
        (
            "Raise MAX_POOL_SIZE when the workers grow.",
            "Call retryPolicy from the client.",
            "errors go through ember::Result.",
            "infra renamed the attachments bucket, it's orbit-files-prod now.",
        ),
    ),
    Signal(
        "named value",
        # an id, key or code stated by its kind: "Title id is E4F1B", "the tenant ID: 7c1e0d" (a value
        # of capitals and digits no other signal reads as one)
        re.compile(
            r"\b(?i:ids?|identifier|key|code|number|no\.)\s*(?:is|are|=|:)\s*`?(?=[A-Z0-9_-]*\d)[A-Z0-9][A-Z0-9_-]{2,}\b"
        ),
        True,
        ("Title id is E4F1B.", "The merchant ID is 48213907 for the sandbox."),
    ),
    Signal(
        "url",
        # any scheme: `rediss://…`, `amqp://…`, `s3://…` (a scheme is short: from each letter of a long
        # run of `v1.v1.…` an unbounded one was read to the run's end)
        re.compile(r"(?<![\w+.-])[a-z][a-z0-9+.-]{0,15}://\S+", re.IGNORECASE),
        True,
        (
            "The staging API is https://api.stg.example.dev.",
            "The new broker is rediss://cache.example.net:6380/0.",
        ),
    ),
    Signal(
        "schedule",
        SCHEDULE,
        True,
        ("The overnight run is 04:30 UTC now.", "The poller runs every 10 minutes.", "Backups run at 3am."),
    ),
    Signal(
        "limit",
        # a bound on a quantity or a rate: "at most 120 minutes", "capped at 25 MB", "below 15% battery" (not "min":
        # "9 min 40 s" is a duration)
        re.compile(
            r"\b(?:at most|at least|no (?:more|fewer|less) than|up to|maximum(?: of)?|minimum(?: of)?|max|"
            r"capped at|caps? (?:of|at)|limit(?:ed)? (?:of|to|at)|below|above|under|over|(?:more|less|fewer|"
            r"longer|shorter) than)\s+~?\d[\d,.]*\s?(?:%|[a-z]{1,12}\b)|"
            # a rate taken off or added to a price: "20% off the full price", "a 3% fee"
            r"\b\d+(?:\.\d+)?\s?%\s+(?:off|discount|fee|markup|surcharge|commission|tax|vat)\b",
            re.IGNORECASE,
        ),
        False,
        (
            "A ride can last at most 120 minutes.",
            "Uploads are capped at 25 MB per file.",
            "E-bikes below 15% battery cannot be rented.",
            "Members get 10% off the day pass.",
        ),
    ),
    Signal(
        "change",
        # a value said to change from one number to another: "moves from 52000 to 55000", "from 30 s to 2 min"
        re.compile(r"\bfrom\s+`?~?\d[\w.,:%/-]*`?(?:\s?[a-z]{1,12})?\s+to\s+`?~?\d", re.IGNORECASE),
        False,
        (
            "The withdrawal budget moves from 52000 to 55000.",
            "The sensor bus goes from 9600 to 19200 baud.",
            "Retention drops from 30 days to 14 days.",
        ),
    ),
    Signal(
        "host",
        # a host name without its scheme: three labels or more, the last all letters and no file's extension
        re.compile(
            r"(?<![\w./@-])[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+\.(?!(?:"
            + FILE_EXTENSIONS
            + r")\b)[a-z]{2,12}(?![\w/@-]|\.\w)",
            re.IGNORECASE,
        ),
        True,
        ("infra moved staging, it's stg-eu1.example.io now.", "The database is on pg-3.db.internal."),
    ),
    Signal(
        "email",
        # an address names who receives something ("the daily file goes to accounts@…"); a host signal
        # wants three labels and a handle a space before its "@", so neither read one
        re.compile(r"(?<![\w.+-])[\w.+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,12}\b", re.IGNORECASE),
        True,
        ("The daily sales file goes to accounts@ortega.example.", "Alerts mail oncall@team.example.com."),
    ),
    Signal(
        "quantity",
        # a number in a unit of time, size or rate: a hold of 45 minutes, a 800 ms timeout, a 25 MB cap
        # said without "at most" (weak: a sentence needs another signal or enough words besides)
        re.compile(
            r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|milliseconds?|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|"
            r"days?|weeks?|[KMGT]i?B|Hz|kHz|MHz|fps|rpm)\b",
        ),
        False,
        ("A sign-in link stays valid for 20 minutes.", "The CTD sensor on the bus gets 800 ms."),
    ),
    Signal(
        "handle",
        re.compile(r"(?:^|\s)[#@][A-Za-z][\w-]+"),
        True,
        ("Reviews go to @platform-team.", "Questions go in #infra-help."),
    ),
    Signal(
        "ownership",
        re.compile(
            r"\b(?:owns?|owners?|ownership|maintain(?:s|ed|er|ers)|handled by|responsible|on-?call|channel|decides|"
            r"lead|reviewers?|sign-?off|approv(?:e|es|al))\b",
            re.IGNORECASE,
        ),
        False,
        ("Priya owns the billing module.", "The retention periods decides Ana from legal, not us."),
    ),
    Signal(
        "decision",
        re.compile(
            r"\b(?:decided|decide|decision|agreed|chose|choose|chosen|going with|go with|settled on|"
            r"switch(?:ed)? (?:to|from)|migrat(?:e|ed|ing) (?:to|from)|moved? (?:to|from)|replac(?:e|ed|es|ing)|"
            r"instead of|rather than|adopt(?:ed)?|standardi[sz]ed? on|from now on|going forward|deprecated?)\b",
            re.IGNORECASE,
        ),
        False,
        ("We decided to keep the monorepo.", "The team switched to trunk-based development."),
    ),
    Signal(
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
        ("Feature branches are always rebased, never merged.",),
    ),
    Signal(
        "preference",
        re.compile(
            r"\b(?:prefer(?:s|red)?|i like|i'd like|i want|we want|i don't like|i do not like|i hate|"
            r"rather|favou?r)\b",
            re.IGNORECASE,
        ),
        False,
        ("I prefer small pull requests.",),
    ),
    Signal(
        "fix",
        re.compile(
            r"\b(?:fix(?:ed|es)?|the fix|bug|root cause|caused by|because|was failing|fails|broke|"
            r"breaks|broken|resolved?|workaround|work around|regression|the (?:issue|problem) was|"
            r"turned out|crash(?:es|ed)?|leak(?:s|ed)?|race condition|comes from|due to|happens when|hangs?)\b",
            re.IGNORECASE,
        ),
        False,
        ("The root cause was a stale cache entry.",),
    ),
)


def _signals(sentence: str) -> tuple[int, bool]:
    """How many kinds of durable signal the sentence carries, and whether one of them is strong."""
    count, strong = 0, False
    for signal in SIGNALS:
        if signal.pattern.search(sentence):
            count += 1
            strong = strong or signal.strong
    return count, strong

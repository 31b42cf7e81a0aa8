"""The librarian: distil durable facts from a saved exchange and reconcile each against the space.

The door's job worker calls it; it holds no store. `extract` (deterministic extraction, with its
rules in `prose`, `signals` and `voice`), `lasting`
(what lasts: the profile's ranking and the extraction contract's post-filter) and
`reconcile` (the verdict on one fact) are pure; `llm` is the one part that does I/O, an HTTP client
for an OpenAI-compatible chat endpoint that falls back to `extract`. `words` is their shared tokenizer,
`values` reads the values a fact states (for `reconcile`),
`tables` reads a table of who owns what as sentences before prose extraction, `diffs` the values a
diff in an exchange changes, `slots` the values an exchange moves without naming the old one.
"""

from bli_memory.door.librarian.corrections import carried_over, carried_pairs, restated
from bli_memory.door.librarian.diffs import changed_values
from bli_memory.door.librarian.extract import MAX_FACT_CHARS, MAX_FACTS_PER_TEXT, extract_facts
from bli_memory.door.librarian.llm import (
    ExtractorName,
    LibrarianError,
    LlmExtractor,
    extractor_for,
)
from bli_memory.door.librarian.reconcile import Action, Decision, Neighbour, decide
from bli_memory.door.librarian.roles import passed_between
from bli_memory.door.librarian.slots import Move, moved_value, with_value_moved
from bli_memory.door.librarian.slots import statements as slot_statements

__all__ = [
    "MAX_FACTS_PER_TEXT",
    "MAX_FACT_CHARS",
    "Action",
    "Decision",
    "ExtractorName",
    "LibrarianError",
    "LlmExtractor",
    "Move",
    "Neighbour",
    "carried_over",
    "carried_pairs",
    "changed_values",
    "decide",
    "extract_facts",
    "extractor_for",
    "moved_value",
    "passed_between",
    "restated",
    "slot_statements",
    "with_value_moved",
]

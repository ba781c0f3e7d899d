"""Settings: each declared once (its variable, its default, its meaning), read from the
environment once by ``Settings.from_env()`` and passed explicitly everywhere else.

``Settings(data_dir=..., ...)`` takes values by keyword and reads no environment: what is
not given is the default. Both ways check every value by the rules below and raise one
``InvalidInput`` naming each variable that breaks its rule. The README's "Configuration"
table and ``paperrec --help`` are checked against (or made from) these declarations.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from recommender.core.errors import InvalidInput

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# The one corpus-size threshold: up to this many papers the index is exact and reading lists
# score every paper; above it the index is HNSW and reading lists score the candidates it finds.
EXACT_INDEX_MAX = 20_000
# auto: the backend measured best for the model (embedding/models.py): onnx-int8 for the
# default model (benchmarks/README.md, "Embedding", says why)
DEFAULT_EMBED_BACKEND = "auto"
EMBED_BACKENDS = ("torch", "onnx", "onnx-int8")  # recommender/embedding/encoders.py
API_KEY_ROLES = ("client", "admin")
API_KEY_MIN_LENGTH = 16
RATE_WINDOWS = {"second": 1, "minute": 60, "hour": 3600}
ARXIV_OAI_URL = "https://oaipmh.arxiv.org/oai"
ARXIV_DELAY_SECONDS = 3.0  # arXiv asks harvesters to pause a few seconds between requests
OPENREVIEW_URL = "https://api2.openreview.net"
ZOTERO_API_URL = "https://api.zotero.org"
OPENREVIEW_DELAY_SECONDS = 1.0  # a page is up to 1000 papers: a venue is a handful of requests
# Papers remembered as served per user: the one per-user Redis key that grows with use.
# benchmarks/README.md, "Redis memory per user", measures it and says why this keeps a
# million users' Redis within 16 GB.
SERVED_HISTORY_MAX = 1_000


# --- the rules: each raises ValueError saying what is wrong (never echoing a secret) ---------

def check_embed_backend(backend: str) -> str:
    if backend not in ("auto", *EMBED_BACKENDS):
        raise ValueError(f"unknown embedding backend {backend!r} (choose one of auto, "
                         f"{', '.join(EMBED_BACKENDS)})")
    return backend


def parse_rate_limit(text: str) -> tuple[int, int] | None:
    """(requests, seconds) of ``600/minute`` (also second or hour); None for ``off`` or ``0``."""
    text = text.strip().lower()
    if text in ("", "off", "0"):
        return None
    found = re.fullmatch(r"(\d+)\s*/\s*(second|minute|hour)", text)
    if not found or int(found[1]) < 1:
        raise ValueError(f"must look like 600/minute (or /second, /hour), or be off, "
                         f"not {text!r}")
    return int(found[1]), RATE_WINDOWS[found[2]]


def parse_api_keys(text: str) -> list[tuple[str, str]]:
    """(role, key) of each comma-separated ``role:key`` entry."""
    rule = (f"entries are role:key with role {' or '.join(API_KEY_ROLES)} and a key of at "
            f"least {API_KEY_MIN_LENGTH} characters")
    entries = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        role, colon, key = entry.partition(":")
        if not colon:
            raise ValueError(f"{rule}, but one has no ':'")
        if role not in API_KEY_ROLES:
            raise ValueError(f"{rule}, but one has the role {role!r}")
        if len(key) < API_KEY_MIN_LENGTH:
            raise ValueError(f"{rule}, but one is {role}:… of {len(key)} characters")
        entries.append((role, key))
    return entries


def check_redis_url(url: str) -> str:
    schemes = ("redis", "rediss", "unix", "redis+sentinel", "redis+cluster")
    if url and urlsplit(url).scheme not in schemes:
        raise ValueError(f"must be empty (the embedded server) or a URL starting "
                         f"{', '.join(s + '://' for s in schemes)}, but this one starts "
                         f"{urlsplit(url).scheme + ':'!r}")
    return url


def check_cluster_address(address: str) -> str:
    if address and (urlsplit(address).scheme not in ("tcp", "tls") or not urlsplit(address).netloc):
        raise ValueError(f"must be empty (embed in this process) or a Dask scheduler address "
                         f"such as tcp://scheduler:8786, not {address!r}")
    return address


def check_public_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http:// or https:// URL such as "
                         f"https://papers.example.org, not {url!r}")
    return url.rstrip("/")


def api_key_entries(inline: str, file: str) -> list[tuple[str, str]]:
    """Every (role, key) of ``PAPERREC_API_KEYS`` and of the file ``PAPERREC_API_KEYS_FILE``
    names (one ``role:key`` a line, ``#`` comments): the one place both are read and checked.
    The file is read here, by the service, not by ``Settings``: the jobs never need it."""
    sources = [("PAPERREC_API_KEYS", inline)]
    if file:
        try:
            text = Path(file).read_text()
        except OSError as exc:
            raise InvalidInput(f"PAPERREC_API_KEYS_FILE: cannot read {file}: "
                               f"{exc.strerror or exc}") from None
        sources += [(f"PAPERREC_API_KEYS_FILE: {file} line {number}", line.split("#", 1)[0])
                    for number, line in enumerate(text.splitlines(), 1)]
    entries = []
    for where, text in sources:
        try:
            entries += parse_api_keys(text)
        except ValueError as exc:
            raise InvalidInput(f"{where}: {exc}") from None
    return entries


def _checked_by(rule: Callable[[str], object]) -> AfterValidator:
    """Keep the value as given once ``rule`` accepts it."""
    def check(value: str) -> str:
        rule(value)
        return value
    return AfterValidator(check)


# --- the declarations ------------------------------------------------------------------------

class Settings(BaseSettings):
    """Everything configurable; each field's ``validation_alias`` is its environment variable.
    An empty variable means the default. Immutable: ``replace()`` makes a changed copy."""

    model_config = SettingsConfigDict(
        frozen=True, case_sensitive=True, env_ignore_empty=True, extra="forbid",
        validate_by_name=True, validate_by_alias=True)

    data_dir: Path = Field(
        Path("var"), validation_alias="PAPERREC_DATA_DIR",
        description="where the corpus, embedding cache, index versions and embedded Redis live")
    redis_url: Annotated[str, AfterValidator(check_redis_url)] = Field(
        "", validation_alias="REDIS_URL",
        description="an external Redis (redis://, rediss://, unix://, redis+sentinel:// or "
                    "redis+cluster://); "
                    "empty: the embedded Redis server in the data dir")
    redis_namespace: str = Field(
        "paperrec", validation_alias="PAPERREC_REDIS_NAMESPACE",
        description="prefix of every Redis key, so deployments can share a server")
    redis_wait_replicas: int = Field(
        1, ge=0, validation_alias="PAPERREC_REDIS_WAIT_REPLICAS",
        description="Redis Cluster only: a user's write is acknowledged once this many "
                    "replicas have it (WAIT), else 503; 0 acknowledges what the primary has")
    redis_wait_ms: int = Field(
        1000, ge=1, validation_alias="PAPERREC_REDIS_WAIT_MS",
        description="Redis Cluster only: milliseconds a write waits for those replicas")
    served_history_max: int = Field(
        SERVED_HISTORY_MAX, ge=1, validation_alias="PAPERREC_SERVED_HISTORY_MAX",
        description="papers remembered as served per user (the newest; older ones may be "
                    "shown or sent again): the served log is what grows with use in Redis")
    events_stream_max: int = Field(
        200_000, ge=1000, validation_alias="PAPERREC_EVENTS_STREAM_MAX",
        description="events (lists served, likes, clicks) the impression log keeps in Redis "
                    "until paperrec export-events (a step of paperrec jobs) writes them to "
                    "the daily files in <data dir>/events; the oldest past it are dropped")
    online_figures_seconds: float = Field(
        300, ge=0, allow_inf_nan=False, validation_alias="PAPERREC_ONLINE_FIGURES_SECONDS",
        description="how old the online figures /metrics and /admin/online show may get "
                    "before a worker computes them again in the background from the last 7 "
                    "days of the impression log (0: only paperrec export-events and paperrec "
                    "jobs compute them)")
    events_per_reader_day: int = Field(
        2000, ge=1, validation_alias="PAPERREC_EVENTS_PER_READER_DAY",
        description="events (lists served, likes, clicks) one reader may add to the impression "
                    "log in a UTC day; past it their lists are still served, not logged (one "
                    "reader reloading a page in a loop cannot crowd the others out of the log)")
    ranking_variants: str = Field(
        "", validation_alias="PAPERREC_RANKING_VARIANTS",
        description="ranking variants an experiment may compare with production, beside the "
                    "built-in ones: 'name: setting=value ...' separated by ';', settings "
                    "diversity, popularity, collaborative, fisher (multiples of production's "
                    "weights) and personal (0 or 1)")
    model: str = Field(
        DEFAULT_MODEL, validation_alias="PAPERREC_MODEL",
        description="sentence-transformers model: the bundled default, all-mpnet-base-v2 "
                    "(the mpnet extra) or a local model directory; never downloaded")
    embed_batch_size: int = Field(
        64, ge=1, validation_alias="PAPERREC_EMBED_BATCH_SIZE",
        description="texts per model batch")
    embed_backend: Annotated[str, _checked_by(check_embed_backend)] = Field(
        DEFAULT_EMBED_BACKEND, validation_alias="PAPERREC_EMBED_BACKEND",
        description=f"how the model runs: {', '.join(EMBED_BACKENDS)}, or auto: the one "
                    f"measured best for the model (onnx-int8 for the default, onnx for "
                    f"all-mpnet-base-v2)")
    # 1: on 2 shared cores the processes were slower than one session's two threads
    # (benchmarks/README.md, "Embedding"); more, idle cores may gain from them.
    embed_processes: int = Field(
        1, ge=0, validation_alias="PAPERREC_EMBED_PROCESSES",
        description="worker processes rebuild-index embeds in, each running the ONNX model on "
                    "one core: 1 to embed in this process, 0 for one per core")
    embed_cluster: Annotated[str, AfterValidator(check_cluster_address)] = Field(
        "", validation_alias="PAPERREC_EMBED_CLUSTER",
        description="a Dask scheduler (tcp://host:8786) that rebuild-index hands the embedding "
                    "to, shard by shard; empty: embed in this process")
    embed_cluster_timeout: float = Field(
        10.0, gt=0, allow_inf_nan=False, validation_alias="PAPERREC_EMBED_CLUSTER_TIMEOUT",
        description="seconds rebuild-index waits to reach the Dask scheduler before it gives up")
    # 512: the chunks a local rebuild embeds (embed_into_cache), so onnx-int8, which quantises
    # per batch, gives the cluster the very vectors of a local run.
    embed_shard_size: int = Field(
        512, ge=1, validation_alias="PAPERREC_EMBED_SHARD_SIZE",
        description="texts per task on the cluster: a worker that dies loses at most one shard")
    index_check_seconds: float = Field(
        2.0, ge=0, allow_inf_nan=False, validation_alias="PAPERREC_INDEX_CHECK_SECONDS",
        description="how often the service looks for a newly published index or model version")
    exact_index_max: int = Field(
        EXACT_INDEX_MAX, ge=0, validation_alias="PAPERREC_EXACT_INDEX_MAX",
        description="largest corpus indexed exactly; above it, HNSW")
    secret_key: str = Field(
        "", validation_alias="PAPERREC_SECRET_KEY",
        description="signs the one-click email links (the service and the digest job must "
                    "share it); empty: a random key kept in <data dir>/secret.key")
    public_url: Annotated[str, AfterValidator(check_public_url)] = Field(
        "http://127.0.0.1:8000", validation_alias="PAPERREC_PUBLIC_URL",
        description="where users reach the service: the base of every email link")
    smtp_url: str = Field(
        "", validation_alias="SMTP_URL",
        description="mail server for digests: smtp://user:pass@host:587 (STARTTLS) or "
                    "smtps://user:pass@host:465")
    mail_dir: str = Field(
        "", validation_alias="PAPERREC_MAIL_DIR",
        description="where the service writes its sign-in emails as .eml files when SMTP_URL "
                    "is empty (development); empty: <data dir>/mail")
    mail_from: str = Field(
        "paperrec <paperrec@localhost>", validation_alias="PAPERREC_MAIL_FROM",
        description="sender of the digests")
    api_keys: Annotated[str, _checked_by(parse_api_keys)] = Field(
        "", validation_alias="PAPERREC_API_KEYS",
        description=f"comma-separated role:key pairs, role {' or '.join(API_KEY_ROLES)}, keys "
                    f"at least {API_KEY_MIN_LENGTH} characters; with no keys the API is open "
                    f"and served on loopback only")
    api_keys_file: str = Field(
        "", validation_alias="PAPERREC_API_KEYS_FILE",
        description="a file of role:key lines (# comments), instead of or beside "
                    "PAPERREC_API_KEYS")
    trusted_proxies: int = Field(
        0, ge=0, le=5, validation_alias="PAPERREC_TRUSTED_PROXIES",
        description="reverse proxies in front of the service that set X-Forwarded-For, "
                    "-Proto and -Host (1 behind one nginx or Caddy); 0: those headers are "
                    "ignored, the client is the connection's address")
    rate_limit: Annotated[str, _checked_by(parse_rate_limit)] = Field(
        "6000/minute", validation_alias="PAPERREC_RATE_LIMIT",
        description="requests per API key: N/second, N/minute or N/hour, or off")
    uploads_per_day: int = Field(
        1000, ge=0, validation_alias="PAPERREC_UPLOADS_PER_DAY",
        description="papers one reader's library imports may add to the corpus a day (each "
                    "stays theirs until verified: paperrec review-imports); entries past it "
                    "are rejected with the reason")
    admin_emails: str = Field(
        "", validation_alias="PAPERREC_ADMIN_EMAILS",
        description="comma-separated sign-in addresses of the operators who may review "
                    "readers' uploads on the /admin/imports page")

    jobs_interval_seconds: float = Field(
        3600, gt=0, allow_inf_nan=False, validation_alias="PAPERREC_JOBS_INTERVAL_SECONDS",
        description="pause between two rounds of paperrec jobs (fetch, Zotero sync, rebuild, "
                    "train, digests)")
    arxiv_categories: str = Field(
        "", validation_alias="PAPERREC_ARXIV_CATEGORIES",
        description="comma-separated arXiv categories paperrec fetch arxiv harvests when no "
                    "--category is named (paperrec jobs fetches only when it is set)")
    arxiv_oai_url: Annotated[str, AfterValidator(check_public_url)] = Field(
        ARXIV_OAI_URL, validation_alias="PAPERREC_ARXIV_OAI_URL",
        description="arXiv's OAI-PMH endpoint, harvested by paperrec fetch arxiv")
    arxiv_delay_seconds: float = Field(
        ARXIV_DELAY_SECONDS, ge=0, allow_inf_nan=False,
        validation_alias="PAPERREC_ARXIV_DELAY_SECONDS",
        description="pause between two requests to the OAI-PMH endpoint, as arXiv asks")
    arxiv_retries: int = Field(
        5, ge=0, validation_alias="PAPERREC_ARXIV_RETRIES",
        description="retries of one OAI-PMH request after a network error, a 5xx or a 503 "
                    "with Retry-After (exponential backoff), before the harvest stops")
    openreview_url: Annotated[str, AfterValidator(check_public_url)] = Field(
        OPENREVIEW_URL, validation_alias="PAPERREC_OPENREVIEW_URL",
        description="OpenReview's API v2, read by paperrec fetch openreview")
    openreview_delay_seconds: float = Field(
        OPENREVIEW_DELAY_SECONDS, ge=0, allow_inf_nan=False,
        validation_alias="PAPERREC_OPENREVIEW_DELAY_SECONDS",
        description="pause between two requests to the OpenReview API")
    openreview_retries: int = Field(
        5, ge=0, validation_alias="PAPERREC_OPENREVIEW_RETRIES",
        description="retries of one OpenReview request after a network error, a 5xx or a 429 "
                    "(Retry-After, else exponential backoff), before the fetch stops")
    zotero_api_url: Annotated[str, AfterValidator(check_public_url)] = Field(
        ZOTERO_API_URL, validation_alias="PAPERREC_ZOTERO_API_URL",
        description="the Zotero Web API (v3) the readers' libraries are synced from "
                    "(a local server for tests and air-gapped deployments)")
    zotero_budget_seconds: float = Field(
        60.0, gt=0, allow_inf_nan=False, validation_alias="PAPERREC_ZOTERO_BUDGET_SECONDS",
        description="time one reader's Zotero sync may take (waits and retries included); "
                    "past it the sync stops, keeps what it fetched and finishes next run")
    zotero_retries: int = Field(
        3, ge=0, validation_alias="PAPERREC_ZOTERO_RETRIES",
        description="retries of one Zotero request after a network error, a 5xx or a 429 "
                    "(Retry-After and Backoff honoured, else exponential backoff)")

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise InvalidInput(_explain(exc)) from None

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)  # the keywords only: from_env() reads the environment

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        """The settings from the environment; ``overrides`` (by field name) win."""
        found = EnvSettingsSource(cls)()  # keyed by variable name
        field_of = {cls.variable(name): name for name in cls.model_fields}
        return cls(**{**{field_of[key]: value for key, value in found.items()}, **overrides})

    @classmethod
    def variable(cls, field: str) -> str:
        """The environment variable of a setting."""
        alias = cls.model_fields[field].validation_alias
        assert isinstance(alias, str), f"{field} declares no variable"
        return alias

    @classmethod
    def check(cls, field: str, value: Any) -> Any:
        """``value`` as setting ``field`` holds it; InvalidInput naming its variable if not."""
        return getattr(cls(**{field: value}), field)

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` (by field name), checked as any settings are."""
        return type(self)(**{**self.model_dump(), **changes})

    @property
    def embed_process_count(self) -> int:
        """PAPERREC_EMBED_PROCESSES as a count: 0 is one per core this process may use."""
        return self.embed_processes or len(os.sched_getaffinity(0))

    @property
    def corpus_path(self) -> Path:
        return self.data_dir / "corpus.sqlite"

    @property
    def embedding_cache_path(self) -> Path:
        return self.data_dir / "embeddings.sqlite"

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "index"

    @property
    def collaborative_dir(self) -> Path:
        return self.data_dir / "models" / "collaborative"

    @property
    def mail_dry_run_dir(self) -> Path | None:
        """Where the service's emails are written as files; None when SMTP_URL sends them."""
        if self.smtp_url:
            return None
        return Path(self.mail_dir) if self.mail_dir else self.data_dir / "mail"

    @property
    def redis_dir(self) -> Path:
        return self.data_dir / "redis"


def _explain(exc: ValidationError) -> str:
    """One line naming each variable that breaks its rule, and how."""
    variable_of = {key: Settings.variable(name) for name in Settings.model_fields
                   for key in (name, Settings.variable(name))}
    problems = []
    for error in exc.errors():
        key = str(error["loc"][0]) if error["loc"] else "settings"
        variable, value, kind = variable_of.get(key, key), error.get("input"), error["type"]
        if kind in ("int_parsing", "int_from_float", "int_type"):
            problems.append(f"{variable}={value!r} is not an integer")
        elif kind in ("float_parsing", "float_type"):
            problems.append(f"{variable}={value!r} is not a number")
        elif kind == "finite_number":
            problems.append(f"{variable}={value!r} is not a finite number")
        elif kind == "value_error":  # a rule above; its message shows what is safe to show
            problems.append(f"{variable}: {error.get('ctx', {}).get('error', error['msg'])}")
        elif kind == "extra_forbidden":
            problems.append(f"{variable}: no such setting")
        else:
            problems.append(f"{variable}={value!r}: {error['msg'][0].lower()}{error['msg'][1:]}")
    return "; ".join(problems)

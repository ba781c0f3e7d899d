"""EmbeddingCache: vectors by (model variant, content hash), so rebuilds embed only what changed."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path

import numpy as np
from tqdm import tqdm

from recommender.core.phases import PhaseClock
from recommender.embedding.encoders import TextEncoder
from recommender.embedding.processes import chunk_encoder

# Stores the vectors of these texts (by content hash) in the cache.
EmbedInto = Callable[["EmbeddingCache", dict[str, str]], None]


class EmbeddingCache:
    """Vectors by (model variant, content hash), in SQLite: a rebuild embeds only new or
    changed text, and vectors of one backend never stand in for another's."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @cached_property
    def _db(self) -> sqlite3.Connection:
        """Opened on first use (once a process: the application object holds one cache)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT, content_hash TEXT, vector BLOB,"
            " PRIMARY KEY (model, content_hash))"
        )
        return db

    def close(self) -> None:
        db = self.__dict__.pop("_db", None)
        if db is not None:
            db.close()

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

    def matrix(self, model: str, hashes: Sequence[str]) -> np.ndarray:
        """The vectors of these hashes as the rows of one matrix, in order (a hash may come
        more than once). Filled as it is read: at a million papers, ``get``'s dict of small
        arrays before stacking cost 1.8 GB more than the matrix itself. KeyError when one is
        not cached."""
        rows_of: dict[str, list[int]] = {}
        for row, h in enumerate(hashes):
            rows_of.setdefault(h, []).append(row)
        unique = list(rows_of)
        out: np.ndarray | None = None
        filled = 0
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for h, blob in self._db.execute(
                "SELECT content_hash, vector FROM vectors"
                f" WHERE model = ? AND content_hash IN ({marks})",
                [model, *chunk],
            ):
                vector = np.frombuffer(blob, dtype=np.float32)
                if out is None:
                    out = np.empty((len(hashes), len(vector)), dtype=np.float32)
                out[rows_of[h]] = vector
                filled += 1
        if out is None or filled < len(unique):
            raise KeyError(f"{len(unique) - filled} of {len(unique)} vectors are not cached")
        return out

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
    embedder: TextEncoder,
    cache: EmbeddingCache,
    hashes: Sequence[str],
    texts_of: Callable[[set[str]], dict[str, str]],
    progress: bool = True,
    embed: EmbedInto | None = None,
    processes: int = 1,
    clock: PhaseClock | None = None,
) -> tuple[np.ndarray, int]:
    """Vectors for these content hashes, in order, embedding only those not cached yet.

    ``texts_of(missing hashes)`` returns the text of each, so callers load only those texts.
    ``embed(cache, texts by hash)`` stores their vectors under ``embedder.variant``; by default
    ``embed_into_cache`` on this machine, in ``processes`` worker processes
    (``recommender.embedding.cluster``: on a cluster).
    Returns the matrix and how many texts were newly embedded. ``clock`` is told when the
    embedding ends and when the vectors are read.
    """
    clock = clock or PhaseClock()
    to_embed = texts_of(cache.missing(embedder.variant, hashes))
    clock.lap("find uncached")
    if embed is None:
        embed_into_cache(embedder, cache, to_embed, progress=progress, processes=processes)
    elif to_embed:
        embed(cache, to_embed)
    clock.lap("embed")
    vectors = cache.matrix(embedder.variant, hashes)
    clock.lap("read vectors")
    return vectors, len(to_embed)


def embed_into_cache(
    embedder: TextEncoder,
    cache: EmbeddingCache,
    texts_by_hash: dict[str, str],
    progress: bool = True,
    chunk: int = 512,
    processes: int = 1,
) -> None:
    """Embed each text and store it under its content hash and the embedder's variant, a
    chunk at a time (an interrupted run keeps the chunks it stored). ``processes`` > 1: in
    that many worker processes (``recommender.embedding.processes``), the same vectors."""
    if not texts_by_hash:
        return
    # Similar lengths in one batch waste less padding.
    order = sorted(texts_by_hash, key=lambda h: len(texts_by_hash[h]))
    parts = [order[start : start + chunk] for start in range(0, len(order), chunk)]
    with (tqdm(total=len(order), desc="embedding", unit="paper", disable=not progress) as bar,
          chunk_encoder(embedder, processes, sum(map(len, texts_by_hash.values()))) as encode):
        for part, vectors in zip(
                parts, encode([texts_by_hash[h] for h in part] for part in parts), strict=True):
            cache.put(embedder.variant, part, vectors)
            bar.update(len(part))

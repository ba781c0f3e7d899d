"""PaperIndex: a FAISS index over paper vectors, published as numbered versions.

On disk, under ``<data dir>/index``::

    versions/000001/{index.faiss, vectors.npy, ids.json, meta.json}
    CURRENT            -> "000001" (replaced atomically)

A version directory is complete before it is renamed into place, and ``CURRENT`` changes with
one ``os.replace``: a reader sees the old version or the new one, never half of one.
``LiveIndex`` notices a new ``CURRENT`` and swaps it in for the next request; requests in
flight keep the version they started with.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from .errors import IndexNotReady, NotFound

log = logging.getLogger(__name__)
KEEP_VERSIONS = 3
HNSW_M = 32
HNSW_EF_SEARCH = 128


@dataclass
class PaperIndex:
    version: str
    ids: list[str]
    vectors: np.ndarray  # (n, dim) float32, unit length; memory-mapped when loaded
    faiss_index: Any
    meta: dict[str, Any]

    def __post_init__(self) -> None:
        self._row = {pid: i for i, pid in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def model(self) -> str:
        return str(self.meta["model"])

    def row(self, paper_id: str) -> int:
        try:
            return self._row[paper_id]
        except KeyError:
            raise NotFound(
                f"paper {paper_id!r} is not in the index; if it was ingested recently, "
                f"run `paperrec rebuild-index`"
            ) from None

    def has(self, paper_id: str) -> bool:
        return paper_id in self._row

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and inner-product scores for each query row (-1 pads short results)."""
        k = min(k, len(self.ids))
        scores, rows = self.faiss_index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        return rows, scores


def build_faiss(vectors: np.ndarray, exact_max: int) -> Any:
    """Exact inner product for small corpora, HNSW above ``exact_max`` papers."""
    dim = vectors.shape[1]
    index: Any
    if len(vectors) <= exact_max:
        index = faiss.IndexFlatIP(dim)
    else:
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = HNSW_EF_SEARCH
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


class IndexStore:
    """Publishes and loads index versions in one directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.versions = root / "versions"

    def current_version(self) -> str | None:
        try:
            return (self.root / "CURRENT").read_text().strip() or None
        except FileNotFoundError:
            return None

    def publish(
        self, ids: list[str], vectors: np.ndarray, model: str, exact_max: int
    ) -> PaperIndex:
        if len(ids) != len(vectors) or not ids:
            raise ValueError("an index needs at least one paper and one vector per id")
        self.versions.mkdir(parents=True, exist_ok=True)
        index = build_faiss(vectors, exact_max)
        version = self._next_version()
        meta = {
            "version": version,
            "model": model,
            "dim": int(vectors.shape[1]),
            "count": len(ids),
            "kind": "exact" if isinstance(index, faiss.IndexFlatIP) else "hnsw",
            "created_at": time.time(),
        }
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=self.versions))
        try:
            faiss.write_index(index, str(staging / "index.faiss"))
            np.save(staging / "vectors.npy", np.ascontiguousarray(vectors, dtype=np.float32))
            (staging / "ids.json").write_text(json.dumps(ids))
            (staging / "meta.json").write_text(json.dumps(meta, indent=2))
            for path in staging.iterdir():
                _fsync(path)
            os.rename(staging, self.versions / version)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        _write_atomically(self.root / "CURRENT", version)
        self._prune(keep=version)
        return PaperIndex(version, ids, vectors, index, meta)

    def load(self, version: str) -> PaperIndex:
        folder = self.versions / version
        meta = json.loads((folder / "meta.json").read_text())
        ids = json.loads((folder / "ids.json").read_text())
        vectors = np.load(folder / "vectors.npy", mmap_mode="r")
        index = faiss.read_index(str(folder / "index.faiss"))
        if hasattr(index, "hnsw"):
            index.hnsw.efSearch = HNSW_EF_SEARCH
        if not (len(ids) == len(vectors) == index.ntotal == meta["count"]):
            raise ValueError(f"index version {version} is inconsistent: sizes differ")
        return PaperIndex(version, ids, vectors, index, meta)

    def _next_version(self) -> str:
        numbers = [int(p.name) for p in self.versions.iterdir() if p.name.isdigit()]
        return f"{max(numbers, default=0) + 1:06d}"

    def _prune(self, keep: str) -> None:
        old = sorted(p for p in self.versions.iterdir() if p.name.isdigit() and p.name != keep)
        for path in old[: max(0, len(old) - (KEEP_VERSIONS - 1))]:
            shutil.rmtree(path, ignore_errors=True)


def _fsync(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class LiveIndex:
    """The published version currently served; re-reads ``CURRENT`` every few seconds."""

    def __init__(self, store: IndexStore, check_seconds: float = 2.0) -> None:
        self.store = store
        self.check_seconds = check_seconds
        self._index: PaperIndex | None = None
        self._checked_at = 0.0
        self._problem = "no index version has been published yet: run `paperrec rebuild-index`"
        self._lock = threading.Lock()

    def get(self) -> PaperIndex:
        """The index to use for one request; raises IndexNotReady when there is none."""
        if time.monotonic() - self._checked_at >= self.check_seconds:
            self.refresh()
        if self._index is None:
            raise IndexNotReady(self._problem)
        return self._index

    def refresh(self) -> None:
        with self._lock:
            self._checked_at = time.monotonic()
            version = self.store.current_version()
            if version is None or (self._index and self._index.version == version):
                return
            try:
                loaded = self.store.load(version)
            except (OSError, ValueError, RuntimeError, KeyError) as exc:
                self._problem = f"index version {version} cannot be loaded: {exc}"
                log.error("%s; still serving %s", self._problem,
                          self._index.version if self._index else "nothing")
                return
            log.info("serving index version %s (%d papers)", version, len(loaded))
            self._index = loaded

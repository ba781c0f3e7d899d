"""PaperIndex: one published index version as the service searches it."""


from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from recommender.core.errors import NotFound
from recommender.index.content_space import (
    HNSW_EF,
    ContentSpace,
)

# An incremental build extends the previous version; past these limits a full one runs.
# FAISS (OpenMP) threads per search. The workers and their request threads are the
# parallelism: on 2 cores a 2-thread search only adds contention (docs/benchmarks/lists.md,
# "The FAISS index").
SEARCH_THREADS = 1


@dataclass
class PaperIndex:
    version: str
    ids: list[str]
    space: ContentSpace
    days: np.ndarray
    faiss_index: Any
    meta: dict[str, Any]

    def __post_init__(self) -> None:
        self._row = {pid: i for i, pid in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def vectors(self) -> np.ndarray:
        return self.space.vectors

    @property
    def approximate(self) -> bool:
        """An HNSW index (above ``PAPERREC_EXACT_INDEX_MAX`` papers): reading lists search it
        for candidates instead of scoring every paper."""
        return isinstance(self.faiss_index, faiss.IndexHNSW)

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

    def rows_of(self, paper_ids: Iterable[str]) -> np.ndarray:
        """The rows of those of these papers that are indexed, in their order (a user's
        up to 1,000 served papers: one dict lookup each, no call per paper)."""
        rows = np.fromiter(map(self._row.get, paper_ids, repeat(-1)), dtype=np.int64)
        return rows[rows >= 0]

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and inner-product scores for each query row (-1 pads short results).

        The OpenMP thread count is set here, in the calling thread, because OpenMP keeps it
        per thread: set once at start-up it does not reach gunicorn's request threads."""
        k = min(k, len(self.ids))
        before = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(SEARCH_THREADS)
        try:
            scores, rows = self.faiss_index.search(
                np.ascontiguousarray(queries, dtype=np.float32), k,
                params=search_parameters(self.faiss_index, k))
        finally:
            faiss.omp_set_num_threads(before)
        return rows, scores


def search_parameters(index: Any, k: int) -> Any:
    """Per-call settings (concurrent requests share the index object, so nothing is set on
    it). HNSW searches with efSearch at least k: FAISS does not raise it to k by itself, and
    k=200 candidates at efSearch 128 find 93% of the exact top 200 at 1M papers (95.5% at
    efSearch 200)."""
    if isinstance(index, faiss.IndexHNSW):
        api: Any = faiss  # the type stubs lack SearchParametersHNSW
        return api.SearchParametersHNSW(efSearch=max(HNSW_EF, k))
    return None


def read_through(path: Path) -> None:
    """Read a file once, so its pages are in the page cache before it is mapped: FAISS maps
    with MADV_RANDOM, and on a 1M-paper HNSW index evicted from the cache the first searches
    took 0.7-1.1 s instead of 4 ms; reading the 1.7 GB file first took 3.7 s, and is a
    memory copy for every further worker (docs/benchmarks/lists.md, "The FAISS index")."""
    buffer = bytearray(1 << 24)
    with open(path, "rb", buffering=0) as file:
        while file.readinto(buffer):
            pass

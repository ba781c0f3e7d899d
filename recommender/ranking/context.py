"""The ranking context the service serves: one per index version and collaborative model
version, with like counts at most ``LIKE_COUNTS_SECONDS`` old.

``context_for`` is how a published index becomes a ``RankingContext``; the service (through
``LiveContext``) and the offline evaluation both use it, so what is evaluated is what is
served, including the candidate path of an approximate (HNSW) index.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

import numpy as np

from recommender.index.paper_index import PaperIndex
from recommender.ranking.collaborative import CollaborativeModel
from recommender.ranking.rank import RankingContext

LIKE_COUNTS_SECONDS = 5.0  # how stale the popularity counts may be


def context_for(index: PaperIndex, model: CollaborativeModel | None,
                like_counts: np.ndarray | None = None) -> RankingContext:
    """The ranking context over a published index. An approximate index ranks candidates it
    finds (``RankingContext.search``); an exact one scores every paper."""
    counts = np.zeros(len(index), np.float32) if like_counts is None else like_counts
    return RankingContext(index.vectors, index.space.neighbours, index.space.neighbour_sims,
                          counts, index.ids, model, np.asarray(index.days),
                          index.search if index.approximate else None)


def counts_on_rows(index: PaperIndex, counts: Mapping[str, int]) -> np.ndarray:
    """Like counts by paper id, laid on the index's rows (papers not indexed are left out)."""
    on_rows = np.zeros(len(index), np.float32)
    for paper_id, count in counts.items():
        if index.has(paper_id):
            on_rows[index.row(paper_id)] = count
    return on_rows


class LiveContext:
    """The context for the index and model served now, rebuilt only when either changes; the
    like counts are read again once they are ``LIKE_COUNTS_SECONDS`` old (one Redis read per
    5 s, not per request)."""

    def __init__(self) -> None:
        self._key: tuple[str, str | None] | None = None
        self._base: RankingContext | None = None
        self._counted: tuple[float, RankingContext] | None = None
        self._lock = threading.Lock()

    def get(self, index: PaperIndex, model: CollaborativeModel | None,
            model_version: str | None, like_counts: Callable[[], Mapping[str, int]],
            now: float) -> RankingContext:
        key = (index.version, model_version)
        with self._lock:
            if self._key == key and self._counted and now - self._counted[0] < LIKE_COUNTS_SECONDS:
                return self._counted[1]
            if self._key != key or self._base is None:
                self._key, self._base = key, context_for(index, model)  # older ones are dropped
            counted = self._base.with_like_counts(counts_on_rows(index, like_counts()))
            self._counted = (now, counted)
            return counted

"""The ranking context: what every list over one index version and one collaborative model
version shares (the vectors, their neighbour graph and spread, popularity), and the one the
service serves now, with like counts at most ``LIKE_COUNTS_SECONDS`` old.

``context_for`` is how a published index becomes a ``RankingContext``; the service (through
``LiveContext``) and the offline evaluation both use it, so what is evaluated is what is
served, including the candidate path of an approximate (HNSW) index.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from recommender.index.paper_index import PaperIndex
from recommender.ranking.collaborative import CollaborativeModel

LIKE_COUNTS_SECONDS = 5.0  # how stale the popularity counts may be
COVARIANCE_SHRINKAGE = 0.1  # towards the mean eigenvalue: a well-conditioned inverse
COVARIANCE_SAMPLE = 200_000  # rows the covariance is estimated from (evenly spaced)
POPULAR_POOL = 1_000  # the most liked papers, kept sorted for the candidate pool

# Top-k over the context's vectors of an approximate index: (queries, k) -> (rows, scores).
Search = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class ContentStatistics:
    """The spread of the retrieval vectors of one index version: their mean and the inverse
    of their (shrunk) covariance, computed once per version (a 384x384 inverse), and how
    similar two unrelated papers of the collection look (``noise_floor``)."""

    mean: np.ndarray  # (d,)
    covariance: np.ndarray  # (d, d), shrunk
    precision: np.ndarray  # (d, d), its inverse
    # The mean plus two standard deviations of the cosines between distinct papers of the
    # sample (most pairs of a collection are unrelated); 0 below three papers. Below it, a
    # paper is not "similar" to a liked one, only the nearest of what is left. It depends
    # on the model and the collection, so it is measured, not set: 0.32 on citeulike-a,
    # 0.25 on the 38 papers of the sample corpus.
    noise_floor: float

    @classmethod
    def of(cls, vectors: np.ndarray) -> ContentStatistics:
        n, dim = vectors.shape
        rows = np.linspace(0, max(n - 1, 0), min(n, COVARIANCE_SAMPLE)).astype(np.int64)
        sample = np.asarray(vectors[rows], dtype=np.float64)
        mean = sample.mean(axis=0) if n else np.zeros(dim)
        centred = sample - mean
        scatter = centred.T @ centred
        cov = scatter / max(len(sample) - 1, 1)
        target = max(float(np.trace(cov)) / dim, 1e-6)
        cov = (1 - COVARIANCE_SHRINKAGE) * cov + COVARIANCE_SHRINKAGE * target * np.eye(dim)
        return cls(mean.astype(np.float32), cov.astype(np.float32),
                   np.linalg.inv(cov).astype(np.float32), _noise_floor(sample, mean, scatter))


def _noise_floor(sample: np.ndarray, mean: np.ndarray, scatter: np.ndarray) -> float:
    """``ContentStatistics.noise_floor``: the cosines of all distinct pairs of the sample's
    rows, summed through their second-moment matrix (d x d) instead of an n x n matrix."""
    n = len(sample)
    if n < 3:
        return 0.0
    second = scatter + n * np.outer(mean, mean)  # sample.T @ sample
    norms = np.einsum("id,id->i", sample, sample)  # each row with itself: not a pair
    pairs = n * (n - 1)
    average = (n * n * float(mean @ mean) - norms.sum()) / pairs
    squares = (float(np.sum(second * second)) - float(norms @ norms)) / pairs
    return average + 2 * float(np.sqrt(max(squares - average * average, 0.0)))


@dataclass
class RankingContext:
    """Everything shared by the users of one index version and one CF model version."""

    vectors: np.ndarray  # (n, d) retrieval vectors (content_space)
    neighbours: np.ndarray  # (n, K) rows
    neighbour_sims: np.ndarray  # (n, K)
    like_counts: np.ndarray  # (n,) current likes per paper
    item_ids: list[str]
    collaborative: CollaborativeModel | None = None
    dates: np.ndarray | None = None  # (n,) days since 1970-01-01, NaN when unknown
    # Top-k over ``vectors`` of an approximate index: when given, only candidates are scored.
    search: Search | None = None
    cf_rows: np.ndarray = field(init=False)  # CF item -> row here (-1: not in this index)
    cf_item_evidence: np.ndarray = field(init=False)  # (n,) CF training likes per row
    popularity: np.ndarray = field(init=False)  # (n,) log(1 + likes), scaled to [0, 1]
    popular_rows: np.ndarray = field(init=False)  # the POPULAR_POOL most liked rows, best first
    density: np.ndarray = field(init=False)  # (n,) mean similarity to the nearest papers
    statistics: ContentStatistics = field(init=False)

    def with_like_counts(self, like_counts: np.ndarray) -> RankingContext:
        """The same context with fresh like counts (cheap: nothing else is recomputed)."""
        fresh = copy.copy(self)
        fresh.like_counts = like_counts
        fresh.popularity, fresh.popular_rows = _popularity(like_counts)
        return fresh

    def __post_init__(self) -> None:
        n = len(self.item_ids)
        self.popularity, self.popular_rows = _popularity(self.like_counts)
        self.density = np.asarray(self.neighbour_sims[:, :10], dtype=np.float32).mean(axis=1)
        self.statistics = ContentStatistics.of(self.vectors)
        self.cf_item_evidence = np.zeros(n, dtype=np.float32)
        self.cf_rows = np.zeros(0, dtype=np.int64)
        if self.collaborative is not None:
            row_of = {pid: i for i, pid in enumerate(self.item_ids)}
            self.cf_rows = np.asarray(
                [row_of.get(pid, -1) for pid in self.collaborative.item_ids], dtype=np.int64)
            known = self.cf_rows >= 0
            self.cf_item_evidence[self.cf_rows[known]] = self.collaborative.item_likes[known]


def _popularity(like_counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log(1 + likes) scaled to [0, 1], and the POPULAR_POOL most liked rows, best first."""
    logs = np.log1p(np.asarray(like_counts, dtype=np.float32))
    top = float(logs.max()) if len(logs) else 0.0
    scaled = logs / top if top > 0 else logs
    pool = min(POPULAR_POOL, len(scaled))
    best = np.argpartition(-scaled, pool - 1)[:pool] if pool else np.zeros(0, np.int64)
    return scaled, best[np.argsort(-scaled[best], kind="stable")]


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

"""The ranking ideas, each a ``common.Scorer``; ``make(spec)`` builds one from its name.

Specs are ``name`` or ``name:a=1,b=2`` (parameters as floats). See ``FACTORIES``.
Blends add the second part to centred mean cosine; per-user z-scores where the scales differ.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from scipy import sparse
from threadpoolctl import threadpool_limits

from recommender.evaluation.dataset import Dataset
from recommender.index.content_space import (
    NEIGHBOUR_POWER,
    build_content_space,
    normalise,
)
from recommender.ranking.collaborative import CollaborativeModel
from recommender.ranking.context import RankingContext, context_for
from recommender.ranking.rank import rank
from recommender.ranking.request import ListRequest

if TYPE_CHECKING:
    from common import Scorer

def centred(vectors: np.ndarray) -> np.ndarray:
    return normalise(vectors - vectors.mean(axis=0))

QUERY_NEIGHBOURS = 10


def expand_queries(vectors: np.ndarray, neighbours: np.ndarray, neighbour_sims: np.ndarray,
                   rows: np.ndarray) -> np.ndarray:
    """One query vector per liked row: the paper plus its nearest neighbours (AQE). The
    ranking used it until 2026-11-30; these experiments dropped it, and it lives on here so
    their rows can be rerun."""
    rows = np.asarray(rows, dtype=np.int64)
    near = neighbours[rows, :QUERY_NEIGHBOURS]
    sims = neighbour_sims[rows, :QUERY_NEIGHBOURS]
    weights = np.where(near >= 0, np.maximum(sims, 0.0) ** NEIGHBOUR_POWER, 0.0)
    queries = vectors[rows] + np.einsum("qk,qkd->qd", weights, vectors[np.maximum(near, 0)])
    return normalise(queries)


def zscore(scores: np.ndarray) -> np.ndarray:
    finite = np.isfinite(scores)
    std = float(scores[finite].std()) or 1.0
    return np.where(finite, (scores - scores[finite].mean()) / std, -np.inf)


def aggregate(sims: np.ndarray, how: str, temperature: float) -> np.ndarray:
    """(n, likes) cosines -> (n,): mean, max, softmax-weighted, or half max half mean."""
    if how == "mean":
        return sims.mean(axis=1)
    if how == "max":
        return sims.max(axis=1)
    if how == "mix":
        return 0.5 * sims.max(axis=1) + 0.5 * sims.mean(axis=1)
    weights = np.exp((sims - sims.max(axis=1, keepdims=True)) / temperature)
    return (weights * sims).sum(axis=1) / weights.sum(axis=1)


def user_item_matrix(data: Dataset) -> sparse.csr_matrix:
    rows = np.concatenate([np.full(len(r), u) for u, r in enumerate(data.train)])
    cols = np.concatenate(data.train)
    return sparse.csr_matrix((np.ones(len(cols), np.float32), (rows, cols)),
                             shape=(len(data.users), len(data.papers)))


class Cosine:
    """Cosine to the likes in a content space, aggregated over likes.

    space: raw (uncentred), centred, whiten (centred then ZCA-whitened with shrinkage
    ``shrink``), dba (the service's augmented vectors), wdba (augmentation over the
    whitened vectors); aqe=1 expands each like with its
    neighbours (the service's query expansion; only with dba)."""

    def __init__(self, name: str, space: str = "centred", how: str = "mean",
                 temperature: float = 0.05, aqe: bool = False, shrink: float = 0.1) -> None:
        self.name, self.space, self.how = name, space, how
        self.temperature, self.aqe, self.shrink = temperature, aqe, shrink
        self.vectors = np.zeros((0, 0), np.float32)
        self.neighbours = np.zeros((0, 0), np.int32)
        self.neighbour_sims = np.zeros((0, 0), np.float32)

    def fit(self, data: Dataset, vectors: np.ndarray) -> None:
        if self.space == "raw":
            self.vectors = vectors
        elif self.space == "centred":
            self.vectors = centred(vectors)
        elif self.space == "whiten":
            self.vectors = whiten(vectors, self.shrink)
        else:  # dba; wdba: the same augmentation over the whitened vectors
            base = whiten(vectors, self.shrink) if self.space == "wdba" else vectors
            space = build_content_space(base, exact_max=10**9)
            self.vectors = space.vectors
            self.neighbours, self.neighbour_sims = space.neighbours, space.neighbour_sims

    def queries(self, liked: np.ndarray) -> np.ndarray:
        if self.aqe:
            return expand_queries(self.vectors, self.neighbours, self.neighbour_sims, liked)
        return self.vectors[liked]

    def scores(self, user: int, liked: np.ndarray) -> np.ndarray:
        if not len(liked):
            return np.zeros(len(self.vectors), np.float32)
        queries = self.queries(liked)
        if self.how == "mean":
            return self.vectors @ queries.mean(axis=0)
        return aggregate(self.vectors @ queries.T, self.how, self.temperature)


def whiten(vectors: np.ndarray, shrink: float) -> np.ndarray:
    """Centred, then ZCA-whitened with covariance shrunk towards its mean eigenvalue."""
    x = vectors - vectors.mean(axis=0)
    cov = np.cov(x, rowvar=False)
    cov = (1 - shrink) * cov + shrink * np.trace(cov) / len(cov) * np.eye(len(cov))
    values, basis = np.linalg.eigh(cov)
    return normalise(x @ basis @ np.diag(values ** -0.5) @ basis.T)


class Hybrid:
    """The production ``rank`` over ``context_for``, as ``methods.Hybrid``, returning a score
    for every paper (rows not returned get -inf) so that new papers can be ranked too."""

    def __init__(self, name: str = "hybrid", seed: int = 0) -> None:
        self.name, self.seed = name, seed
        self.context: RankingContext | None = None

    def fit(self, data: Dataset, vectors: np.ndarray) -> None:
        import tempfile
        from pathlib import Path

        from recommender.index.store import IndexStore

        model = CollaborativeModel.fit(data.training_likes(), seed=self.seed)
        days = np.asarray([paper.day for paper in data.papers], dtype=np.float64)
        with tempfile.TemporaryDirectory() as folder:
            index = IndexStore(Path(folder)).publish(data.paper_ids, vectors, days,
                                                     "experiments", 10**9, full=True)
        self.context = context_for(index, model, data.like_counts)

    def scores(self, user: int, liked: np.ndarray) -> np.ndarray:
        assert self.context is not None
        n = len(self.context.item_ids)
        ranked = rank(self.context, ListRequest(liked, n))
        full = np.full(n, -np.inf)
        full[ranked.rows] = ranked.scores
        return full


class Collaborative:
    """A CF model's per-paper score: ALS (the library's, folded in), BPR, or implicit's
    item-item BM25 / cosine (sum of the liked papers' similarity rows)."""

    def __init__(self, name: str, kind: str, neighbours: int = 100) -> None:
        self.name, self.kind, self.neighbours = name, kind, neighbours
        self.score_of: Callable[[int, np.ndarray], np.ndarray] = lambda u, r: np.zeros(0)

    def fit(self, data: Dataset, vectors: np.ndarray) -> None:
        matrix = user_item_matrix(data)
        with threadpool_limits(1, "blas"):
            if self.kind == "als":
                self.score_of = als_scorer(data)
            elif self.kind == "bpr":
                self.score_of = bpr_scorer(matrix)
            else:
                self.score_of = item_item_scorer(matrix, self.kind, self.neighbours)

    def scores(self, user: int, liked: np.ndarray) -> np.ndarray:
        return self.score_of(user, liked)


def als_scorer(data: Dataset) -> Callable[[int, np.ndarray], np.ndarray]:
    model = CollaborativeModel.fit(data.training_likes(), seed=0)
    row_of = {pid: row for row, pid in enumerate(data.paper_ids)}
    rows = np.array([row_of[pid] for pid in model.item_ids], dtype=np.int64)
    ids = data.paper_ids

    def score(user: int, liked: np.ndarray) -> np.ndarray:
        full = np.zeros(len(ids), np.float32)
        full[rows] = model.scores_for([ids[r] for r in liked])
        return full
    return score


def bpr_scorer(matrix: sparse.csr_matrix) -> Callable[[int, np.ndarray], np.ndarray]:
    from implicit.cpu.bpr import BayesianPersonalizedRanking

    bpr = BayesianPersonalizedRanking(factors=128, learning_rate=0.05, regularization=0.01,
                                      iterations=100, random_state=0)
    bpr.fit(matrix, show_progress=False)
    items, users = np.asarray(bpr.item_factors), np.asarray(bpr.user_factors)
    return lambda user, liked: items @ users[user]


def item_item_scorer(matrix: sparse.csr_matrix, kind: str,
                     neighbours: int) -> Callable[[int, np.ndarray], np.ndarray]:
    from implicit.nearest_neighbours import BM25Recommender, CosineRecommender

    model = (BM25Recommender(K=neighbours) if kind == "bm25"
             else CosineRecommender(K=neighbours))
    model.fit(matrix, show_progress=False)
    similarity = sparse.csr_matrix(model.similarity)
    return lambda user, liked: np.asarray(similarity[liked].sum(axis=0)).ravel()


class Blend:
    """Centred mean cosine plus ``weight`` x another scorer.

    mode ``gate``: the other part scaled to [0, 1] per user (by its max) and multiplied by
    each paper's evidence gate, likes / (likes + half): a paper without training likes gets
    content only. mode ``z``: per-user z-scores of both parts. mode ``pop``: the hybrid's
    popularity term, log1p(likes) scaled to [0, 1], times weight / (user's likes)^2."""

    def __init__(self, name: str, other: Scorer | None, weight: float, mode: str,
                 half: float = 30.0, base: Scorer | None = None) -> None:
        self.name, self.other, self.weight, self.mode, self.half = name, other, weight, mode, half
        self.base = base or Cosine("centred-mean")
        self.gate = np.zeros(0)

    def fit(self, data: Dataset, vectors: np.ndarray) -> None:
        self.base.fit(data, vectors)
        if self.other is not None:
            self.other.fit(data, vectors)
        counts = data.like_counts.astype(np.float64)
        if self.mode == "pop":
            self.gate = np.log1p(counts) / max(np.log1p(counts).max(), 1e-12)
        else:
            self.gate = counts / (counts + self.half)

    def scores(self, user: int, liked: np.ndarray) -> np.ndarray:
        base = self.base.scores(user, liked)
        if self.mode == "pop":
            return base + self.weight / max(len(liked), 1) ** 2 * self.gate
        assert self.other is not None
        other = np.asarray(self.other.scores(user, liked), dtype=np.float64)
        if self.mode == "z":
            return zscore(base) + self.weight * zscore(other)
        top = float(np.max(other)) if len(other) else 0.0
        scaled = np.clip(other / top, 0.0, 1.0) if top > 0 else np.zeros_like(other)
        return base + self.weight * self.gate * scaled

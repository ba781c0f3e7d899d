"""Ranking variants the offline evaluation keeps beside the production ranking: ideas measured
on citeulike-a (benchmarks/ranking_experiments/results.md) that did not become the ranking
but are still worth comparing with it. Both are content methods (no collaborative filtering,
no popularity) that score every paper; both are fitted on the training likes only.

- ``content-whitened``: mean cosine to the liked papers over embeddings centred and then
  ZCA-whitened, the covariance shrunk ``WHITEN_SHRINKAGE`` towards its mean eigenvalue. The
  strongest content-only baseline at the top of P10's lists (nDCG@20 0.141 against 0.130
  centred, torch vectors), and the idea behind the Fisher term of the ranking; worse than
  plain centred cosine with one like (P1).
- ``colike-projection``: z(centred mean cosine) + z(mean cosine in a space learned from
  co-likes): the directions in which papers liked by the same reader agree more than papers
  at random (generalised eigenvectors of the co-liked pairs' covariance against the
  like-weighted covariance), the top ``PROJECTION_DIM`` scaled by eigenvalue **
  ``PROJECTION_POWER``. Better than centred cosine on P10 (Recall@300 0.489 against 0.468,
  new papers too), below the ranking's Fisher term; the lever left to stack on top of it.
  It needs readers with several likes: with one like each (P1) there is nothing to learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy import sparse
from scipy.linalg import eigh

from recommender.index.content_space import normalise

if TYPE_CHECKING:
    from recommender.evaluation.dataset import Dataset

WHITEN_SHRINKAGE = 0.3  # 0.1 did the same at the top of P10's lists, worse at Recall@300
PROJECTION_DIM = 128
PROJECTION_POWER = 0.5
PROJECTION_RIDGE = 1e-3  # of the like-weighted covariance, relative to its mean eigenvalue


def _vectors(vectors: np.ndarray | None) -> np.ndarray:
    if vectors is None:
        raise ValueError("this method needs the paper embeddings")
    return vectors


def _centred(vectors: np.ndarray) -> np.ndarray:
    return normalise(vectors - vectors.mean(axis=0))


def _zscore(scores: np.ndarray) -> np.ndarray:
    return (scores - scores.mean()) / (scores.std() or 1.0)


class WhitenedContent:
    """Mean cosine to the likes over centred, shrunk-ZCA-whitened embeddings."""

    needs_vectors = True

    def __init__(self, seed: int, shrinkage: float = WHITEN_SHRINKAGE) -> None:
        self.name = "content-whitened"
        self._shrinkage = shrinkage
        self._vectors = np.zeros((0, 0), np.float32)

    def fit(self, data: Dataset, vectors: np.ndarray | None) -> None:
        x = _vectors(vectors).astype(np.float64)
        x -= x.mean(axis=0)
        cov = np.cov(x, rowvar=False)
        dim = len(cov)
        cov = (1 - self._shrinkage) * cov + self._shrinkage * np.trace(cov) / dim * np.eye(dim)
        values, basis = np.linalg.eigh(cov)
        self._vectors = normalise((x @ (basis * values ** -0.5) @ basis.T).astype(np.float32))

    def scores(self, liked: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
        if not len(liked):
            return np.zeros(len(self._vectors), np.float32)
        return self._vectors @ self._vectors[liked].mean(axis=0)


class CoLikeProjection:
    """z(centred mean cosine) + z(mean cosine in the co-like space), per user."""

    needs_vectors = True

    def __init__(self, seed: int, dim: int = PROJECTION_DIM,
                 power: float = PROJECTION_POWER) -> None:
        self.name = "colike-projection"
        self._dim, self._power = dim, power
        self._centred = np.zeros((0, 0), np.float32)
        self._projected = np.zeros((0, 0), np.float32)

    def fit(self, data: Dataset, vectors: np.ndarray | None) -> None:
        self._centred = _centred(_vectors(vectors))
        likes = _user_item_matrix(data)
        transform = _co_like_directions(self._centred.astype(np.float64), likes, self._dim,
                                        self._power)
        self._projected = normalise((self._centred @ transform).astype(np.float32))

    def scores(self, liked: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
        if not len(liked):
            return np.zeros(len(self._centred), np.float32)
        plain = self._centred @ self._centred[liked].mean(axis=0)
        learned = self._projected @ self._projected[liked].mean(axis=0)
        return _zscore(plain) + _zscore(learned)


def _user_item_matrix(data: Dataset) -> sparse.csr_matrix:
    """Training likes as a users x papers matrix of ones."""
    rows = np.concatenate([np.full(len(r), u) for u, r in enumerate(data.train)])
    cols = np.concatenate(data.train)
    return sparse.csr_matrix((np.ones(len(cols), np.float64), (rows, cols)),
                             shape=(len(data.train), len(data.papers)))


def _co_like_directions(x: np.ndarray, likes: sparse.csr_matrix, dim: int,
                        power: float) -> np.ndarray:
    """(d, dim): the generalised eigenvectors of (co-liked pair covariance, like-weighted
    covariance) with the largest eigenvalues, each scaled by eigenvalue ** power."""
    counts = np.asarray(likes.sum(axis=0)).ravel()
    sums = np.asarray(likes @ x)  # (users, d): each user's summed liked vectors
    own = x.T @ (x * counts[:, None])  # every like paired with itself
    per_user = np.asarray(likes.sum(axis=1)).ravel()
    pairs = max(float((per_user * (per_user - 1)).sum()), 1.0)
    pair_cov = (sums.T @ sums - own) / pairs
    like_cov = own / max(counts.sum(), 1.0)
    like_cov += PROJECTION_RIDGE * np.trace(like_cov) / len(like_cov) * np.eye(len(like_cov))
    values, basis = eigh(pair_cov, like_cov)
    top = np.argsort(-values)[:dim]
    return basis[:, top] * np.maximum(values[top], 1e-6) ** power

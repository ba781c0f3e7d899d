"""Ranking as pure functions over arrays: no Redis, no clock, no I/O.

The service, the digests and the offline evaluation all rank through these functions, so
what is evaluated is exactly what is served.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DISLIKE_WEIGHT = 1.0
# Unrelated abstracts still have cosines of 0.1-0.2 under sentence embeddings: only
# similarity above this floor counts as "on a disliked topic".
DISLIKE_FLOOR = 0.2


@dataclass
class ContentScores:
    score: np.ndarray  # (n,) final score per candidate, higher is better
    like_sim: np.ndarray  # (n,) best cosine to any liked paper
    nearest_like: np.ndarray  # (n,) index into the liked rows of that best match (-1: none)
    dislike_sim: np.ndarray  # (n,) best cosine to any disliked paper (0 when none)


def content_scores(
    candidates: np.ndarray,
    liked: np.ndarray,
    disliked: np.ndarray,
    dislike_weight: float = DISLIKE_WEIGHT,
) -> ContentScores:
    """Score candidate vectors by closeness to the liked papers, minus closeness to disliked ones.

    All vectors are unit length, so inner products are cosines. A candidate's like score is
    its similarity to the *nearest* liked paper, so a user with several interests is served
    each of them; the dislike penalty only counts similarity above ``DISLIKE_FLOOR``.
    """
    n = len(candidates)
    if len(liked):
        sims = candidates @ liked.T
        nearest = sims.argmax(axis=1)
        like_sim = sims[np.arange(n), nearest]
    else:
        nearest = np.full(n, -1)
        like_sim = np.zeros(n, dtype=np.float32)
    if len(disliked):
        dislike_sim = np.maximum((candidates @ disliked.T).max(axis=1), 0.0)
    else:
        dislike_sim = np.zeros(n, dtype=np.float32)
    penalty = dislike_weight * np.maximum(dislike_sim - DISLIKE_FLOOR, 0.0)
    return ContentScores(like_sim - penalty, like_sim, nearest, dislike_sim)


def mmr(vectors: np.ndarray, relevance: np.ndarray, k: int, diversity: float) -> np.ndarray:
    """Maximal marginal relevance: positions of k items, trading relevance for novelty.

    ``diversity`` 0 keeps the relevance order; 1 picks each next item as far as possible from
    those already picked.
    """
    n = len(relevance)
    k = min(k, n)
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    if diversity <= 0:
        return np.argsort(-relevance, kind="stable")[:k]
    chosen = [int(np.argmax(relevance))]
    closest = vectors @ vectors[chosen[0]]
    available = np.ones(n, dtype=bool)
    available[chosen[0]] = False
    for _ in range(k - 1):
        value = (1 - diversity) * relevance - diversity * closest
        value[~available] = -np.inf
        pick = int(np.argmax(value))
        chosen.append(pick)
        available[pick] = False
        closest = np.maximum(closest, vectors @ vectors[pick])
    return np.asarray(chosen, dtype=np.int64)


def cold_start_relevance(vectors: np.ndarray, like_counts: np.ndarray) -> np.ndarray:
    """Relevance for a user we know nothing about: popularity first, then centrality.

    Centrality (closeness to the corpus mean) only breaks ties among equally popular papers,
    so that an empty system still opens with mainstream papers rather than outliers.
    """
    centre = vectors.mean(axis=0)
    norm = float(np.linalg.norm(centre)) or 1.0
    centrality = (vectors @ (centre / norm) + 1.0) / 2.0  # in [0, 1]
    return np.log1p(like_counts.astype(np.float64)) + 0.1 * centrality

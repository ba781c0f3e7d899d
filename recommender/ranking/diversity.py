"""The top of a list, spread by diversity: maximal marginal relevance over the best papers.

Deterministic, and the same list at any depth: the first ten of a list of twenty are the list
of ten (so "more papers" continues a list without repeats). Ties go to the lower position, and
the i-th pick of ``mmr`` looks only at the ``reach(i)`` most relevant items, however many are
asked for.
"""

from __future__ import annotations

import numpy as np

COLD_START_DIVERSITY = 0.5  # a list for a user without likes spreads across the collection
MMR_POOL = 30  # diversity re-ranks at least this many best papers (and 3 x what is asked)


def top(scores: np.ndarray, vectors: np.ndarray, want: int, diversity: float) -> np.ndarray:
    """Positions of the ``want`` best of ``scores`` (``-inf``: never), best first; with
    ``diversity`` above 0, picked by ``mmr`` from a pool of the best."""
    finite = int(np.isfinite(scores).sum())
    want = min(want, finite)
    if want <= 0:
        return np.zeros(0, np.int64)
    pool_size = min(finite, max(MMR_POOL, 3 * want) if diversity > 0 else want)
    # Best first, ties by position: the same pool for the same scores.
    pool = np.argpartition(-scores, pool_size - 1)[:pool_size]
    pool = pool[np.lexsort((pool, -scores[pool]))]
    if diversity <= 0:
        return pool[:want]
    return pool[mmr(vectors[pool], scores[pool], want, diversity)]


def mmr(vectors: np.ndarray, relevance: np.ndarray, k: int, diversity: float) -> np.ndarray:
    """Maximal marginal relevance: positions of k items, trading relevance for novelty.

    Each next pick maximises ``(1 - diversity) * relevance - diversity * similarity`` to the
    closest item already picked: 0 keeps the relevance order, 1 picks the item least like
    those already picked. Callers pass a pool of relevant items only, most relevant first:
    the i-th pick (from 0) is among the first ``reach(i)`` of them, so the picks of a shorter
    list are the start of a longer one's.
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
        value[reach(len(chosen)):] = -np.inf
        pick = int(np.argmax(value))
        chosen.append(pick)
        available[pick] = False
        closest = np.maximum(closest, vectors @ vectors[pick])
    return np.asarray(chosen, dtype=np.int64)


def reach(pick: int) -> int:
    """How many of the most relevant items the ``pick``-th pick of ``mmr`` chooses among."""
    return max(MMR_POOL, 3 * (pick + 1))

"""The candidate path: the rows worth scoring for one list over an approximate index.

The candidates are the most popular papers, each liked paper's stored neighbours (no search
needed), the approximate index's nearest papers to the user's direction and the collaborative
model's best; then a best-first walk of the stored neighbour graph follows the best of them
(benchmarks/README.md, "The cheapest path": it replaced one index search per interest of the
user). ``cost.path_costs`` says when scoring every paper is cheaper.
"""

from __future__ import annotations

import numpy as np

from recommender.index.content_space import normalise
from recommender.ranking.context import RankingContext
from recommender.ranking.cost import neighbours_per_like, path_costs, per_query

# The neighbours of the WALK_BEST best candidates (half the list, if more) join, for at most
# WALK_ROUNDS rounds.
WALK_BEST = 50
WALK_ROUNDS = 3


def find_candidates(
    ctx: RankingContext, liked: np.ndarray, direction: np.ndarray | None,
    cf_all: np.ndarray | None,
    want: int,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows worth scoring and their vectors; None for all of them, when that is the
    cheaper path (``path_costs``: small corpora, or a long list over a mid-sized one).
    ``direction``: the user's content query (``scoring``); ``cf_all``: the collaborative
    scores of every row, None when the model knows nothing of the user."""
    exact, candidates = path_costs(ctx, len(liked), want, cf_all is not None)
    if ctx.search is None or exact <= candidates:
        return None
    per_pool = per_query(want)
    pools = [ctx.popular_rows[:per_pool]]
    if direction is not None:
        pools.append(np.asarray(
            ctx.neighbours[liked, :neighbours_per_like(ctx, len(liked), per_pool)]).ravel())
        rows, _ = ctx.search(normalise(direction[None, :]), per_pool)
        pools.append(rows.ravel())
        if cf_all is not None:
            pools.append(np.argpartition(-cf_all, per_pool)[:per_pool])
    found = np.unique(np.concatenate(pools).astype(np.int64))
    found = found[found >= 0]
    vectors = ctx.vectors[found]
    if direction is None or len(liked) < 2:  # one like: a point of the index, found by search
        return found, vectors
    return _walk(ctx, found, vectors, direction, expanded=liked, best=max(WALK_BEST, want // 2))


def _walk(ctx: RankingContext, rows: np.ndarray, vectors: np.ndarray, direction: np.ndarray,
          expanded: np.ndarray, best: int) -> tuple[np.ndarray, np.ndarray]:
    """The candidates, with what a best-first walk of the stored neighbour graph adds: each
    round the stored neighbours of the ``best`` candidates closest to the user's direction
    that were not expanded yet (the likes' neighbours are in already) join, for WALK_ROUNDS
    rounds or until there is nothing left to expand.

    The graph is entered at every like, so a reader of several topics is followed into each;
    a search of the approximate index for their one direction, a mix of those topics, may
    land in one of them or in none. At 1M papers and 10-100 likes it finds about as much of
    the exact list as 8 searches (one per interest cluster) did, at a third of the cost
    (benchmarks/README.md, "The cheapest path")."""
    scores = vectors @ direction
    known = np.zeros(len(ctx.item_ids), bool)  # a mask, not sorted sets: no sort a round
    known[rows] = True
    closed = np.isin(rows, expanded)
    for _ in range(WALK_ROUNDS):
        open_scores = np.where(closed, -np.inf, scores)
        count = min(best, len(rows) - int(closed.sum()))
        if count <= 0:
            break
        picked = np.argpartition(-open_scores, count - 1)[:count]
        closed[picked] = True
        found = np.asarray(ctx.neighbours[rows[picked]]).ravel()
        found = found[found >= 0]
        new = np.unique(found[~known[found]])
        known[new] = True
        new_vectors = ctx.vectors[new]
        rows = np.concatenate([rows, new])
        vectors = np.concatenate([vectors, new_vectors])
        scores = np.concatenate([scores, new_vectors @ direction])
        closed = np.concatenate([closed, np.zeros(len(new), bool)])
    return rows, vectors

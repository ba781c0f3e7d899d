"""A method of `paperrec evaluate` as a ranking variant of the simulator, so an online
experiment can compare production with e.g. ``content-centred``.

The method is fitted on the dataset (its training likes and the papers' vectors, in the
dataset's row order, which is the simulated index's: a full build keeps it). Each list asks
it for its scores over every row from the reader's likes as they are now (the simulation's
likes included), masks what the request leaves out (rated, served, set aside...), and takes
the top of the page as a ``Ranked``: its scores, in the reader's own units by their spread
over the collection (``Ranked.scale``) as production's are. The simulator only: the service
never loads an evaluation method.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from recommender.evaluation.methods import Method, TopRows
from recommender.ranking.context import RankingContext
from recommender.ranking.rank import Ranked
from recommender.ranking.request import ListRequest
from recommender.ranking.scoring import close_likes, nearest_likes
from recommender.ranking.variants import Variant


@dataclass(frozen=True)
class MethodVariant(Variant):
    """``Variant`` whose ranking is a fitted evaluation ``Method``'s."""

    method: Method | None = field(default=None, compare=False)

    def rank(self, ctx: RankingContext, request: ListRequest,
             groups: list[np.ndarray]) -> Ranked:
        assert self.method is not None, "a MethodVariant needs its fitted method"
        _, offset, k = request.page()
        want = offset + k
        n = len(ctx.item_ids)
        found = self.method.scores(request.liked)
        if isinstance(found, TopRows):  # a method that ranks for itself: its order
            scores = np.full(n, -np.inf)
            scores[found.rows] = -np.arange(len(found.rows), dtype=np.float64)
        else:
            scores = np.asarray(found, dtype=np.float64).copy()
        finite = scores[np.isfinite(scores)]
        scale = float(finite.std()) if len(finite) > 1 and finite.std() > 0 else 1.0
        rows = np.arange(n, dtype=np.int64)
        scores[request.left_out(ctx, rows)] = -np.inf
        best = np.argsort(-scores, kind="stable")[:want]
        best = best[np.isfinite(scores[best])][offset:]
        picked = scores[best] - (float(finite.mean()) if len(finite) else 0.0)
        vectors = np.asarray(ctx.vectors[best], dtype=np.float32)
        nearest, similarity = nearest_likes(ctx, vectors, request.liked)
        zeros = np.zeros(len(best))
        return Ranked(best, picked, picked, nearest, similarity, zeros, zeros,
                      bool(len(request.liked)), scale,
                      close_likes(ctx, vectors, request.liked, request.liked_vectors))

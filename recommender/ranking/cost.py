"""What the two ways to a list cost, and how large the candidate path's pools are.

A list is either scored over every paper (each vector streamed once) or over the candidates an
approximate index and the stored neighbour graph find (``candidates``); it takes the cheaper.
The prices are microseconds of one core, measured by benchmarks/path_cost.py
(benchmarks/README.md, "The cheapest path"). Over an exact index the candidate path would scan
every paper per search, so it is never the cheaper one.
"""

from __future__ import annotations

from recommender.index.content_space import HNSW_EF
from recommender.ranking.context import RankingContext

SCAN_US_PER_PAPER = 0.13
GATHER_US_PER_ROW = 1.25  # a candidate row copied, scored and checked
SEARCH_US_PER_EF = 0.5  # one search, per unit of efSearch
NEIGHBOUR_POOLS = 10  # the likes' stored neighbours: at most this many pools' worth


def path_costs(ctx: RankingContext, likes: int, want: int,
               collaborative: bool) -> tuple[float, float]:
    """Estimated microseconds of the two paths for a list of ``want`` for a user with
    ``likes`` liked rows: scoring every paper, and the candidate path (infinite without an
    approximate index). The same sums as ``candidates.find_candidates`` runs: its search,
    the rows of each pool gathered."""
    exact = SCAN_US_PER_PAPER * len(ctx.item_ids)
    if ctx.search is None:
        return exact, float("inf")
    search_ef, pool = candidate_work(ctx, likes, want, collaborative)
    return exact, SEARCH_US_PER_EF * search_ef + GATHER_US_PER_ROW * pool


def candidate_work(ctx: RankingContext, likes: int, want: int,
                   collaborative: bool) -> tuple[int, int]:
    """What the candidate path does for such a list: the efSearch units of its search (one,
    for the user's direction) and the rows its pools gather. The walk is not priced: it
    adds 100-500 rows on average at 100k and 1M papers (synthetic readers of 10 and 100
    likes)."""
    per_pool = per_query(want)
    queries = 1 if likes else 0
    pool = (per_pool * (1 + queries + collaborative)
            + likes * neighbours_per_like(ctx, likes, per_pool))
    return max(HNSW_EF, per_pool) * queries, min(pool, len(ctx.item_ids))


def neighbours_per_like(ctx: RankingContext, likes: int, per_pool: int) -> int:
    """How many of each like's stored neighbours (nearest first) join the candidates: all,
    up to NEIGHBOUR_POOLS times ``per_pool`` rows in all (ten a like for 100 likes and a
    list of 20). The walk follows the rest where they lead somewhere: for 25 synthetic
    readers of 100 likes, at 1M papers a list took 4.8 ms with ten neighbours a like against
    5.8 ms with all twenty, sharing 0.93 of the exact top 20 either way; at 100k 3.5 against
    4.8 ms, 0.96 either way (with two a like: 0.93 and 0.95)."""
    return max(1, min(ctx.neighbours.shape[1], NEIGHBOUR_POOLS * per_pool // max(likes, 1)))


def per_query(want: int) -> int:
    """Candidates taken from each pool: an HNSW search costs about the same up to
    k=efSearch."""
    return max(100, 4 * want)

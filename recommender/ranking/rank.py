"""The ranking of one reading list: pure functions over arrays (no Redis, no clock, no files).

``rank`` is the single place where content similarity, collaborative filtering, popularity,
dislikes, served history, dates and diversity meet. The REST API, the email digests and the
offline evaluation all call it; only where the likes come from differs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from recommender.index.content_space import HNSW_EF, normalise
from recommender.ranking.collaborative import CollaborativeModel

# Blend weights. Each adapts to the evidence: popularity matters most for a user with few
# likes, collaborative filtering for users and papers with many (see ``rank``).
POPULARITY_WEIGHT = 0.3  # for a user with one like; it falls with the square of their likes
COLLABORATIVE_WEIGHT = 0.05
USER_EVIDENCE_HALF = 3.0  # likes known to the CF model at which its user weight is one half
ITEM_EVIDENCE_HALF = 30.0  # co-likes of a paper at which its item weight is one half
# The user's direction in the whitened space (see ``ContentStatistics``): its weight once the
# user has FISHER_FULL_LIKES likes, rising linearly from nothing at one like (a single paper
# is too thin a sample to tell its distinctive directions from its noise). Chosen by the
# evaluation (README, "Evaluation"): with 2, 3 and 5 likes per user a full weight from 10
# likes beats one from 2 or 5, and no Fisher term at all.
FISHER_WEIGHT = 1.0
FISHER_FULL_LIKES = 10
COVARIANCE_SHRINKAGE = 0.1  # towards the mean eigenvalue: a well-conditioned inverse
COVARIANCE_SAMPLE = 200_000  # rows the covariance is estimated from (evenly spaced)
DISLIKE_WEIGHT = 1.0
# Unrelated abstracts still have cosines of 0.1-0.2: only similarity above this floor counts as
# "on a disliked topic".
DISLIKE_FLOOR = 0.2
COLD_START_DIVERSITY = 0.5  # a list for a user without likes spreads across the collection
DENSITY_WEIGHT = 0.01  # breaks ties in favour of mainstream papers (dense neighbourhoods)
SERVED_PENALTY = 0.15  # subtracted from papers already served (unless they are excluded)
# The candidate path walks the stored neighbour graph from what it found: the neighbours of
# the WALK_BEST best candidates (half the list, if more) join, for at most WALK_ROUNDS
# rounds (benchmarks/README.md, "The cheapest path": it replaced one index search per
# interest of the user).
WALK_BEST = 50
WALK_ROUNDS = 3
NEIGHBOUR_POOLS = 10  # the likes' stored neighbours: at most this many pools' worth
# What the two ways to a list cost, in microseconds of one core (benchmarks/path_cost.py;
# benchmarks/README.md, "The cheapest path"): scoring every paper streams each vector once;
# the candidate path searches the approximate index (a search visits about efSearch nodes)
# and scores the rows it gathers. A list takes the cheaper; over an exact index the
# candidate path would scan every paper per search, so it is never the cheaper one.
SCAN_US_PER_PAPER = 0.13
GATHER_US_PER_ROW = 1.25  # a candidate row copied, scored and checked
SEARCH_US_PER_EF = 0.5  # one search, per unit of efSearch
POPULAR_POOL = 1_000  # the most liked papers, kept sorted for the candidate pool
MMR_POOL = 30  # diversity re-ranks at least this many best papers (and 3 x what is asked)

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


@dataclass
class Ranked:
    """Rows best first, with the parts of each score (for reasons in words and as data)."""

    rows: np.ndarray
    scores: np.ndarray
    content: np.ndarray  # the content part of the score (mean cosine plus the Fisher term)
    nearest_like: np.ndarray  # row of the most similar liked paper (-1 without likes)
    nearest_similarity: np.ndarray  # its cosine
    collaborative: np.ndarray  # weighted collaborative contribution
    popularity: np.ndarray  # weighted popularity contribution
    personalized: bool
    # The spread (standard deviation) of the user's content scores over the collection:
    # scores / scale say how far a paper stands out for this user (calibration.py); 1 without
    # likes.
    scale: float = 1.0


@dataclass
class Scores:
    """The score of some rows for one user, part by part, before anything is left out."""

    rows: np.ndarray
    vectors: np.ndarray  # their retrieval vectors
    total: np.ndarray  # what the list is ordered by
    content: np.ndarray
    popularity: np.ndarray
    collaborative: np.ndarray
    dislike: np.ndarray  # subtracted: closeness to a disliked paper
    served: np.ndarray  # subtracted: served before (0 when served papers are left out)
    scale: float  # the spread of the user's content scores over the collection (Ranked.scale)


def score(
    ctx: RankingContext,
    liked: np.ndarray,
    disliked: np.ndarray,
    *,
    rows: np.ndarray | None = None,
    want: int = 0,
    served: np.ndarray | None = None,
    exclude_served: bool = False,
    liked_vectors: np.ndarray | None = None,
    candidates: bool = True,
) -> Scores:
    """Every part of the score of ``rows``; by default of every paper worth scoring for a
    list of ``want`` (all of them over an exact index or where that is cheaper, else the
    candidates over the approximate one; ``candidates=False``: all of them). ``rank`` orders
    these; why-not reads one paper's.

    ``liked_vectors``: liked papers that have no row in this index yet (imported since the
    build), as vectors of the content space (``content_space.centre_query`` of their raw
    embeddings). They count as likes in the user's direction and in the number of likes;
    the collaborative model and the nearest-like reasons know only indexed rows."""
    liked = np.asarray(liked, dtype=np.int64)
    disliked = np.asarray(disliked, dtype=np.int64)
    served = np.zeros(0, np.int64) if served is None else np.asarray(served, dtype=np.int64)
    cf_all = _collaborative(ctx, liked)
    direction = _direction(ctx, liked, liked_vectors)
    likes = len(liked) + (0 if liked_vectors is None else len(liked_vectors))
    vecs = None
    if rows is None and candidates:
        found = _candidates(ctx, liked, direction, cf_all, want)
        if found is not None:
            rows, vecs = found
    # Every paper, or some: indexing a memory-mapped array copies, so only then.
    if vecs is None:
        vecs = np.asarray(ctx.vectors) if rows is None else ctx.vectors[rows]
    rows = np.arange(len(ctx.item_ids)) if rows is None else np.asarray(rows, dtype=np.int64)
    if direction is None:
        content = np.zeros(len(rows), np.float32)
    else:
        content = vecs @ direction - float(ctx.statistics.mean @ direction)
    popularity = ctx.popularity[rows] * _popularity_weight(likes)
    collaborative = np.zeros(len(rows), np.float32) if cf_all is None else cf_all[rows]
    dislike = np.zeros(len(rows), np.float32)
    if len(disliked):
        dislike_sim = (vecs @ ctx.vectors[disliked].T).max(axis=1)
        dislike = DISLIKE_WEIGHT * np.maximum(dislike_sim - DISLIKE_FLOOR, 0.0)
    again = (np.zeros(len(rows), np.float32) if exclude_served
             else SERVED_PENALTY * np.isin(rows, served).astype(np.float32))
    total = content + popularity + collaborative - dislike - again
    if not likes:
        total = total + DENSITY_WEIGHT * ctx.density[rows]
    scale = 1.0 if direction is None else float(np.sqrt(max(
        direction @ ctx.statistics.covariance @ direction, 1e-12)))
    return Scores(rows, vecs, total, content, popularity, collaborative, dislike, again, scale)


def left_out(ctx: RankingContext, rows: np.ndarray, liked: np.ndarray, disliked: np.ndarray,
             *, served: np.ndarray | None = None, exclude_served: bool = False,
             since_day: float | None = None, blocked: np.ndarray | None = None) -> np.ndarray:
    """Which of ``rows`` a list never shows: rated, blocked, served (when served papers are
    left out), or dated before ``since_day`` (unknown dates too)."""
    out = np.isin(rows, np.concatenate([np.asarray(liked, np.int64),
                                        np.asarray(disliked, np.int64),
                                        np.zeros(0, np.int64) if blocked is None
                                        else np.asarray(blocked, np.int64)]))
    if exclude_served and served is not None:
        out |= np.isin(rows, served)
    if since_day is not None and ctx.dates is not None:
        out |= ~(ctx.dates[rows] >= since_day)
    return out


def rank(
    ctx: RankingContext,
    liked: np.ndarray,
    disliked: np.ndarray,
    k: int,
    *,
    offset: int = 0,
    diversity: float | None = None,
    served: np.ndarray | None = None,
    exclude_served: bool = False,
    since_day: float | None = None,
    blocked: np.ndarray | None = None,  # rows never shown (e.g. muted by a reader's rule)
    liked_vectors: np.ndarray | None = None,  # liked papers not in the index yet (``score``)
) -> Ranked:
    liked = np.asarray(liked, dtype=np.int64)
    want = offset + k
    personalized = bool(len(liked)) or (liked_vectors is not None and len(liked_vectors) > 0)
    if not personalized:
        diversity = COLD_START_DIVERSITY if diversity is None else diversity

    def scored(candidates: bool) -> tuple[Scores, np.ndarray]:
        parts = score(ctx, liked, disliked, want=want, served=served,
                      exclude_served=exclude_served, liked_vectors=liked_vectors,
                      candidates=candidates)
        return parts, left_out(ctx, parts.rows, liked, disliked, served=served,
                               exclude_served=exclude_served, since_day=since_day,
                               blocked=blocked)

    parts, hidden = scored(candidates=True)
    # Candidates found near the likes may all be rated, served or out of date (a reader of
    # one narrow topic, a digest of this week's papers): then every paper is scored.
    if len(parts.rows) < len(ctx.item_ids) and len(hidden) - int(hidden.sum()) < want:
        parts, hidden = scored(candidates=False)
    scores = np.where(hidden, -np.inf, parts.total)

    order = _top(scores, parts.vectors, want, diversity or 0.0)[offset:want]
    nearest, nearest_sim = nearest_likes(ctx, parts.vectors[order], liked)
    return Ranked(parts.rows[order], scores[order], parts.content[order], nearest, nearest_sim,
                  parts.collaborative[order], parts.popularity[order], personalized,
                  parts.scale)


def nearest_likes(ctx: RankingContext, vectors: np.ndarray,
                  liked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each vector, the liked row closest to it and their cosine (-1 and 0 without
    likes)."""
    if not len(liked) or not len(vectors):
        return np.full(len(vectors), -1, np.int64), np.zeros(len(vectors), np.float32)
    sims = vectors @ ctx.vectors[liked].T
    best = sims.argmax(axis=1)
    return liked[best], sims[np.arange(len(vectors)), best]


def _direction(ctx: RankingContext, liked: np.ndarray,
               liked_vectors: np.ndarray | None = None) -> np.ndarray | None:
    """The user's content query: a paper's content score is its vector (minus the corpus
    mean) times this direction.

    Two parts, each scaled to the same spread over the corpus: the mean of the liked
    vectors (so the score is the paper's mean cosine to the likes), and that mean through the
    inverse covariance of the corpus (the Fisher discriminant of the likes against the
    corpus, with a shared covariance: it weighs the directions in which the likes stand out
    from the collection, not those in which every paper varies). One mat-vec per list.
    ``liked_vectors`` (likes not in the index yet) join the liked rows' vectors.
    """
    vectors = np.asarray(ctx.vectors[liked], dtype=np.float32)
    if liked_vectors is not None and len(liked_vectors):
        vectors = np.vstack([vectors, np.asarray(liked_vectors, dtype=np.float32)])
    if not len(vectors):
        return None
    mean = vectors.mean(axis=0)
    weight = _fisher_weight(len(vectors))
    if weight <= 0:
        return mean
    stats = ctx.statistics
    fisher = stats.precision @ mean
    spread = float(np.sqrt(max(mean @ stats.covariance @ mean, 1e-12)))
    fisher_spread = float(np.sqrt(max(fisher @ stats.covariance @ fisher, 1e-12)))
    return (mean + weight * spread / fisher_spread * fisher).astype(np.float32)


def _fisher_weight(likes: int) -> float:
    return FISHER_WEIGHT * min(1.0, (likes - 1) / (FISHER_FULL_LIKES - 1))


def _candidates(
    ctx: RankingContext, liked: np.ndarray, direction: np.ndarray | None,
    cf_all: np.ndarray | None,
    want: int,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows worth scoring and their vectors; None for all of them, when that is the
    cheaper path (``path_costs``: small corpora, or a long list over a mid-sized one).

    The candidates: the most popular papers, each liked paper's stored neighbours (no search
    needed), the approximate index's nearest papers to the user's direction and the
    collaborative model's best; then ``_walk`` follows the neighbour graph from the best of
    them.
    """
    exact, candidates = path_costs(ctx, len(liked), want, cf_all is not None)
    if ctx.search is None or exact <= candidates:
        return None
    per_query = _per_query(want)
    pools = [ctx.popular_rows[:per_query]]
    if direction is not None:
        pools.append(np.asarray(
            ctx.neighbours[liked, :_neighbours_per_like(ctx, len(liked), per_query)]).ravel())
        rows, _ = ctx.search(normalise(direction[None, :]), per_query)
        pools.append(rows.ravel())
        if cf_all is not None:
            pools.append(np.argpartition(-cf_all, per_query)[:per_query])
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


def path_costs(ctx: RankingContext, likes: int, want: int,
               collaborative: bool) -> tuple[float, float]:
    """Estimated microseconds of the two paths for a list of ``want`` for a user with
    ``likes`` liked rows: scoring every paper, and the candidate path (infinite without an
    approximate index). The same sums as ``_candidates`` runs: its search, the rows of each
    pool gathered."""
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
    per_query = _per_query(want)
    queries = 1 if likes else 0
    pool = (per_query * (1 + queries + collaborative)
            + likes * _neighbours_per_like(ctx, likes, per_query))
    return max(HNSW_EF, per_query) * queries, min(pool, len(ctx.item_ids))


def _neighbours_per_like(ctx: RankingContext, likes: int, per_query: int) -> int:
    """How many of each like's stored neighbours (nearest first) join the candidates: all,
    up to NEIGHBOUR_POOLS times ``per_query`` rows in all (ten a like for 100 likes and a
    list of 20). The walk follows the rest where they lead somewhere: for 25 synthetic
    readers of 100 likes, at 1M papers a list took 4.8 ms with ten neighbours a like against
    5.8 ms with all twenty, sharing 0.93 of the exact top 20 either way; at 100k 3.5 against
    4.8 ms, 0.96 either way (with two a like: 0.93 and 0.95)."""
    return max(1, min(ctx.neighbours.shape[1], NEIGHBOUR_POOLS * per_query // max(likes, 1)))


def _per_query(want: int) -> int:
    """Candidates taken from each pool: an HNSW search costs about the same up to
    k=efSearch."""
    return max(100, 4 * want)


def _collaborative(ctx: RankingContext, liked: np.ndarray) -> np.ndarray | None:
    """Collaborative scores on the index rows, weighted by the evidence on both sides; None
    when the model knows nothing of the user (no array of zeros over every paper: at 1M
    papers that alone cost a list half a millisecond)."""
    n = len(ctx.item_ids)
    model = ctx.collaborative
    if model is None or not len(liked):
        return None
    liked_ids = [ctx.item_ids[r] for r in liked]
    raw = model.scores_for(liked_ids)
    known_likes = int(np.sum(ctx.cf_item_evidence[liked] > 0))
    if not known_likes:
        return None
    # ALS predicts a preference in about [0, 1]: a scale that means the same on any dataset.
    on_rows = np.zeros(n, np.float32)
    mapped = ctx.cf_rows >= 0
    on_rows[ctx.cf_rows[mapped]] = np.clip(raw[mapped], 0.0, 1.0)
    user_weight = known_likes / (known_likes + USER_EVIDENCE_HALF)
    item_weight = ctx.cf_item_evidence / (ctx.cf_item_evidence + ITEM_EVIDENCE_HALF)
    return (COLLABORATIVE_WEIGHT * user_weight * item_weight * on_rows).astype(np.float32)


def _top(scores: np.ndarray, vectors: np.ndarray, want: int, diversity: float) -> np.ndarray:
    finite = int(np.isfinite(scores).sum())
    want = min(want, finite)
    if want <= 0:
        return np.zeros(0, np.int64)
    pool_size = min(finite, max(MMR_POOL, 3 * want) if diversity > 0 else want)
    pool = np.argpartition(-scores, pool_size - 1)[:pool_size]
    pool = pool[np.argsort(-scores[pool], kind="stable")]
    if diversity <= 0:
        return pool[:want]
    return pool[mmr(vectors[pool], scores[pool], want, diversity)]


def _popularity_weight(likes: int) -> float:
    """All of the ranking for a user without likes; fading fast as their own likes speak."""
    if not likes:
        return 1.0
    return POPULARITY_WEIGHT / likes**2


def _popularity(like_counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log(1 + likes) scaled to [0, 1], and the POPULAR_POOL most liked rows, best first."""
    logs = np.log1p(np.asarray(like_counts, dtype=np.float32))
    top = float(logs.max()) if len(logs) else 0.0
    scaled = logs / top if top > 0 else logs
    pool = min(POPULAR_POOL, len(scaled))
    best = np.argpartition(-scaled, pool - 1)[:pool] if pool else np.zeros(0, np.int64)
    return scaled, best[np.argsort(-scaled[best], kind="stable")]


def mmr(vectors: np.ndarray, relevance: np.ndarray, k: int, diversity: float) -> np.ndarray:
    """Maximal marginal relevance: positions of k items, trading relevance for novelty.

    Each next pick maximises ``(1 - diversity) * relevance - diversity * similarity`` to the
    closest item already picked: 0 keeps the relevance order, 1 picks the item least like
    those already picked. Callers pass a pool of relevant items only.
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

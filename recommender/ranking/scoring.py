"""The score of papers for one reader, part by part: content (the user's direction), popularity,
collaborative filtering, and the penalties of dislikes and of papers served before.

Pure functions over arrays (no Redis, no clock). ``rank`` orders these scores; why-not reads
one paper's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recommender.ranking.candidates import find_candidates
from recommender.ranking.context import RankingContext
from recommender.ranking.request import ListRequest

# Blend weights. Each adapts to the evidence: popularity matters most for a user with few
# likes, collaborative filtering for users and papers with many (see ``score``).
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
DISLIKE_WEIGHT = 1.0
# Unrelated abstracts still have cosines of 0.1-0.2: only similarity above this floor counts as
# "on a disliked topic".
DISLIKE_FLOOR = 0.2
DENSITY_WEIGHT = 0.01  # breaks ties in favour of mainstream papers (dense neighbourhoods)
SERVED_PENALTY = 0.15  # subtracted from papers already served (unless they are excluded)


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


def score(ctx: RankingContext, request: ListRequest, *, rows: np.ndarray | None = None,
          want: int = 0, candidates: bool = True) -> Scores:
    """Every part of the score of ``rows``; by default of every paper worth scoring for a
    list of ``want`` (all of them over an exact index or where that is cheaper, else the
    candidates over the approximate one; ``candidates=False``: all of them). The request's
    likes not indexed yet (``liked_vectors``) count in the user's direction and number of
    likes."""
    blend = request.blend
    cf_all = _collaborative(ctx, request.liked, blend.collaborative)
    direction = _direction(ctx, request.liked, request.liked_vectors, blend.fisher)
    rows, vecs = _scored_rows(ctx, request.liked, direction, cf_all, rows,
                              want if candidates else None)
    if direction is None:
        content = np.zeros(len(rows), np.float32)
    else:
        content = vecs @ direction - float(ctx.statistics.mean @ direction)
    popularity = ctx.popularity[rows] * (_popularity_weight(request.likes) * blend.popularity)
    collaborative = np.zeros(len(rows), np.float32) if cf_all is None else cf_all[rows]
    dislike = _dislike_penalty(ctx, vecs, request.disliked)
    again = (np.zeros(len(rows), np.float32) if request.exclude_served
             else SERVED_PENALTY * np.isin(rows, request.served).astype(np.float32))
    total = content + popularity + collaborative - dislike - again
    if not request.likes:
        total = total + DENSITY_WEIGHT * ctx.density[rows]
    scale = 1.0 if direction is None else float(np.sqrt(max(
        direction @ ctx.statistics.covariance @ direction, 1e-12)))
    return Scores(rows, vecs, total, content, popularity, collaborative, dislike, again, scale)


def nearest_likes(ctx: RankingContext, vectors: np.ndarray,
                  liked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each vector, the liked row closest to it and their cosine (-1 and 0 without
    likes)."""
    if not len(liked) or not len(vectors):
        return np.full(len(vectors), -1, np.int64), np.zeros(len(vectors), np.float32)
    sims = vectors @ ctx.vectors[liked].T
    best = sims.argmax(axis=1)
    return liked[best], sims[np.arange(len(vectors)), best]


def close_likes(ctx: RankingContext, vectors: np.ndarray, liked: np.ndarray,
                liked_vectors: np.ndarray | None = None) -> np.ndarray:
    """For each vector, how many liked papers (rows ``liked``, and vectors of likes not
    indexed yet) are near neighbours of it: a cosine above the collection's noise floor, the
    same bar as a "similar to" reason (``explain``)."""
    count = np.zeros(len(vectors), np.int64)
    floor = ctx.statistics.noise_floor
    if len(liked) and len(vectors):
        count += (vectors @ ctx.vectors[liked].T > floor).sum(axis=1)
    if liked_vectors is not None and len(liked_vectors) and len(vectors):
        count += (vectors @ np.asarray(liked_vectors).T > floor).sum(axis=1)
    return count


def _scored_rows(ctx: RankingContext, liked: np.ndarray, direction: np.ndarray | None,
                 cf_all: np.ndarray | None, rows: np.ndarray | None,
                 want: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The rows to score and their vectors: ``rows`` when given, else the candidates of a
    list of ``want`` where they are the cheaper path (``want`` None: every paper)."""
    vecs = None
    if rows is None and want is not None:
        found = find_candidates(ctx, liked, direction, cf_all, want)
        if found is not None:
            rows, vecs = found
    # Every paper, or some: indexing a memory-mapped array copies, so only then.
    if vecs is None:
        vecs = np.asarray(ctx.vectors) if rows is None else ctx.vectors[rows]
    rows = np.arange(len(ctx.item_ids)) if rows is None else np.asarray(rows, dtype=np.int64)
    return rows, vecs


def _direction(ctx: RankingContext, liked: np.ndarray,
               liked_vectors: np.ndarray | None = None,
               fisher_share: float = 1.0) -> np.ndarray | None:
    """The user's content query: a paper's content score is its vector (minus the corpus
    mean) times this direction.

    Two parts, each scaled to the same spread over the corpus: the mean of the liked
    vectors (so the score is the paper's mean cosine to the likes), and that mean through the
    inverse covariance of the corpus (the Fisher discriminant of the likes against the
    corpus, with a shared covariance: it weighs the directions in which the likes stand out
    from the collection, not those in which every paper varies). One mat-vec per list.
    ``liked_vectors`` (likes not in the index yet) join the liked rows' vectors;
    ``fisher_share`` multiplies the Fisher term's weight.
    """
    vectors = np.asarray(ctx.vectors[liked], dtype=np.float32)
    if liked_vectors is not None and len(liked_vectors):
        vectors = np.vstack([vectors, np.asarray(liked_vectors, dtype=np.float32)])
    if not len(vectors):
        return None
    mean = vectors.mean(axis=0)
    weight = _fisher_weight(len(vectors)) * fisher_share
    if weight <= 0:
        return mean
    stats = ctx.statistics
    fisher = stats.precision @ mean
    spread = float(np.sqrt(max(mean @ stats.covariance @ mean, 1e-12)))
    fisher_spread = float(np.sqrt(max(fisher @ stats.covariance @ fisher, 1e-12)))
    return (mean + weight * spread / fisher_spread * fisher).astype(np.float32)


def _fisher_weight(likes: int) -> float:
    return FISHER_WEIGHT * min(1.0, (likes - 1) / (FISHER_FULL_LIKES - 1))


def _collaborative(ctx: RankingContext, liked: np.ndarray,
                   weight: float = 1.0) -> np.ndarray | None:
    """Collaborative scores on the index rows, weighted by the evidence on both sides; None
    when the model knows nothing of the user (no array of zeros over every paper: at 1M
    papers that alone cost a list half a millisecond)."""
    n = len(ctx.item_ids)
    model = ctx.collaborative
    if model is None or not len(liked) or weight <= 0:
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
    return (weight * COLLABORATIVE_WEIGHT * user_weight * item_weight
            * on_rows).astype(np.float32)


def _dislike_penalty(ctx: RankingContext, vectors: np.ndarray,
                     disliked: np.ndarray) -> np.ndarray:
    """What closeness to the nearest disliked paper takes off each score (above the floor)."""
    if not len(disliked):
        return np.zeros(len(vectors), np.float32)
    dislike_sim = (vectors @ ctx.vectors[disliked].T).max(axis=1)
    return DISLIKE_WEIGHT * np.maximum(dislike_sim - DISLIKE_FLOOR, 0.0)


def _popularity_weight(likes: int) -> float:
    """All of the ranking for a user without likes; fading fast as their own likes speak."""
    if not likes:
        return 1.0
    return POPULARITY_WEIGHT / likes**2

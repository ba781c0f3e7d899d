"""The ranking of one reading list: pure functions over arrays (no Redis, no clock, no files).

``rank`` is the single place where the parts meet: the scores (``scoring``: content,
collaborative filtering, popularity, dislikes, served history) of the rows worth scoring
(``candidates``, priced by ``cost``), what the list leaves out (``ListRequest.left_out``:
rated, muted, served, dates) and diversity (``diversity``). The REST API, the email digests and
the offline evaluation all call it; only where the request's likes come from differs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from recommender.ranking.context import RankingContext
from recommender.ranking.diversity import COLD_START_DIVERSITY, top
from recommender.ranking.request import ListRequest
from recommender.ranking.scoring import Scores, close_likes, nearest_likes, score


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
    # How many of the user's likes are near neighbours of each row (``scoring.close_likes``).
    close_likes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def rank(ctx: RankingContext, request: ListRequest) -> Ranked:
    """The model's part of the page the request asks for: after the followed papers its rules
    put first (``ListRequest.page``; the caller lays those), best first, spread by its
    diversity (COLD_START_DIVERSITY by default for a user without likes)."""
    _, offset, k = request.page()
    want = offset + k
    diversity = request.diversity
    if not request.personalized:
        diversity = COLD_START_DIVERSITY if diversity is None else diversity
    parts, hidden = _scored(ctx, request, want, candidates=True)
    # Candidates found near the likes may all be rated, served or out of date (a reader of
    # one narrow topic, a digest of this week's papers): then every paper is scored.
    if len(parts.rows) < len(ctx.item_ids) and len(hidden) - int(hidden.sum()) < want:
        parts, hidden = _scored(ctx, request, want, candidates=False)
    scores = np.where(hidden, -np.inf, parts.total)

    order = top(scores, parts.vectors, want, diversity or 0.0)[offset:want]
    nearest, nearest_sim = nearest_likes(ctx, parts.vectors[order], request.liked)
    return Ranked(parts.rows[order], scores[order], parts.content[order], nearest, nearest_sim,
                  parts.collaborative[order], parts.popularity[order], request.personalized,
                  parts.scale, close_likes(ctx, parts.vectors[order], request.liked,
                                                 request.liked_vectors))


def _scored(ctx: RankingContext, request: ListRequest, want: int,
            candidates: bool) -> tuple[Scores, np.ndarray]:
    """The scores of the rows worth scoring for a list of ``want``, and which of them the list
    leaves out."""
    parts = score(ctx, request, want=want, candidates=candidates)
    return parts, request.left_out(ctx, parts.rows)

"""Why each paper is on a list: typed reasons, from the parts of its score to the JSON.

``explain`` turns a ``Ranked`` (rows and the parts of each score) into ``Recommendation``s:
the reasons as data, strongest first, and in words, the first two of content, collaborative
filtering and popularity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from recommender.core.ids import PaperId
from recommender.ranking.context import RankingContext
from recommender.ranking.rank import Ranked
from recommender.ranking.scoring import COLLABORATIVE_WEIGHT

# Collaborative contribution worth telling the user about: a tenth of the most it can add.
CF_REASON_MIN = 0.1 * COLLABORATIVE_WEIGHT
COLD_START_REASON = "a broad pick from the collection; like papers to personalise your list"


@dataclass(frozen=True)
class SimilarToLiked:
    kind: Literal["similar_to_liked"] = field(default="similar_to_liked", kw_only=True)
    paper_id: Annotated[PaperId, Field(description="The liked paper it is closest to.")]
    similarity: float


@dataclass(frozen=True)
class SimilarReaders:
    kind: Literal["similar_readers"] = field(default="similar_readers", kw_only=True)
    weight: Annotated[float, Field(description="What collaborative filtering adds to the "
                                               "score.")]


@dataclass(frozen=True)
class Popular:
    kind: Literal["popular"] = field(default="popular", kw_only=True)
    likes: int


@dataclass(frozen=True)
class FollowedRule:
    kind: Literal["followed_rule"] = field(default="followed_rule", kw_only=True)
    rule: Annotated[str, Field(description='The follow rule that put it first, e.g. "author: '
                                           'Yoshua Bengio".')]


# Each reason says its kind first (keyword-only, so built by position without it).
Reason = Annotated[SimilarToLiked | SimilarReaders | Popular | FollowedRule,
                   Field(discriminator="kind")]


@dataclass(frozen=True)
class Recommendation:
    """One item of a list (and a search result or similar paper), as the API serves it."""

    paper_id: PaperId
    title: str
    score: float
    reason: Annotated[str, Field(description="Why, in words.")]
    reasons: Annotated[list[Reason], Field(description="Why, as data, strongest first.")] = (
        field(default_factory=list))
    because: Annotated[list[PaperId], Field(description="The liked papers behind it.")] = (
        field(default_factory=list))
    probability: Annotated[float | None, Field(ge=0, le=1, description=(
        "How likely this user finds it worth reading (calibrated on held-out likes); set on "
        "reading-list items, null on search results and similar papers."))] = None
    rank: Annotated[int, Field(ge=0, description=(
        "Its place on the list (1 for the first item; offset + 1 for the first of a later "
        "page), or in the search results."))] = 0
    close_likes: Annotated[int, Field(ge=0, description=(
        "How many of the user's liked papers are near neighbours of it (cosine above the "
        "collection's noise floor); 0 on search results and similar papers."))] = 0
    standing: Annotated[str, Field(description=(
        'Where it stands, in words that mean the same in any collection: "top match of '
        'your list", "among your top 5 · close to 3 of your likes"; empty on search results '
        "and similar papers."))] = ""
    authors: Annotated[list[str], Field(description="Its authors, as recorded.")] = (
        field(default_factory=list))
    year: int | None = None
    venue: Annotated[str | None, Field(description=(
        'Its arXiv category by name, e.g. "Machine Learning (cs.LG)", when known.'))] = None


def explain(ids: list[str], ctx: RankingContext, ranked: Ranked,
            titles: Mapping[str, str], probability: np.ndarray) -> list[Recommendation]:
    """One recommendation per ranked row; ``titles`` holds the ranked and the liked papers',
    ``probability`` the calibrated probability of each row."""
    items = []
    for pos, row in enumerate(int(r) for r in ranked.rows):
        parts: list[tuple[float, str, Reason]] = []
        if ranked.nearest_like[pos] >= 0:
            liked_id = ids[int(ranked.nearest_like[pos])]
            similarity = round(float(ranked.nearest_similarity[pos]), 4)
            quoted = short_title(_title(titles, liked_id))
            # Below the collection's noise floor "similar" would mislead: a short list of a
            # small collection, or a deep page, shows such papers as the nearest left.
            close = similarity > ctx.statistics.noise_floor
            words = (f"similar to '{quoted}' that you liked" if close
                     else f"not close to your likes (the nearest: '{quoted}')")
            parts.append((float(ranked.content[pos]), words,
                          SimilarToLiked(liked_id, similarity)))
        if ranked.collaborative[pos] > CF_REASON_MIN:
            weight = float(ranked.collaborative[pos])
            parts.append((weight, "readers with similar taste saved it",
                          SimilarReaders(round(weight, 4))))
        likes = int(ctx.like_counts[row])
        if likes:
            parts.append((float(ranked.popularity[pos]),
                          f"liked by {likes} reader{'s' if likes != 1 else ''}", Popular(likes)))
        words = "; ".join(text for _, text, _ in parts[:2]) or COLD_START_REASON
        items.append(Recommendation(
            ids[row], _title(titles, ids[row]), round(float(ranked.scores[pos]), 4), words,
            [reason for _, _, reason in sorted(parts, key=lambda part: -part[0])],
            [r.paper_id for _, _, r in parts if isinstance(r, SimilarToLiked)],
            round(float(probability[pos]), 4), close_likes=int(ranked.close_likes[pos])))
    return items


def followed(paper_id: str, titles: Mapping[str, str], rule_kind: str, rule_value: str,
             score: float, probability: float, close_likes: int = 0) -> Recommendation:
    """A new paper of an author, keyword or category the reader follows, put first by their
    rule; ``probability``: the model's, as for any item."""
    where = {"author": "from an author", "category": "in a category"}.get(
        rule_kind, "on a keyword")
    return Recommendation(paper_id, _title(titles, paper_id), round(score, 4),
                          f"new {where} you follow: {rule_value}",
                          [FollowedRule(f"{rule_kind}: {rule_value}")],
                          probability=round(probability, 4), close_likes=close_likes)


def plain(ids: list[str], hits: list[tuple[int, float]], titles: Mapping[str, str],
          reason: str) -> list[Recommendation]:
    """Search results and similar papers: one reason for all."""
    return [Recommendation(ids[row], _title(titles, ids[row]), round(score, 4), reason,
                           rank=place)
            for place, (row, score) in enumerate(hits, start=1)]


def _title(titles: Mapping[str, str], paper_id: str) -> str:
    return titles.get(paper_id) or paper_id


def short_title(title: str, limit: int = 70) -> str:
    """A title cut to ``limit`` characters, as reasons quote it."""
    return title if len(title) <= limit else title[: limit - 1].rstrip() + "…"

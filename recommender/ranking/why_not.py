"""Why a paper is not on a reader's list: where it would rank, its score part by part, and what
keeps it out, in words and as data.

``why_not`` is pure (no Redis, no clock): ``Recommender.why_not`` builds the same
``ListRequest`` as ``Recommender.recommend`` (rated and served rows, the reader's rules, the
list's settings) and hands it here with the context, so the answer is about the list those
settings give, ordered by score (diversity 0).

The rank is where the paper would stand if nothing kept it out: after the papers a rule puts
first, 1 + the papers the list may show that score strictly higher. Over an exact index every
paper is counted; over an approximate one the candidates of a list ``ESTIMATE_DEPTH`` deep
(``rank_is_estimate``).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from recommender.core.ids import PaperId, UserId
from recommender.core.papers import EPOCH, Paper
from recommender.feedback.rules import first_match
from recommender.ranking.calibration import Calibration
from recommender.ranking.context import RankingContext
from recommender.ranking.explain import (
    Reason,
    Recommendation,
    explain,
    followed,
    short_title,
)
from recommender.ranking.rank import Ranked
from recommender.ranking.request import ListRequest
from recommender.ranking.scoring import Scores, close_likes, nearest_likes, score

ESTIMATE_DEPTH = 200  # over an approximate index, rank among the candidates of this deep a list

Titles = Callable[[list[str]], Mapping[str, str]]  # paper ids -> their titles


# What keeps a paper out, each saying its kind first (keyword-only: built by position).
@dataclass(frozen=True)
class Liked:
    kind: Literal["liked"] = field(default="liked", kw_only=True)
    detail: str


@dataclass(frozen=True)
class Disliked:
    kind: Literal["disliked"] = field(default="disliked", kw_only=True)
    detail: str


@dataclass(frozen=True)
class Muted:
    kind: Literal["muted"] = field(default="muted", kw_only=True)
    detail: str
    rule: Annotated[str, Field(description='The mute rule, e.g. "author: Jürgen Müller".')]


@dataclass(frozen=True)
class ServedExcluded:
    kind: Literal["served_excluded"] = field(default="served_excluded", kw_only=True)
    detail: str


@dataclass(frozen=True)
class BeforeSince:
    kind: Literal["before_since"] = field(default="before_since", kw_only=True)
    detail: str
    date: Annotated[str | None, Field(description="The paper's date; null when it has none.")]
    since: str


@dataclass(frozen=True)
class BelowMinProbability:
    kind: Literal["below_min_probability"] = field(default="below_min_probability",
                                                   kw_only=True)
    detail: str
    probability: float
    min_probability: float


@dataclass(frozen=True)
class CloseToDisliked:
    kind: Literal["close_to_disliked"] = field(default="close_to_disliked", kw_only=True)
    detail: str
    paper_id: Annotated[PaperId, Field(description="The disliked paper it is closest to.")]
    similarity: float  # their cosine
    penalty: Annotated[float, Field(description="What that takes off its score.")]
    rank_without_penalty: Annotated[int, Field(description="Where it would rank without it.")]


@dataclass(frozen=True)
class Outranked:
    kind: Literal["outranked"] = field(default="outranked", kw_only=True)
    detail: str
    rank: int
    k: int
    kth_score: Annotated[float, Field(description="The score of the list's k-th item.")]
    score: float  # this paper's
    gap: Annotated[float, Field(description="How much more it would need to be k-th.")]


Blocker = Annotated[Liked | Disliked | Muted | ServedExcluded | BeforeSince
                    | BelowMinProbability | CloseToDisliked | Outranked,
                    Field(discriminator="kind")]


@dataclass(frozen=True)
class ScoreParts:
    content: Annotated[float, Field(description="Closeness to what the user liked.")]
    popularity: Annotated[float, Field(description="What its likes add (mostly for new users).")]
    collaborative: Annotated[float, Field(description="What readers with similar taste add.")]
    dislike_penalty: Annotated[float, Field(description="Subtracted: closeness to a disliked "
                                                        "paper.")]
    served_penalty: Annotated[float, Field(description="Subtracted: it was served before.")]
    scale: Annotated[float, Field(description="The spread of the user's scores; the "
                                              "probability is calibrated on score / scale.")]


@dataclass(frozen=True)
class WhyNot:
    """The paper as a list item (its score, probability and reasons), where it would stand and
    what keeps it out."""

    user_id: UserId
    paper_id: PaperId
    title: str
    k: Annotated[int, Field(description="The list length asked about.")]
    rank: Annotated[int, Field(ge=1, description=(
        "Where it would stand on the list with these settings (ordered by score) if nothing "
        "kept it out: after the papers a follow rule puts first, 1 + the papers the list may "
        "show that score higher."))]
    rank_is_estimate: Annotated[bool, Field(description=(
        "True over an approximate (HNSW) index: counted among the candidates of a deep list."))]
    in_list: Annotated[bool, Field(description="Whether it is among the k items the user gets "
                                               "now.")]
    score: float  # the model's score (the list's order)
    probability: Annotated[float, Field(ge=0, le=1, description=(
        "How likely this user finds it worth reading (calibrated on held-out likes)."))]
    parts: ScoreParts
    reason: Annotated[str, Field(description="Why, in words.")]
    reasons: Annotated[list[Reason], Field(description="Why, as data, strongest first.")]
    because: Annotated[list[PaperId], Field(description="The liked papers behind it.")]
    summary: Annotated[str, Field(description="The answer in one or two sentences.")]
    personalized: bool
    blockers: Annotated[list[Blocker], Field(description=(
        "What keeps it out, in words (detail) and as data; empty when it is on the list."))] = (
        field(default_factory=list))


def why_not(ctx: RankingContext, request: ListRequest, paper: Paper, row: int, *,
            calibration: Calibration, titles: Titles,
            user_id: str) -> WhyNot:
    """The answer for the paper at index ``row`` on the list ``request`` asks for; ``titles``
    reads the titles of papers by id (for the reasons). Likes not indexed yet count in the
    scores, not in the reasons."""
    k = request.k
    everyone = score(ctx, request, want=max(k, ESTIMATE_DEPTH))
    mine = _own_scores(ctx, request, row, everyone)
    total = float(mine.total[0])
    probability = float(calibration.probability(mine.total / mine.scale, request.likes)[0])

    hidden = request.left_out(ctx, everyone.rows) | (everyone.rows == row)
    others = np.sort(everyone.total[~hidden])[::-1]  # the model's papers the list may show
    first = [r for r, _ in request.plan.followed]
    rank, item = _placed(ctx, request, mine, paper, probability, first, others, titles)
    blockers = _kept_out(ctx, request, paper, row, probability, followed=row in first)
    if rank > k:
        blockers += _outranked(ctx, request, mine, first, others, rank, titles)
    in_list = not blockers
    summary = (f"It is {_ordinal(rank)} on your list of {k} (score {total:.4f})." if in_list
               else " ".join(b.detail for b in blockers))
    return WhyNot(user_id, paper.id, paper.title, k, rank, ctx.search is not None, in_list,
                  round(total, 4), round(probability, 4), _parts(mine), item.reason,
                  item.reasons, item.because, summary, request.personalized, blockers)


def _placed(ctx: RankingContext, request: ListRequest, mine: Scores, paper: Paper,
            probability: float, first: list[int], others: np.ndarray,
            titles: Titles) -> tuple[int, Recommendation]:
    """Where the paper would stand were nothing keeping it out, and its item as the list
    would show it: among the followed papers a rule puts first, or after them by score."""
    row = int(mine.rows[0])
    total = float(mine.total[0])
    if row in first:
        rank = first.index(row) + 1
        rule = request.plan.followed[rank - 1][1]
        return rank, followed(paper.id, {paper.id: paper.title}, rule.kind, rule.value, total,
                              probability)
    rank = len(first) + 1 + int(np.sum(others > total))
    return rank, _explained(ctx, mine, request.liked, titles, paper, probability)


def _own_scores(ctx: RankingContext, request: ListRequest, row: int,
                everyone: Scores) -> Scores:
    """The paper's parts: read from the list's scoring when it was scored there (the same
    numbers the list compares), else scored alone (a paper outside the candidates)."""
    at = np.flatnonzero(everyone.rows == row)
    if not len(at):
        return score(ctx, request, rows=np.asarray([row]))
    i = at[:1]
    return Scores(everyone.rows[i], everyone.vectors[i], everyone.total[i], everyone.content[i],
                  everyone.popularity[i], everyone.collaborative[i], everyone.dislike[i],
                  everyone.served[i], everyone.scale)


def _explained(ctx: RankingContext, mine: Scores, liked: np.ndarray,
               titles: Titles, paper: Paper,
               probability: float) -> Recommendation:
    """The paper's reasons, exactly as a list item's (``explain``)."""
    nearest, similarity = nearest_likes(ctx, mine.vectors, liked)
    ranked = Ranked(mine.rows, mine.total, mine.content, nearest, similarity,
                    mine.collaborative, mine.popularity, bool(len(liked)), mine.scale,
                    close_likes(ctx, mine.vectors, liked))
    found = dict(titles([ctx.item_ids[int(r)] for r in nearest if r >= 0]))
    found[paper.id] = paper.title
    return explain(ctx.item_ids, ctx, ranked, found, np.asarray([probability]))[0]


def _kept_out(ctx: RankingContext, request: ListRequest, paper: Paper, row: int,
              probability: float, *, followed: bool) -> list[Blocker]:
    """What keeps it out whatever its score: the list never shows it."""
    blockers: list[Blocker] = []
    if row in request.liked:
        blockers.append(Liked("You liked it: papers you rated are never listed again."))
    if row in request.disliked:
        blockers.append(Disliked("You disliked it: papers you rated are never listed again."))
    mute = first_match(list(request.rules), "mute", paper)
    if mute is not None:
        blockers.append(Muted(f"You muted it: {mute.label}.", mute.label))
    if request.exclude_served and row in request.served:
        blockers.append(ServedExcluded("You were already served it, and exclude_served "
                                       "leaves served papers out."))
    if request.since_day is not None:
        blockers += _before_since(ctx, row, request.since_day)
    # As the list: followed papers always stay, and a list without likes is not cut (all
    # its items have the base rate).
    if not followed and len(request.liked) and probability < request.min_probability:
        blockers.append(BelowMinProbability(
            f"Its probability {probability:.4f} is below min_probability "
            f"{request.min_probability:g}.", round(probability, 4), request.min_probability))
    return blockers


def _before_since(ctx: RankingContext, row: int, since_day: float) -> list[Blocker]:
    """The paper dated before the list's ``since`` (or undated), if it is."""
    day = float(ctx.dates[row]) if ctx.dates is not None else math.nan
    if day >= since_day:
        return []
    since = _iso(since_day)
    date = None if math.isnan(day) else _iso(day)
    words = "It has no date" if date is None else f"It is dated {date}"
    return [BeforeSince(f"{words}; the list keeps papers dated on or after {since}.", date,
                        since)]


def _outranked(ctx: RankingContext, request: ListRequest, mine: Scores, first: list[int],
               others: np.ndarray, rank: int,
               titles: Titles) -> list[Blocker]:
    """Papers scoring higher fill the list; a dislike penalty may be what pushed it down."""
    k, total = request.k, float(mine.total[0])
    at = k - len(first) - 1  # the k-th item's place among the model's papers
    # Followed papers come first and score at least what comes after them (recommend).
    kth = float(others[at]) if at >= 0 else max([1.0, *(float(s) for s in others[:1])])
    blockers: list[Blocker] = [Outranked(
        f"It would rank {_ordinal(rank)}; your list shows {k}: the {_ordinal(k)} scores "
        f"{kth:.4f}, this one {total:.4f}.", rank, k, round(kth, 4), round(total, 4),
        round(kth - total, 4))]
    penalty = float(mine.dislike[0])
    disliked = request.disliked
    if penalty > 0 and int(mine.rows[0]) not in disliked:
        sims = ctx.vectors[disliked] @ mine.vectors[0]
        nearest = int(np.argmax(sims))
        disliked_id = ctx.item_ids[int(disliked[nearest])]
        title = short_title(titles([disliked_id]).get(disliked_id) or disliked_id)
        without = len(first) + 1 + int(np.sum(others > total + penalty))
        blockers.append(CloseToDisliked(
            f"It is close to '{title}' that you disliked (cosine {float(sims[nearest]):.4f}): "
            f"that takes {penalty:.4f} off its score; without it, it would rank "
            f"{_ordinal(without)}.", disliked_id, round(float(sims[nearest]), 4),
            round(penalty, 4), without))
    return blockers


def _parts(mine: Scores) -> ScoreParts:
    return ScoreParts(round(float(mine.content[0]), 4), round(float(mine.popularity[0]), 4),
                      round(float(mine.collaborative[0]), 4), round(float(mine.dislike[0]), 4),
                      round(float(mine.served[0]), 4), round(mine.scale, 4))


def _iso(day: float) -> str:
    return dt.date.fromordinal(int(day) + EPOCH).isoformat()


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"

"""Why a paper is not on a reader's list: where it would rank, its score part by part, and what
keeps it out, in words and as data.

``why_not`` is pure (no Redis, no clock): ``Recommender.why_not`` builds the same
``ListRequest`` as ``Recommender.recommend`` (rated, served and set-aside rows, the reader's
rules, the list's settings: page, length, diversity) and ranks that list down to the page's
end, so the answer is about the very list the reader looks at.

The rank of a paper on that list is its place there. Of a paper not on it, where it would
stand if nothing kept it out: after the papers a rule puts first, 1 + the papers the list may
show that score strictly higher. Over an exact index every paper is counted; over an
approximate one the candidates of a list ``ESTIMATE_DEPTH`` deep (``rank_is_estimate``).
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
from recommender.ranking.diversity import COLD_START_DIVERSITY
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
LIST_DEPTH = 100  # why-not finds a paper's place on the list this deep (or to the page's end)

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
class SetAside:
    kind: Literal["set_aside"] = field(default="set_aside", kw_only=True)
    detail: str


@dataclass(frozen=True)
class EarlierPage:
    kind: Literal["earlier_page"] = field(default="earlier_page", kw_only=True)
    detail: str
    offset: Annotated[int, Field(description="Where the page asked about starts.")]


@dataclass(frozen=True)
class Diversity:
    kind: Literal["diversity"] = field(default="diversity", kw_only=True)
    detail: str
    diversity: Annotated[float, Field(description="The list's diversity.")]


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
    k: Annotated[int, Field(description="The list's length down to the page's end (offset "
                                        "+ k).")]
    kth_score: Annotated[float, Field(description="The score of the list's k-th item.")]
    score: float  # this paper's
    gap: Annotated[float, Field(description="How much more it would need to be k-th.")]


Blocker = Annotated[Liked | Disliked | Muted | ServedExcluded | SetAside | BeforeSince
                    | BelowMinProbability | EarlierPage | Diversity | CloseToDisliked
                    | Outranked,
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
    k: Annotated[int, Field(description="The length of the page asked about.")]
    offset: Annotated[int, Field(description="Where that page starts on the list.")]
    rank: Annotated[int, Field(ge=1, description=(
        "Its place on the list with these settings when it is on it (down to the page's "
        "end); else where it would stand if nothing kept it out: after the papers a follow "
        "rule puts first, 1 + the papers the list may show that score higher."))]
    rank_is_estimate: Annotated[bool, Field(description=(
        "True over an approximate (HNSW) index: counted among the candidates of a deep list."))]
    in_list: Annotated[bool, Field(description="Whether it is among the k items of the page "
                                               "the user gets now.")]
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


def why_not(ctx: RankingContext, request: ListRequest, paper: Paper, row: int,
            listed: np.ndarray, *, calibration: Calibration, titles: Titles,
            user_id: str) -> WhyNot:
    """The answer for the paper at index ``row`` on the page ``request`` asks for; ``listed``
    is the model's part of the list from its start (after the papers a rule puts first) down
    to that page's end or deeper (``LIST_DEPTH``), as ``rank`` gave it; ``titles`` reads the
    titles of papers by id (for the reasons). Likes not indexed yet count in the scores, not
    in the reasons."""
    k, end = request.k, request.offset + request.k
    everyone = score(ctx, request, want=max(end, ESTIMATE_DEPTH))
    mine = _own_scores(ctx, request, row, everyone)
    total = float(mine.total[0])
    probability = float(calibration.probability(mine.total / mine.scale, request.likes)[0])

    hidden = request.left_out(ctx, everyone.rows) | (everyone.rows == row)
    others = np.sort(everyone.total[~hidden])[::-1]  # the model's papers the list may show
    first = [r for r, _ in request.plan.followed]
    by_score, item = _placed(ctx, request, mine, paper, probability, first, others, titles)
    at = np.flatnonzero(np.asarray(listed) == row)
    on_list = row in first or bool(len(at))
    # On the list: its place there (diversity may have moved it); else where its score is.
    rank = len(first) + int(at[0]) + 1 if len(at) else by_score
    blockers = _kept_out(ctx, request, paper, row, probability, followed=row in first)
    if blockers:
        if rank > end:
            blockers += _outranked(ctx, request, mine, first, others, rank, titles)
    elif on_list and rank <= request.offset:
        blockers.append(EarlierPage(
            f"It is {_ordinal(rank)} on your list, before this page (which starts at the "
            f"{_ordinal(request.offset + 1)}).", request.offset))
    elif rank > end or not on_list:
        diversity = _diversity(request)
        if by_score <= end and diversity > 0:
            placed = f" it is {_ordinal(rank)}" if on_list else " it comes later"
            blockers.append(Diversity(
                f"By score it would be {_ordinal(by_score)}, but the list's diversity "
                f"({diversity:g}) took papers less like those above it in its place:"
                f"{placed}.", diversity))
        else:
            rank = max(rank, end + 1)  # a tie with the last one listed goes after it
            blockers += _outranked(ctx, request, mine, first, others, rank, titles)
    in_list = not blockers
    where = (f"of {end}" if not request.offset else
             f"on the page from the {_ordinal(request.offset + 1)} to the {_ordinal(end)}")
    summary = (f"It is {_ordinal(rank)} on your list {where} (score {total:.4f})." if in_list
               else " ".join(b.detail for b in blockers))
    return WhyNot(user_id, paper.id, paper.title, k, request.offset, rank,
                  ctx.search is not None, in_list, round(total, 4), round(probability, 4),
                  _parts(mine), item.reason, item.reasons, item.because, summary,
                  request.personalized, blockers)


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


def _diversity(request: ListRequest) -> float:
    """The list's diversity as ``rank`` applies it."""
    if request.diversity is not None:
        return request.diversity
    return 0.0 if request.personalized else COLD_START_DIVERSITY


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
        blockers.append(ServedExcluded("You were already served it (before today), and "
                                       "exclude_served leaves served papers out."))
    if row in request.set_aside:
        blockers.append(SetAside("You set it aside (\u201cNot now\u201d): it stays off your "
                                 "list until you put it back."))
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
    k, total = request.offset + request.k, float(mine.total[0])
    at = k - len(first) - 1  # the list's last item's place among the model's papers
    # Followed papers come first and score at least what comes after them (recommend).
    kth = (float(others[min(at, len(others) - 1)]) if at >= 0 and len(others)
           else max([1.0, *(float(s) for s in others[:1])]))
    shows = f"{k} to this page" if request.offset else str(k)
    blockers: list[Blocker] = [Outranked(
        f"It would rank {_ordinal(rank)}; your list shows {shows}: the {_ordinal(k)} scores "
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

"""Reading lists: a user's ranked list, and why a paper is not on it."""

from __future__ import annotations

import time
from typing import Annotated

from pydantic import Field

from recommender.ranking.recommender import ReadingList
from recommender.ranking.why_not import WhyNot

from ..state import components
from .area import Reply, answers, area, reply
from .shapes import (
    MAX_K,
    MAX_OFFSET,
    CollectionId,
    IsoDate,
    K,
    Strict,
    UserPaperPath,
    UserPath,
)

api = area(__name__, tag="reading lists")

# The list's settings, shared by the list and why-not (which answers about that list).
Since = Annotated[IsoDate | None, Field(description="Only papers published on or after.")]
ExcludeServed = Annotated[bool, Field(description=(
    "Leave out papers this user was shown before today (UTC; by default they are pushed "
    "down). Papers shown today count from tomorrow: the same day, the same list."))]
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET, description=(
    "Skip this many: the next page of the same list (paging)."))]
Diversity = Annotated[float | None, Field(ge=0, le=1, description=(
    "0 ranks by score alone, 1 spreads the list across the user's interests (MMR; the "
    "same for the same inputs). By default 0, or 0.5 for a user without likes."))]
MinProbability = Annotated[float, Field(ge=0, le=1, description=(
    "Leave out papers less likely than this to be worth reading (the list may then be "
    "shorter than k; new papers of followed authors and keywords always stay, and a "
    "list for a user without likes is not cut)."))]


class RecommendationsQuery(Strict):
    k: K = 20
    offset: Offset = 0
    diversity: Diversity = None
    since: Since = None
    exclude_served: ExcludeServed = False
    min_probability: MinProbability = 0.0
    collection: CollectionId | None = Field(None, description=(
        "The list of this collection of the reader's: ranked from its papers and the "
        "reader's dislikes (404 for a collection they do not have). Without it, a reader "
        "with several collections gets each of them on the list."))


class WhyNotQuery(Strict):
    k: Annotated[int, Field(ge=1, le=MAX_K, description=(
        f"The length of the page you look at, 1 to {MAX_K}."))] = 20
    offset: Offset = 0
    diversity: Diversity = None
    since: Since = None
    exclude_served: ExcludeServed = False
    min_probability: MinProbability = 0.0


@api.get("/v1/users/<user_id>/recommendations", summary="The user's ranked reading list.",
         responses=answers(ReadingList, 404, 503),
         description="The same list all day (UTC) unless the user acts (a like, a dislike, a "
                     "rule, a paper set aside): what it serves is pushed down from the next "
                     "day on, not on the next call. The next `offset` continues the list "
                     "without repeats. Records the items as served, and logs the list under "
                     "its `list_id`: send that back with feedback on its papers.")
def recommendations(path: UserPath, query: RecommendationsQuery) -> Reply:
    reading_list = components().recommender.recommend(
        path.user_id, query.k, now=time.time(), offset=query.offset,
        diversity=query.diversity, since=query.since, exclude_served=query.exclude_served,
        min_probability=query.min_probability, collection=query.collection, surface="api")
    return reply(reading_list)


@api.get("/v1/users/<user_id>/recommendations/why-not/<path:paper_id>",
         summary="Why a paper is not on the user's list: its rank, its score and what keeps "
                 "it out.", responses=answers(WhyNot, 404, 503),
         description="About the page `GET /v1/users/{user_id}/recommendations` gives with "
                     "the same `k`, `offset`, `diversity`, `since`, `exclude_served` and "
                     "`min_probability`: `rank` is the paper's place on that list. Blockers: "
                     "`liked`, `disliked`, `muted`, `served_excluded`, `set_aside`, "
                     "`before_since`, `below_min_probability`, `earlier_page` (on the list, "
                     "before `offset`), `diversity` (its score would place it on the page; "
                     "the list's diversity picked others), and when it ranks below the "
                     "page, `outranked` (with the gap to the page's last item) and "
                     "`close_to_disliked`. Records nothing as served. 404 for a "
                     "paper not in the corpus or not indexed yet (the message says to run "
                     "`paperrec rebuild-index`).")
def why_not(path: UserPaperPath, query: WhyNotQuery) -> Reply:
    answer = components().recommender.why_not(
        path.user_id, path.paper_id, now=time.time(), k=query.k, offset=query.offset,
        diversity=query.diversity, since=query.since, exclude_served=query.exclude_served,
        min_probability=query.min_probability)
    return reply(answer)

"""A user's likes and dislikes: one at a time, and all of them."""

from __future__ import annotations

import time

from flask import Response, g
from pydantic import Field

from recommender.core.errors import InvalidInput, NotFound
from recommender.core.ids import PaperId, UserId
from recommender.feedback.store import Feedback

from ..state import components
from .area import Reply, answers, area, reply
from .shapes import (
    MAX_COLLECTIONS_PER_PAPER,
    Answer,
    CollectionId,
    Signal,
    Strict,
    UserPaperPath,
    UserPath,
)

api = area(__name__, tag="feedback")


class FeedbackBody(Strict):
    signal: Signal
    collections: list[CollectionId] | None = Field(
        None, max_length=MAX_COLLECTIONS_PER_PAPER, description=(
            "With a like: the reader's collections the paper is in from now on (replacing "
            "those it was in; [] takes it out of all). Left out: its collections stay. A "
            "dislike takes it out of every collection, so it may not name any."))
    list_id: str | None = Field(None, max_length=64, description=(
        "The `list_id` of the reading list the paper was on, so the like or dislike counts "
        "for that list (the service's own figures and experiments); one that is not of a "
        "list served to this user is ignored."))


class FeedbackOut(Answer):
    user_id: UserId
    paper_id: PaperId
    signal: Signal
    at: float
    collections: list[str] = Field(description="The collections the paper is in now.")
    replaced: bool = Field(description="Whether it replaced an earlier signal on this paper.")


class FeedbackList(Answer):
    user_id: UserId
    items: list[Feedback]


@api.put("/v1/users/<user_id>/feedback/<path:paper_id>",
         summary="Like or dislike a paper (replaces an earlier signal), a like into "
                 "collections.",
         responses=answers(FeedbackOut, 404, 503))
def put_feedback(path: UserPaperPath, body: FeedbackBody) -> Reply:
    now = time.time()
    # Only papers in the corpus are rated, under the id the paper is stored under (a paper
    # that arrived twice answers to both ids).
    parts = components()
    paper = parts.recommender.paper(path.paper_id, viewer=path.user_id)
    if body.signal == "dislike" and body.collections:
        parts.collections.check(path.user_id, body.collections)  # 404 for one not theirs
        raise InvalidInput("a disliked paper is in no collection: like it to put it in "
                           "collections, or leave `collections` out")
    collections = None if body.collections is None else list(dict.fromkeys(body.collections))
    replaced = parts.feedback.set(path.user_id, paper.id, body.signal, now, collections)
    g.feedback_written = body.signal  # counted by service.metrics
    if body.list_id is not None:
        parts.events.outcome(body.signal, path.user_id, body.list_id, paper.id, now)
    now_in = parts.collections.memberships(path.user_id, [paper.id]).get(paper.id, [])
    return reply(FeedbackOut(user_id=path.user_id, paper_id=paper.id, signal=body.signal,
                             at=round(now, 3), collections=now_in, replaced=replaced))


@api.delete("/v1/users/<user_id>/feedback/<path:paper_id>",
            summary="Take a like or dislike back.", responses=answers(None, 404, 503, status=204))
def delete_feedback(path: UserPaperPath) -> Response:
    stored = components().corpus.resolve(path.paper_id) or path.paper_id
    if not components().feedback.remove(path.user_id, stored):
        raise NotFound(f"user {path.user_id!r} has no feedback on paper {path.paper_id!r}")
    g.feedback_written = "remove"
    return Response(status=204)


@api.get("/v1/users/<user_id>/feedback", summary="A user's likes and dislikes.",
         responses=answers(FeedbackList, 503))
def get_feedback(path: UserPath) -> Reply:
    items = components().feedback.get(path.user_id)
    return reply(FeedbackList(user_id=path.user_id, items=items))

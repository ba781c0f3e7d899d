"""Review of readers' uploads (admin keys only): the papers only a reader's library import
brought stay that reader's until verified (recommender.corpus.store, "pending"); an operator
approves them into every reader's corpus or rejects them. The same as `paperrec
review-imports` and the /admin/imports page."""

from __future__ import annotations

from pydantic import Field

from recommender.core.ids import PaperId
from recommender.corpus.store import PendingPaper

from ..access import access
from ..state import components
from .area import Reply, answers, area, reply
from .shapes import Answer, Strict

api = area(__name__, tag="review")

MAX_REVIEWED = 1000  # ids in one review request


class PendingQuery(Strict):
    limit: int = Field(100, ge=1, le=MAX_REVIEWED)
    offset: int = Field(0, ge=0, le=10_000_000)


class PendingOut(Answer):
    total: int = Field(description="Pending papers in all.")
    items: list[PendingPaper] = Field(description="Oldest first.")


class ReviewBody(Strict):
    approve: list[PaperId] = Field(default_factory=list, max_length=MAX_REVIEWED,
                                   description="Verify these: every reader's lists count "
                                               "them from the next index rebuild.")
    reject: list[PaperId] = Field(default_factory=list, max_length=MAX_REVIEWED,
                                  description="Delete these.")


class ReviewOut(Answer):
    approved: int = Field(description="How many of `approve` were pending, now verified.")
    rejected: int = Field(description="How many of `reject` were pending, now deleted.")


@api.get("/v1/imports/pending", summary="Papers readers' imports added, waiting for review.",
         responses=answers(PendingOut))
@access("admin")
def pending_imports(query: PendingQuery) -> Reply:
    corpus = components().corpus
    return reply(PendingOut(total=corpus.pending_count(),
                            items=corpus.pending(query.limit, query.offset)))


@api.post("/v1/imports/review", summary="Approve or reject papers readers' imports added.",
          responses=answers(ReviewOut))
@access("admin")
def review_imports(body: ReviewBody) -> Reply:
    corpus = components().corpus
    return reply(ReviewOut(approved=corpus.approve(body.approve),
                           rejected=corpus.reject(body.reject)))

"""The REST API, version 1. Each view declares its models (service/api_models.py), which
validate the call and document it in /openapi.json; views call the engine and shape JSON."""

from __future__ import annotations

import time
from typing import Any

from flask import Blueprint, Response, g

from recommender.core.errors import NotFound, PaperrecError
from recommender.ranking.reader_rules import FOLLOW_WINDOW_DAYS
from recommender.storage.redis_options import redis_errors

from . import link_pages
from .api_models import (
    ExportOut,
    FeedbackBody,
    FeedbackListOut,
    FeedbackOut,
    Health,
    KQuery,
    PaperOut,
    ReadingListOut,
    Ready,
    RecommendationsQuery,
    RuleAction,
    RuleBody,
    RuleChangeOut,
    RuleKind,
    RuleQuery,
    RulesOut,
    SearchOut,
    SearchQuery,
    SimilarOut,
    SubscriptionBody,
    SubscriptionOut,
    WhyNotOut,
    WhyNotQuery,
)
from .errors import error_response
from .openapi import operation
from .state import components

api = Blueprint("api", __name__)


@operation(api, "GET", "/healthz", summary="The process is alive.", tag="health",
           response=Health, access="open")
def healthz() -> Health:
    return Health(status="ok")


@operation(api, "GET", "/readyz", summary="An index is loaded and Redis answers.",
           tag="health", response=Ready, errors=(503,), access="open")
def readyz() -> Ready | tuple[Response, int]:
    problems = []
    details: dict[str, Any] = {}
    parts = components()
    try:
        index = parts.index.get()
        details.update(index_version=index.version, papers=len(index))
    except PaperrecError as exc:
        problems.append(exc.message)
    try:
        with redis_errors():
            parts.redis.ping()
    except PaperrecError as exc:
        problems.append(exc.message)
    if problems:
        response, status = error_response(503, "not_ready", "; ".join(problems))
        response.headers["Retry-After"] = "5"
        return response, status
    return Ready(status="ready", **details)


@operation(api, "GET", "/v1/papers/<path:paper_id>/similar", summary="Papers close in content.",
           tag="papers", query=KQuery, response=SimilarOut, errors=(404, 503))
def similar(paper_id: str, query: KQuery) -> SimilarOut:
    items = components().recommender.similar(paper_id, query.k)
    return SimilarOut.model_validate({"paper_id": paper_id, "items": items}, from_attributes=True)


@operation(api, "GET", "/v1/papers/<path:paper_id>", summary="One paper.", tag="papers",
           response=PaperOut, errors=(404,))
def paper(paper_id: str) -> PaperOut:
    return PaperOut.model_validate(components().recommender.paper(paper_id), from_attributes=True)


@operation(api, "GET", "/v1/search", summary="Semantic search over titles and abstracts.",
           tag="papers", query=SearchQuery, response=SearchOut, errors=(503,))
def search(query: SearchQuery) -> SearchOut:
    items = components().recommender.search(query.q, query.k)
    return SearchOut.model_validate({"query": query.q.strip(), "items": items},
                                    from_attributes=True)


@operation(api, "PUT", "/v1/users/<user_id>/feedback/<path:paper_id>",
           summary="Like or dislike a paper (replaces an earlier signal).", tag="feedback",
           body=FeedbackBody, response=FeedbackOut, errors=(404, 503))
def put_feedback(user_id: str, paper_id: str, body: FeedbackBody) -> FeedbackOut:
    now = time.time()
    # Only papers in the corpus are rated, under the id the paper is stored under (a paper
    # that arrived twice answers to both ids).
    paper = components().recommender.paper(paper_id)
    replaced = components().feedback.set(user_id, paper.id, body.signal, now)
    g.feedback_written = body.signal  # counted by service.metrics
    return FeedbackOut(user_id=user_id, paper_id=paper.id, signal=body.signal,
                       at=round(now, 3), replaced=replaced)


@operation(api, "DELETE", "/v1/users/<user_id>/feedback/<path:paper_id>",
           summary="Take a like or dislike back.", tag="feedback", status=204,
           errors=(404, 503))
def delete_feedback(user_id: str, paper_id: str) -> Response:
    stored = components().corpus.resolve(paper_id) or paper_id
    if not components().feedback.remove(user_id, stored):
        raise NotFound(f"user {user_id!r} has no feedback on paper {paper_id!r}")
    g.feedback_written = "remove"
    return Response(status=204)


@operation(api, "GET", "/v1/users/<user_id>/feedback", summary="A user's likes and dislikes.",
           tag="feedback", response=FeedbackListOut, errors=(503,))
def get_feedback(user_id: str) -> FeedbackListOut:
    items = components().feedback.get(user_id)
    return FeedbackListOut.model_validate({"user_id": user_id, "items": items},
                                          from_attributes=True)


@operation(api, "GET", "/v1/users/<user_id>/rules", summary="A user's follow and mute rules.",
           tag="rules", response=RulesOut, errors=(503,))
def get_rules(user_id: str) -> RulesOut:
    return RulesOut.model_validate({"user_id": user_id, "rules": components().rules.get(user_id)},
                                   from_attributes=True)


@operation(api, "PUT", "/v1/users/<user_id>/rules/<action>/<kind>",
           summary="Follow or mute an author or a keyword (the same rule again changes nothing).",
           tag="rules", body=RuleBody, response=RuleChangeOut, errors=(503,),
           description="Follow: the author's or keyword's new papers always come first in "
                       "the reading lists and digests, marked `followed_rule` (new: dated on or "
                       f"after the list's `since`, or without one within {FOLLOW_WINDOW_DAYS} "
                       "days). Mute: its papers are never shown. An author matches by name "
                       "(case and accents aside; \"Last, First\" reads as \"First Last\"), a "
                       "keyword as whole words in the title or abstract. One author or keyword "
                       "has one rule: following a muted one replaces the mute. 400 beyond the "
                       "most rules a user may have.")
def put_rule(user_id: str, action: RuleAction, kind: RuleKind, body: RuleBody) -> RuleChangeOut:
    change = components().rules.put(user_id, action, kind, body.value, time.time())
    return RuleChangeOut.model_validate(
        {**vars(change.rule), "user_id": user_id, "created": change.created,
         "replaced": change.replaced})


@operation(api, "DELETE", "/v1/users/<user_id>/rules/<action>/<kind>",
           summary="Delete a rule (the value in the query: `?value=Yoshua+Bengio`).",
           tag="rules", query=RuleQuery, status=204, errors=(404, 503))
def delete_rule(user_id: str, action: RuleAction, kind: RuleKind, query: RuleQuery) -> Response:
    if not components().rules.remove(user_id, action, kind, query.value):
        raise NotFound(f"user {user_id!r} has no rule to {action} the {kind} {query.value!r}")
    return Response(status=204)


@operation(api, "GET", "/v1/users/<user_id>/recommendations",
           summary="The user's ranked reading list.", tag="reading lists",
           query=RecommendationsQuery, response=ReadingListOut, errors=(503,))
def recommendations(user_id: str, query: RecommendationsQuery) -> ReadingListOut:
    reading_list = components().recommender.recommend(
        user_id, query.k, now=time.time(), offset=query.offset, diversity=query.diversity,
        since=query.since, exclude_served=query.exclude_served,
        min_probability=query.min_probability)
    return ReadingListOut.model_validate(reading_list, from_attributes=True)


@operation(api, "GET", "/v1/users/<user_id>/recommendations/why-not/<path:paper_id>",
           summary="Why a paper is not on the user's list: its rank, its score and what "
                   "keeps it out.", tag="reading lists", query=WhyNotQuery,
           response=WhyNotOut, errors=(404, 503),
           description="About the list `GET /v1/users/{user_id}/recommendations` gives with "
                       "the same `k`, `since`, `exclude_served` and `min_probability`, "
                       "ordered by score (diversity 0). Blockers: `liked`, `disliked`, "
                       "`muted`, `served_excluded`, `before_since`, `below_min_probability`, "
                       "and when it ranks below k, `outranked` (with the gap to the k-th "
                       "item) and `close_to_disliked`. Records nothing as served. 404 for a "
                       "paper not in the corpus or not indexed yet (the message says to run "
                       "`paperrec rebuild-index`).")
def why_not(user_id: str, paper_id: str, query: WhyNotQuery) -> WhyNotOut:
    answer = components().recommender.why_not(
        user_id, paper_id, now=time.time(), k=query.k, since=query.since,
        exclude_served=query.exclude_served, min_probability=query.min_probability)
    return WhyNotOut.model_validate(answer, from_attributes=True)


@operation(api, "PUT", "/v1/users/<user_id>/subscription",
           summary="Subscribe to (or change) the email digest.", tag="digests",
           body=SubscriptionBody, response=SubscriptionOut, errors=(503,))
def put_subscription(user_id: str, body: SubscriptionBody) -> SubscriptionOut:
    subscription = components().subscriptions.set(user_id, body.email, body.frequency,
                                                  body.max_items, time.time(),
                                                  body.min_probability)
    return SubscriptionOut.model_validate(subscription, from_attributes=True)


@operation(api, "GET", "/v1/users/<user_id>/subscription", summary="The digest subscription.",
           tag="digests", response=SubscriptionOut, errors=(404, 503))
def get_subscription(user_id: str) -> SubscriptionOut:
    found = components().subscriptions.get(user_id)
    if found is None:
        raise NotFound(f"user {user_id!r} has no digest subscription; create one with PUT")
    return SubscriptionOut.model_validate(found, from_attributes=True)


@operation(api, "DELETE", "/v1/users/<user_id>/subscription", summary="Unsubscribe.",
           tag="digests", status=204, errors=(404, 503))
def delete_subscription(user_id: str) -> Response:
    if not components().subscriptions.delete(user_id):
        raise NotFound(f"user {user_id!r} has no digest subscription")
    return Response(status=204)


@operation(api, "GET", "/v1/links/<token>", tag="digests", html=True,
           errors=(403, 404, 410, 503), access="open",
           summary="Show what a digest email's link would do (records nothing).",
           description="Mail security scanners fetch every link of an email before its reader "
                       "sees it, so a GET records nothing. The page names the paper (or the "
                       "address to unsubscribe) and the action, with a button that POSTs to "
                       "the same URL.")
def show_link(token: str) -> Response:
    try:
        target = components().link_actions.preview(token, time.time())
    except PaperrecError as exc:
        return link_pages.error(exc)
    return link_pages.preview(target)


@operation(api, "POST", "/v1/links/<token>", tag="digests", html=True,
           errors=(403, 404, 410, 503), access="open",
           summary="Carry out a digest email's link (its page's button; RFC 8058 one-click "
                   "unsubscribe).",
           description="Records the like or dislike, or ends the subscription, that the signed "
                       "token names, and answers with a page saying so; doing it again changes "
                       "nothing more. The body is not needed and is ignored: the page's button "
                       "sends none, and a mail client's RFC 8058 one-click unsubscribe sends "
                       "`List-Unsubscribe=One-Click` (form-urlencoded or multipart). The answer "
                       "is never a redirect.")
def follow_link(token: str) -> Response:
    try:
        target = components().link_actions.follow(token, time.time())
    except PaperrecError as exc:
        return link_pages.error(exc)
    if target.claim.action in ("like", "dislike"):
        g.feedback_written = target.claim.action  # counted by service.metrics
    return link_pages.done(target)


@operation(api, "GET", "/v1/users/<user_id>/export", tag="your data", response=ExportOut,
           errors=(503,), access="admin", summary="Everything stored about a user (admin).")
def export_user(user_id: str) -> ExportOut:
    export = components().user_data.export(user_id)
    return ExportOut.model_validate({"user_id": export.user_id, "feedback": export.feedback,
                                     "served": export.served, **export.sections},
                                    from_attributes=True)


@operation(api, "DELETE", "/v1/users/<user_id>", tag="your data", status=204, errors=(503,),
           access="admin", summary="Erase everything stored about a user (admin).")
def erase_user(user_id: str) -> Response:
    components().user_data.erase(user_id)
    return Response(status=204)

"""A user's reading list in a feed reader: private feed URLs (recommender.digest.feed_tokens)
and the feeds behind them (recommender.digest.feeds).

Issuing and showing the URLs needs an API key like every user route; the feeds themselves
need none (a feed reader cannot send one): the signed token in the URL is the credential.
A feed answers with an ETag; a reader that sends it back (If-None-Match) gets a 304 without
the list being ranked again.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal

from flask import Response, request
from pydantic import BaseModel, Field

from recommender.core.errors import NotFound
from recommender.digest.feed_tokens import FeedUrls
from recommender.digest.feeds import as_json_feed, atom_xml

from ..access import access
from ..state import components
from .area import Reply, answers, area, reply
from .shapes import CollectionId, Strict, UserPath

api = area(__name__, tag="feeds")

ATOM_TYPE = "application/atom+xml"
JSON_FEED_TYPE = "application/feed+json"
# Readers poll; a quarter of an hour is as fresh as a list needs to be, and every poll after
# that is a cheap revalidation. "private": the body is one person's list.
CACHE_CONTROL = "private, max-age=900"
# The URL is a capability: not sent on as a referrer, not indexed, not sniffed as HTML.
HEADERS = {"Cache-Control": CACHE_CONTROL, "Referrer-Policy": "no-referrer",
           "X-Robots-Tag": "noindex", "X-Content-Type-Options": "nosniff"}
_VALIDATORS: dict[str, Any] = {
    "ETag": {"description": "The list's version; send it back as If-None-Match.",
             "schema": {"type": "string"}},
    "Cache-Control": {"description": CACHE_CONTROL, "schema": {"type": "string"}},
}
_NOT_MODIFIED = {"description": "Not modified: the If-None-Match sent is the list's current "
                                "version (nothing was ranked).", "headers": _VALIDATORS}
_JSON_FEED_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["version", "title", "items"],
    "description": "A JSON Feed 1.1 document (https://www.jsonfeed.org/version/1.1/); each "
                   "item also has a `_paperrec` extension: paper_id, rank, reason, probability.",
    "properties": {
        "version": {"type": "string"}, "title": {"type": "string"},
        "home_page_url": {"type": "string"}, "feed_url": {"type": "string"},
        "items": {"type": "array", "items": {
            "type": "object", "required": ["id"],
            "properties": {"id": {"type": "string"}, "url": {"type": "string"},
                           "title": {"type": "string"}, "content_text": {"type": "string"},
                           "date_published": {"type": "string"}}}},
    },
}
_FEED_ERRORS = (403, 404, 410, 503)
_FEED_DESCRIPTION = (
    "The list `GET /v1/users/{user_id}/recommendations` gives with its defaults (20 papers, "
    "in the same order), each entry with its title, link, authors, abstract, date, and the "
    "reason and probability in its content. Fetching it records nothing as served. No API "
    "key: the URL is the key. 403 for a URL that was altered, 410 for one replaced by a "
    "newer one (or whose user was erased). Send the ETag back as If-None-Match: while the "
    "list's inputs are unchanged the answer is a 304, and nothing is ranked. "
    "`?collection=<id>`: the feed of that collection's list.")


class FeedQuery(Strict):
    collection: CollectionId | None = Field(None, description=(
        "The feed of this collection's list (404 when the user has no such collection)."))


class FeedPath(BaseModel):
    feed_token: str = Field(description="The signed token of a private feed URL "
                                        "(`POST /v1/users/{user_id}/feed` issues it).")


@api.post("/v1/users/<user_id>/feed", responses=answers(FeedUrls, 503),
          summary="Issue new private feed URLs (the old ones stop working).",
          description="The Atom and JSON Feed URLs of the user's reading list, for feed "
                      "readers, which cannot send API keys: the signed token in the URL is "
                      "the credential. Issuing again revokes the earlier URLs (they answer "
                      "410): do it when a URL was shared by mistake.")
def issue_feed(path: UserPath) -> Reply:
    return reply(components().feed_tokens.issue(path.user_id, time.time()))


@api.get("/v1/users/<user_id>/feed", responses=answers(FeedUrls, 404, 503),
         summary="The user's current private feed URLs.")
def get_feed(path: UserPath) -> Reply:
    urls = components().feed_tokens.current(path.user_id)
    if urls is None:
        raise NotFound(f"user {path.user_id!r} has no feed URL yet; issue one with POST")
    return reply(urls)


@api.get("/feeds/<feed_token>/atom.xml",
         responses={**answers({"content": {ATOM_TYPE: {"schema": {"type": "string"}}},
                               "headers": _VALIDATORS}, *_FEED_ERRORS), 304: _NOT_MODIFIED},
         summary="A user's reading list as an Atom feed (private URL, no API key).",
         description=_FEED_DESCRIPTION)
@access("open")
def atom_feed(path: FeedPath, query: FeedQuery) -> Response:
    return _feed(path.feed_token, "atom", query.collection)


@api.get("/feeds/<feed_token>/feed.json",
         responses={**answers({"content": {JSON_FEED_TYPE: {"schema": _JSON_FEED_SCHEMA}},
                               "headers": _VALIDATORS}, *_FEED_ERRORS), 304: _NOT_MODIFIED},
         summary="A user's reading list as a JSON Feed 1.1 (private URL, no API key).",
         description=_FEED_DESCRIPTION)
@access("open")
def json_feed(path: FeedPath, query: FeedQuery) -> Response:
    return _feed(path.feed_token, "json", query.collection)


def _feed(token: str, kind: Literal["atom", "json"], collection: str | None) -> Response:
    parts = components()
    now = time.time()
    grant = parts.feed_tokens.verify(token)  # 403 altered, 410 replaced
    urls = parts.feed_tokens.current(grant.user_id)
    if urls is None:  # erased between the two reads
        raise NotFound("this feed no longer exists; get a new URL from your Digest page")
    etag = f"{kind}-{parts.feeds.version(urls, now, collection)}"
    if request.if_none_match.contains_weak(etag):
        response = Response(status=304)
    else:
        feed = parts.feeds.build(urls, now, collection)
        if kind == "atom":
            response = Response(atom_xml(feed), content_type=f"{ATOM_TYPE}; charset=utf-8")
        else:
            body = json.dumps(as_json_feed(feed), ensure_ascii=False, indent=1)
            response = Response(body.encode(), content_type=JSON_FEED_TYPE)
    response.set_etag(etag)
    response.headers.update(HEADERS)
    return response


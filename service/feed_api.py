"""A user's reading list in a feed reader: private feed URLs (recommender.digest.feed_tokens)
and the feeds behind them (recommender.digest.feeds). Registered on the API blueprint of
service.routes.

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

from recommender.core.errors import NotFound
from recommender.digest.feed_tokens import FeedUrls
from recommender.digest.feeds import as_json_feed, atom_xml

from .api_models import FeedOut
from .openapi import operation
from .routes import api
from .state import components

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
_NOT_MODIFIED = {"304": {"description": "Not modified: the If-None-Match sent is the list's "
                                        "current version (nothing was ranked).",
                         "headers": _VALIDATORS}}
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
    "list's inputs are unchanged the answer is a 304, and nothing is ranked.")


@operation(api, "POST", "/v1/users/<user_id>/feed", tag="feeds", response=FeedOut,
           errors=(503,), summary="Issue new private feed URLs (the old ones stop working).",
           description="The Atom and JSON Feed URLs of the user's reading list, for feed "
                       "readers, which cannot send API keys: the signed token in the URL is "
                       "the credential. Issuing again revokes the earlier URLs (they answer "
                       "410): do it when a URL was shared by mistake.")
def issue_feed(user_id: str) -> FeedOut:
    return _out(components().feed_tokens.issue(user_id, time.time()))


@operation(api, "GET", "/v1/users/<user_id>/feed", tag="feeds", response=FeedOut,
           errors=(404, 503), summary="The user's current private feed URLs.")
def get_feed(user_id: str) -> FeedOut:
    urls = components().feed_tokens.current(user_id)
    if urls is None:
        raise NotFound(f"user {user_id!r} has no feed URL yet; issue one with POST")
    return _out(urls)


@operation(api, "GET", "/feeds/<feed_token>/atom.xml", tag="feeds", access="open",
           errors=_FEED_ERRORS, other_responses=_NOT_MODIFIED,
           raw_response={"content": {ATOM_TYPE: {"schema": {"type": "string"}}},
                         "headers": _VALIDATORS},
           summary="A user's reading list as an Atom feed (private URL, no API key).",
           description=_FEED_DESCRIPTION)
def atom_feed(feed_token: str) -> Response:
    return _feed(feed_token, "atom")


@operation(api, "GET", "/feeds/<feed_token>/feed.json", tag="feeds", access="open",
           errors=_FEED_ERRORS, other_responses=_NOT_MODIFIED,
           raw_response={"content": {JSON_FEED_TYPE: {"schema": _JSON_FEED_SCHEMA}},
                         "headers": _VALIDATORS},
           summary="A user's reading list as a JSON Feed 1.1 (private URL, no API key).",
           description=_FEED_DESCRIPTION)
def json_feed(feed_token: str) -> Response:
    return _feed(feed_token, "json")


def _feed(token: str, kind: Literal["atom", "json"]) -> Response:
    parts = components()
    now = time.time()
    grant = parts.feed_tokens.verify(token)  # 403 altered, 410 replaced
    urls = parts.feed_tokens.current(grant.user_id)
    if urls is None:  # erased between the two reads
        raise NotFound("this feed no longer exists; get a new URL from your Digest page")
    etag = f"{kind}-{parts.feeds.version(urls, now)}"
    if request.if_none_match.contains_weak(etag):
        response = Response(status=304)
    else:
        feed = parts.feeds.build(urls, now)
        if kind == "atom":
            response = Response(atom_xml(feed), content_type=f"{ATOM_TYPE}; charset=utf-8")
        else:
            body = json.dumps(as_json_feed(feed), ensure_ascii=False, indent=1)
            response = Response(body.encode(), content_type=JSON_FEED_TYPE)
    response.set_etag(etag)
    response.headers.update(HEADERS)
    return response


def _out(urls: FeedUrls) -> FeedOut:
    return FeedOut.model_validate(urls, from_attributes=True)

"""The links in the service's emails, a digest's and a confirmation email's: a page that says
what a link does (GET records nothing), and its button that does it (no key: the signed
token is the credential). An "open" link (a digest's paper title, a feed entry's link) is the
exception: a GET logs a click and redirects to the paper."""

from __future__ import annotations

import time
from typing import Any, cast

from flask import Response, g, redirect
from pydantic import BaseModel, Field

from recommender.core.errors import PaperrecError
from recommender.digest.confirmations import CONFIRMATION_DAYS

from .. import link_pages
from ..access import access
from ..state import components
from .area import answers, area

api = area(__name__, tag="digests", query_strings=False)  # mail clients add their own


class LinkPath(BaseModel):
    token: str = Field(description="A signed token from a digest email or a feed.")


_TO_PAPER: dict[str, Any] = {
    "description": "An open link: the click is logged, and the answer leads to the paper "
                   "(its own http(s) URL, else its page on this service).",
    "headers": {"Location": {"description": "The paper's address.",
                             "schema": {"type": "string", "format": "uri"}}}}


@api.get("/v1/links/<token>",
         responses={**answers(None, 403, 404, 410, 503, html=True), 302: _TO_PAPER},
         summary="Show what a digest email's link would do (records nothing), or follow an "
                 "open link to its paper.",
         description="Mail security scanners fetch every link of an email before its reader "
                     "sees it, so a GET of a like, dislike or unsubscribe link records "
                     "nothing: the page names the paper (or the address to unsubscribe) and "
                     "the action, with a button that POSTs to the same URL. An open link (a "
                     "digest's paper title, a feed entry's link) logs a click on the paper "
                     "of the list it was in and redirects to the paper; a scanner's fetch "
                     "logs a click too.")
@access("open")
def show_link(path: LinkPath) -> Response:
    parts = components()
    now = time.time()
    try:
        if parts.links.claim(path.token).action == "open":
            response = cast(Response, redirect(parts.link_actions.open(path.token, now), 302))
            response.headers.update(link_pages.HEADERS)  # the token is no referrer of the paper
            return response
        target = parts.link_actions.preview(path.token, now)
    except PaperrecError as exc:
        return link_pages.error(exc)
    return link_pages.preview(target)


@api.post("/v1/links/<token>", responses=answers(None, 403, 404, 410, 503, html=True),
          summary="Carry out a digest email's link (its page's button; RFC 8058 one-click "
                  "unsubscribe).",
          description="Records the like or dislike, or ends the subscription, that the signed "
                      "token names, and answers with a page saying so; doing it again changes "
                      "nothing more. The body is not needed and is ignored: the page's button "
                      "sends none, and a mail client's RFC 8058 one-click unsubscribe sends "
                      "`List-Unsubscribe=One-Click` (form-urlencoded or multipart). The answer "
                      "is never a redirect. An open link is followed by a GET, not here.")
@access("open")
def follow_link(path: LinkPath) -> Response:
    try:
        target = components().link_actions.follow(path.token, time.time())
    except PaperrecError as exc:
        return link_pages.error(exc)
    if target.claim.action in ("like", "dislike"):
        g.feedback_written = target.claim.action  # counted by service.metrics
    return link_pages.done(target)


class ConfirmationPath(BaseModel):
    token: str = Field(description="A signed token from a confirmation email.")


@api.get("/v1/confirmations/<token>", responses=answers(None, 403, 410, 503, html=True),
         summary="Show which digest address a confirmation email's link confirms (confirms "
                 "nothing).",
         description="The email asking an address to confirm a digest subscription links "
                     "here. A GET shows the address and the digest, with a button that POSTs "
                     "to the same URL (mail scanners fetch every link of an email). A used "
                     f"or expired link ({CONFIRMATION_DAYS} days) is a 410, one for an address "
                     "the subscription no longer sends to a 410 too, an altered one a 403.")
@access("open")
def show_confirmation(path: ConfirmationPath) -> Response:
    try:
        subscription = components().confirmations.preview(path.token, time.time())
    except PaperrecError as exc:
        return link_pages.error(exc)
    return link_pages.confirmation(subscription)


@api.post("/v1/confirmations/<token>", responses=answers(None, 403, 410, 503, html=True),
          summary="Confirm a digest address (its page's button).",
          description="Confirms the address the signed token names for its user's digest "
                      "and uses the link up: it works once, in whatever encoding. The "
                      "digests start with the next run of the digest job.")
@access("open")
def confirm_address(path: ConfirmationPath) -> Response:
    try:
        subscription = components().confirmations.confirm(path.token, time.time())
    except PaperrecError as exc:
        return link_pages.error(exc)
    return link_pages.confirmed(subscription)

"""The pages behind the links of the digest emails and of the confirmation emails.

A GET shows what the link would do and a button (a POST form to the same URL) that does it;
only the POST records. Mail security scanners fetch every link of an email before its reader
sees it, so a link that acted on GET would record a like, a dislike or an unsubscribe for
each scan. The pages are rendered from ``templates/link.html`` in the web pages' frame and
stylesheet (autoescaped: titles come from outside), under their Content-Security-Policy.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from flask import Response, render_template

from recommender.core.errors import ExpiredLink, InvalidLink, PaperrecError
from recommender.digest.link_actions import LinkTarget
from recommender.digest.subscriptions import Subscription

# The pages hold a capability (the token in their URL) and a person's address: never cached
# or indexed, never sent on as a referrer, never framed (a framed button invites a click the
# reader did not mean), and nothing runs in them (service.page_security, on every page).
HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex",
}


@dataclass(frozen=True)
class Page:
    heading: str
    lead: str  # the sentence that says it all
    subject: str | None = None  # a title (in quotes) or an address, set in bold after ``lead``
    after: str = ""  # the rest of the sentence after ``subject``
    note: str = ""  # smaller print below
    button: str | None = None  # the label of the POST button; None: no button
    status: int = 200


def preview(target: LinkTarget) -> Response:
    """What the link would do, with the button that does it. Records nothing."""
    claim = target.claim
    until = dt.datetime.fromtimestamp(claim.expires_at, dt.UTC).date().isoformat()
    note = f"Nothing is recorded until you press the button. This link works until {until}."
    if claim.action == "like":
        page = Page("More papers like this?", "Record that you want more papers like ",
                    _quoted(target.paper_title), "?", note, "Yes, more like this")
    elif claim.action == "dislike":
        page = Page("Not interested?", "Record that you are not interested in ",
                    _quoted(target.paper_title), "? Papers like it will sink in your reading "
                    "lists.", note, "Not interested")
    elif target.email is not None:
        page = Page("Unsubscribe?", "Unsubscribe ", target.email, " from paperrec digests?",
                    note, "Unsubscribe")
    else:
        page = Page("Already unsubscribed", "There is no paperrec digest subscription to end "
                    "for this link: no more digests will be sent.")
    return _render(page)


def done(target: LinkTarget) -> Response:
    """What following the link recorded."""
    claim = target.claim
    if claim.action == "like":
        page = Page("Recorded", "Recorded: more like ", _quoted(target.paper_title),
                    " in your next reading lists.")
    elif claim.action == "dislike":
        page = Page("Recorded", "Recorded: not interested in ", _quoted(target.paper_title),
                    "; papers like it will sink.")
    elif target.email is not None:
        page = Page("Unsubscribed", "You are unsubscribed: no more paperrec digests will be "
                    "sent to ", target.email, ".")
    else:
        page = Page("Unsubscribed", "You are unsubscribed: no more paperrec digests will be "
                    "sent to you.")
    return _render(page)


def confirmation(subscription: Subscription) -> Response:
    """What confirming the address would do, with the button that does it. Confirms nothing."""
    if subscription.confirmed:
        return _render(Page("Already confirmed", "paperrec digests already go to ",
                            subscription.email, "."))
    return _render(Page("Confirm your digest?", f"Send a {subscription.frequency} digest of "
                        "research papers to ", subscription.email, "?",
                        "Nothing is sent until you press the button. If you did not ask for "
                        "it, close this page: no digest goes to an address that was not "
                        "confirmed.", "Yes, send me the digest"))


def confirmed(subscription: Subscription) -> Response:
    """The address is confirmed."""
    return _render(Page("Confirmed", "Confirmed: paperrec digests will go to ",
                        subscription.email, ".", "Every digest has an unsubscribe link."))


def error(exc: PaperrecError) -> Response:
    """A link that cannot be followed, and why; no button."""
    if isinstance(exc, InvalidLink):
        heading = "Not a valid link"
    elif isinstance(exc, ExpiredLink):
        heading = "Expired link"
    else:
        heading = "Nothing was recorded"
    message = exc.message[:1].upper() + exc.message[1:]
    response = _render(Page(heading, message, status=exc.status))
    if exc.retry_after is not None:
        response.headers["Retry-After"] = str(exc.retry_after)
    return response


def _quoted(title: str | None) -> str:
    return f"\u201c{title}\u201d"


def _render(page: Page) -> Response:
    response = Response(render_template("link.html", page=page), status=page.status,
                        content_type="text/html; charset=utf-8")
    response.headers.update(HEADERS)
    return response

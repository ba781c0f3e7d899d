"""Your digest (subscribe, how often, how many papers or how likely, unsubscribe) and your
data (download everything stored about you, erase your account).

The digest goes to the address you signed in with unless you give another; another address
gets a confirmation email first, and no digest until its link is followed (the address you
signed in with is yours already: confirmed at once). Subscriptions are the API's
(``service.confirmation_mail``, ``recommender.digest.subscriptions``), the export and the
erasure the API's too (``recommender.feedback.user_data``, the same JSON as
``GET /v1/users/<id>/export``).
"""

from __future__ import annotations

import time

from flask import Response, flash, redirect, request, session, url_for

from recommender.core.errors import InvalidInput
from recommender.digest.subscriptions import (
    DEFAULT_MIN_PROBABILITY,
    MAX_ITEMS_LIMIT,
    Frequency,
)

from .. import confirmation_mail
from ..api.account import ExportOut
from ..state import components
from .accounts import normalise_email
from .blueprint import (
    back,
    current_email,
    current_user,
    integer,
    optional_float,
    page,
    signed_in,
    web,
)
from .sessions import WebSession

DEFAULT_MAX_ITEMS = 10


@web.get("/digest")
@signed_in
def digest() -> Response:
    user = current_user()
    assert user is not None
    found = components().subscriptions.get(user)
    return page("digest.html", active="digest", subscription=found,
                address=found.email if found else current_email(),
                frequency=found.frequency if found else "weekly",
                max_items=found.max_items if found else DEFAULT_MAX_ITEMS,
                min_probability=found.min_probability if found else DEFAULT_MIN_PROBABILITY,
                max_items_limit=MAX_ITEMS_LIMIT, feed=components().feed_tokens.current(user))


@web.post("/digest/feed")
@signed_in
def new_feed() -> Response:
    """A new private feed address (the old one, if any, stops working)."""
    user = current_user()
    assert user is not None
    had = components().feed_tokens.current(user) is not None
    components().feed_tokens.issue(user, time.time())
    flash("A new feed address: the old one no longer works." if had else
          "Your feed address is below: add it to your feed reader.")
    return back("web.digest")


@web.post("/digest")
@signed_in
def subscribe() -> Response:
    user = current_user()
    assert user is not None
    form = request.form
    frequency = form.get("frequency", "weekly")
    if frequency not in ("daily", "weekly"):
        raise InvalidInput("how often must be daily or weekly")
    chosen: Frequency = "daily" if frequency == "daily" else "weekly"
    max_items = integer(form, "max_items", 1, MAX_ITEMS_LIMIT, DEFAULT_MAX_ITEMS,
                        "papers per digest")
    min_probability = optional_float(form, "min_probability", 0.0, 1.0,
                                     "how likely worth reading")
    address = normalise_email(form.get("email") or current_email())
    was = components().subscriptions.get(user)
    done = confirmation_mail.subscribe(
        user, address, chosen, max_items,
        DEFAULT_MIN_PROBABILITY if min_probability is None else min_probability,
        own_address=address == current_email())
    flash(f"{'Saved' if was else 'Subscribed'}: a {chosen} digest of up to {max_items} papers "
          f"to {address}" + ("." if done.confirmed else
                             f", once it is confirmed: we sent a link to {address}."))
    return back("web.digest")


@web.post("/digest/confirmation")
@signed_in
def send_confirmation_again() -> Response:
    """Another confirmation email for the address the digest waits on."""
    user = current_user()
    assert user is not None
    found = components().subscriptions.get(user)
    if found is None or found.confirmed:
        flash("There is no address waiting for its confirmation.")
        return back("web.digest")
    confirmation_mail.send_again(found)
    flash(f"We sent another link to {found.email}.")
    return back("web.digest")


@web.post("/digest/unsubscribe")
@signed_in
def unsubscribe() -> Response:
    user = current_user()
    assert user is not None
    if components().subscriptions.delete(user):
        flash("Unsubscribed: no more digests will be sent.")
    else:
        flash("You had no digest subscription.")
    return back("web.digest")


@web.get("/data")
@signed_in
def your_data() -> Response:
    user = current_user()
    assert user is not None
    export = components().user_data.export(user)
    likes = sum(1 for f in export.feedback if f.signal == "like")
    return page("data.html", active="data", user_id=user, likes=likes,
                dislikes=len(export.feedback) - likes, served=len(export.served),
                set_aside=len(export.set_aside),
                subscription=export.sections.get("subscription"),
                digests=len(export.sections.get("digests", [])),
                rules=len(export.sections.get("rules", [])))


@web.get("/data/export.json")
@signed_in
def export_data() -> Response:
    user = current_user()
    assert user is not None
    export = components().user_data.export(user)
    body = ExportOut.of(export)
    response = Response(body.model_dump_json(indent=2), content_type="application/json")
    response.headers["Content-Disposition"] = 'attachment; filename="paperrec-my-data.json"'
    return response


@web.post("/data/erase")
@signed_in
def erase() -> Response:
    """Forget the reader: every stored key, every session (on every device), then sign out."""
    user = current_user()
    assert user is not None
    if request.form.get("confirm", "").strip().lower() != current_email():
        raise InvalidInput("to erase your account, type your email address in the box; "
                           "nothing was erased")
    components().user_data.erase(user)  # and every session of the reader's (the keys')
    assert isinstance(session, WebSession)
    session.end()
    return redirect(url_for("web.sign_in", erased=1), code=303)  # type: ignore[return-value]

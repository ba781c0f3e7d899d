"""Setting a digest subscription, and the email that asks its address to confirm.

Both ways of setting one, the API's ``PUT /v1/users/<user_id>/subscription`` and the web
Digest page, go through ``subscribe``: an address that is not confirmed yet (a new one, or
one still waiting) gets a confirmation email with a link (``recommender.digest.confirmations``)
and no digest until the link's button is pressed. The address a reader signed in with is
theirs already (``own_address``) and is confirmed at once.

Every confirmation email counts against two limits, kept in Redis like the API's
(service/rate_limit.py): a few per user an hour, and a few per address a day whatever the
user, since a client key can make as many users as it likes. A request that would send one
more is a 429 and changes nothing, so neither a client nor a reader can turn the service into
a mail cannon aimed at someone's mailbox.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from flask import Flask, current_app
from limits.storage import Storage

from recommender.core.errors import RateLimited, Unavailable
from recommender.digest.subscriptions import DEFAULT_MIN_PROBABILITY, Frequency, Subscription

from .mail import send_now
from .rate_limit import Limit, RateLimiter
from .state import components

EXTENSION = "paperrec.confirmations"
# A few per user an hour (a typo, a slow mail server); a few per address a day, whatever the
# user, since a client key can make as many users as it likes. (The answers say "an hour"
# and "a day": change them with the windows.)
PER_USER = Limit(3, 3600)
PER_ADDRESS = Limit(5, 86400)


@dataclass(frozen=True)
class ConfirmationLimits:
    per_user: RateLimiter
    per_address: RateLimiter


def install(app: Flask, rate_limits: Storage) -> None:
    """Count the confirmation emails of ``app`` in ``rate_limits`` (the app's limit storage)."""
    app.extensions[EXTENSION] = ConfirmationLimits(RateLimiter(rate_limits, PER_USER),
                                                   RateLimiter(rate_limits, PER_ADDRESS))


def subscribe(user_id: str, email: str, frequency: Frequency, max_items: int,
              min_probability: float = DEFAULT_MIN_PROBABILITY, *,
              own_address: bool = False) -> Subscription:
    """Set the subscription and, when its address is not confirmed, send the confirmation
    email. RateLimited (nothing changed) when that email would be one too many."""
    store = components().subscriptions
    was = store.get(user_id)
    if not (own_address or (was is not None and was.email == email and was.confirmed)):
        _count(user_id, email, "Nothing was changed.")
    now = time.time()
    subscription = store.set(user_id, email, frequency, max_items, now, min_probability,
                             own_address=own_address)
    if not subscription.confirmed:
        _send(subscription, now)
    return subscription


def send_again(subscription: Subscription) -> None:
    """Another confirmation email for a subscription still waiting (a new link; the earlier
    ones work too until they expire). RateLimited when it would be one too many."""
    _count(subscription.user_id, subscription.email, "Nothing was sent.")
    _send(subscription, time.time())


def _count(user_id: str, email: str, outcome: str) -> None:
    limits: ConfirmationLimits = current_app.extensions[EXTENSION]
    for limiter, identity, whose in (
            (limits.per_user, f"confirm-user:{_hashed(user_id)}",
             f"for this user (at most {PER_USER.requests} an hour)"),
            (limits.per_address, f"confirm-address:{_hashed(email.lower())}",
             f"to this address (at most {PER_ADDRESS.requests} a day)")):
        decision = limiter.hit(identity)
        if not decision.allowed:
            raise RateLimited(f"too many confirmation emails {whose}; try again in about "
                              f"{_duration(decision.retry_after)}. {outcome}",
                              decision.retry_after)


def _duration(seconds: int) -> str:
    minutes = max(1, round(seconds / 60))
    if minutes < 90:
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{round(minutes / 60)} hours"


def _hashed(text: str) -> str:
    """A key's part for a user id or an address: none of them in clear in Redis."""
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _send(subscription: Subscription, now: float) -> None:
    parts = components()
    try:
        send_now(parts.settings, parts.confirmations.message(subscription, now), "confirmation")
    except Unavailable:
        raise Unavailable(f"the subscription is saved, but the email asking "
                          f"{subscription.email} to confirm could not be sent just now (no "
                          "digest goes there before it is confirmed); set it again in a "
                          "minute to send one") from None

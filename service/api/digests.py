"""A user's email digest: subscribe, read it back, unsubscribe.

An address is confirmed before any digest goes to it (service/confirmation_mail.py): a client
key can name any mailbox.
"""

from __future__ import annotations

from typing import Literal

from flask import Response
from pydantic import Field

from recommender.core.errors import NotFound
from recommender.digest.confirmations import CONFIRMATION_DAYS
from recommender.digest.subscriptions import (
    DEFAULT_MIN_PROBABILITY,
    EMAIL_PATTERN,
    MAX_ITEMS_LIMIT,
    Subscription,
)

from .. import confirmation_mail
from ..state import components
from .area import Reply, answers, area, reply
from .shapes import JsonInteger, JsonNumber, Strict, UserPath

api = area(__name__, tag="digests")


class SubscriptionBody(Strict):
    email: str = Field(pattern=EMAIL_PATTERN.pattern, max_length=254,
                       description="an address like ada@example.org",
                       json_schema_extra={"example": "ada@example.org"})
    frequency: Literal["daily", "weekly"] = "weekly"
    max_items: JsonInteger = Field(10, ge=1, le=MAX_ITEMS_LIMIT)
    min_probability: JsonNumber = Field(DEFAULT_MIN_PROBABILITY, ge=0, le=1, description=(
        "Send only papers at least this likely to be worth reading; a period with none "
        "sends no email. 0 (the default): no bar, the top of the list is sent."))


@api.put("/v1/users/<user_id>/subscription",
         summary="Subscribe to (or change) the email digest.",
         description=(
             "No digest goes to an address before it is confirmed. An address that is not "
             "confirmed yet (a new one, or one still waiting) is sent an email with a link "
             f"whose page confirms it, good once for {CONFIRMATION_DAYS} days; the answer "
             "says `confirmed: false` until then, and setting it again sends another link. "
             "Setting the address already confirmed keeps it confirmed. At most "
             f"{confirmation_mail.PER_USER.requests} confirmation emails per user an hour "
             f"and {confirmation_mail.PER_ADDRESS.requests} per address a day: a call that "
             "would send one more is a 429 and changes nothing."),
         responses=answers(Subscription, 429, 503))
def put_subscription(path: UserPath, body: SubscriptionBody) -> Reply:
    subscription = confirmation_mail.subscribe(path.user_id, body.email, body.frequency,
                                               body.max_items, body.min_probability)
    return reply(subscription)


@api.get("/v1/users/<user_id>/subscription", summary="The digest subscription.",
         responses=answers(Subscription, 404, 503))
def get_subscription(path: UserPath) -> Reply:
    found = components().subscriptions.get(path.user_id)
    if found is None:
        raise NotFound(f"user {path.user_id!r} has no digest subscription; create one with PUT")
    return reply(found)


@api.delete("/v1/users/<user_id>/subscription", summary="Unsubscribe.",
            responses=answers(None, 404, 503, status=204))
def delete_subscription(path: UserPath) -> Response:
    if not components().subscriptions.delete(path.user_id):
        raise NotFound(f"user {path.user_id!r} has no digest subscription")
    return Response(status=204)

"""Confirming a digest address: a signed link, good once, mailed to the address.

A client key or a signed-in reader can name any mailbox as a subscription's address, so no
digest goes to one until it agreed (``Subscription.confirmed``; the digest job skips the
others). A subscription set to an address not yet confirmed gets one email with a link,
``<PAPERREC_PUBLIC_URL>/v1/confirmations/<token>``: its GET shows a page with a button (mail
scanners fetch every link of an email, so a GET confirms nothing); the button's POST confirms.

The token is an ``itsdangerous.URLSafeSerializer`` dump, signed with the deployment's secret
under a salt of its own, of the user, the address, a random nonce and the expiry
(``{"u", "e", "n", "x"}``; ``CONFIRMATION_DAYS`` after it was mailed). A link is good once:
using it marks its nonce used in Redis (SET NX) until the link would have expired anyway.
The nonce, not the token's text, is what is marked: the decoder accepts other encodings of
one signature (padding, characters it skips, other values of the spare low bits of the last
character), and each of those would otherwise be a fresh text that confirms again, say after
the reader unsubscribed and a client subscribed the address once more. A link confirms only
the user and the address it names, and only while that user's subscription still sends to
that address.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Any

import redis
from itsdangerous import BadData, URLSafeSerializer

from recommender.core.errors import ExpiredLink, InvalidLink, RevokedLink
from recommender.digest.subscriptions import Subscription, SubscriptionStore
from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_options import redis_errors

CONFIRMATION_DAYS = 7
NONCE_BYTES = 16
SALT = "paperrec.address-confirmation"  # keys these apart from the other signed tokens
PATH = "/v1/confirmations/"  # the link's page (service/api/links.py)


@dataclass(frozen=True)
class ConfirmationClaim:
    """What a verified token names."""

    user_id: str
    email: str
    nonce: str  # what makes the link single-use
    expires_at: float


class AddressConfirmations:
    def __init__(self, secret: bytes, client: redis.Redis, keys: RedisKeys,
                 subscriptions: SubscriptionStore, public_url: str, mail_from: str,
                 days: int = CONFIRMATION_DAYS) -> None:
        self._serializer = URLSafeSerializer(
            secret, salt=SALT,
            signer_kwargs={"key_derivation": "hmac", "digest_method": hashlib.sha256})
        self._redis = client
        self._keys = keys
        self._subscriptions = subscriptions
        self._public_url = public_url
        self._mail_from = mail_from
        self.days = days

    def sign(self, user_id: str, email: str, now: float) -> str:
        """A token confirming ``email`` for ``user_id``'s digests (a nonce makes each one
        different), good for ``days`` from ``now``."""
        return self._serializer.dumps({"u": user_id, "e": email,
                                       "n": secrets.token_urlsafe(NONCE_BYTES),
                                       "x": int(now + self.days * 86400)})

    def message(self, subscription: Subscription, now: float) -> EmailMessage:
        """The confirmation email for the subscription's address, with a new link."""
        token = self.sign(subscription.user_id, subscription.email, now)
        until = dt.datetime.fromtimestamp(now + self.days * 86400, dt.UTC).date().isoformat()
        message = EmailMessage()
        message["From"] = self._mail_from
        message["To"] = subscription.email
        message["Subject"] = "Confirm your paperrec digest"
        message["Message-ID"] = make_msgid(domain="paperrec")
        message["Auto-Submitted"] = "auto-generated"
        message.set_content(
            f"Someone (we hope you) asked paperrec to send a {subscription.frequency} digest "
            "of research papers to this address.\n\n"
            "No digest is sent until you confirm. To confirm, open this link and press its "
            f"button (it works once, until {until}):\n\n"
            f"{self._public_url}{PATH}{token}\n\n"
            "If you did not ask, ignore this email: nothing will be sent to you.\n",
            cte="7bit")  # ASCII, the link on one line
        return message

    def preview(self, token: str, now: float) -> Subscription:
        """The subscription the link would confirm; confirms nothing. Raises InvalidLink
        (not made here, or altered), ExpiredLink (expired, or used) or RevokedLink (the
        subscription no longer sends to the link's address)."""
        return self._check(token, now)[1]

    def confirm(self, token: str, now: float) -> Subscription:
        """Confirm the address the link names and use the link up; a second use, in any
        encoding of the same token, raises ExpiredLink."""
        claim, _ = self._check(token, now)
        with redis_errors():
            first = self._redis.set(self._used_key(claim), "1", nx=True,
                                    ex=int(claim.expires_at - now) + 60)
        if not first:
            raise _used()
        confirmed = self._subscriptions.confirm(claim.user_id, claim.email, now)
        if confirmed is None:  # changed between the look and the confirmation
            raise _gone()
        return confirmed

    def _check(self, token: str, now: float) -> tuple[ConfirmationClaim, Subscription]:
        claim = self._verify(token, now)
        with redis_errors():
            if self._redis.exists(self._used_key(claim)):
                raise _used()
        found = self._subscriptions.get(claim.user_id)
        if found is None or found.email != claim.email:
            raise _gone()
        return claim, found

    def _verify(self, token: str, now: float) -> ConfirmationClaim:
        try:
            data: Any = self._serializer.loads(token)
        except BadData:
            raise InvalidLink("this confirmation link is not valid: it was altered or not made "
                              "by this service. Nothing was confirmed.") from None
        fields = data if isinstance(data, dict) else {}  # only we sign, but check the shape
        user, email, nonce, expires = (fields.get(name) for name in "uenx")
        if not (isinstance(user, str) and isinstance(email, str) and isinstance(nonce, str)
                and nonce and isinstance(expires, int)):
            raise InvalidLink("this confirmation link is not complete. Nothing was confirmed.")
        claim = ConfirmationClaim(user, email, nonce, float(expires))
        if now > claim.expires_at:
            day = dt.datetime.fromtimestamp(claim.expires_at, dt.UTC).date().isoformat()
            raise ExpiredLink(f"this confirmation link expired on {day}. Nothing was "
                              "confirmed; ask for a new one (the Digest page's button, or "
                              "setting the subscription again).")
        return claim

    def _used_key(self, claim: ConfirmationClaim) -> str:
        return self._keys.confirmation_used(hashlib.sha256(claim.nonce.encode()).hexdigest())


def _used() -> ExpiredLink:
    return ExpiredLink("this confirmation link was already used; each link works once.")


def _gone() -> RevokedLink:
    return RevokedLink("this confirmation link is for an address the digest no longer goes to "
                       "(the subscription was changed or ended). Nothing was confirmed.")

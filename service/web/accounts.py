"""Who a reader is, from their email address; and the sign-in links mailed to them.

A reader's user id is their email address, normalised (trimmed, lower-cased), when it is a
valid user id (``recommender.core.ids``: letters, digits and ``. _ @ + -``); an address with
other characters (``o'brien@…``) gets ``email-<first 32 hex digits of its SHA-256>``. The id
is computed, never stored, so it is the same on every server and for the API: the reader
``ada@example.org`` signed in on the web is the API's user ``ada@example.org``.

A sign-in link holds a signed token (itsdangerous ``URLSafeTimedSerializer`` keyed from the
deployment's secret, its own salt) naming the address and a random nonce; it is good for 15
minutes and once: using it marks its nonce used in Redis (atomically, SET NX) until the link
would have expired anyway. The nonce, not the token's text, is what is marked: the decoder
accepts other encodings of the same signature (padding, spare low bits), and each of those
would otherwise be a fresh text that signs in again.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any

import redis
from flask import current_app
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from recommender.core.errors import ExpiredLink, InvalidInput, InvalidLink
from recommender.core.ids import USER_ID_PATTERN
from recommender.digest.subscriptions import EMAIL_PATTERN
from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_options import redis_errors

from ..rate_limit import Limit, RateLimiter
from .sessions import RedisSessionInterface

LINK_SECONDS = 15 * 60
NONCE_BYTES = 16
SALT = "paperrec.sign-in"
MAX_EMAIL_LENGTH = 254


def normalise_email(text: str) -> str:
    """The address as paperrec keeps it; InvalidInput when it is not one."""
    email = text.strip().lower()
    if len(email) > MAX_EMAIL_LENGTH or not EMAIL_PATTERN.fullmatch(email):
        raise InvalidInput("that does not look like an email address (name@example.org)")
    return email


def user_id_for(email: str) -> str:
    """The user id of an address (normalised first)."""
    email = normalise_email(email)
    if USER_ID_PATTERN.fullmatch(email) and not re.match(r"email-[0-9a-f]{32}$", email):
        return email
    return "email-" + hashlib.sha256(email.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class SignIn:
    email: str
    user_id: str
    nonce: str  # what makes the link single-use


class SignInLinks:
    def __init__(self, secret: bytes, client: redis.Redis, keys: RedisKeys,
                 seconds: int = LINK_SECONDS) -> None:
        self._serializer = URLSafeTimedSerializer(secret, salt=SALT)
        self._redis = client
        self._keys = keys
        self.seconds = seconds

    def sign(self, email: str) -> str:
        """A token for signing in as ``email`` (a nonce makes each one different)."""
        return self._serializer.dumps({"e": normalise_email(email),
                                       "n": secrets.token_urlsafe(NONCE_BYTES)})

    def check(self, token: str) -> SignIn:
        """Who the token signs in, without using it up (the page with the button)."""
        try:
            data: Any = self._serializer.loads(token, max_age=self.seconds)
        except SignatureExpired:
            raise ExpiredLink("this sign-in link has expired (links work for 15 minutes): "
                              "ask for a new one") from None
        except BadSignature:
            raise InvalidLink("this sign-in link is not valid: it was altered or not made by "
                              "this service. Ask for a new one.") from None
        email = data.get("e") if isinstance(data, dict) else None
        nonce = data.get("n") if isinstance(data, dict) else None
        if not isinstance(email, str) or not isinstance(nonce, str) or not nonce:
            raise InvalidLink("this sign-in link is not complete: ask for a new one")
        found = SignIn(email, user_id_for(email), nonce)
        with redis_errors():
            if self._redis.exists(self._used_key(found)):
                raise ExpiredLink("this sign-in link was already used: ask for a new one")
        return found

    def use(self, token: str) -> SignIn:
        """Check the token and mark its nonce used; a second use, in any encoding of the
        same token, raises ExpiredLink."""
        found = self.check(token)
        with redis_errors():
            first = self._redis.set(self._used_key(found), "1", nx=True, ex=self.seconds + 60)
        if not first:
            raise ExpiredLink("this sign-in link was already used: ask for a new one")
        return found

    def _used_key(self, link: SignIn) -> str:
        return self._keys.sign_in_used(hashlib.sha256(link.nonce.encode()).hexdigest())


# --- what the web pages need besides the engine's parts (``service.web.install``) -------

EXTENSION = "paperrec.web"
# Sign-in emails: a few per address (a typo, a slow mail server), more per client address
# (several people behind one NAT), per hour; both counted in Redis like the API's limits.
SIGN_IN_PER_ADDRESS = Limit(5, 3600)
SIGN_IN_PER_CLIENT = Limit(20, 3600)
# All sign-in emails together, so that many clients cannot make the service a mail cannon; a
# client that floods is stopped by its own limit long before this one.
SIGN_IN_OVERALL = Limit(1000, 3600)


@dataclass(frozen=True)
class WebParts:
    sign_in_links: SignInLinks
    sessions: RedisSessionInterface
    per_address: RateLimiter
    per_client: RateLimiter
    overall: RateLimiter


def web_parts() -> WebParts:
    return current_app.extensions[EXTENSION]

"""Private feed URLs: a signed token naming one user's reading-list feed, revocable.

Feed readers cannot send API keys, so the URL is the credential: ``<public url>/feeds/<token>
/atom.xml`` (and ``/feed.json``). A token is an ``itsdangerous.URLSafeSerializer`` dump, as the
digest links are (``recommender.digest.links``: the same secret, another salt), of
``{"u": user id, "n": nonce}``. The nonce is random and kept in Redis (``RedisKeys.feed``): a
token is good only while its nonce is the user's current one, so issuing a new URL revokes
the old one, and erasing the user (whose keys include the feed's) revokes every URL. A random
nonce rather than a counter: a counter would start again at 1 after an erasure and bring an
old URL back to life.

The current URL can be shown again at any time without storing it: signing the same payload
with the same key gives the same token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Annotated, Any, cast

import redis
from itsdangerous import BadData, URLSafeSerializer
from pydantic import Field

from recommender.core.errors import InvalidInput, InvalidLink, RevokedLink
from recommender.core.ids import USER_ID_PATTERN, UserId
from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_options import redis_errors
from recommender.storage.redis_writes import UserWrites

# KEYS: the user's feed hash.  ARGV: nonce, issued_at (a revocation must be acknowledged as
# every user write is: recommender/storage/redis_writes.py).
_ISSUE = "redis.call('HSET', KEYS[1], 'nonce', ARGV[1], 'issued_at', ARGV[2])"

SALT = "paperrec.feed-token"  # keys these signatures apart from the digest links'
ATOM_PATH = "atom.xml"
JSON_PATH = "feed.json"


@dataclass(frozen=True)
class FeedUrls:
    user_id: UserId
    atom: Annotated[str, Field(description="The Atom feed's private URL (no API key needed: "
                                           "the URL is the key; keep it to yourself).")]
    json: Annotated[str, Field(description="The JSON Feed 1.1 version's private URL.")]
    issued_at: Annotated[float, Field(description="Unix time it was issued; URLs issued "
                                                  "before it no longer work.")]


@dataclass(frozen=True)
class FeedGrant:
    """What a verified token names: the user and when their current URL was issued."""

    user_id: str
    issued_at: float


class FeedTokens:
    def __init__(self, client: redis.Redis, keys: RedisKeys, secret: bytes,
                 public_url: str, writes: UserWrites | None = None) -> None:
        if len(secret) < 16:
            raise InvalidInput("the link secret must be at least 16 bytes")
        self._redis = client
        self._keys = keys
        self._public_url = public_url.rstrip("/")
        self._writes = writes or UserWrites(client)
        self._issue = self._writes.register(_ISSUE)
        self._serializer = URLSafeSerializer(
            secret, salt=SALT,
            signer_kwargs={"key_derivation": "hmac", "digest_method": hashlib.sha256})

    def issue(self, user_id: str, now: float) -> FeedUrls:
        """A new private URL for the user's feed; every earlier one stops working."""
        nonce, issued_at = secrets.token_urlsafe(12), round(now, 3)
        self._writes.run(self._issue, [self._keys.feed(user_id)], [nonce, f"{issued_at:.3f}"])
        return self._urls(user_id, nonce, issued_at)

    def current(self, user_id: str) -> FeedUrls | None:
        """The user's current feed URLs; None when none was issued (or it was erased)."""
        state = self._state(user_id)
        if state is None:
            return None
        nonce, issued_at = state
        return self._urls(user_id, nonce, issued_at)

    def verify(self, token: str) -> FeedGrant:
        """Whose feed a token opens. InvalidLink (403) for a token not made here or altered;
        RevokedLink (410) for a genuine one that was replaced by a newer URL or erased."""
        try:
            data = self._serializer.loads(token)
        except (BadData, UnicodeError, ValueError):
            raise InvalidLink("this feed URL is not valid: it was altered or was not made by "
                              "this service. Copy the URL again from your Digest page.") from None
        user_id, nonce = _claim(data)
        state = self._state(user_id)
        if state is None:
            raise RevokedLink("this feed URL no longer works: the feed was turned off or its "
                              "data erased. Get a new URL from your Digest page.")
        current, issued_at = state
        if not hmac.compare_digest(current.encode(), nonce.encode()):
            raise RevokedLink("this feed URL was replaced by a newer one and no longer works. "
                              "Subscribe to the URL now shown on your Digest page.")
        return FeedGrant(user_id, issued_at)

    def export_user(self, user_id: str) -> dict[str, Any]:
        """The user's current feed URLs (their part of an export)."""
        return {"feed": self.current(user_id)}

    def _state(self, user_id: str) -> tuple[str, float] | None:
        with redis_errors():
            raw = cast(dict[str, str], self._redis.hgetall(self._keys.feed(user_id)))
        if "nonce" not in raw:
            return None
        return raw["nonce"], float(raw.get("issued_at", 0.0))

    def _urls(self, user_id: str, nonce: str, issued_at: float) -> FeedUrls:
        token = self._serializer.dumps({"u": user_id, "n": nonce})
        base = f"{self._public_url}/feeds/{token}"
        return FeedUrls(user_id, f"{base}/{ATOM_PATH}", f"{base}/{JSON_PATH}", issued_at)


def _claim(data: Any) -> tuple[str, str]:
    """(user id, nonce) of a signed payload (only this service signs, but a payload of
    another shape, e.g. a digest link's, still must not crash the request)."""
    if not isinstance(data, dict):
        raise InvalidLink("this URL is not a feed URL.")
    user, nonce = data.get("u"), data.get("n")
    if (not isinstance(user, str) or not USER_ID_PATTERN.fullmatch(user)
            or not isinstance(nonce, str) or not nonce):
        raise InvalidLink("this URL is not a feed URL.")
    return user, nonce

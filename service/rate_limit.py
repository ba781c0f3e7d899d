"""Rate limits per API key, counted in Redis so every worker and replica shares them.

A fixed window per key: ``INCR`` the key's counter for the current window, which expires with
it (the counting pattern of Redis's own INCR documentation). A client may burst to twice its
limit across a window boundary; in exchange a request costs one round trip.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import redis

from recommender.core.config import RATE_WINDOWS, parse_rate_limit
from recommender.core.errors import InvalidInput
from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_options import REDIS_FAILURES

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limit:
    requests: int
    seconds: int

    @classmethod
    def parse(cls, text: str) -> Limit | None:
        """``600/minute`` (also second or hour); ``off`` or ``0`` for no limit. The rule is the
        setting's (``PAPERREC_RATE_LIMIT``), in recommender/core/config.py."""
        try:
            found = parse_rate_limit(text)
        except ValueError as exc:
            raise InvalidInput(f"PAPERREC_RATE_LIMIT: {exc}") from None
        return cls(*found) if found else None

    def __str__(self) -> str:
        unit = next(name for name, seconds in RATE_WINDOWS.items() if seconds == self.seconds)
        return f"{self.requests}/{unit}"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    remaining: int
    retry_after: int  # seconds until the window ends (when not allowed)


class RateLimiter:
    def __init__(self, client: redis.Redis, keys: RedisKeys, limit: Limit) -> None:
        self._redis = client
        self._keys = keys
        self.limit = limit

    def hit(self, identity: str, now: float) -> Decision:
        """Count one request of ``identity`` (e.g. a key's digest). If Redis cannot be
        reached the request is let through: a limiter must not take the API down with it."""
        window = int(now // self.limit.seconds)
        key = self._keys.rate(identity, window)
        try:
            pipe = self._redis.pipeline(transaction=False)
            pipe.incr(key)
            pipe.expire(key, self.limit.seconds + 1)
            count = int(pipe.execute()[0])
        except REDIS_FAILURES as exc:
            log.warning("rate limit not checked, Redis unavailable: %s", exc)
            return Decision(True, self.limit.requests, 0)
        remaining = max(0, self.limit.requests - count)
        if count <= self.limit.requests:
            return Decision(True, remaining, 0)
        retry_after = max(1, int((window + 1) * self.limit.seconds - now + 0.999))
        return Decision(False, 0, retry_after)

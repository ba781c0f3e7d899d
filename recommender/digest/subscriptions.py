"""SubscriptionStore: who gets a digest, how often, and which digests went out (in Redis)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any, Literal, cast

import redis

from recommender.core.errors import InvalidInput
from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_options import redis_errors

Frequency = Literal["daily", "weekly"]
MAX_ITEMS_LIMIT = 50
# Deliberately plain: one @, a dotted domain, no spaces or control characters (which would
# let a value break out of an email header).
EMAIL_PATTERN = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")


@dataclass(frozen=True)
class Subscription:
    user_id: str
    email: str
    frequency: Frequency
    max_items: int
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def validate_subscription(body: dict[str, Any]) -> tuple[str, Frequency, int]:
    allowed = {"email", "frequency", "max_items"}
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInput(f"unknown field(s): {', '.join(unknown)}; allowed: "
                           f"{', '.join(sorted(allowed))}")
    email = body.get("email")
    if not isinstance(email, str) or len(email) > 254 or not EMAIL_PATTERN.fullmatch(email):
        raise InvalidInput(f"email must be an address like ada@example.org, got {email!r}")
    frequency = body.get("frequency", "weekly")
    if frequency not in ("daily", "weekly"):
        raise InvalidInput(f'frequency must be "daily" or "weekly", got {frequency!r}')
    max_items = body.get("max_items", 10)
    if isinstance(max_items, bool) or not isinstance(max_items, int) or not (
            1 <= max_items <= MAX_ITEMS_LIMIT):
        raise InvalidInput(f"max_items must be a whole number from 1 to {MAX_ITEMS_LIMIT}, "
                           f"got {max_items!r}")
    return email, cast(Frequency, frequency), max_items


class SubscriptionStore:
    def __init__(self, client: redis.Redis, keys: RedisKeys) -> None:
        self._redis = client
        self._keys = keys

    def set(self, user_id: str, email: str, frequency: Frequency, max_items: int,
            now: float) -> Subscription:
        existing = self.get(user_id)
        created = existing.created_at if existing else now
        with redis_errors():
            pipe = self._redis.pipeline(transaction=True)
            pipe.hset(self._keys.subscription(user_id), mapping={
                "email": email, "frequency": frequency, "max_items": max_items,
                "created_at": created})
            pipe.sadd(self._keys.subscribers, user_id)
            pipe.execute()
        return Subscription(user_id, email, frequency, max_items, created)

    def get(self, user_id: str) -> Subscription | None:
        with redis_errors():
            raw = cast(dict[str, str], self._redis.hgetall(self._keys.subscription(user_id)))
        if not raw:
            return None
        return Subscription(user_id, raw["email"], cast(Frequency, raw["frequency"]),
                            int(raw["max_items"]), float(raw["created_at"]))

    def delete(self, user_id: str) -> bool:
        with redis_errors():
            pipe = self._redis.pipeline(transaction=True)
            pipe.delete(self._keys.subscription(user_id))
            pipe.srem(self._keys.subscribers, user_id)
            removed, _ = pipe.execute()
        return bool(removed)

    def subscribers(self) -> Iterator[str]:
        with redis_errors():
            yield from sorted(cast(set[str], self._redis.smembers(self._keys.subscribers)))

    def digest_sent(self, user_id: str, period: str) -> bool:
        with redis_errors():
            return bool(self._redis.hexists(self._keys.digests(user_id), period))

    def last_digest_at(self, user_id: str) -> float | None:
        with redis_errors():
            values = cast(list[str], self._redis.hvals(self._keys.digests(user_id)))
        return max((float(v.split()[0]) for v in values), default=None)

    def digests(self, user_id: str) -> dict[str, str]:
        """Period -> "<unix time> <message id>" of every digest sent to the user."""
        with redis_errors():
            return cast(dict[str, str], self._redis.hgetall(self._keys.digests(user_id)))

    def record_digest(self, user_id: str, period: str, at: float, message_id: str) -> None:
        with redis_errors():
            self._redis.hset(self._keys.digests(user_id), period, f"{at:.3f} {message_id}")

    def acquire_lock(self, owner: str, seconds: int) -> bool:
        """True when this job may send: no other job holds the lock (it expires on its own)."""
        with redis_errors():
            return bool(self._redis.set(self._keys.digest_lock, owner, nx=True, ex=seconds))

    def release_lock(self, owner: str) -> None:
        with redis_errors():
            self._redis.eval(
                "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) "
                "end return 0", 1, self._keys.digest_lock, owner)

"""SubscriptionStore: who gets a digest, how often, and which digests went out (in Redis).

Subscriptions are validated at the API boundary (``service/api/digests.SubscriptionBody``);
``EMAIL_PATTERN`` and ``MAX_ITEMS_LIMIT`` are the rules it declares."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, cast

import redis
from redis.lock import Lock

from recommender.core.ids import UserId
from recommender.storage.redis_keys import BUCKETS, RedisKeys, bucket_of
from recommender.storage.redis_options import redis_errors
from recommender.storage.redis_writes import UserWrites

Frequency = Literal["daily", "weekly"]
MAX_ITEMS_LIMIT = 50
# A digest sends only papers at least this likely to be worth reading (ranking/calibration.py;
# docs/evaluation.md, "Calibration of the probability": the threshold at which the
# evaluation's list items were liked about twice as often as list items on average).
# Subscriptions made before it existed get it too.
DEFAULT_MIN_PROBABILITY = 0.1
# Deliberately plain: one @, a dotted domain, no spaces or control characters (which would
# let a value break out of an email header).
EMAIL_PATTERN = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")

# KEYS: the user's subscription hash, the bucket's subscribers.  ARGV: user, then field,
# value pairs.
_SUBSCRIBE = """
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('SADD', KEYS[2], ARGV[1])
"""
# KEYS: as above.  ARGV: user.  1 when there was a subscription.
_UNSUBSCRIBE = """
redis.call('SREM', KEYS[2], ARGV[1])
return redis.call('DEL', KEYS[1])
"""


@dataclass(frozen=True)
class Subscription:
    user_id: UserId
    email: str
    frequency: Frequency
    max_items: int
    created_at: float
    min_probability: float = DEFAULT_MIN_PROBABILITY


@dataclass(frozen=True)
class DigestRecord:
    period: str
    at: float
    message_id: str


class SubscriptionStore:
    def __init__(self, client: redis.Redis, keys: RedisKeys,
                 writes: UserWrites | None = None) -> None:
        self._redis = client
        self._keys = keys
        self._writes = writes or UserWrites(client)
        self._subscribe = self._writes.register(_SUBSCRIBE)
        self._unsubscribe = self._writes.register(_UNSUBSCRIBE)

    def set(self, user_id: str, email: str, frequency: Frequency, max_items: int,
            now: float, min_probability: float = DEFAULT_MIN_PROBABILITY) -> Subscription:
        existing = self.get(user_id)
        created = existing.created_at if existing else now
        fields = {"email": email, "frequency": frequency, "max_items": max_items,
                  "min_probability": min_probability, "created_at": created}
        self._writes.run(self._subscribe, self._script_keys(user_id),
                         [user_id, *[item for pair in fields.items() for item in pair]])
        return Subscription(user_id, email, frequency, max_items, created, min_probability)

    def get(self, user_id: str) -> Subscription | None:
        with redis_errors():
            raw = cast(dict[str, str], self._redis.hgetall(self._keys.subscription(user_id)))
        if not raw:
            return None
        return Subscription(user_id, raw["email"], cast(Frequency, raw["frequency"]),
                            int(raw["max_items"]), float(raw["created_at"]),
                            float(raw.get("min_probability", DEFAULT_MIN_PROBABILITY)))

    def delete(self, user_id: str) -> bool:
        return bool(self._writes.run(self._unsubscribe, self._script_keys(user_id), [user_id]))

    def subscribers(self) -> Iterator[str]:
        """Every subscriber, sorted (the buckets' sets read in one pipeline)."""
        with redis_errors():
            pipe = self._redis.pipeline(transaction=False)
            for bucket in range(BUCKETS):
                pipe.smembers(self._keys.subscribers(bucket))
            buckets = cast(list[set[str]], pipe.execute())
        yield from sorted(set().union(*buckets))

    def _script_keys(self, user_id: str) -> list[str]:
        return [self._keys.subscription(user_id), self._keys.subscribers(bucket_of(user_id))]

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

    def export_user(self, user_id: str) -> dict[str, Any]:
        """The user's subscription and the digests sent to them (their part of an export)."""
        return {"subscription": self.get(user_id),
                "digests": [DigestRecord(period, float(value.split()[0]), value.split()[1])
                            for period, value in sorted(self.digests(user_id).items())]}

    def record_digest(self, user_id: str, period: str, at: float, message_id: str) -> None:
        with redis_errors():
            self._redis.hset(self._keys.digests(user_id), period, f"{at:.3f} {message_id}")

    def lock(self, seconds: int) -> Lock:
        """The lock one digest job holds while it sends (it expires on its own)."""
        return self._redis.lock(self._keys.digest_lock, timeout=seconds, blocking=False)

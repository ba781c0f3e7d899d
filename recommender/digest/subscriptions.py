"""SubscriptionStore: who gets a digest, how often, and which digests went out (in Redis).

Subscriptions are validated at the API boundary (``service/api/digests.SubscriptionBody``);
``EMAIL_PATTERN`` and ``MAX_ITEMS_LIMIT`` are the rules it declares.

An address is confirmed before any digest goes to it: whoever sets a subscription (an API
client, a signed-in reader) may name a mailbox that never agreed. A subscription's hash keeps
``confirmed_at``: the unix time its address was confirmed (by the link of a confirmation
email, ``recommender.digest.confirmations``, or at once when the caller vouches for it: the
address a reader signed in with), or "" while it waits. Setting the same address again keeps
it confirmed; another address waits for its own confirmation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

import redis
from pydantic import Field
from redis.lock import Lock

from recommender.core.ids import UserId
from recommender.storage.redis_keys import BUCKETS, RedisKeys, bucket_of
from recommender.storage.redis_options import redis_errors
from recommender.storage.redis_writes import UserWrites

Frequency = Literal["daily", "weekly"]
MAX_ITEMS_LIMIT = 50
# By default a digest sends the top of the reader's list, with no bar on the probability: the
# probability is calibrated on citeulike-a, not on this deployment's readers, and a bar of 0.1
# sent nothing to a reader with two likes on the 38-paper sample corpus (whose items stand at
# about 2%). A reader may set a bar (ranking/calibration.py) to get fewer, likelier papers.
DEFAULT_MIN_PROBABILITY = 0.0
# Deliberately plain: one @, a dotted domain, no spaces or control characters (which would
# let a value break out of an email header).
EMAIL_PATTERN = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")

# KEYS: the user's subscription hash, the bucket's subscribers.  ARGV: user, email,
# confirmed_at if the address is new to it ("": it waits), created_at if the subscription is
# new, then field, value pairs.  The subscription as it is now (HGETALL).  Compared and
# written in one script, so a confirmation never carries over to another address. A hash
# without confirmed_at was written before addresses were confirmed: it stays as it is.
_SUBSCRIBE = """
local old = redis.call('HMGET', KEYS[1], 'email', 'confirmed_at')
if old[1] ~= ARGV[2] or old[2] == '' then
  redis.call('HSET', KEYS[1], 'confirmed_at', ARGV[3])
end
redis.call('HSETNX', KEYS[1], 'created_at', ARGV[4])
redis.call('HSET', KEYS[1], 'email', ARGV[2], unpack(ARGV, 5))
redis.call('SADD', KEYS[2], ARGV[1])
return redis.call('HGETALL', KEYS[1])
"""
# KEYS: the user's subscription hash.  ARGV: email, now.  The subscription as it is now, or
# nothing when the subscription does not (or no longer) send to this address.
_CONFIRM = """
if redis.call('HGET', KEYS[1], 'email') ~= ARGV[1] then
  return false
end
if redis.call('HGET', KEYS[1], 'confirmed_at') == '' then
  redis.call('HSET', KEYS[1], 'confirmed_at', ARGV[2])
end
return redis.call('HGETALL', KEYS[1])
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
    # Subscriptions stored before addresses were confirmed have no confirmed_at: their
    # subscribers were getting digests, and keep getting them (confirmed, at None).
    confirmed: Annotated[bool, Field(description=(
        "Whether the address agreed to the digests: false until the link of the confirmation "
        "email sent to it is followed; no digest is sent before."))] = True
    confirmed_at: Annotated[float | None, Field(description=(
        "Unix time the address was confirmed; null while it waits (or for a subscription "
        "from before addresses were confirmed)."))] = None


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
        self._confirm = self._writes.register(_CONFIRM)
        self._unsubscribe = self._writes.register(_UNSUBSCRIBE)

    def set(self, user_id: str, email: str, frequency: Frequency, max_items: int,
            now: float, min_probability: float = DEFAULT_MIN_PROBABILITY, *,
            own_address: bool = False) -> Subscription:
        """Subscribe (or change the subscription). The address stays confirmed when it is
        the one already confirmed; ``own_address``: the caller knows it is the user's own
        (the address they signed in with), so it is confirmed now; otherwise it waits."""
        fields = {"frequency": frequency, "max_items": max_items,
                  "min_probability": min_probability}
        reply = self._writes.run(
            self._subscribe, self._script_keys(user_id),
            [user_id, email, now if own_address else "", now,
             *[item for pair in fields.items() for item in pair]])
        return _subscription(user_id, _pairs(reply))

    def confirm(self, user_id: str, email: str, now: float) -> Subscription | None:
        """Confirm ``email`` for the user's digests; None when their subscription does not
        send to it (changed, or ended, since the confirmation was asked for)."""
        reply = self._writes.run(self._confirm, [self._keys.subscription(user_id)], [email, now])
        return _subscription(user_id, _pairs(reply)) if reply else None

    def get(self, user_id: str) -> Subscription | None:
        with redis_errors():
            raw = cast(dict[str, str], self._redis.hgetall(self._keys.subscription(user_id)))
        return _subscription(user_id, raw) if raw else None

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


def _pairs(reply: list[str]) -> dict[str, str]:
    """A hash as a Lua script's HGETALL gives it (field, value, field, value...)."""
    return dict(zip(reply[::2], reply[1::2], strict=True))


def _subscription(user_id: str, raw: dict[str, str]) -> Subscription:
    confirmed_at = raw.get("confirmed_at")  # missing: stored before addresses were confirmed
    return Subscription(user_id, raw["email"], cast(Frequency, raw["frequency"]),
                        int(raw["max_items"]), float(raw["created_at"]),
                        float(raw.get("min_probability", DEFAULT_MIN_PROBABILITY)),
                        confirmed=confirmed_at != "",
                        confirmed_at=float(confirmed_at) if confirmed_at else None)

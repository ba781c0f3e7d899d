"""FeedbackStore: each user's likes and dislikes, in Redis.

One hash per user maps paper id -> "<signal>:<unix time>". A new signal on the same paper
replaces the old one; removing deletes it. Per-paper like counts (for popularity) are kept in
step by a Lua script, so the two never disagree: the script touches the user's hash and the
like counts and user set of the user's bucket, all in one Cluster slot (RedisKeys), and the
count of a paper is the sum over the buckets. Redis failures surface as ``StoreUnavailable``;
nothing outside this module knows a Redis key. The served log keeps, for the newest
``served_history_max`` papers (PAPERREC_SERVED_HISTORY_MAX), when each was *first* served:
a list pushes a served paper down only from the next UTC day on (``Recommender``), so asking
again the same day gives the same list. It is the one per-user key that grows with use
(docs/benchmarks/memory.md, "Redis memory per user"). Papers the reader set aside ("Not now")
are a key of their own, at most ``SET_ASIDE_MAX``, left out of their lists until put back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, cast

import redis

from recommender.core.config import SERVED_HISTORY_MAX
from recommender.core.errors import InvalidInput, NotFound
from recommender.core.ids import PaperId, validate_paper_id
from recommender.feedback.rules import Rule, parse_rules
from recommender.storage.redis_keys import BUCKETS, RedisKeys, bucket_of
from recommender.storage.redis_options import redis_errors
from recommender.storage.redis_writes import UserWrites

Signal = Literal["like", "dislike"]
SET_ASIDE_MAX = 1_000  # papers a reader may have set aside (the newest are kept)
# What a reader did with a paper, as the pages show it: rated it, or set it aside ("Not now").
Mark = Literal["like", "dislike", "set-aside"]
# What a like does to the collections of its papers: leave them, set exactly the ones given,
# or add the ones given.
Membership = Literal["keep", "set", "add"]

# KEYS: feedback hash, the bucket's like counts and users set, the user's collected papers and
# collections (RedisKeys.collected, .collections).
# ARGV: user, new value ("" = remove), what to do with the papers' collections ("keep", "set":
# exactly these, "add": these too), the collection ids (space-separated), then the papers it is
# set on. Returns {how many of the papers had a signal before, ""}, or {-1, id} for a collection
# the user does not have (then nothing is written). One script for one paper or a whole
# import: all or nothing. A paper that is not liked is in no collection.
_SET_SIGNALS = """
local is_like = string.sub(ARGV[2], 1, 5) == 'like:'
local ids = {}
for id in string.gmatch(ARGV[4], '%S+') do
  if redis.call('HEXISTS', KEYS[5], id) == 0 then return {-1, id} end
  ids[#ids + 1] = id
end
local had = 0
for i = 5, #ARGV do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  local was_like = old and string.sub(old, 1, 5) == 'like:'
  if old then had = had + 1 end
  if ARGV[2] == '' then
    redis.call('HDEL', KEYS[1], ARGV[i])
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[2])
  end
  if was_like and not is_like then
    if tonumber(redis.call('ZINCRBY', KEYS[2], -1, ARGV[i])) <= 0 then
      redis.call('ZREM', KEYS[2], ARGV[i])
    end
  elseif is_like and not was_like then
    redis.call('ZINCRBY', KEYS[2], 1, ARGV[i])
  end
  if not is_like then
    redis.call('HDEL', KEYS[4], ARGV[i])
  elseif ARGV[3] ~= 'keep' then
    local out, seen = {}, {}
    local before = ''
    if ARGV[3] == 'add' then before = redis.call('HGET', KEYS[4], ARGV[i]) or '' end
    for id in string.gmatch(before .. ' ' .. ARGV[4], '%S+') do
      if not seen[id] then seen[id] = true; out[#out + 1] = id end
    end
    if #out == 0 then redis.call('HDEL', KEYS[4], ARGV[i])
    else redis.call('HSET', KEYS[4], ARGV[i], table.concat(out, ' ')) end
  end
end
if ARGV[2] ~= '' and #ARGV > 4 then redis.call('SADD', KEYS[3], ARGV[1]) end
return {had, ''}
"""

# KEYS: RedisKeys.user_write_keys (the user's keys, then the bucket's like counts, users,
# subscribers and Zotero readers).  ARGV: user.  Takes the user's likes off the counts and
# deletes the rest.
_ERASE_USER = """
local own = #KEYS - 4
local feedback = redis.call('HGETALL', KEYS[1])
for i = 1, #feedback, 2 do
  if string.sub(feedback[i + 1], 1, 5) == 'like:' then
    if tonumber(redis.call('ZINCRBY', KEYS[own + 1], -1, feedback[i])) <= 0 then
      redis.call('ZREM', KEYS[own + 1], feedback[i])
    end
  end
end
redis.call('DEL', unpack(KEYS, 1, own))
redis.call('SREM', KEYS[own + 2], ARGV[1])
redis.call('SREM', KEYS[own + 3], ARGV[1])
redis.call('SREM', KEYS[own + 4], ARGV[1])
return #feedback / 2
"""


@dataclass(frozen=True)
class Feedback:
    paper_id: PaperId
    signal: Signal
    at: float  # unix time

    def to_dict(self) -> dict[str, object]:
        return {"paper_id": self.paper_id, "signal": self.signal, "at": self.at}


@dataclass(frozen=True)
class ListState:
    """One user's part of a reading list (``FeedbackStore.for_list``)."""

    signals: list[Feedback]  # oldest first
    served: dict[str, float]  # paper id -> unix time first served, oldest first
    rules: list[Rule]
    set_aside: list[str]  # paper ids the reader set aside ("Not now"), oldest first
    collections: frozenset[str] = frozenset()  # ids of the user's collections
    collected: dict[str, list[str]] | None = None  # liked paper id -> its collections' ids

    def in_collection(self, collection_id: str) -> set[str]:
        """The liked papers the user put in this collection."""
        return {pid for pid, ids in (self.collected or {}).items() if collection_id in ids}


def _feedback(raw: dict[str, str]) -> list[Feedback]:
    """The signals of one user's feedback hash, oldest first."""
    items = []
    for paper_id, value in raw.items():
        signal, _, at = value.partition(":")
        items.append(Feedback(paper_id, parse_signal(signal), float(at)))
    return sorted(items, key=lambda f: (f.at, f.paper_id))


def parse_signal(value: object) -> Signal:
    if value == "like":
        return "like"
    if value == "dislike":
        return "dislike"
    raise InvalidInput(f'signal must be "like" or "dislike", got {value!r}')


class FeedbackStore:
    def __init__(self, client: redis.Redis, keys: RedisKeys,
                 served_history_max: int = SERVED_HISTORY_MAX,
                 writes: UserWrites | None = None) -> None:
        if served_history_max < 1:
            raise InvalidInput(f"served_history_max must be at least 1, got {served_history_max}")
        self._redis = client
        self._keys = keys
        self._served_max = served_history_max
        self._writes = writes or UserWrites(client)
        self._set_signals = self._writes.register(_SET_SIGNALS)
        self._erase = self._writes.register(_ERASE_USER)

    def set(self, user_id: str, paper_id: str, signal: Signal, at: float,
            collections: list[str] | None = None, membership: Membership = "set") -> bool:
        """Record a signal; True when it replaced an earlier one on the same paper.
        ``collections``: the user's collections a like puts the paper in (``membership``
        says whether they replace or join the ones it is in; None leaves them). A dislike
        takes the paper out of every collection."""
        return self.set_many(user_id, [paper_id], signal, at, collections, membership) > 0

    def set_many(self, user_id: str, paper_ids: list[str], signal: Signal, at: float,
                 collections: list[str] | None = None, membership: Membership = "set") -> int:
        """Record one signal on many papers at once (an import): all of them or, when Redis
        fails, none. How many replaced an earlier signal. NotFound (and nothing written)
        for a collection the user does not have."""
        for paper_id in paper_ids:
            validate_paper_id(paper_id)
        value = f"{parse_signal(signal)}:{at:.3f}"
        return self._run(user_id, value, paper_ids, collections, membership)

    def remove(self, user_id: str, paper_id: str) -> bool:
        """Forget the signal on a paper (and take it out of its collections); False when
        there was none."""
        validate_paper_id(paper_id)
        return self._run(user_id, "", [paper_id], None, "keep") > 0

    def _run(self, user_id: str, value: str, paper_ids: list[str],
             collections: list[str] | None, membership: Membership) -> int:
        mode = "keep" if collections is None else membership
        had, missing = cast(list[Any], self._writes.run(
            self._set_signals, self._script_keys(user_id),
            [user_id, value, mode, " ".join(collections or []), *paper_ids]))
        if int(had) < 0:
            raise NotFound(f"user {user_id!r} has no collection {missing!r}; "
                           f"GET /v1/users/{user_id}/collections lists theirs")
        return int(had)

    def get(self, user_id: str) -> list[Feedback]:
        """The user's signals, oldest first."""
        with redis_errors():
            return _feedback(cast(dict[str, str],
                                  self._redis.hgetall(self._keys.feedback(user_id))))

    def for_list(self, user_id: str) -> ListState:
        """What a reading list reads of the user, in one round trip (one pipeline; the keys
        are the user's, so in one cluster slot): their signals, the papers served to them
        (with when first), their follow and mute rules, the papers they set aside and their
        collections."""
        with redis_errors():
            pipe = self._redis.pipeline(transaction=False)
            pipe.hgetall(self._keys.feedback(user_id))
            pipe.zrange(self._keys.served(user_id), 0, -1, withscores=True)
            pipe.hgetall(self._keys.rules(user_id))
            pipe.zrange(self._keys.set_aside(user_id), 0, -1)
            pipe.hkeys(self._keys.collections(user_id))
            pipe.hgetall(self._keys.collected(user_id))
            signals, served, rules, set_aside, collections, collected = pipe.execute()
        return ListState(_feedback(signals), {pid: float(at) for pid, at in served},
                         parse_rules(rules), set_aside, frozenset(collections),
                         {pid: ids.split() for pid, ids in collected.items()})

    def like_counts(self) -> dict[str, int]:
        """Every liked paper with its number of likes: the buckets' counts summed, read in
        one pipeline (one round trip per server; a Cluster pipeline groups them by node)."""
        with redis_errors():
            pipe = self._redis.pipeline(transaction=False)
            for bucket in range(BUCKETS):
                pipe.zrange(self._keys.like_counts(bucket), 0, -1, withscores=True)
            buckets = cast(list[list[tuple[str, float]]], pipe.execute())
        counts: dict[str, int] = {}
        for rows in buckets:
            for paper_id, score in rows:
                counts[paper_id] = counts.get(paper_id, 0) + int(score)
        return counts

    def likes_by_user(self) -> dict[str, list[str]]:
        """Every user's liked paper ids (the training data of collaborative filtering)."""
        likes: dict[str, list[str]] = {}
        for user_id in self.users():
            liked = [f.paper_id for f in self.get(user_id) if f.signal == "like"]
            if liked:
                likes[user_id] = liked
        return likes

    def record_served(self, user_id: str, paper_ids: list[str], at: float) -> None:
        """Remember what was shown to the user, so later lists can push it down: when it was
        first served (serving it again keeps that time). Only the ``served_history_max``
        papers first served last are kept, trimmed in the same transaction."""
        if not paper_ids:
            return
        key = self._keys.served(user_id)
        with redis_errors():
            pipe = self._redis.pipeline(transaction=True)
            pipe.zadd(key, {pid: at for pid in paper_ids}, nx=True)
            pipe.zremrangebyrank(key, 0, -self._served_max - 1)  # keep the newest only
            pipe.execute()

    def set_aside(self, user_id: str, paper_id: str, at: float) -> None:
        """"Not now": the paper leaves the reader's lists until they put it back (the newest
        ``SET_ASIDE_MAX`` are kept, trimmed in the same transaction)."""
        key = self._keys.set_aside(user_id)
        with redis_errors():
            pipe = self._redis.pipeline(transaction=True)
            pipe.zadd(key, {validate_paper_id(paper_id): at})
            pipe.zremrangebyrank(key, 0, -SET_ASIDE_MAX - 1)
            pipe.execute()

    def put_back(self, user_id: str, paper_id: str) -> bool:
        """Undo "Not now"; False when the paper was not set aside."""
        with redis_errors():
            return bool(self._redis.zrem(self._keys.set_aside(user_id),
                                         validate_paper_id(paper_id)))

    def set_aside_with_times(self, user_id: str) -> list[tuple[str, float]]:
        """The papers the reader set aside, with when, oldest first."""
        with redis_errors():
            return cast(list[tuple[str, float]], self._redis.zrange(
                self._keys.set_aside(user_id), 0, -1, withscores=True))

    def marks(self, user_id: str, paper_ids: list[str]) -> dict[str, Mark]:
        """What the user did with each of these papers that has a mark: "like", "dislike",
        or "set-aside" ("Not now"). One round trip (HMGET and ZMSCORE in a pipeline): a page
        of ten papers reads ten fields of each key, not the user's whole history."""
        if not paper_ids:
            return {}
        with redis_errors():
            pipe = self._redis.pipeline(transaction=False)
            pipe.hmget(self._keys.feedback(user_id), paper_ids)
            pipe.zmscore(self._keys.set_aside(user_id), paper_ids)
            values, times = cast(tuple[list[str | None], list[float | None]], pipe.execute())
        marks: dict[str, Mark] = {pid: "set-aside" for pid, at in
                                  zip(paper_ids, times, strict=True) if at is not None}
        marks.update({pid: parse_signal(value.partition(":")[0])
                      for pid, value in zip(paper_ids, values, strict=True) if value is not None})
        return marks

    def users(self) -> Iterator[str]:
        """Every user who has given feedback, bucket by bucket."""
        with redis_errors():
            for bucket in range(BUCKETS):
                yield from self._redis.sscan_iter(self._keys.users(bucket), count=1000)

    def signal_counts(self) -> Counter[str]:
        """How many readers there are, and their likes and dislikes in all (reads every
        reader's feedback: for `paperrec stats`, not for a request)."""
        counts: Counter[str] = Counter()
        for user in self.users():
            counts["readers"] += 1
            counts.update(f"{f.signal}s" for f in self.get(user))
        return counts

    def served_with_times(self, user_id: str) -> list[tuple[str, float]]:
        with redis_errors():
            return cast(list[tuple[str, float]],
                        self._redis.zrange(self._keys.served(user_id), 0, -1, withscores=True))

    def erase_user(self, user_id: str) -> None:
        """Every key about the user, their share of the like counts and their browser
        sessions (signed out everywhere). The sessions (keys of their own, in other slots)
        go first, one by one, then the rest in one script: if this stops half-way the user
        is signed out and their data is still whole, and erasing again finishes it."""
        with redis_errors():
            sessions = cast(set[str], self._redis.smembers(self._keys.web_sessions(user_id)))
            for session in sorted(sessions):
                self._redis.delete(self._keys.web_session(session))
        self._writes.run(self._erase, self._keys.user_write_keys(user_id), [user_id])

    def _script_keys(self, user_id: str) -> list[str]:
        bucket = bucket_of(user_id)
        return [self._keys.feedback(user_id), self._keys.like_counts(bucket),
                self._keys.users(bucket), self._keys.collected(user_id),
                self._keys.collections(user_id)]

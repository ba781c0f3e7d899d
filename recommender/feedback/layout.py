"""Move a namespace's keys from the layout before Redis Cluster support into today's.

Layout 1 (unversioned) had unbraced per-user keys (``paperrec:user:ada:feedback``) and global
``users``, ``subscribers`` and ``like_counts`` keys. Layout 2 (``RedisKeys``) puts each user's
keys under their bucket's hash tag and splits the global keys by bucket. ``migrate_layout``
renames every per-user key, moves the set members into their buckets, rebuilds the buckets'
like counts from the feedback hashes and then records the version in ``RedisKeys.layout``.

It is idempotent: run again after a stop half-way, it finishes the job (the renames already
done are not found again, the sets are merged, the counts rebuilt from scratch), and once the
version is recorded it reads one key and returns. Two processes running it at once (two
replicas of the api starting) both finish: a key the other moved first is skipped.
``paperrec serve`` runs it before starting the workers and ``paperrec migrate-redis`` runs it
on its own; run it with no older paperrec writing to the namespace (an old process would
write keys of the old layout again).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import cast

import redis

from recommender.storage.redis_keys import BUCKETS, LAYOUT_VERSION, RedisKeys, bucket_of
from recommender.storage.redis_options import redis_errors

_OLD_NAMES = ("feedback", "served", "subscription", "digests", "rules", "feed", "web-sessions")


@dataclass(frozen=True)
class LayoutMigration:
    already_done: bool
    keys_moved: int  # per-user keys renamed
    users: int  # users in the buckets' user sets afterwards
    liked_papers: int  # papers with at least one like afterwards


def migrate_layout(client: redis.Redis, keys: RedisKeys) -> LayoutMigration:
    with redis_errors():
        if client.get(keys.layout) == LAYOUT_VERSION:
            return LayoutMigration(True, 0, 0, 0)
        moved = _move_user_keys(client, keys)
        for old, new in ((f"{keys.namespace}:users", keys.users),
                         (f"{keys.namespace}:subscribers", keys.subscribers)):
            for user_id in cast(set[str], client.smembers(old)):
                client.sadd(new(bucket_of(user_id)), user_id)
            client.delete(old)
        users, liked = _rebuild_like_counts(client, keys)
        client.delete(f"{keys.namespace}:like_counts")
        client.set(keys.layout, LAYOUT_VERSION)
    return LayoutMigration(False, moved, users, liked)


def _move_user_keys(client: redis.Redis, keys: RedisKeys) -> int:
    pattern = re.compile(rf"^{re.escape(keys.namespace)}:user:([^:]+):({'|'.join(_OLD_NAMES)})$")
    moved = 0
    for key in list(client.scan_iter(f"{keys.namespace}:user:*", count=1000)):
        found = pattern.match(key)
        if not found:
            continue
        user_id, name = found.groups()
        new = keys.user_keys(user_id)[_OLD_NAMES.index(name)]
        try:
            client.rename(key, new)  # the old key wins over a new one of the same user
        except redis.ResponseError:  # gone meanwhile: another process moved it
            continue
        if name == "feedback":
            client.sadd(keys.users(bucket_of(user_id)), user_id)
        moved += 1
    return moved


def _rebuild_like_counts(client: redis.Redis, keys: RedisKeys) -> tuple[int, int]:
    users, papers = 0, set[str]()
    for bucket in range(BUCKETS):
        counts: Counter[str] = Counter()
        for user_id in cast(set[str], client.smembers(keys.users(bucket))):
            users += 1
            feedback = cast(dict[str, str], client.hgetall(keys.feedback(user_id)))
            counts.update(p for p, value in feedback.items() if value.startswith("like:"))
        pipe = client.pipeline(transaction=True)
        pipe.delete(keys.like_counts(bucket))
        if counts:
            pipe.zadd(keys.like_counts(bucket), dict(counts))
        pipe.execute()
        papers.update(counts)
    return users, len(papers)

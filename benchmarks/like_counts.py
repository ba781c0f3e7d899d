"""Like counts: split by bucket (the Redis Cluster layout) against one global sorted set (the
layout before it): memory, and the time of the read the ranking context makes every 5 s.

Users and their likes follow ``benchmarks/redis_memory.py`` (seeded; likes lognormal, median
10, papers drawn Zipf-like from a 2.5M-paper corpus) and are written through
``FeedbackStore.set`` (pipelined). Then:

- bucketed: the members over all ``BUCKETS`` like-count sets, their ``MEMORY USAGE`` summed,
  and ``FeedbackStore.like_counts()`` (one pipelined ZRANGE per bucket, summed in Python);
- global: the same counts written into one sorted set, its ``MEMORY USAGE``, and one
  ``ZRANGE ... WITHSCORES`` of it, turned into the same dict.

Each read is timed 7 times; the median is reported. Everything is in a namespace of its own,
deleted at the end.

    flock /tmp/paperrec-bench.lock nice python -m benchmarks.like_counts --users 100000

The figures and what they show: docs/benchmarks/memory.md ("Like counts by bucket").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import redis
from tqdm import tqdm

from benchmarks import harness
from benchmarks.redis_memory import erase, paper_ids, popular, user_plan
from recommender.feedback.store import FeedbackStore
from recommender.storage.redis_keys import BUCKETS, RedisKeys

bench = harness.Benchmark("like_counts", __doc__)
bench.option("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
             help="the Redis measured ($REDIS_URL)")
bench.option("--users", type=int, default=100_000, quick=2_000, help="synthetic users")
bench.option("--batch", type=int, default=500, help="users per pipeline")
bench.option("--seed", type=int, default=14, help="of the users")


def write_likes(client: redis.Redis, keys: RedisKeys, likes: np.ndarray,
                rng: np.random.Generator, batch: int) -> None:
    for first in tqdm(range(0, len(likes), batch), desc="users", unit_scale=batch,
                      mininterval=5):
        pipe = client.pipeline(transaction=False)
        store = FeedbackStore(cast(redis.Redis, pipe), keys)  # the script, queued
        for u in range(first, min(first + batch, len(likes))):
            for pid in paper_ids(popular(rng, int(likes[u]))):
                store.set(f"u{u:07d}", pid, "like", 1_795_000_000.0)
        pipe.execute()


def median_seconds(read: Callable[[], dict[str, int]], times: int = 7) -> tuple[float, int]:
    runs = [harness.timed(read) for _ in range(times)]
    return harness.median((seconds for seconds, _ in runs), 4), len(runs[-1][1])


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    client = redis.Redis.from_url(args.redis_url, decode_responses=True)
    keys = RedisKeys(f"bench-like-counts-{os.getpid()}")
    rng = np.random.default_rng(args.seed)
    likes = user_plan(rng, args.users, 1)["likes"]
    load_start = os.getloadavg()
    try:
        write_likes(client, keys, likes, rng, args.batch)
        store = FeedbackStore(client, keys)
        bucketed_read, papers = median_seconds(store.like_counts)
        counts = store.like_counts()
        members = sum(int(cast(int, client.zcard(keys.like_counts(b)))) for b in range(BUCKETS))
        bucketed_bytes = sum(int(client.memory_usage(keys.like_counts(b), samples=0) or 0)
                             for b in range(BUCKETS))
        single = f"{keys.namespace}:global-like-counts"
        for start in range(0, len(counts), 10_000):
            client.zadd(single, dict(list(counts.items())[start:start + 10_000]))

        def global_read() -> dict[str, int]:
            rows = cast(list[tuple[str, float]], client.zrange(single, 0, -1, withscores=True))
            return {paper: int(score) for paper, score in rows}

        global_read_seconds, _ = median_seconds(global_read)
        global_bytes = int(client.memory_usage(single, samples=0) or 0)
    finally:
        erase(client, keys)
    bench.record(args, {
        "users": args.users, "seed": args.seed, "buckets": BUCKETS,
        "likes": int(likes.sum()), "liked_papers": papers,
        "bucketed": {"members": members, "bytes": bucketed_bytes,
                     "read_seconds_median": bucketed_read},
        "global": {"members": papers, "bytes": global_bytes,
                   "read_seconds_median": global_read_seconds},
        "redis_version": cast(dict[str, Any], client.info("server"))["redis_version"],
        "load_avg_start": load_start,
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

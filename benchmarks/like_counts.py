"""Like counts split by bucket (the Redis Cluster layout) against one global sorted set (the
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

    flock /tmp/paperrec-bench.lock nice .venv/bin/python benchmarks/like_counts.py --users 100000

Prints one JSON document and writes it to benchmarks/results/like_counts.json (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import redis
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.redis_memory import erase, paper_ids, popular, user_plan  # noqa: E402
from recommender.feedback.store import FeedbackStore  # noqa: E402
from recommender.storage.redis_keys import BUCKETS, RedisKeys  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "like_counts.json"


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
    runs, size = [], 0
    for _ in range(times):
        started = time.perf_counter()
        size = len(read())
        runs.append(time.perf_counter() - started)
    return round(statistics.median(runs), 4), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL",
                                                              "redis://127.0.0.1:6379/0"))
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=500, help="users per pipeline")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

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
    report: dict[str, Any] = {
        "benchmark": "like_counts", "users": args.users, "seed": args.seed, "buckets": BUCKETS,
        "likes": int(likes.sum()), "liked_papers": papers,
        "bucketed": {"members": members, "bytes": bucketed_bytes,
                     "read_seconds_median": bucketed_read},
        "global": {"members": papers, "bytes": global_bytes,
                   "read_seconds_median": global_read_seconds},
        "machine": {"redis_version": cast(dict[str, Any], client.info("server"))["redis_version"],
                    "cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_avg_start": load_start, "load_avg_end": os.getloadavg(),
                    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())},
    }
    print(json.dumps(report, indent=2))
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

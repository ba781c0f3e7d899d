"""Redis memory: per user, synthetic users written through the product's own stores, measured
with ``INFO memory`` and ``MEMORY USAGE``, and what a served-history cap saves.

Each user gets (seeded, heavy-tailed, per user):

- likes: lognormal, median 10 (sigma 1.2; about 1 in 1,500 users has 500 or more, at most
  5,000), dislikes about a third of the likes (Poisson), papers drawn Zipf-like from a
  2.5M-paper corpus so the like counts have a realistic number of members;
- a served history: visits lognormal, median 12 (sigma 1.3: most users open a few lists,
  a few open thousands), 10-20 papers per visit of which 70% were not served before (a
  re-served paper only moves its time); kept up to ``--record-max`` (10,000, the cap before
  this benchmark) so the uncapped growth is measured, then trimmed to each of ``--caps``;
- 30% have a digest subscription with 0-52 digests sent; 20% have 1-5 follow or mute rules.

Paper ids are arXiv-like (``2611.01234``, 85%) or paper-list ids (``pl-<16 hex>``).

Writes go through ``FeedbackStore.set`` (its Lua script; the store is given a pipeline so
thousands of calls travel in one round trip), ``FeedbackStore.record_served`` (one call per
user with the user's distinct served papers: the same key and encoding as one call per visit),
``SubscriptionStore.set`` and ``record_digest`` (pipelined too) and ``RuleStore.put``.
Everything lives in a namespace of its own, deleted at the end (``--keep`` keeps it).

Figures: ``used_memory`` before and after (server-wide: other clients of the same server show
up in it, so the sum of ``MEMORY USAGE ... SAMPLES 0`` over every key written is reported too),
bytes per user overall and per key kind, the growth per served paper (slope of the served
key's size against its entries, for the listpack (<= zset-max-listpack-entries) and skiplist
encodings), and for each cap the served bytes per user and a projection to 1M users.

    python -m benchmarks.redis_memory --users 10000   # ~20 s
    python -m benchmarks.redis_memory                 # 100k users, a few minutes

The results file has one part per ``zset-max-listpack-entries`` of the server: the served
log takes about three times less memory as a listpack than as a skiplist, so that setting of
Redis matters as much as the cap. To measure another value, start a server of your own (the
shared one's setting is not changed by the benchmark)::

    redis-server --port 6390 --save "" --appendonly no --zset-max-listpack-entries 2048 &
    python -m benchmarks.redis_memory --redis-url redis://127.0.0.1:6390/0

The figures and what they show: docs/benchmarks/memory.md ("Redis memory per user").
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any, cast

import numpy as np
import redis
from tqdm import tqdm

from benchmarks import harness
from recommender.digest.subscriptions import SubscriptionStore
from recommender.feedback.rules import RuleStore
from recommender.feedback.store import FeedbackStore
from recommender.storage.redis_keys import BUCKETS, RedisKeys

CORPUS = 2_500_000  # papers ids are drawn from
ARXIV_SHARE = 0.85
GB = 1e9
KINDS = ("feedback", "served", "subscription", "digests", "rules")
AUTHORS = ["Yoshua Bengio", "Ada Lovelace", "Geoffrey Hinton", "Fei-Fei Li", "Judea Pearl"]
KEYWORDS = ["diffusion", "causal inference", "reinforcement learning", "graph neural",
            "federated", "protein folding"]


def paper_ids(numbers: np.ndarray) -> list[str]:
    """Ids of corpus papers ``numbers``: arXiv-like for most, ``pl-<16 hex>`` for the rest."""
    out = []
    for n in numbers.tolist():
        if n % 100 < ARXIV_SHARE * 100:
            out.append(f"{2300 + (n // 100_000) % 12 + 100 * ((n // 1_200_000) % 4):04d}."
                       f"{n % 100_000:05d}")
        else:
            out.append(f"pl-{(n * 0x9E3779B97F4A7C15) & 0xFFFF_FFFF_FFFF_FFFF:016x}")
    return out


def popular(rng: np.random.Generator, size: int) -> np.ndarray:
    """Corpus papers drawn with a Zipf-like skew (liked papers cluster on popular ones)."""
    return np.minimum((rng.pareto(0.6, size) * 2_000).astype(np.int64), CORPUS - 1)


def user_plan(rng: np.random.Generator, users: int, record_max: int) -> dict[str, np.ndarray]:
    likes = np.clip(np.round(rng.lognormal(np.log(10), 1.2, users)), 0, 5_000).astype(int)
    dislikes = rng.poisson(likes / 3)
    visits = np.clip(np.round(rng.lognormal(np.log(12), 1.3, users)), 1, 20_000).astype(int)
    shown = np.array([rng.integers(10, 21, v).sum() for v in visits])
    served = np.minimum(np.round(shown * 0.7).astype(int), record_max)
    return {"likes": likes, "dislikes": dislikes, "visits": visits, "served": served,
            "subscribed": rng.random(users) < 0.3, "digests": rng.integers(0, 53, users),
            "rules": np.where(rng.random(users) < 0.2, rng.integers(1, 6, users), 0)}


def write_users(client: redis.Redis, keys: RedisKeys, plan: dict[str, np.ndarray],
                rng: np.random.Generator, record_max: int, batch: int) -> float:
    """Every user through the stores; returns seconds taken."""
    served_store = FeedbackStore(client, keys, served_history_max=record_max)
    subscriptions, rules = SubscriptionStore(client, keys), RuleStore(client, keys)
    now = 1_795_000_000.0
    users = len(plan["likes"])
    started = time.perf_counter()
    for first in tqdm(range(0, users, batch), desc="users", unit_scale=batch, mininterval=5):
        pipe = client.pipeline(transaction=False)
        # The Lua script of FeedbackStore.set, queued on the pipeline: one round trip a batch.
        feedback = FeedbackStore(cast(redis.Redis, pipe), keys)
        digests = SubscriptionStore(cast(redis.Redis, pipe), keys)  # record_digest: one HSET
        for u in range(first, min(first + batch, users)):
            user = f"u{u:07d}"
            n_like, n_dislike = int(plan["likes"][u]), int(plan["dislikes"][u])
            ids = paper_ids(popular(rng, n_like + n_dislike))
            times = now - rng.random(len(ids)) * 3e7
            for i, (pid, at) in enumerate(zip(ids, times.tolist(), strict=True)):
                feedback.set(user, pid, "like" if i < n_like else "dislike", at)
            n_served = int(plan["served"][u])
            if n_served:
                served = paper_ids(rng.integers(0, CORPUS, n_served))
                served_store.record_served(user, served, now - float(rng.random()) * 3e7)
            if plan["subscribed"][u]:
                subscriptions.set(user, f"{user}@example.org", "weekly", 10, now)
                for week in range(int(plan["digests"][u])):
                    digests.record_digest(user, f"2026-W{week + 1:02d}", now - week * 604800,
                                                f"<{user}.{week}.{int(now)}@paperrec>")
            for r in range(int(plan["rules"][u])):
                if r % 2:
                    rules.put(user, "mute", "keyword", KEYWORDS[r % len(KEYWORDS)], now)
                else:
                    rules.put(user, "follow", "author", AUTHORS[r % len(AUTHORS)], now)
        pipe.execute()
    return time.perf_counter() - started


def chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def memory_usage(client: redis.Redis, names: list[str]) -> list[int]:
    sizes: list[int] = []
    for part in chunks(names, 2_000):
        pipe = client.pipeline(transaction=False)
        for name in part:
            pipe.memory_usage(name, samples=0)
        sizes += [int(s or 0) for s in pipe.execute()]
    return sizes


def used_memory(client: redis.Redis) -> int:
    return int(cast(dict[str, Any], client.info("memory"))["used_memory"])


def key_names(keys: RedisKeys, users: int) -> dict[str, list[str]]:
    ids = [f"u{u:07d}" for u in range(users)]
    return {kind: [getattr(keys, kind)(u) for u in ids] for kind in KINDS}


def slope(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 10 or np.ptp(x) == 0:
        return None
    return round(float(np.polyfit(x, y, 1)[0]), 1)


def measure(client: redis.Redis, keys: RedisKeys, users: int, plan: dict[str, np.ndarray],
            baseline: int, caps: list[int]) -> dict[str, Any]:
    names = key_names(keys, users)
    sizes = {kind: np.array(memory_usage(client, names[kind])) for kind in KINDS}
    globals_ = {name: sum(int(client.memory_usage(getattr(keys, name)(bucket), samples=0) or 0)
                          for bucket in range(BUCKETS))
                for name in ("like_counts", "users", "subscribers")}  # summed over buckets
    after = used_memory(client)
    served_len = np.array([int(n) for part in chunks(names["served"], 2_000)
                           for n in _pipelined(client, "zcard", part)])
    listpack_max = int(cast(dict[str, str],
                            client.config_get("zset-max-listpack-entries"))
                       ["zset-max-listpack-entries"])
    small, large = served_len <= listpack_max, served_len > listpack_max
    per_kind = {kind: {"keys": int((sizes[kind] > 0).sum()),
                       "bytes_per_user": round(float(sizes[kind].sum()) / users, 1),
                       "bytes_per_key_median": int(np.median(sizes[kind][sizes[kind] > 0]))
                       if (sizes[kind] > 0).any() else 0}
                for kind in KINDS}
    keys_total = int(sum(int(s.sum()) for s in sizes.values()) + sum(globals_.values()))
    result: dict[str, Any] = {
        "used_memory_before": baseline, "used_memory_after": after,
        "used_memory_bytes_per_user": round((after - baseline) / users, 1),
        "memory_usage_sum_bytes_per_user": round(keys_total / users, 1),
        "per_kind": per_kind,
        "globals_bytes": globals_,
        "like_counts_members": sum(int(cast(int, client.zcard(keys.like_counts(bucket))))
                                   for bucket in range(BUCKETS)),
        "served_entries": {
            "mean": round(float(served_len.mean()), 1), "median": int(np.median(served_len)),
            "p90": int(np.percentile(served_len, 90)), "p99": int(np.percentile(served_len, 99)),
            "max": int(served_len.max()), "total": int(served_len.sum())},
        "bytes_per_served_paper": {
            f"listpack_le_{listpack_max}": slope(served_len[small & (served_len > 0)],
                                                 sizes["served"][small & (served_len > 0)]),
            f"skiplist_gt_{listpack_max}": slope(served_len[large], sizes["served"][large]),
            "mean_over_all": round(float(sizes["served"].sum() / max(served_len.sum(), 1)), 1)},
    }
    others = keys_total - int(sizes["served"].sum()) - globals_["like_counts"]
    capped = []
    for cap in sorted(caps, reverse=True):
        for part in chunks(names["served"], 2_000):
            pipe = client.pipeline(transaction=False)
            for name in part:
                pipe.zremrangebyrank(name, 0, -cap - 1)
            pipe.execute()
        served_bytes = float(np.array(memory_usage(client, names["served"])).sum())
        per_user = (others + served_bytes) / users
        capped.append({
            "cap": cap, "users_at_cap": int((served_len >= cap).sum()),
            "served_bytes_per_user": round(served_bytes / users, 1),
            "user_keys_bytes_per_user": round(per_user, 1),
            "used_memory_bytes_per_user": round((used_memory(client) - baseline) / users, 1),
            "projected_1M_users_gb": round((per_user * 1e6 + globals_["like_counts"]) / GB, 2)})
    result["caps"] = capped
    result["plan"] = {"likes_median": int(np.median(plan["likes"])),
                      "likes_p99": int(np.percentile(plan["likes"], 99)),
                      "likes_max": int(plan["likes"].max()),
                      "users_500_likes_or_more": int((plan["likes"] >= 500).sum()),
                      "dislikes_mean": round(float(plan["dislikes"].mean()), 1),
                      "likes_mean": round(float(plan["likes"].mean()), 1),
                      "visits_median": int(np.median(plan["visits"])),
                      "visits_p99": int(np.percentile(plan["visits"], 99)),
                      "subscribed_share": round(float(plan["subscribed"].mean()), 3),
                      "with_rules_share": round(float((plan["rules"] > 0).mean()), 3)}
    return result


def _pipelined(client: redis.Redis, command: str, names: list[str]) -> list[Any]:
    pipe = client.pipeline(transaction=False)
    for name in names:
        getattr(pipe, command)(name)
    return cast(list[Any], pipe.execute())


def erase(client: redis.Redis, keys: RedisKeys) -> int:
    deleted = 0
    batch: list[str] = []
    for name in client.scan_iter(match=keys.pattern(), count=5_000):
        batch.append(name)
        if len(batch) >= 5_000:
            deleted += int(cast(int, client.unlink(*batch)))
            batch = []
    if batch:
        deleted += int(cast(int, client.unlink(*batch)))
    return deleted


bench = harness.Benchmark("redis_memory", __doc__)
bench.option("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
             help="the Redis measured ($REDIS_URL)")
bench.option("--users", type=int, default=100_000, quick=2_000, help="synthetic users")
bench.option("--batch", type=int, default=500, help="users per pipeline")
bench.option("--record-max", type=int, default=10_000,
             help="served papers kept while writing (the cap before this benchmark)")
bench.option("--caps", default="5000,2000,1000,500,250,128", help="served-history caps")
bench.option("--seed", type=int, default=14, help="of the users")
bench.option("--keep", action="store_true", help="keep the keys written")


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    client = redis.Redis.from_url(args.redis_url, decode_responses=True)
    keys = RedisKeys(f"bench-redis-memory-{os.getpid()}")
    rng = np.random.default_rng(args.seed)
    plan = user_plan(rng, args.users, args.record_max)
    baseline = used_memory(client)
    load_start = os.getloadavg()
    try:
        seconds = write_users(client, keys, plan, rng, args.record_max, args.batch)
        figures = measure(client, keys, args.users, plan, baseline,
                          [int(c) for c in args.caps.split(",")])
    finally:
        deleted = 0 if args.keep else erase(client, keys)
    server = cast(dict[str, Any], client.info("server"))
    listpack = client.config_get("zset-max-listpack-entries")["zset-max-listpack-entries"]
    # One part per server configuration: the served log's encoding depends on it.
    bench.record(args, {
        "users": args.users, "seed": args.seed, "write_seconds": round(seconds, 1), **figures,
        "keys_deleted_after": deleted,
        "redis": {"version": server["redis_version"], "zset_max_listpack_entries": listpack,
                  "hash_max_listpack_entries": client.config_get(
                      "hash-max-listpack-entries")["hash-max-listpack-entries"],
                  "allocator": cast(dict[str, Any], client.info("memory"))["mem_allocator"]},
        "load_avg_start": load_start,
    }, part=f"zset-max-listpack-entries={listpack}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

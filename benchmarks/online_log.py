"""The impression log (issue 28): what logging a served list costs, what the log takes in Redis
and on disk, and how long the report takes over 10 million impressions.

Three parts, each a part of the results file (``--parts`` picks them):

- ``logging``: at citeulike-a's 16,980 papers (ingested and indexed once with the configured
  model into ``var/bench/online-log/citeulike``; the exact index the service uses below
  20,000) and a real citeulike-a reader with 100 likes, ``app.recommender.recommend(user, 20,
  now=..., surface="api")`` (the list logged: one XADD) against the same call with
  ``surface=None`` (nothing logged), in interleaved pairs (the order alternating), after 20 of
  each to warm up, with one BLAS and one FAISS thread as a gunicorn worker ranks; p50 and p99
  of each and of the per-pair difference (logged less not logged), in wall-clock time and in
  the process's CPU time (which other processes on a shared machine disturb far less; the
  Redis server's own work is not in it). Then the XADD alone
  (``EventLog.served`` of a list as served) and its JSON encoding alone. Against a real Redis
  (``--redis-url``), in a namespace of its own deleted at the end.
- ``storage``: ``--storage-lists`` generated lists of 10 papers (as the report part writes
  them) XADDed to a stream of their own: Redis memory per list (``MEMORY USAGE ... SAMPLES 0``
  of the stream, and ``used_memory`` before and after), and the stream at its default cap
  (``PAPERREC_EVENTS_STREAM_MAX``); then ``EventLog.export`` writes them to daily files:
  bytes per million impressions (1M impressions = 100k lists of 10), and gzipped.
- ``report``: ``--report-lists`` lists of 10 (1M: 10 million impressions) over ``--days``
  days written as daily files straight into an events folder, with the JSON
  ``EventLog.export`` writes (``ServedList.to_json()`` / ``OutcomeEvent.to_json()`` plus
  ``id``), cached in ``var/bench/online-log``: 50k readers of skewed activity, citeulike-a's
  paper ids (popular ones more often), four surfaces, an A/B experiment over the middle third
  of the days and an interleaved one (team draft: a variant per paper) over the last third, a
  few per cent of the papers liked (more at the top), some disliked, opened and clicked.
  Then ``build_report`` over them, timed once per round in a fresh process
  (``benchmarks/online_log_child.py``) for this tree and ``--baseline`` (another checkout)
  alternately; seconds, CPU seconds, the process's peak resident memory, and whether both
  reports are the same.

    python -m benchmarks.online_log --baseline /path/to/main   # ~10 min, 2 cores

The figures and what they show: docs/benchmarks/impressions.md ("The impression log").
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import random
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import redis

from benchmarks import citeulike, harness
from recommender import wiring
from recommender.core.config import Settings
from recommender.online.events import EventLog, OutcomeEvent, ServedList
from recommender.online.experiments import Experiment
from recommender.storage.redis_keys import RedisKeys

DAY = 86400.0
START = 1_793_491_200.0  # 2026-11-01 00:00 UTC: the first day of the generated log
LIKES = 100
K = 20
WARMUP = 20
READERS = 50_000
SIZE = 10  # papers per generated list
SURFACES = ("api", "page", "digest", "feed")
SURFACE_SHARE = (0.4, 0.3, 0.2, 0.1)
CHILD = Path(__file__).with_name("online_log_child.py")
AB = Experiment("exp-ab-popular", "hybrid", "popular", "ab", 0.5)
INTERLEAVE = Experiment("exp-interleave-diverse", "hybrid", "hybrid-diverse", "interleave")

bench = harness.Benchmark("online_log", __doc__)
bench.option("--parts", default="logging,storage,report", help="what to measure")
bench.option("--redis-url", default="redis://127.0.0.1:6379/0", help="the Redis measured")
bench.option("--pairs", type=int, default=1000, quick=50,
             help="logging: pairs of lists (logged, not logged)")
bench.option("--xadds", type=int, default=5000, quick=200, help="logging: XADDs alone")
bench.option("--storage-lists", type=int, default=100_000, quick=5000,
             help="storage: lists of 10 XADDed and exported")
bench.option("--report-lists", type=int, default=1_000_000, quick=20_000,
             help="report: lists of 10 in the events folder")
bench.option("--days", type=int, default=30, quick=6, help="report: days they span")
bench.option("--rounds", type=int, default=1, help="report: runs of each tree")
bench.option("--baseline", type=Path,
             help="report: another checkout to time beside this one (e.g. a worktree of main)")
bench.option("--seed", type=int, default=0, help="of the reader and the generated events")
bench.option("--limit", type=int, default=0, quick=2000,
             help="logging: citeulike-a papers in the corpus; 0: all")


# --- generated events --------------------------------------------------------------------------

def list_id(rng: np.random.Generator) -> str:
    return base64.urlsafe_b64encode(rng.bytes(12)).decode()


def generated(lists: int, days: int, seed: int,
              papers: int) -> Iterator[tuple[str, ServedList, list[OutcomeEvent]]]:
    """(day, list, its outcomes) of ``lists`` lists of ``SIZE`` papers over ``days`` days,
    oldest first."""
    rng = np.random.default_rng(seed)
    ids = [str(p) for p in range(papers)]
    popularity = rng.pareto(1.2, papers) + 1.0
    popularity /= popularity.sum()
    activity = rng.pareto(1.0, READERS) + 1.0
    activity /= activity.sum()
    readers = [f"reader-{r:05d}" for r in range(READERS)]
    variants = (INTERLEAVE.production, INTERLEAVE.candidate)
    for day in range(days):
        n = lists // days + (1 if day < lists % days else 0)
        at = np.sort(START + day * DAY + rng.uniform(0, DAY, n))
        users = rng.choice(READERS, n, p=activity)
        surfaces = rng.choice(len(SURFACES), n, p=SURFACE_SHARE)
        gaps = rng.integers(1, 200, (n, SIZE))
        gaps[:, 0] = 0
        rows = (rng.choice(papers, n, p=popularity)[:, None] + gaps.cumsum(1)) % papers
        probability = -np.sort(-rng.beta(1.2, 20, (n, SIZE)), axis=1)
        z = -np.sort(-rng.normal(1.0, 1.0, (n, SIZE)), axis=1)
        new = rng.random((n, SIZE)) < 0.05
        offsets = np.where(rng.random(n) < 0.1, SIZE, 0)
        teams = rng.integers(0, 2, (n, SIZE))
        liked = rng.random((n, SIZE)) < 0.6 * probability
        other = rng.random((n, SIZE))
        delay = rng.exponential(600.0, (n, SIZE))
        phase = 3 * day // days  # 0: production alone, 1: the A/B test, 2: interleaving
        for i in range(n):
            user = readers[users[i]]
            surface = SURFACES[surfaces[i]]
            if phase == 0:
                chosen: tuple[str, ...] = (INTERLEAVE.production,) * SIZE
                experiment = ""
            elif phase == 1:
                chosen, experiment = (AB.arm(user),) * SIZE, AB.id
            else:
                chosen = tuple(variants[t] for t in teams[i])
                experiment = INTERLEAVE.id
            served = ServedList(
                list_id(rng), user, surface, float(at[i]), tuple(ids[p] for p in rows[i]),
                chosen, tuple(float(v) for v in z[i]), tuple(float(v) for v in probability[i]),
                int(users[i]) % 150, tuple(bool(v) for v in new[i]), int(offsets[i]),
                experiment)
            outcomes = []
            opened = "open" if surface in ("api", "page") else "click"
            for place in range(SIZE):
                kinds = (["like"] if liked[i, place] else []) + (
                    ["dislike"] if other[i, place] < 0.005 else
                    ["not-now"] if other[i, place] < 0.008 else
                    [opened] if other[i, place] < 0.028 else [])
                for kind in kinds:
                    outcomes.append(OutcomeEvent(kind, user, served.list_id, served.papers[place],
                                                 served.at + float(delay[i, place])))
            yield harness_day(served.at), served, outcomes


def harness_day(at: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(at))


def write_events(folder: Path, lists: int, days: int, seed: int, papers: int) -> dict[str, Any]:
    """The generated events as daily files in ``folder`` (once: kept with a marker)."""
    marker = folder / "generated.json"
    if marker.exists():
        return dict(json.loads(marker.read_text()))
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    handles: dict[str, Any] = {}
    sequence = [0, 0]  # the last stream id's (ms, seq)
    counts = {"lists": 0, "outcomes": 0, "impressions": 0}

    def write(kind: str, event: dict[str, Any], at: float) -> None:
        ms = int(at * 1000)
        sequence[:] = [ms, sequence[1] + 1] if ms <= sequence[0] else [ms, 0]
        event["id"] = f"{sequence[0]}-{sequence[1]}"
        name = f"{kind}-{harness_day(at)}.jsonl"
        if name not in handles:
            handles[name] = (folder / name).open("a", encoding="utf-8")
        handles[name].write(json.dumps(event, separators=(",", ":")) + "\n")

    started = time.perf_counter()
    try:
        for _, served, outcomes in generated(lists, days, seed, papers):
            write("lists", served.to_json(), served.at)
            for outcome in outcomes:
                write("outcomes", outcome.to_json(), outcome.at)
            counts["lists"] += 1
            counts["impressions"] += len(served.papers)
            counts["outcomes"] += len(outcomes)
            if counts["lists"] % 100_000 == 0:
                harness.log(f"generated {counts['lists']} lists")
    finally:
        for handle in handles.values():
            handle.close()
    found = {**counts, "days": days, "seed": seed, "corpus_papers": papers,
             "bytes": sum(p.stat().st_size for p in folder.glob("*.jsonl")),
             "files": len(handles), "generate_seconds": round(time.perf_counter() - started, 1)}
    marker.write_text(json.dumps(found))
    return found


# --- logging cost -------------------------------------------------------------------------------

def reader_likes(seed: int, papers: set[str]) -> list[str]:
    """``LIKES`` of these papers that one citeulike-a user saved."""
    saves: dict[str, list[str]] = {}
    for line in citeulike.INTERACTIONS.read_text().splitlines():
        user, paper = line.split("\t")
        if paper in papers:
            saves.setdefault(user, []).append(paper)
    readers = sorted(u for u, saved in saves.items() if len(saved) >= LIKES)
    if not readers:
        raise SystemExit(f"no reader saved {LIKES} of these papers: raise --limit")
    chosen = random.Random(seed).choice(readers)
    return random.Random(seed).sample(saves[chosen], LIKES)


def indexed_corpus(limit: int, redis_url: str) -> Path:
    """citeulike-a (its first ``limit`` papers) ingested and indexed (once)."""
    data = harness.WORK / "online-log" / (f"citeulike-{limit}" if limit else "citeulike")
    if (data / "index" / "CURRENT").exists():
        return data
    settings = Settings.from_env(data_dir=data, redis_url=redis_url,
                                 redis_namespace=f"bench-online-log-{uuid.uuid4().hex[:8]}")
    data.mkdir(parents=True, exist_ok=True)
    harness.seed_embeddings(settings)
    lines = citeulike.PAPERS.read_text().splitlines(keepends=True)
    source = data / "papers.jsonl"
    source.write_text("".join(lines[:limit] if limit else lines))
    app = wiring.build(settings)
    try:
        app.ingest([source], on_rejection=lambda r: None)
        harness.log(str(app.rebuild_index(progress=False)))
        harness.keep_embeddings(settings)
    finally:
        app.close()
    return data


def erase_namespace(client: redis.Redis, namespace: str) -> None:
    names = list(client.scan_iter(match=f"{namespace}:*", count=1000))
    for start in range(0, len(names), 1000):
        client.delete(*names[start:start + 1000])


def logging_cost(args: argparse.Namespace) -> dict[str, Any]:
    import faiss
    from threadpoolctl import threadpool_limits

    data = indexed_corpus(args.limit, args.redis_url)
    namespace = f"bench-online-log-{uuid.uuid4().hex[:8]}"
    settings = Settings.from_env(data_dir=data, redis_url=args.redis_url,
                                 redis_namespace=namespace)
    app = wiring.build(settings)
    client = cast(redis.Redis, app.redis)
    try:
        papers = {pid for pid, _, _ in app.corpus.index_rows()}
        user = "bench-reader"
        app.feedback.set_many(user, reader_likes(args.seed, papers), "like", time.time())
        recommend = app.recommender.recommend
        times: dict[str, list[float]] = {"logged": [], "not_logged": []}
        cpu: dict[str, list[float]] = {"logged": [], "not_logged": []}
        surfaces = {"logged": "api", "not_logged": None}
        with threadpool_limits(1):
            faiss.omp_set_num_threads(1)
            for _ in range(WARMUP):
                for name in times:
                    recommend(user, K, now=time.time(), surface=surfaces[name])  # type: ignore[arg-type]
            for _, name in harness.interleaved(list(times), args.pairs):
                start, start_cpu = time.perf_counter(), time.process_time()
                found = recommend(user, K, now=time.time(), surface=surfaces[name])  # type: ignore[arg-type]
                times[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
            served = found.served
            assert served is not None and len(served.papers) == K
            logged_lists = sum(1 for s in app.events.lists() if s.user == user)
            xadd, encode = [], []
            for _ in range(args.xadds):
                start = time.perf_counter()
                app.events.served(served)
                xadd.append(time.perf_counter() - start)
                start = time.perf_counter()
                json.dumps(served.to_json(), separators=(",", ":"))
                encode.append(time.perf_counter() - start)
        ping = []
        for _ in range(args.xadds):
            start = time.perf_counter()
            client.ping()
            ping.append(time.perf_counter() - start)
        difference = [a - b for a, b in zip(times["logged"], times["not_logged"], strict=True)]
        cpu_difference = [a - b for a, b in zip(cpu["logged"], cpu["not_logged"], strict=True)]

        def ms(values: list[float], suffix: str = "_ms") -> dict[str, float]:
            return harness.percentiles(values, scale=1000.0, suffix=suffix, digits=3)

        def both(wall: list[float], busy: list[float]) -> dict[str, float]:
            return {**ms(wall), **ms(busy, "_cpu_ms")}

        return {
            "papers": len(papers), "likes": LIKES, "k": K, "pairs": args.pairs,
            "lists_logged": logged_lists,
            "list_logged": both(times["logged"], cpu["logged"]),
            "list_not_logged": both(times["not_logged"], cpu["not_logged"]),
            "difference": both(difference, cpu_difference),
            "difference_of_medians_ms": round(1000 * (statistics.median(times["logged"])
                                                      - statistics.median(times["not_logged"])), 3),
            "xadd": ms(xadd),
            "json_encode": harness.percentiles(encode, (50, 99), scale=1e6, suffix="_us",
                                               digits=1),
            "redis_ping": ms(ping),
            "entry_bytes": len(json.dumps(served.to_json(), separators=(",", ":"))),
        }
    finally:
        erase_namespace(client, namespace)
        app.close()


# --- storage ------------------------------------------------------------------------------------

def used_memory(client: redis.Redis) -> int:
    return int(cast(dict[str, Any], client.info("memory"))["used_memory"])


def storage(args: argparse.Namespace) -> dict[str, Any]:
    client = redis.Redis.from_url(args.redis_url, decode_responses=True)
    namespace = f"bench-online-log-{uuid.uuid4().hex[:8]}"
    keys = RedisKeys(namespace)
    cap = Settings.model_fields["events_stream_max"].default
    lists = args.storage_lists
    try:
        with tempfile.TemporaryDirectory(prefix="paperrec-online-log-") as scratch:
            log = EventLog(client, keys, Path(scratch) / "events", cap)
            before = used_memory(client)
            impressions = outcomes = 0
            pipe = client.pipeline(transaction=False)
            for n, (_, served, done) in enumerate(
                    generated(lists, 1, args.seed, 16_980), start=1):
                encoded = json.dumps(served.to_json(), separators=(",", ":"))
                pipe.xadd(keys.events, {"e": encoded})  # no cap: every entry's cost
                impressions += len(served.papers)
                outcomes += len(done)
                if n % 1000 == 0:
                    pipe.execute()
            pipe.execute()
            stream_bytes = int(client.memory_usage(keys.events, samples=0) or 0)
            used = used_memory(client) - before
            exported = log.export()
            files = {p.name: p.stat().st_size for p in log.folder.glob("*.jsonl")}
            lists_bytes = sum(size for name, size in files.items() if name.startswith("lists-"))
            gz = sum(len(gzip.compress(p.read_bytes(), 6)) for p in log.folder.glob("lists-*"))
    finally:
        erase_namespace(client, namespace)
    per_million = 1_000_000 / impressions
    return {
        "lists": lists, "impressions": impressions, "papers_per_list": SIZE,
        "outcomes_generated": outcomes,
        "redis": {
            "stream_memory_usage_bytes": stream_bytes,
            "bytes_per_list": round(stream_bytes / lists, 1),
            "used_memory_delta_bytes": used,
            "used_memory_bytes_per_list": round(used / lists, 1),
            "mib_per_million_impressions": round(stream_bytes * per_million / 2**20, 1),
            "stream_cap_entries": cap,
            "mib_at_cap": round(stream_bytes / lists * cap / 2**20, 1),
        },
        "files": {
            "exported_lists": exported.lists,
            "lists_bytes": lists_bytes,
            "bytes_per_list": round(lists_bytes / lists, 1),
            "mib_per_million_impressions": round(lists_bytes * per_million / 2**20, 1),
            "gzip_mib_per_million_impressions": round(gz * per_million / 2**20, 1),
        },
    }


# --- report time ----------------------------------------------------------------------------------

def report_time(args: argparse.Namespace) -> dict[str, Any]:
    folder = harness.WORK / "online-log" / f"events-{args.report_lists}-{args.days}-{args.seed}"
    generated_ = write_events(folder, args.report_lists, args.days, args.seed, 16_980)
    harness.log(f"events: {generated_}")
    now = START + args.days * DAY
    experiments = [
        {**AB.__dict__, "started_at": START + args.days // 3 * DAY,
         "stopped_at": START + 2 * args.days // 3 * DAY},
        {**INTERLEAVE.__dict__, "started_at": START + 2 * args.days // 3 * DAY}]
    trees = {"this tree": harness.ROOT}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), **trees}
    runs: dict[str, list[dict[str, Any]]] = {tree: [] for tree in trees}
    outputs = {tree: harness.WORK / "online-log" / f"report-{i}.json"
               for i, tree in enumerate(trees)}
    for _, tree in harness.interleaved(list(trees), args.rounds):
        found = harness.run_in_checkout(
            trees[tree], CHILD, [str(folder), "16980", str(now), json.dumps(experiments),
                                 str(outputs[tree])])
        harness.log(f"{tree}: {found}")
        runs[tree].append(found)
    result: dict[str, Any] = {
        "events": generated_, "trees": {tree: str(root) for tree, root in trees.items()},
        "seconds": {tree: harness.median(r["seconds"] for r in found)
                    for tree, found in runs.items()},
        "peak_rss_mib": {tree: max(r["peak_rss_mib"] for r in found)
                         for tree, found in runs.items()},
        "runs": runs,
    }
    if args.baseline is not None:
        result["speed_up"] = harness.paired_ratio(
            [r["seconds"] for r in runs["this tree"]], [r["seconds"] for r in runs["baseline"]])
        result["same_report"] = (outputs["baseline"].read_text()
                                 == outputs["this tree"].read_text())
    return result


PARTS = {"logging": logging_cost, "storage": storage, "report": report_time}


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    for part in args.parts.split(","):
        if part not in PARTS:
            bench.parser.error(f"--parts: {part!r} is not one of {', '.join(PARTS)}")
        harness.log(f"measuring {part}")
        bench.record(args, {"part": part, **PARTS[part](args)}, part=part)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

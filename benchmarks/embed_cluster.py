"""Embedding on a Dask cluster: papers per second of ``rebuild-index --cluster``'s
embedding with 1 and 2 local worker processes, beside the in-process embedding, in one run.

Each configuration embeds the same texts (a fixed sample of citeulike-a papers with an
abstract, title + abstract) into a fresh embedding cache, as a rebuild does: in process with
``embed_into_cache``, and on a ``LocalCluster`` of N worker processes (one thread each) with
``embed_on_cluster`` in shards of --shard texts. Workers load the model before the clock
starts (a long-lived cluster has it loaded); the cluster's start is reported apart. The
figure is the median of --repeats runs; the configurations take turns, so a busy machine
slows all alike.

    python -m benchmarks.embed_cluster                 # 400 texts, about 3 min
    python -m benchmarks.embed_cluster --limit 1000 --repeats 3

The figures and what they show: docs/benchmarks/embedding.md ("On a cluster").
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from distributed import Client, LocalCluster

from benchmarks import citeulike, harness
from recommender.core.config import DEFAULT_MODEL, Settings
from recommender.embedding.cache import EmbeddingCache, embed_into_cache
from recommender.embedding.cluster import embed_on_cluster, embed_shard
from recommender.embedding.encoders import Embedder

bench = harness.Benchmark("embed_cluster", __doc__)
bench.option("--limit", type=int, default=400, quick=40, help="texts")
bench.option("--shard", type=int, default=50, quick=20, help="texts per shard")
bench.option("--repeats", type=int, default=2, quick=1, help="runs of each")
bench.option("--workers", default="1,2", quick="1", help="cluster sizes")
bench.option("--backend", default=Settings().embed_backend, help="embedding backend")


def timed(embed: Callable[[EmbeddingCache], None]) -> float:
    """Seconds to embed into a fresh cache."""
    with tempfile.TemporaryDirectory() as folder:
        cache = EmbeddingCache(Path(folder) / "embeddings.sqlite")
        try:
            started = time.perf_counter()
            embed(cache)
            return time.perf_counter() - started
        finally:
            cache.close()


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    texts = citeulike.texts(args.limit, seed=0)
    by_hash = {f"{i:06d}": text for i, text in enumerate(texts)}
    embedder = Embedder(DEFAULT_MODEL, 64, args.backend)
    embedder.encode(["warm up"])
    runs: dict[str, Callable[[EmbeddingCache], None]] = {
        "local": lambda cache: embed_into_cache(embedder, cache, by_hash, progress=False)}
    clusters, starts = [], {}
    for n in (int(w) for w in args.workers.split(",")):
        started = time.perf_counter()
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.ERROR)
        client = Client(cluster)
        client.run(embed_shard, DEFAULT_MODEL, args.backend, 64, ["warm up"])  # load the model
        starts[f"{n} workers"] = round(time.perf_counter() - started, 1)
        clusters.append((cluster, client))
        runs[f"{n} workers"] = (lambda c: lambda cache: embed_on_cluster(
            c, embedder, cache, by_hash, progress=False, shard_size=args.shard))(client)
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    try:
        for repeat, name in harness.interleaved(list(runs), args.repeats):
            seconds[name].append(timed(runs[name]))
            harness.log(f"repeat {repeat + 1}: {name} {seconds[name][-1]:.1f} s")
    finally:
        for cluster, client in clusters:
            client.close()
            cluster.close()
    bench.record(args, {
        "texts": len(texts), "corpus": "citeulike-a papers with an abstract (seed 0)",
        "backend": args.backend, "shard": args.shard, "repeats": args.repeats,
        "papers_per_second": {name: round(len(texts) / statistics.median(s), 1)
                              for name, s in seconds.items()},
        "seconds": {name: [round(x, 2) for x in s] for name, s in seconds.items()},
        "cluster_start_seconds": starts,
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

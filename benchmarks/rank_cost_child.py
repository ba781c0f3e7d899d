"""The measuring side of ``benchmarks.rank_cost``: one checkout's ``rank`` at one size.

``python -m benchmarks.rank_cost_child CHECKOUT SIZE LIKES USERS WORKDIR SEED [--prepare]``
runs in a fresh process whose ``recommender`` is the checkout's (the driver puts it first on
PYTHONPATH, with PYTHONSAFEPATH set; this module checks it). It imports nothing else of the
benchmarks but ``benchmarks.synthetic``, so that a checkout from before the benchmarks were a
package can be measured too. It builds the context the way the service does: synthetic 384-d
vectors published with the checkout's ``IndexStore.publish(..., full=True)`` (cached under
WORKDIR, keyed by the git tree of its recommender/index), loaded memory-mapped as a worker
loads it, and ``context_for(index, None, like_counts)``; the context build is timed on its
own, then every list with one BLAS and one FAISS thread, as a gunicorn worker ranks. Prints
one JSON line (``--prepare``: only builds the cached index and the shared readers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.synthetic import parse_size, synthetic_vectors, user_likes

K = 20  # the list length asked for
WARMUP = 20  # lists ranked before timing


def measure(checkout: Path, size: str, likes: list[int], users: int, workdir: Path, seed: int,
            prepare: bool) -> dict[str, Any]:
    import faiss
    from threadpoolctl import threadpool_limits

    import recommender
    from recommender.index.store import IndexStore
    from recommender.ranking.context import context_for
    from recommender.ranking.rank import rank

    empty = np.zeros(0, np.int64)
    try:
        from recommender.ranking.request import ListRequest

        def ranked(ctx: Any, liked: np.ndarray) -> Any:
            return rank(ctx, ListRequest(liked, K))
    except ImportError:  # a checkout from before the list request (rank's old arguments)
        def ranked(ctx: Any, liked: np.ndarray) -> Any:
            return rank(ctx, liked, empty, K)  # type: ignore[call-arg, arg-type]

    imported = Path(str(recommender.__file__)).resolve()
    if not imported.is_relative_to(checkout):
        raise SystemExit(f"{imported} imported, not from {checkout}")
    n = parse_size(size)
    store = IndexStore(workdir / f"index-{size}-{seed}-{index_code(checkout)}")
    build_seconds = None
    if store.current_version() is None:
        start = time.perf_counter()
        store.publish([f"p{i}" for i in range(n)], synthetic_vectors(n, seed),
                      np.arange(n, dtype=np.float64), "bench", 20_000, full=True)
        build_seconds = round(time.perf_counter() - start, 1)
    index = store.load(str(store.current_version()))  # memory-mapped, as a worker loads it
    liked_lists = user_likes(workdir / f"users-{size}-{seed}.npz", np.asarray(index.vectors),
                             likes, users, seed)
    if prepare:
        return {"build_seconds": build_seconds}

    with threadpool_limits(1):
        faiss.omp_set_num_threads(1)
        counts = np.floor(np.random.default_rng(seed).pareto(1.5, n)).astype(np.float32)
        start = time.perf_counter()
        ctx = context_for(index, None, counts)
        context_seconds = time.perf_counter() - start
        for liked in liked_lists[likes[-1]][:WARMUP]:
            ranked(ctx, liked)
        per_likes = {}
        for count in likes:
            times = []
            for liked in liked_lists[count]:
                start = time.perf_counter()
                ranked(ctx, liked)
                times.append(time.perf_counter() - start)
            ms = 1000 * np.asarray(times)
            per_likes[str(count)] = {"median_ms": round(float(np.median(ms)), 3),
                                     "p90_ms": round(float(np.percentile(ms, 90)), 3),
                                     "p99_ms": round(float(np.percentile(ms, 99)), 3)}
    return {"checkout": str(checkout), "commit": git(checkout, "rev-parse", "--short", "HEAD"),
            "kind": index.meta["kind"], "papers": len(index), "build_seconds": build_seconds,
            "context_seconds": round(context_seconds, 3), "likes": per_likes,
            "load": round(os.getloadavg()[0], 2)}


def index_code(checkout: Path) -> str:
    """The git tree of the checkout's recommender/index: checkouts that build indexes with
    the same code share the cached index (the rankings differ, the index code need not)."""
    return git(checkout, "rev-parse", "--short", "HEAD:recommender/index")


def git(checkout: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(checkout), *args], check=True, text=True,
                          capture_output=True).stdout.strip()


def main(argv: list[str]) -> None:
    checkout, size, likes, users, workdir, seed = argv[:6]
    print(json.dumps(measure(Path(checkout).resolve(), size,
                             [int(x) for x in likes.split(",")], int(users), Path(workdir),
                             int(seed), "--prepare" in argv)))


if __name__ == "__main__":
    main(sys.argv[1:])

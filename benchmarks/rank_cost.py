"""Ranking cost, old against new: the time ``rank`` takes for one reading list (k=20) for users
with 1, 10 and 100 likes, in two checkouts measured side by side, at 17k papers (an exact
index: every paper is scored) and 100k (HNSW: only the candidates the index finds are).

The ranking changed at 6e0d26d: before it (``--old``, e.g. a worktree at 379b939) the content
score was 0.5 max + 0.5 mean of the cosines to the liked papers, each expanded with its
neighbours (``expand_queries``); after it (``--new``) it is one direction, the mean of the
liked vectors plus a Fisher term through an inverse covariance that ``ContentStatistics``
computes once per index version. The issue asks that a list for a user with 100 likes costs
no more than before.

Each measurement runs in a fresh subprocess with ``PYTHONPATH=<checkout>`` (``--checkout``;
it checks that ``recommender`` is imported from there). It builds the context the way the
service does: synthetic 384-d vectors (``synthetic_vectors`` of the checkout's
benchmarks/index.py) published with the checkout's ``IndexStore.publish(..., full=True)``
(cached under --workdir, keyed by the git tree of its recommender/index), loaded
memory-mapped as a worker loads it, and ``context_for(index, None, like_counts)``. The
context build is timed on its own (``context_seconds``: the new code computes the covariance
there), then every list is timed with one BLAS and one FAISS thread, as a gunicorn worker
ranks (service/server.py). The users (--users per like count, each different) like papers
of one to five topics: seed papers and their nearest neighbours by exact search in the index;
they are drawn once per size and shared by both checkouts.

The driver alternates the checkouts over --rounds rounds (old, new; then new, old; ...) so
both see the same machine load, and reports per size and like count the median (and p90) of
the per-round medians in milliseconds and the ratio new / old (the median of the per-round
ratios: what counts on a shared machine).

    git worktree add --detach ../rank-old 379b939
    .venv/bin/python benchmarks/rank_cost.py --old ../rank-old --new .   # ~6 min, 2 cores
    .venv/bin/python benchmarks/rank_cost.py --table

Prints one JSON document and merges it into benchmarks/results/rank_cost.json (one entry per
size). docs/benchmarks/lists.md ("Ranking cost, old against new") has the results.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "rank_cost.json"
SIZES = {"17k": 16_980, "100k": 100_000}
K = 20  # the list length asked for
WARMUP = 20  # lists ranked before timing


# ---------------------------------------------------------------------------------------------
# The child: one checkout, one size


def child(checkout: Path, size: str, likes: list[int], users: int, workdir: Path, seed: int,
          prepare: bool) -> dict[str, Any]:
    sys.path[:0] = [str(checkout), str(checkout / "benchmarks")]
    import faiss
    import index as index_script
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
            return rank(ctx, liked, empty, K)

    for module in (recommender, index_script):
        imported = Path(module.__file__).resolve()
        if not imported.is_relative_to(checkout):
            raise SystemExit(f"{imported} imported, not from {checkout}")
    n = SIZES[size]
    store = IndexStore(workdir / f"index-{size}-{seed}-{index_code(checkout)}")
    build_seconds = None
    if store.current_version() is None:
        start = time.perf_counter()
        store.publish([f"p{i}" for i in range(n)], index_script.synthetic_vectors(n, seed),
                      np.arange(n, dtype=np.float64), "bench", 20_000, full=True)
        build_seconds = round(time.perf_counter() - start, 1)
    index = store.load(store.current_version())  # memory-mapped, as a worker loads it
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


def user_likes(path: Path, vectors: np.ndarray, likes: list[int], users: int,
               seed: int) -> dict[int, list[np.ndarray]]:
    """``users`` users per like count, each liking papers of one to five topics: seed papers
    and their nearest neighbours (exact search). Kept in ``path`` so every checkout ranks the
    same users."""
    if path.exists():
        saved = np.load(path)
        if all(f"{count}-{u}" in saved for count in likes for u in range(users)):
            return {count: [saved[f"{count}-{u}"] for u in range(users)] for count in likes}
    plans = []  # (count, user's rng, seeds, neighbours per seed)
    for count in likes:
        for u in range(users):
            rng = np.random.default_rng([seed, count, u])
            seeds = rng.choice(len(vectors), size=int(rng.integers(1, 6)), replace=False)
            plans.append((count, rng, seeds, max(10, 3 * -(-count // len(seeds)))))
    queries = np.concatenate([seeds for _, _, seeds, _ in plans])
    most = max(m for *_, m in plans)
    near = np.empty((len(queries), most), np.int64)
    for start in range(0, len(queries), 256):
        sims = vectors @ vectors[queries[start:start + 256]].T  # (n, batch)
        top = np.argpartition(-sims, most, axis=0)[:most].T
        order = np.argsort(-np.take_along_axis(sims.T, top, axis=1), axis=1)
        near[start:start + len(top)] = np.take_along_axis(top, order, axis=1)
    out: dict[int, list[np.ndarray]] = {count: [] for count in likes}
    at = 0
    for count, rng, seeds, per_seed in plans:
        pool = np.unique(near[at:at + len(seeds), :per_seed])
        at += len(seeds)
        out[count].append(np.sort(rng.choice(pool, size=count, replace=False)))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **{f"{count}-{u}": liked for count in likes
                      for u, liked in enumerate(out[count])})
    return out


# ---------------------------------------------------------------------------------------------
# The driver


def run_child(checkout: Path, size: str, args: argparse.Namespace,
              prepare: bool = False) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--checkout", str(checkout),
               "--sizes", size, "--likes", args.likes, "--users", str(args.users),
               "--workdir", str(args.workdir), "--seed", str(args.seed)]
    out = subprocess.run(command + (["--prepare"] if prepare else []), check=True, text=True,
                         capture_output=True, env={**os.environ, "PYTHONPATH": str(checkout)})
    return json.loads(out.stdout)


def compare(size: str, args: argparse.Namespace) -> dict[str, Any]:
    sides = {"old": args.old.resolve(), "new": args.new.resolve()}
    # Builds the index (once: None when it was cached) and the users outside the timing.
    built = {side: run_child(sides[side], size, args, prepare=True)["build_seconds"]
             for side in sides}
    runs: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for r in range(args.rounds):
        for side in ("old", "new") if r % 2 == 0 else ("new", "old"):
            runs[side].append(run_child(sides[side], size, args))
            print(f"{size} round {r + 1} {side}: {runs[side][-1]['likes']}", file=sys.stderr)
    first = runs["new"][0]
    table = {}
    for count in args.likes.split(","):
        old = [run["likes"][count] for run in runs["old"]]
        new = [run["likes"][count] for run in runs["new"]]
        ratios = [n["median_ms"] / o["median_ms"] for o, n in zip(old, new, strict=True)]
        table[count] = {
            "old_ms": median(o["median_ms"] for o in old),
            "new_ms": median(n["median_ms"] for n in new),
            "old_p90_ms": median(o["p90_ms"] for o in old),
            "new_p90_ms": median(n["p90_ms"] for n in new),
            "old_p99_ms": median(o["p99_ms"] for o in old),
            "new_p99_ms": median(n["p99_ms"] for n in new),
            "ratio": round(statistics.median(ratios), 3),
            "ratios": [round(x, 3) for x in ratios],
        }
    return {"papers": first["papers"], "kind": first["kind"],
            "commits": {side: runs[side][0]["commit"] for side in runs},
            "build_seconds": built,
            "context_seconds": {side: median(run["context_seconds"] for run in runs[side])
                                for side in runs},
            "likes": table, "runs": runs}


def median(values: Any) -> float:
    return round(statistics.median(values), 3)


def markdown(results: dict[str, Any]) -> str:
    lines = ["| papers (index) | likes | old ms (p90, p99) | new ms (p90, p99) | new / old |",
             "|---|---:|---:|---:|---:|"]
    for size, entry in results["sizes"].items():
        for count, row in entry["likes"].items():
            lines.append(f"| {size} ({entry['kind']}) | {count} | {row['old_ms']:.2f} "
                         f"({row['old_p90_ms']:.2f}, {row.get('old_p99_ms', 0):.2f}) | "
                         f"{row['new_ms']:.2f} ({row['new_p90_ms']:.2f}, "
                         f"{row.get('new_p99_ms', 0):.2f}) | {row['ratio']:.2f} |")
    lines.append("")
    lines += [f"context build, {size}: old {e['context_seconds']['old']:.2f} s, "
              f"new {e['context_seconds']['new']:.2f} s"
              for size, e in results["sizes"].items()]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Cost of ranking one reading list, old checkout against new, side by "
                    "side (median ms per list for users with 1, 10 and 100 likes).")
    parser.add_argument("--old", type=Path, help="checkout of the old ranking (e.g. 379b939)")
    parser.add_argument("--new", type=Path, default=ROOT, help="checkout of the new ranking")
    parser.add_argument("--sizes", default="17k,100k", help=f"of {', '.join(SIZES)}")
    parser.add_argument("--likes", default="1,10,100", help="like counts per user")
    parser.add_argument("--users", type=int, default=200,
                        help="lists (different users) per like count and run")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each checkout")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rank-cost"),
                        help="cached indexes and users")
    parser.add_argument("--table", action="store_true",
                        help="print the Markdown table of the results file and stop")
    parser.add_argument("--checkout", type=Path,
                        help="(child) measure this checkout, one size, and print its JSON")
    parser.add_argument("--prepare", action="store_true",
                        help="(child) only build the cached index and users")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    likes = [int(x) for x in args.likes.split(",")]
    if args.checkout:
        print(json.dumps(child(args.checkout.resolve(), args.sizes, likes, args.users,
                               args.workdir, args.seed, args.prepare)))
        return
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"sizes": {}}
    if args.table:
        print(markdown(results))
        return
    if args.old is None:
        raise SystemExit("--old is needed (a checkout of the old ranking)")
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    from index import load_average, machine

    load_before = load_average()
    for size in args.sizes.split(","):
        results["sizes"][size] = compare(size, args)
    results.update(machine=machine(), load_before=load_before, load_after=load_average(),
                   settings={"k": K, "users": args.users, "rounds": args.rounds,
                             "seed": args.seed, "threads": 1})
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    print(markdown(results), file=sys.stderr)


if __name__ == "__main__":
    main()

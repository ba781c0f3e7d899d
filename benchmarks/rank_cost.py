"""Ranking cost, old against new: the time ``rank`` takes for one reading list (k=20) for users
with 1, 10 and 100 likes, in two checkouts measured side by side, at 17k papers (an exact
index: every paper is scored) and 100k (HNSW: only the candidates the index finds are).

Made for the change at 6e0d26d: before it (``--old``, e.g. a worktree at 379b939) the content
score was 0.5 max + 0.5 mean of the cosines to the liked papers, each expanded with its
neighbours; after it (``--new``) it is one direction, the mean of the liked vectors plus a
Fisher term through an inverse covariance that ``ContentStatistics`` computes once per index
version. Any two checkouts can be compared the same way.

Each measurement runs in a fresh process with the checkout's ``recommender``
(``benchmarks.rank_cost_child``, which says how the context is built and timed). The users
(--users per like count, each different) like papers of one to five topics: seed papers and
their nearest neighbours by exact search in the index; they are drawn once per size and
shared by both checkouts. The driver alternates the checkouts over --rounds rounds (old,
new; then new, old; ...) so both see the same machine load, and reports per size and like
count the median (and p90) of the per-round medians in milliseconds and the ratio new / old
(the median of the per-round ratios: what counts on a shared machine). Each size is a part
of the results file.

    git worktree add --detach ../rank-old 379b939
    python -m benchmarks.rank_cost --old ../rank-old --new .   # ~6 min, 2 cores
    python -m benchmarks.rank_cost --table

The figures and what they show: docs/benchmarks/lists.md ("Ranking cost, old against new").
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchmarks import harness

bench = harness.Benchmark("rank_cost", __doc__)
bench.option("--old", type=Path, help="checkout of the old ranking (e.g. 379b939); --quick: "
             "this checkout against itself")
bench.option("--new", type=Path, default=harness.ROOT, help="checkout of the new ranking")
bench.option("--sizes", default="17k,100k", quick="5k", help="papers: 17k, 100k, ...")
bench.option("--likes", default="1,10,100", help="like counts per user")
bench.option("--users", type=int, default=200, quick=20,
             help="lists (different users) per like count and run")
bench.option("--rounds", type=int, default=3, quick=1, help="runs of each checkout")
bench.option("--seed", type=int, default=0, help="of the vectors and the users")
bench.option("--workdir", type=Path, default=harness.WORK / "rank-cost",
             help="cached indexes and users")
bench.option("--table", action="store_true",
             help="print the Markdown table of the results file and stop")


def run_child(checkout: Path, size: str, args: argparse.Namespace,
              prepare: bool = False) -> dict[str, Any]:
    """One measurement in a fresh process whose ``recommender`` is the checkout's."""
    argv = [str(checkout), size, args.likes, str(args.users), str(args.workdir),
            str(args.seed), *(["--prepare"] if prepare else [])]
    return dict(harness.run_in_checkout(checkout, "benchmarks.rank_cost_child", argv))


def compare(size: str, args: argparse.Namespace) -> dict[str, Any]:
    sides = {"old": args.old.resolve(), "new": args.new.resolve()}
    # Builds the index (once: None when it was cached) and the users outside the timing.
    built = {side: run_child(sides[side], size, args, prepare=True)["build_seconds"]
             for side in sides}
    runs: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for r, side in harness.interleaved(["old", "new"], args.rounds):
        runs[side].append(run_child(sides[side], size, args))
        harness.log(f"{size} round {r + 1} {side}: {runs[side][-1]['likes']}")
    first = runs["new"][0]
    table = {}
    for count in args.likes.split(","):
        old = [run["likes"][count] for run in runs["old"]]
        new = [run["likes"][count] for run in runs["new"]]
        old_ms = [o["median_ms"] for o in old]
        new_ms = [n["median_ms"] for n in new]
        table[count] = {
            "old_ms": harness.median(old_ms),
            "new_ms": harness.median(new_ms),
            "old_p90_ms": harness.median(o["p90_ms"] for o in old),
            "new_p90_ms": harness.median(n["p90_ms"] for n in new),
            "ratio": harness.paired_ratio(old_ms, new_ms),
            "ratios": [round(n / o, 3) for o, n in zip(old_ms, new_ms, strict=True)],
        }
    return {"papers": first["papers"], "kind": first["kind"],
            "commits": {side: runs[side][0]["commit"] for side in runs},
            "build_seconds": built,
            "context_seconds": {side: harness.median(run["context_seconds"]
                                                     for run in runs[side])
                                for side in runs},
            "likes": table, "runs": runs}


def markdown(results: dict[str, Any]) -> str:
    lines = ["| papers (index) | likes | old ms (p90, p99) | new ms (p90, p99) | new / old |",
             "|---|---:|---:|---:|---:|"]
    sizes = results.get("parts", {})
    for size, entry in sizes.items():
        for count, row in entry["likes"].items():
            lines.append(f"| {size} ({entry['kind']}) | {count} | {row['old_ms']:.2f} "
                         f"({row['old_p90_ms']:.2f}, {row.get('old_p99_ms', 0):.2f}) | "
                         f"{row['new_ms']:.2f} ({row['new_p90_ms']:.2f}, "
                         f"{row.get('new_p99_ms', 0):.2f}) | {row['ratio']:.2f} |")
    lines.append("")
    lines += [f"context build, {size}: old {e['context_seconds']['old']:.2f} s, "
              f"new {e['context_seconds']['new']:.2f} s" for size, e in sizes.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    if args.table:
        print(markdown(harness.read_results(args.out)))
        return 0
    if args.old is None:
        if not args.quick:
            raise SystemExit("--old is needed (a checkout of the old ranking)")
        args.old = args.new
    for size in args.sizes.split(","):
        bench.record(args, {"settings": {"k": 20, "users": args.users, "rounds": args.rounds,
                                         "seed": args.seed, "threads": 1},
                            **compare(size, args)}, part=size)
    harness.log(markdown(harness.read_results(args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

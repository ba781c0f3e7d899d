"""API latency: what the API layer costs a request: the reading list and a request its
validation refuses, timed through the app (Flask's test client, no network), for this tree
and another one side by side in one run.

Each tree's app runs in a process of its own (``benchmarks.api_latency_child``) over the same
data directory (the sample corpus, indexed with the configured model unless --data-dir names
one), in rounds that alternate the trees, so both see the same machine load. Per request
kind: p50 and p99 in milliseconds.

    python -m benchmarks.api_latency --baseline /path/to/other/checkout
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from benchmarks import harness
from benchmarks.api_latency_child import REQUESTS
from benchmarks.served import prepare

bench = harness.Benchmark("api_latency", __doc__)
bench.option("--baseline", type=Path, help="another checkout of paperrec to compare with "
             "(e.g. a worktree of main); --quick: this tree against itself")
bench.option("--data-dir", type=Path, help="an indexed data directory (default: the sample "
             "corpus, built here into a temporary directory)")
bench.option("--requests", type=int, default=300, quick=30, help="of each kind, per round")
bench.option("--rounds", type=int, default=3, quick=1, help="runs of each tree")


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    if args.baseline is None and not args.quick:
        bench.parser.error("--baseline is needed (another checkout)")
    trees = {"baseline": (args.baseline or harness.ROOT).resolve(), "this tree": harness.ROOT}
    samples: dict[str, dict[str, list[float]]] = {
        tree: {kind: [] for kind in REQUESTS} for tree in trees}
    with tempfile.TemporaryDirectory(prefix="paperrec-api-latency-") as scratch:
        data_dir = args.data_dir or Path(scratch) / "var"
        prepare(data_dir)
        for _, tree in harness.interleaved(list(trees), args.rounds):
            found = harness.run_in_checkout(trees[tree], "benchmarks.api_latency_child",
                                            [str(data_dir), str(args.requests)])
            for kind, times in found.items():
                samples[tree][kind] += times
    result: dict[str, Any] = {
        "requests_per_kind": args.requests * args.rounds,
        "trees": {tree: str(root) for tree, root in trees.items()},
        "ms": {tree: {kind: harness.percentiles(times, digits=3) for kind, times in kinds.items()}
               for tree, kinds in samples.items()},
    }
    bench.record(args, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

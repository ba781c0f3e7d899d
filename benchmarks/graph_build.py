"""The graphs of a full HNSW build: time, peak memory and recall, against another checkout.

A full ``rebuild-index`` above the exact limit centres the vectors, finds each paper's 10
augmentation neighbours, blends them (DBA), builds the served HNSW index and finds each
paper's 20 stored neighbours (``content_space.build_indexed_space``). This runs that build
on ``--papers`` synthetic vectors (``benchmarks.synthetic``, plus a common offset as raw
embeddings have) in a child process per run, in place as ``rebuild-index`` does, and reports
its phases (seconds, peak RSS), the recall of both graphs on a sample of papers against brute
force (augmentation: in the centred space; stored: in the retrieval space), and, with
``--baseline CHECKOUT``, the same for that checkout's code, the two interleaved
(``harness.interleaved``) so a shared machine slows both alike.

    python -m benchmarks.graph_build --papers 250k --baseline /path/to/main --repeats 2

The figures and what they show: docs/benchmarks/rebuild.md ("One HNSW graph").
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness
from benchmarks.synthetic import parse_size, size_label, synthetic_vectors

bench = harness.Benchmark("graph_build", __doc__)
bench.option("--papers", default="250k", quick="20k", help="synthetic papers")
bench.option("--sample", type=int, default=1000, quick=200, help="papers whose recall is checked")
bench.option("--repeats", type=int, default=1, help="runs per checkout")
bench.option("--baseline", type=Path, default=None, help="another checkout, run side by side")
bench.option("--child", action="store_true", help="(internal) one run in this process")

EXACT_MAX = 1_000  # below every size measured: the build is always the HNSW one


def child(papers: int, sample_size: int) -> dict[str, Any]:
    """One build in this process (whichever ``recommender`` is first on the path)."""
    from recommender.core.phases import PhaseClock
    from recommender.index import content_space

    raw = synthetic_vectors(papers, seed=7)
    raw += 0.05
    sample = np.random.default_rng(1).choice(papers, min(sample_size, papers), replace=False)
    clock = PhaseClock()
    started = time.perf_counter()
    space, _ = content_space.build_indexed_space(raw, EXACT_MAX, clock=clock, overwrite=True)
    seconds = time.perf_counter() - started
    del raw  # now the retrieval vectors (space.vectors); the centred ones, made again:
    centred = synthetic_vectors(papers, seed=7)
    centred += 0.05
    centred -= space.mean
    centred /= np.linalg.norm(centred, axis=1, keepdims=True)
    augment = space.augment_neighbours
    assert augment is not None
    recall = {"augmentation_10": 0.0, "stored_20": 0.0}
    for start in range(0, len(sample), 100):
        rows = sample[start:start + 100]
        recall["augmentation_10"] += _hits(centred[rows] @ centred.T, rows, augment[rows])
        recall["stored_20"] += _hits(space.vectors[rows] @ space.vectors.T, rows,
                                     space.neighbours[rows])
    return {"papers": papers, "seconds": round(seconds, 1), "phases": clock.phases,
            "recall": {k: round(v / len(sample), 4) for k, v in recall.items()}}


def _hits(sims: np.ndarray, rows: np.ndarray, found: np.ndarray) -> float:
    """Summed recall of ``found`` (one list per row) against the true top lists."""
    k = found.shape[1]
    sims = np.array(sims)
    sims[np.arange(len(rows)), rows] = -np.inf
    truth = np.argpartition(-sims, k, axis=1)[:, :k]
    return float(sum(len(set(t) & set(f)) / k for t, f in zip(truth, found, strict=True)))


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    papers = parse_size(str(args.papers))
    if args.child:
        print(json.dumps(child(papers, args.sample)))
        return 0
    here = harness.ROOT
    checkouts = {"this": here, **({"baseline": args.baseline} if args.baseline else {})}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in checkouts}
    for _, name in harness.interleaved(list(checkouts), args.repeats):
        harness.log(f"{name}: {papers} papers")
        runs[name].append(harness.run_in_checkout(
            checkouts[name], Path(__file__), ["--papers", str(papers), "--sample",
                                              str(args.sample), "--child"]))
    result: dict[str, Any] = {"papers": papers, "runs": runs}
    if args.baseline:
        result["baseline"] = str(args.baseline)
        result["seconds_ratio"] = harness.paired_ratio(
            [r["seconds"] for r in runs["baseline"]], [r["seconds"] for r in runs["this"]])
    bench.record(args, result, part=size_label(papers))
    return 0


if __name__ == "__main__":
    sys.exit(main())

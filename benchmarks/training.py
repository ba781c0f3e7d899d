"""Collaborative filtering: training and fold-in time on a citeulike-a split's training likes
(what `paperrec train` fits on a deployment of that size): ``--repeats`` fits of
``CollaborativeModel`` (median), then the fold-in a reading list makes (``scores_for`` a
reader's likes) for ``--fold-ins`` readers (p50, p99).

    python -m benchmarks.training                  # P10, about 1 min
    python -m benchmarks.training --split P1 --repeats 5

The figures and what they show: docs/benchmarks/rebuild.md ("Training the collaborative model").
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks import citeulike, harness
from recommender.ranking.collaborative import CollaborativeModel

bench = harness.Benchmark("training", __doc__)
bench.option("--split", default="P10", quick="P1", help="citeulike-a split")
bench.option("--repeats", type=int, default=3, quick=1, help="fits timed")
bench.option("--fold-ins", type=int, default=500, quick=50,
             help="readers whose scores are folded in, as a request does")


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    load_s, dataset = harness.timed(lambda: citeulike.split(args.split))
    likes = dataset.training_likes()
    fits = []
    for _ in range(args.repeats):
        seconds, model = harness.timed(lambda: CollaborativeModel.fit(likes, seed=0))
        fits.append(seconds)
    fold_ms = []
    for user in list(likes)[: args.fold_ins]:
        started = time.perf_counter()
        scores = model.scores_for(likes[user])
        fold_ms.append((time.perf_counter() - started) * 1000)
        assert np.isfinite(scores).all()
    bench.record(args, {
        "split": args.split, "users": len(likes), "papers": len(model.item_ids),
        "likes": sum(len(v) for v in likes.values()), "load_s": round(load_s, 2),
        "fit_s": {"median": harness.median(fits, 2), "all": [round(f, 2) for f in fits]},
        "fold_in_ms": harness.percentiles(fold_ms, digits=3),
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Collaborative filtering training and fold-in time on citeulike-a P10 (the split's training
likes: what `paperrec train` fits on a deployment of that size). Prints one JSON document and
writes benchmarks/results/training.json (see docs/benchmarks/rebuild.md).

    .venv/bin/python benchmarks/training.py                 # 3 fits, median
    .venv/bin/python benchmarks/training.py --split P1 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from index import machine  # noqa: E402

from recommender.evaluation.dataset import load_dataset  # noqa: E402
from recommender.ranking.collaborative import CollaborativeModel  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "citeulike-a"
RESULTS = ROOT / "benchmarks" / "results" / "training.json"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help="citeulike-a folder")
    parser.add_argument("--split", default="P10", help="split folder under splits/ (P10)")
    parser.add_argument("--repeats", type=int, default=3, help="fits timed (3)")
    parser.add_argument("--fold-ins", type=int, default=500,
                        help="users whose scores are folded in, as a request does (500)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    split = args.data / "splits" / args.split
    started = time.perf_counter()
    dataset = load_dataset(args.data / "papers.jsonl", split / "train.tsv", split / "test.tsv",
                           on_problem=lambda _: None)
    likes = dataset.training_likes()
    load_s = time.perf_counter() - started
    fits = []
    model = None
    for _ in range(args.repeats):
        started = time.perf_counter()
        model = CollaborativeModel.fit(likes, seed=0)
        fits.append(time.perf_counter() - started)
    assert model is not None
    users = list(likes)[: args.fold_ins]
    fold_ms = []
    for user in users:
        started = time.perf_counter()
        scores = model.scores_for(likes[user])
        fold_ms.append((time.perf_counter() - started) * 1000)
        assert np.isfinite(scores).all()
    report = {
        "machine": machine(),
        "command": " ".join(["benchmarks/training.py", *(sys.argv[1:] if argv is None else argv)]),
        "split": args.split,
        "users": len(likes),
        "papers": len(model.item_ids),
        "likes": sum(len(v) for v in likes.values()),
        "load_s": round(load_s, 2),
        "fit_s": {"median": round(statistics.median(fits), 2), "all": [round(f, 2) for f in fits]},
        "fold_in_ms": {"p50": round(statistics.median(fold_ms), 3),
                       "p99": round(sorted(fold_ms)[int(0.99 * (len(fold_ms) - 1))], 3)},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

"""Calibration: fit the default probability calibration (``calibration.DEFAULT``), measure it.

The production ranking (``hybrid``: ``rank`` over the service's own context) ranks the top
``calibration.DEPTH`` papers of every user of the citeulike-a splits from their training
likes; a paper is a positive when it is among the user's held-out (test) likes. The splits
differ in how many likes a user has (1 in P1, 10 in P10; 3 and 5: P10's training likes cut
to that many per user, the rest moved to test), so together they fit the like-count term
that one split alone cannot. The fit is measured the way ``paperrec evaluate`` measures
(ECE over 10 bins): cross-fitted over users (fitted on half, measured on the other half),
per split and over all; so is the default the service ships (``ece_of_shipped_default_per_split``),
which says how well it serves the model measured (``PAPERREC_MODEL``): each model is a part
of the results file.

    python -m benchmarks.calibration                                       # ~10 min, 2 cores
    PAPERREC_MODEL=all-mpnet-base-v2 python -m benchmarks.calibration      # the other model

The figures and what they show: docs/evaluation.md.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from benchmarks import citeulike, harness
from recommender.evaluation.dataset import Dataset
from recommender.evaluation.methods import TopRows, make_method
from recommender.ranking import calibration

bench = harness.Benchmark("calibration", __doc__)
bench.option("--users", type=int, default=0, quick=200,
             help="users ranked per split (the first ones with test likes); 0: all")
bench.option("--seed", type=int, default=0, help="of the cut splits and the folds")


def cut(data: Dataset, likes: int, seed: int) -> Dataset:
    """Each user's training likes cut to ``likes`` (seeded); the rest move to test."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for rows, held in zip(data.train, data.test, strict=True):
        keep = np.sort(rng.permutation(rows)[:likes])
        train.append(keep)
        test.append(np.union1d(held, np.setdiff1d(rows, keep)))
    return dataclasses.replace(data, train=train, test=test)


def observe(data: Dataset, vectors: np.ndarray, seed: int,
            users: int) -> calibration.Observations:
    method = make_method("hybrid", seed)
    method.fit(data, vectors)
    seen = calibration.Observations.empty()
    evaluated = [user for user, held in enumerate(data.test) if len(held)]
    for user in evaluated[:users or None]:
        held = data.test[user]
        output = method.scores(data.train[user])
        assert isinstance(output, TopRows) and output.z is not None
        top = slice(0, calibration.DEPTH)
        seen.add(output.z[top], len(data.train[user]), np.isin(output.rows[top], held))
    return seen


def cross_fitted_ece(seen: calibration.Observations, seed: int) -> float:
    folds = np.random.default_rng(seed).permutation(len(seen.z)) % 2
    probability, labels = [], []
    for fold in (0, 1):
        fitted = calibration.fit(*seen.arrays(np.flatnonzero(folds != fold).tolist()),
                                 source="benchmark")
        z, likes, held = seen.arrays(np.flatnonzero(folds == fold).tolist())
        probability.append(fitted.probability(z, likes))
        labels.append(held)
    return calibration.expected_calibration_error(np.concatenate(probability),
                                                  np.concatenate(labels))


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    app = harness.workspace()  # PAPERREC_MODEL and the rest from the environment
    splits = {name: citeulike.split(name) for name in ("P1", "P10")}
    for count in (3, 5):
        splits[f"P10 cut to {count}"] = cut(splits["P10"], count, args.seed)
    vectors, _ = citeulike.vectors(app, splits["P1"].papers)
    report: dict[str, Any] = {"embedding": app.embedder.variant, "seed": args.seed}
    everything = calibration.Observations.empty()
    for name, data in splits.items():
        seen = observe(data, vectors, args.seed, args.users)
        report[name] = {"items": sum(len(z) for z in seen.z),
                        "liked": round(float(np.concatenate(seen.labels).mean()), 4),
                        "ece_cross_fitted": round(cross_fitted_ece(seen, args.seed), 4)}
        everything.z += seen.z
        everything.likes += seen.likes
        everything.labels += seen.labels
        harness.log(f"{name} {report[name]}")
    fitted = calibration.fit(*everything.arrays(), source="citeulike-a P1, P10, P10 cut to 3 "
                             "and 5 likes (python -m benchmarks.calibration)")
    # This fit, and the default the service ships (fitted on the default model), per split:
    # how well the shipped one serves the model measured here.
    per_split: dict[str, dict[str, float]] = {"fitted": {}, "shipped": {}}
    start = 0
    z, likes, labels = everything.arrays()
    for name in splits:
        part = slice(start, start + report[name]["items"])
        for which, fit in (("fitted", fitted), ("shipped", calibration.DEFAULT)):
            per_split[which][name] = round(calibration.expected_calibration_error(
                fit.probability(z[part], likes[part]), labels[part]), 4)
        start += report[name]["items"]
    report.update(default=fitted.to_dict(), ece_cross_fitted_all=round(
        cross_fitted_ece(everything, args.seed), 4),
        ece_of_default_per_split=per_split["fitted"],
        ece_of_shipped_default_per_split=per_split["shipped"])
    bench.record(args, report, part=app.settings.model)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Fit the default probability calibration (``ranking.calibration.DEFAULT``) and measure it.

The production ranking (``hybrid``: ``rank`` over the service's own context) ranks the top
``calibration.DEPTH`` papers of every user of the citeulike-a splits from their training
likes; a paper is a positive when it is among the user's held-out (test) likes. The splits
differ in how many likes a user has (1 in P1, 10 in P10; 3 and 5: P10's training likes cut
to that many per user, the rest moved to test), so together they fit the like-count term
that one split alone cannot. The fit is measured the way ``paperrec evaluate`` measures
(ECE over 10 bins): cross-fitted over users (fitted on half, measured on the other half),
per split and over all; so is the default the service ships (``ece_of_shipped_default_per_split``),
which says how well it serves the model measured (``PAPERREC_MODEL``). Prints JSON; writes it
to benchmarks/results/calibration.json (--output).

    .venv/bin/python benchmarks/calibration.py            # about 10 min on 2 cores
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recommender.core.config import Settings  # noqa: E402
from recommender.embedding.encoders import shared_embedder  # noqa: E402
from recommender.evaluation.dataset import Dataset, load_dataset, paper_vectors  # noqa: E402
from recommender.evaluation.methods import TopRows, make_method  # noqa: E402
from recommender.ranking import calibration  # noqa: E402

DATA = Path("/work/shared/data/citeulike-a")


def cut(data: Dataset, likes: int, seed: int) -> Dataset:
    """Each user's training likes cut to ``likes`` (seeded); the rest move to test."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for rows, held in zip(data.train, data.test, strict=True):
        keep = np.sort(rng.permutation(rows)[:likes])
        train.append(keep)
        test.append(np.union1d(held, np.setdiff1d(rows, keep)))
    return dataclasses.replace(data, train=train, test=test)


def observe(data: Dataset, vectors: np.ndarray, seed: int) -> calibration.Observations:
    method = make_method("hybrid", seed)
    method.fit(data, vectors)
    seen = calibration.Observations.empty()
    for user, held in enumerate(data.test):
        if not len(held):
            continue
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


RESULTS = ROOT / "benchmarks" / "results" / "calibration.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=ROOT / "var",
                        help="where the embedding cache is (default: ./var)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help=f"JSON results (default: {RESULTS.relative_to(ROOT)})")
    args = parser.parse_args()
    settings = Settings.from_env(data_dir=args.data_dir)  # PAPERREC_MODEL and the rest
    embedder = shared_embedder(settings.model, settings.embed_batch_size, settings.embed_backend)
    splits = {}
    for name in ("P1", "P10"):
        folder = DATA / "splits" / name
        splits[name] = load_dataset(DATA / "papers.jsonl", folder / "train.tsv",
                                    folder / "test.tsv", on_problem=lambda _: None)
    for likes in (3, 5):
        splits[f"P10 cut to {likes}"] = cut(splits["P10"], likes, args.seed)
    vectors, _ = paper_vectors(splits["P1"].papers, embedder, settings.embedding_cache_path,
                               progress=True)
    report: dict[str, object] = {"embedding": embedder.variant, "seed": args.seed}
    everything = calibration.Observations.empty()
    for name, data in splits.items():
        seen = observe(data, vectors, args.seed)
        report[name] = {"items": sum(len(z) for z in seen.z),
                        "liked": round(float(np.concatenate(seen.labels).mean()), 4),
                        "ece_cross_fitted": round(cross_fitted_ece(seen, args.seed), 4)}
        everything.z += seen.z
        everything.likes += seen.likes
        everything.labels += seen.labels
        print(name, report[name], file=sys.stderr, flush=True)
    fitted = calibration.fit(*everything.arrays(), source="citeulike-a P1, P10, P10 cut to 3 "
                             "and 5 likes (benchmarks/calibration.py)")
    # This fit, and the default the service ships (fitted on the default model), per split:
    # how well the shipped one serves the model measured here.
    per_split: dict[str, dict[str, float]] = {"fitted": {}, "shipped": {}}
    start = 0
    z, likes, labels = everything.arrays()
    for name in splits:
        items = report[name]["items"]  # type: ignore[index]
        part = slice(start, start + items)
        for which, fit in (("fitted", fitted), ("shipped", calibration.DEFAULT)):
            per_split[which][name] = round(calibration.expected_calibration_error(
                fit.probability(z[part], likes[part]), labels[part]), 4)
        start += items
    report.update(default=fitted.to_dict(), ece_cross_fitted_all=round(
        cross_fitted_ece(everything, args.seed), 4),
        ece_of_default_per_split=per_split["fitted"],
        ece_of_shipped_default_per_split=per_split["shipped"])
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

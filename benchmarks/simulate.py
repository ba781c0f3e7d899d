"""Simulate: `paperrec simulate` on citeulike-a P10, interleaving and calibration from the log.

Two parts, run apart (each in its own process; both can run at once on 2 cores):

- ``main``: hybrid (production) against popular, --users readers for --days days of
  interleaved digests, then --days more of production alone with the probability refitted on
  the simulation's own log (``jobs.calibrate_from_log``): the verdict, the impressions from
  which it stayed significant, cumulative likes per variant per day, and the ECE of the
  probability shown in the next month.
- ``aa``: hybrid against itself (the A/A check), --aa-seeds runs over one deployment, each
  with --aa-users readers of its own (disjoint draws) for --aa-days days: how many runs
  report a significant difference (at most 5% should).

    python -m benchmarks.simulate --part main      # ~35 min on 2 cores (500 readers, 2 x 30 days)
    python -m benchmarks.simulate --part aa        # ~15 min (20 runs of 50 readers, 10 days)

The figures and what they show: docs/benchmarks/online.md.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from benchmarks import citeulike, harness
from recommender.ranking import calibration
from recommender.simulation.deployment import deployment
from recommender.simulation.simulator import START, SimulationOptions, simulate

bench = harness.Benchmark("simulate", __doc__)
bench.option("--part", choices=("main", "aa"), required=True, help="which part to run")
bench.option("--split", default="P10", help="citeulike-a split")
bench.option("--users", type=int, default=500, quick=30, help="main: readers")
bench.option("--days", type=int, default=30, quick=3, help="main: days (and as many after)")
bench.option("--candidate", default="popular", help="main: variant B against hybrid")
bench.option("--aa-seeds", type=int, default=20, quick=2, help="aa: runs")
bench.option("--aa-users", type=int, default=50, quick=10, help="aa: readers per run")
bench.option("--aa-days", type=int, default=10, quick=2, help="aa: days per run")
bench.option("--seed", type=int, default=0, help="main: the seed; aa: the first seed")


def main() -> None:
    args = bench.parse()
    app = harness.workspace()
    data = citeulike.split(args.split)
    vectors, _ = citeulike.vectors(app, data.papers, progress=False)
    settings = app.settings
    started = time.perf_counter()
    with deployment(data, vectors, settings, app.embedder, START, progress=False) as sim:
        setup = round(time.perf_counter() - started, 1)
        if args.part == "main":
            options = SimulationOptions(users=args.users, days=args.days,
                                        variants=("hybrid", args.candidate), seed=args.seed)
            result: dict[str, Any] = {"split": args.split, "setup_seconds": setup,
                                      **simulate(sim, data, vectors, options, progress=True)}
            result["calibration"]["other_fits_next_month"] = other_fits(sim, args.days)
        else:
            result = {"split": args.split, "setup_seconds": setup,
                      **a_a_check(sim, data, vectors, args)}
    bench.record(args, result, part=args.part)


def other_fits(sim: Any, days: int) -> dict[str, float]:
    """ECE over the next month's production items (the log: their z and likes do not depend
    on the probability served) of other fits of the first month's log: the likes term left
    out, the shipped default, the held-out-likes fit the first month served."""
    liked = {(o.list_id, o.paper) for o in sim.events.outcomes() if o.kind == "like"}
    items = np.asarray([(s.at, s.z[i], s.likes, (s.list_id, p) in liked)
                        for s in sim.events.lists() for i, p in enumerate(s.papers)
                        if s.variants[i] == "hybrid" and np.isfinite(s.z[i])], np.float64)
    first = items[items[:, 0] < START + days * 86400.0]
    after = items[items[:, 0] >= START + days * 86400.0]

    def ece(fitted: calibration.Calibration) -> float:
        return round(calibration.expected_calibration_error(
            fitted.probability(after[:, 1], after[:, 2]), after[:, 3]), 4)

    z_only = calibration.fit(first[:, 1], np.zeros(len(first)), first[:, 3], "z only")
    return {"log_z_only": ece(dataclasses.replace(z_only, likes=0.0, base_rate=1.0)),
            "shipped_default": ece(calibration.DEFAULT),
            "first_month_share_liked": round(float(first[:, 3].mean()), 4),
            "next_month_share_liked": round(float(after[:, 3].mean()), 4)}


def a_a_check(sim: Any, data: Any, vectors: np.ndarray, args: Any) -> dict[str, Any]:
    """--aa-seeds A/A runs over one deployment, each with readers of its own."""
    eligible = [user for user, train, test in zip(data.users, data.train, data.test,
                                                  strict=True) if len(train) and len(test)]
    order = np.random.default_rng(args.seed).permutation(len(eligible))
    runs = []
    for run in range(args.aa_seeds):
        mine = [eligible[i] for i in order[run * args.aa_users:(run + 1) * args.aa_users]]
        options = SimulationOptions(users=args.aa_users, days=args.aa_days,
                                    variants=("hybrid", "hybrid"), seed=args.seed + run,
                                    next_month=False)
        found = simulate(sim, data, vectors, options, progress=False, among=mine)
        verdict = found["interleaving"]
        runs.append({"seed": args.seed + run, "significant": verdict["significant"],
                     "p_value": round(verdict["p_value"], 4),
                     "impressions": verdict["impressions"], "lists_won": verdict["lists_won"],
                     "likes": found["likes"]})
        harness.log(f"A/A run {run + 1}/{args.aa_seeds}: p = {verdict['p_value']:.3f}")
    significant = sum(run["significant"] for run in runs)
    return {"aa": {"runs": len(runs), "significant": significant,
                   "not_significant_share": round(1 - significant / len(runs), 3),
                   "readers_per_run": args.aa_users, "days_per_run": args.aa_days,
                   "each": runs}}


if __name__ == "__main__":
    main()

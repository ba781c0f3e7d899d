"""`paperrec evaluate`: the offline evaluation on a dataset of papers and held-out likes."""

from __future__ import annotations

import argparse
import sys

from recommender import wiring
from recommender.core.config import Settings
from recommender.evaluation import dataset, runner

MAX_PROBLEMS_SHOWN = 20


def load(args: argparse.Namespace) -> dataset.Dataset:
    """The dataset of ``--papers``, ``--train`` and ``--test``, its problems (bad records,
    unknown papers) on stderr, the first MAX_PROBLEMS_SHOWN of them."""
    problems = 0

    def report(problem: str) -> None:
        nonlocal problems
        problems += 1
        if problems <= MAX_PROBLEMS_SHOWN:
            print(problem, file=sys.stderr)

    data = dataset.load_dataset(args.papers, args.train, args.test, on_problem=report)
    if problems > MAX_PROBLEMS_SHOWN:
        print(f"... and {problems - MAX_PROBLEMS_SHOWN} more problems", file=sys.stderr)
    return data


def evaluate(args: argparse.Namespace, settings: Settings) -> int:
    data = load(args)
    result = wiring.build(settings).evaluate(data, args.methods, seed=args.seed,
                                             index=args.index, new_papers=args.new_papers,
                                             onboarding=args.onboarding,
                                             interests=args.interests,
                                             progress=not args.quiet)
    runner.write_report(result, args.json)
    print(runner.render_table(result))
    print(f"evaluate: wrote {args.json}")
    return 0

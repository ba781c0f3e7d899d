"""`paperrec simulate`: a dataset's readers replayed day by day against a real deployment
(``recommender.simulation``)."""

from __future__ import annotations

import argparse
import json

from recommender.core.config import Settings
from recommender.core.errors import InvalidInput
from recommender.storage.versions import write_atomically


def simulate(args: argparse.Namespace, settings: Settings) -> int:
    if args.service:
        return _service(args)
    missing = [flag for flag, value in (("--papers", args.papers), ("--train", args.train),
                                        ("--test", args.test), ("--json", args.json))
               if value is None]
    if missing:
        raise InvalidInput(f"paperrec simulate needs {', '.join(missing)} (or --service URL "
                           f"to simulate readers of a running service)")
    from recommender.simulation.simulator import SimulationOptions, run_simulation

    from .evaluate import load

    data = load(args)
    options = SimulationOptions(users=args.users or 500, days=args.days,
                                variants=(args.variants[0], args.variants[1]), seed=args.seed,
                                skip_chance=args.skip_chance, next_month=not args.no_next_month)
    result = run_simulation(settings, data, options, progress=not args.quiet)
    result["settings"].update(papers_file=str(args.papers), train_file=str(args.train),
                              test_file=str(args.test))
    text = json.dumps(result, indent=2) + "\n"
    args.json.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(args.json, lambda handle: handle.write(text.encode()))
    print(summary(result))
    print(f"simulate: wrote {args.json}")
    return 0


def _service(args: argparse.Namespace) -> int:
    """Simulated readers of the service at ``--service`` (``service_readers``)."""
    from recommender.simulation.service_readers import ServiceRun, drive, forget

    run = ServiceRun(args.service, users=args.users or 20, rounds=args.rounds,
                     skip_chance=args.skip_chance, seed=args.seed, api_key=args.api_key)
    if args.forget:
        print(f"simulate: erased {forget(run)} simulated readers from {args.service}")
        return 0
    done = drive(run, progress=not args.quiet).to_dict()
    print(f"simulate: {done['readers']} readers of {args.service} asked for {done['lists']} "
          f"lists ({done['impressions']} papers) and liked {done['likes']} (like rate "
          f"{done['like_rate']}); `paperrec report` and /admin/online show what they did")
    if args.json is not None:
        text = json.dumps(done, indent=2) + "\n"
        write_atomically(args.json, lambda handle: handle.write(text.encode()))
    return 0


def summary(result: dict[str, object]) -> str:
    """A few lines: the verdict, the likes per variant, the calibration."""
    verdict = result["interleaving"]
    assert isinstance(verdict, dict)
    lines = [f"interleaving: {verdict['text']}"]
    variants = result["variants"]
    assert isinstance(variants, dict)
    for name, figures in variants.items():
        lines.append(f"  {figures['side']} {name}: {figures['likes']} likes in "
                     f"{len(figures['likes_by_day'])} days, like rate@10 "
                     f"{figures['like_rate@10']}")
    calibration = result.get("calibration")
    if isinstance(calibration, dict):
        lines.append(f"calibration ({calibration['source']}): ECE {calibration['ece_next_month']}"
                     f" over {calibration['items_next_month']} items of the next month")
    lines.append(f"{result['seconds']} s")
    return "\n".join(lines)

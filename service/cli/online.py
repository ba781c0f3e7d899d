"""`paperrec report`, `export-events` and `experiment`: the online figures and experiments
(recommender.online; docs/deployment/online.md)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from recommender import wiring
from recommender.core.config import Settings
from recommender.ranking.variants import PRODUCTION

COLUMNS = (("lists", "lists", "d"), ("impressions", "papers", "d"),
           ("like_rate@1", "like@1", "r"), ("like_rate@5", "like@5", "r"),
           ("like_rate@10", "like@10", "r"), ("dislike_rate", "dislike", "r"),
           ("coverage", "coverage", "r"), ("new_served", "new srv", "r"),
           ("new_liked", "new liked", "r"))


def report(args: argparse.Namespace, settings: Settings) -> int:
    found = wiring.build(settings).report(time.time(), days=None if args.all else args.days)
    data = found.to_dict()
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(render_report(data, "the whole log" if args.all else f"the last {args.days} days"))
    return 0


def render_report(data: dict[str, Any], window: str) -> str:
    """The report as the terminal shows it: a table per variant and surface, then the new
    readers, the experiments and the calibration."""
    lines = [f"online figures of {window}: {data['lists']} lists served, {data['outcomes']} "
             f"outcomes logged ({data['unmatched_outcomes']} naming no list served to that "
             f"reader); corpus of {data['corpus_papers']} papers", ""]
    if not data["variants"]:
        lines.append("no lists served in this window yet")
    else:
        header = f"{'variant':<20} {'surface':<7}" + "".join(
            f" {title:>9}" for _, title, _ in COLUMNS)
        lines += [header, "-" * len(header)]
        for variant, surfaces in data["variants"].items():
            for surface, figures in surfaces.items():
                lines.append(f"{variant:<20} {surface:<7}" + "".join(
                    f" {_cell(figures.get(key), kind):>9}" for key, _, kind in COLUMNS))
    new = data["new_readers"]
    hours = new["median_hours_to_first_like"]
    lines += ["", f"new readers: {new['readers']} got their first list; {new['liked']} liked a "
              f"paper within {new['liked_within_days']} days"
              + (f" (median {hours:g} hours after their first list)" if hours is not None
                 else "")]
    lines += ["", "experiments:" if data["experiments"] else "experiments: none started"]
    lines += [f"  {line}" for e in data["experiments"] for line in experiment_lines(e)]
    calibration = data["calibration"]
    if calibration["ece"] is None:
        lines += ["", "calibration: no probabilities served in this window yet"]
    else:
        lines += ["", f"calibration: ECE {calibration['ece']:.4f} over {calibration['items']} "
                  f"papers served with a probability (0: each probability shown was the share "
                  f"liked)"]
    return "\n".join(lines)


def experiment_lines(result: dict[str, Any]) -> list[str]:
    """An experiment (a ``report`` entry) in two lines: what, when, and its verdict."""
    started = _when(result["started_at"])
    state = (f"stopped {_when(result['stopped_at'])}" if result.get("stopped_at") is not None
             else "running")
    verdict = result["verdict"]
    what = "lists won" if result["mode"] == "interleave" else "readers"
    rate = ("win rate" if result["mode"] == "interleave" else "like rate@10")
    return [f"{result['id']}: {result['candidate']} against {result['production']} "
            f"({result['mode']}"
            + (f", {result['share']:g} of readers on the candidate" if result["mode"] == "ab"
               else "") + f"), started {started}, {state}",
            f"    {verdict['text']}; {what}: {result['production']} {verdict['production_wins']}, "
            f"{result['candidate']} {verdict['candidate_wins']}"
            + (f", ties {verdict['ties']}" if result["mode"] == "interleave" else "")
            + (f"; candidate's {rate} {verdict['candidate_win_rate']:.3f} "
               f"(95% interval {verdict['low']:.3f} to {verdict['high']:.3f})"
               if verdict["production_wins"] + verdict["candidate_wins"] else "")]


def export_events(args: argparse.Namespace, settings: Settings) -> int:
    print(f"export-events: {wiring.build(settings).export_events(time.time())}")
    return 0


def experiment(args: argparse.Namespace, settings: Settings) -> int:
    app = wiring.build(settings)
    now = time.time()
    if args.action == "start":
        started = app.start_experiment(args.candidate, now, mode=args.mode, share=args.share)
        print(f"experiment: started {started.id}: {started.candidate} against "
              f"{started.production} ({started.mode}), from the next list on")
        return 0
    if args.action == "stop":
        stopped = app.stop_experiment(now)
        print(f"experiment: stopped {stopped.id}" if stopped else
              "experiment: none was running")
        return 0
    running = app.experiments.current()
    candidates = [name for name in app.variants if name != PRODUCTION]
    print(f"running: {running.id}" if running else
          f"running: none (start one with `paperrec experiment start CANDIDATE`; candidates: "
          f"{', '.join(candidates)})")
    for result in app.verdicts(now):
        print("\n".join(experiment_lines(result)))
    return 0


def _cell(value: object, kind: str) -> str:
    if value is None:
        return "-"
    return f"{value:d}" if kind == "d" else f"{value:.3f}"


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))

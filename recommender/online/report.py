"""The online figures: what the lists served did, per ranking variant, surface and day, from
the impression log (``events``).

Each outcome is joined to the list it names and to the paper's place on it: an outcome that
names a list the reader was not served, or a paper that list did not show, counts nowhere (a
reader cannot credit a ranking with a list it never made). A reader liking the same paper of
the same list twice counts once.

Figures, per variant and surface (``all``: every surface), and per day (per variant and
surface, ``all`` too):

- ``lists``: lists served with at least one paper of the variant; ``impressions``: papers
  served; ``likes``, ``dislikes``, ``not_now``, ``opens`` (paper pages opened and email or
  feed links followed);
- ``like_rate@1``, ``@5``, ``@10``: likes of the papers at places 1 to N over the papers
  served there (so each is a rate per paper shown, as a click-through rate);
  ``dislike_rate``: dislikes over papers served;
- ``coverage``: distinct papers served over the papers in the corpus;
- ``new_served``: the share of papers served that were new (published in the week before),
  ``new_liked``: the share of likes that went to new papers.

Beside them: the like rate by place (1 to ``PLACES``) per variant, the time from a new
reader's first list to their first like, each experiment's verdict (``experiments``), and
how well the probability shown matched what readers liked (``calibration``).
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from statistics import median
from typing import Any

import numpy as np

from recommender.online.events import EventLog, OutcomeEvent, ServedList
from recommender.online.experiments import (
    Experiment,
    Verdict,
    ab_verdict,
    interleaving_verdict,
)

CUTS = (1, 5, 10)
PLACES = 20  # like rate by place, 1 to this
CREDIT = ("like", "open", "click")  # what credits a ranking in an interleaved list
BINS = 10  # calibration's reliability bins
ALL = "all"
NEW_READER_DAYS = 7  # a reader's first like counts if it comes within this of their first list


@dataclass
class Tally:
    lists: int = 0
    impressions: int = 0
    likes: int = 0
    dislikes: int = 0
    not_now: int = 0
    opens: int = 0
    new_served: int = 0
    new_liked: int = 0
    shown_at: list[int] = field(default_factory=lambda: [0] * len(CUTS))
    liked_at: list[int] = field(default_factory=lambda: [0] * len(CUTS))
    papers: set[str] = field(default_factory=set)

    def figures(self, corpus_papers: int) -> dict[str, Any]:
        out: dict[str, Any] = {"lists": self.lists, "impressions": self.impressions,
                               "likes": self.likes, "dislikes": self.dislikes,
                               "not_now": self.not_now, "opens": self.opens}
        for cut, shown, liked in zip(CUTS, self.shown_at, self.liked_at, strict=True):
            out[f"like_rate@{cut}"] = _rate(liked, shown)
        out["dislike_rate"] = _rate(self.dislikes, self.impressions)
        out["coverage"] = _rate(len(self.papers), corpus_papers)
        out["new_served"] = _rate(self.new_served, self.impressions)
        out["new_liked"] = _rate(self.new_liked, self.likes)
        return out


@dataclass
class _Interleaved:
    production_wins: int = 0
    candidate_wins: int = 0
    ties: int = 0
    impressions: int = 0


@dataclass
class Report:
    since: float | None
    until: float
    corpus_papers: int
    variants: dict[str, dict[str, dict[str, Any]]]
    days: list[dict[str, Any]]
    places: dict[str, list[float | None]]
    new_readers: dict[str, Any]
    experiments: list[dict[str, Any]]
    calibration: dict[str, Any]
    lists: int
    outcomes: int
    unmatched_outcomes: int  # naming a list or paper that was not served to that reader

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_report(log: EventLog, corpus_papers: int, now: float, *,
                 since: float | None = None,
                 experiments: Sequence[Experiment] = ()) -> Report:
    """The figures of the events from ``since`` (unix time; None: all) to ``now``."""
    return summarise(log.lists(since), log.outcomes(since), corpus_papers, now, since=since,
                     experiments=experiments)


def summarise(lists: Iterable[ServedList], outcomes: Iterable[OutcomeEvent],
              corpus_papers: int, now: float, *, since: float | None = None,
              experiments: Sequence[Experiment] = ()) -> Report:
    """``build_report`` over events given (the simulator's, a test's)."""
    # Outcomes first (few), by list and reader: (list id, user) -> paper -> kinds; then the
    # lists, once.
    done: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    first_like: dict[str, float] = {}
    total_outcomes = 0
    for outcome in outcomes:
        if since is not None and outcome.at < since:
            continue
        total_outcomes += 1
        done[(outcome.list_id, outcome.user)][outcome.paper].add(outcome.kind)
        if outcome.kind == "like":
            first_like[outcome.user] = min(first_like.get(outcome.user, math.inf), outcome.at)
    tallies: dict[tuple[str, str], Tally] = defaultdict(Tally)
    daily: dict[tuple[str, str, str], Tally] = defaultdict(Tally)
    place_shown: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(PLACES, np.int64))
    place_liked: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(PLACES, np.int64))
    first_list: dict[str, float] = {}
    interleaved: dict[str, _Interleaved] = defaultdict(_Interleaved)
    reader_rates: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(
        lambda: [0, 0]))  # experiment -> "variant\0user" -> [liked, shown] at places <= 10
    calibration: list[tuple[float, int]] = []
    matched = 0
    seen_lists: set[str] = set()
    by_id = {e.id: e for e in experiments}
    count_lists = 0
    for served in lists:
        if (since is not None and served.at < since) or served.list_id in seen_lists:
            continue
        seen_lists.add(served.list_id)
        count_lists += 1
        first_list[served.user] = min(first_list.get(served.user, math.inf), served.at)
        actions = done.get((served.list_id, served.user))
        day = _day(served.at)
        variants_here = set()
        credits = [0, 0]
        experiment = by_id.get(served.experiment)
        for i, paper in enumerate(served.papers):
            variant = served.variants[i] if i < len(served.variants) else ""
            place = served.offset + i + 1
            kinds = actions.get(paper, set()) if actions else set()
            if kinds:
                matched += len(kinds)
            liked = "like" in kinds
            new = i < len(served.new) and served.new[i]
            for tally in (tallies[(variant, served.surface)], tallies[(variant, ALL)],
                          daily[(day, variant, served.surface)], daily[(day, variant, ALL)]):
                _count(tally, paper, place, kinds, new, variant not in variants_here)
            variants_here.add(variant)
            if place <= PLACES:
                place_shown[variant][place - 1] += 1
                place_liked[variant][place - 1] += liked
            if i < len(served.probability) and served.probability[i] == served.probability[i]:
                calibration.append((served.probability[i], int(liked)))
            if experiment is not None and kinds & set(CREDIT):
                if variant == experiment.production:
                    credits[0] += 1
                elif variant == experiment.candidate:
                    credits[1] += 1
            if experiment is not None and experiment.mode == "ab" and place <= 10:
                rate = reader_rates[experiment.id][f"{variant}\0{served.user}"]
                rate[0] += liked
                rate[1] += 1
        if experiment is not None and experiment.mode == "interleave":
            tally_i = interleaved[experiment.id]
            tally_i.impressions += len(served.papers)
            if credits[0] > credits[1]:
                tally_i.production_wins += 1
            elif credits[1] > credits[0]:
                tally_i.candidate_wins += 1
            else:
                tally_i.ties += 1
    variants: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for (variant, surface), tally in sorted(tallies.items()):
        variants[variant][surface] = tally.figures(corpus_papers)
    days = [{"day": day, "variant": variant, "surface": surface, **tally.figures(corpus_papers)}
            for (day, variant, surface), tally in sorted(daily.items())]
    places = {variant: [_rate(int(place_liked[variant][p]), int(shown[p]))
                        for p in range(PLACES)] for variant, shown in sorted(place_shown.items())}
    waits = [first_like[user] - start for user, start in first_list.items()
             if user in first_like and 0 <= first_like[user] - start
             <= NEW_READER_DAYS * 86400]
    new_readers = {"readers": len(first_list), "liked_within_days": NEW_READER_DAYS,
                   "liked": len(waits),
                   "median_hours_to_first_like": round(median(waits) / 3600, 2)
                   if waits else None}
    return Report(since, now, corpus_papers, dict(variants), days, places, new_readers,
                  [_experiment_result(e, interleaved.get(e.id), reader_rates.get(e.id))
                   for e in experiments], reliability(calibration), count_lists,
                  total_outcomes, total_outcomes - matched)


def _count(tally: Tally, paper: str, place: int, kinds: set[str], new: bool,
           first_of_list: bool) -> None:
    tally.lists += first_of_list
    tally.impressions += 1
    tally.papers.add(paper)
    liked = "like" in kinds
    tally.likes += liked
    tally.dislikes += "dislike" in kinds
    tally.not_now += "not-now" in kinds
    tally.opens += bool(kinds & {"open", "click"})
    tally.new_served += new
    tally.new_liked += new and liked
    for c, cut in enumerate(CUTS):
        if place <= cut:
            tally.shown_at[c] += 1
            tally.liked_at[c] += liked


def _experiment_result(experiment: Experiment, interleaved: _Interleaved | None,
                       rates: dict[str, list[int]] | None) -> dict[str, Any]:
    verdict: Verdict
    if experiment.mode == "interleave":
        found = interleaved or _Interleaved()
        verdict = interleaving_verdict(experiment.production, experiment.candidate,
                                       found.production_wins, found.candidate_wins,
                                       found.ties, found.impressions)
    else:
        by_side: dict[str, list[float]] = {experiment.production: [], experiment.candidate: []}
        shown = 0
        for key, (liked, seen) in (rates or {}).items():
            variant = key.partition("\0")[0]
            if variant in by_side and seen:
                by_side[variant].append(liked / seen)
                shown += seen
        verdict = ab_verdict(experiment.production, experiment.candidate,
                             by_side[experiment.production], by_side[experiment.candidate],
                             shown)
    return {**asdict(experiment), "verdict": {**asdict(verdict), "text": verdict.text}}


def reliability(pairs: Sequence[tuple[float, int]]) -> dict[str, Any]:
    """How the probability shown compares with the share liked: the expected calibration
    error over ``BINS`` equal-width bins, and each bin's (mean probability, share liked,
    papers)."""
    if not pairs:
        return {"items": 0, "ece": None, "bins": []}
    probability = np.asarray([p for p, _ in pairs], np.float64)
    labels = np.asarray([y for _, y in pairs], np.float64)
    which = np.minimum((probability * BINS).astype(np.int64), BINS - 1)
    bins = []
    error = 0.0
    for b in range(BINS):
        inside = which == b
        if inside.any():
            mean_p, share = float(probability[inside].mean()), float(labels[inside].mean())
            error += inside.sum() * abs(share - mean_p)
            bins.append({"probability": round(mean_p, 4), "liked": round(share, 4),
                         "items": int(inside.sum())})
    return {"items": len(pairs), "ece": round(error / len(pairs), 4), "bins": bins}


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _day(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).date().isoformat()

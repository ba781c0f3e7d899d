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
from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from statistics import median
from typing import Any

import numpy as np

from recommender.online.events import EventLog
from recommender.online.experiments import (
    Experiment,
    Verdict,
    ab_verdict,
    interleaving_verdict,
)

CUTS = (1, 5, 10)
PLACES = 20  # like rate by place, 1 to this
BINS = 10  # calibration's reliability bins
ALL = "all"
NEW_READER_DAYS = 7  # a reader's first like counts if it comes within this of their first list
# What a reader did with a paper served, as bits (the figures read the first byte).
LIKE, DISLIKE, NOT_NOW, OPEN, CLICK = 1, 2, 4, 8, 16
BITS = {"like": LIKE, "dislike": DISLIKE, "not-now": NOT_NOW, "open": OPEN, "click": CLICK}
CREDIT = LIKE | OPEN | CLICK  # what credits a ranking in an interleaved list


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
    """The figures of the events from ``since`` (unix time; None: all) to ``now``. The events
    are read as logged (``EventLog.list_records``, ``outcome_records``), not as
    ``ServedList`` and ``OutcomeEvent``: a report reads millions of them."""
    outcomes = _Outcomes(since)
    for data in log.outcome_records(since):
        outcomes.add(data["k"], data["u"], data["l"], data["p"], float(data["t"]))
    columns = _Columns(outcomes, experiments, since)
    columns.read(log.list_records(since, scores=False))
    return columns.report(corpus_papers, now, since)


class _Outcomes:
    """The outcomes (few), read before the lists: (list id, user) -> paper -> the kinds done
    (bits, ``BITS``; a kind of another name gets a bit of its own); each reader's first
    like."""

    def __init__(self, since: float | None) -> None:
        self.since = -math.inf if since is None else since
        self.done: dict[tuple[str, str], dict[str, int]] = {}
        self.first_like: dict[str, float] = {}
        self.total = 0
        self.bits = dict(BITS)

    def add(self, kind: str, user: str, list_id: str, paper: str, at: float) -> None:
        if at < self.since:
            return
        self.total += 1
        bit = self.bits.get(kind)
        if bit is None:
            bit = self.bits[kind] = 1 << len(self.bits)
        papers = self.done.get((list_id, user))
        if papers is None:
            papers = self.done[(list_id, user)] = {}
        papers[paper] = papers.get(paper, 0) | bit
        if kind == "like" and at < self.first_like.get(user, math.inf):
            self.first_like[user] = at


def _codes() -> defaultdict[str, int]:
    """Names to small integers, a new name getting the next (``map(codes.__getitem__, ...)``
    codes a list of names without a Python loop)."""
    codes: defaultdict[str, int] = defaultdict()
    codes.default_factory = codes.__len__
    return codes


class _Columns:
    """The lists served as columns: per list (its length, first place, surface, day, reader,
    experiment) and per paper served (paper, variant, probability shown, new, what the reader
    did with it), coded as small integers; the figures are counted over them with numpy. Each
    outcome is joined to its paper as the list is read."""

    def __init__(self, outcomes: _Outcomes, experiments: Sequence[Experiment],
                 since: float | None) -> None:
        self.outcomes = outcomes
        self.experiments = list(experiments)
        self.by_id = {e.id: n for n, e in enumerate(self.experiments)}
        self.interleaved = [_Interleaved() for _ in self.experiments]
        self.since = -math.inf if since is None else since
        self.papers, self.variants, self.surfaces = _codes(), _codes(), _codes()
        self.days, self.users = _codes(), _codes()
        self.seen: set[str] = set()
        self.first_list: dict[str, float] = {}
        self.matched = 0
        self.size = 0  # papers served so far
        # per list
        self.length, self.offset, self.day, self.user = (array("i"), array("i"),
                                                         array("i"), array("i"))
        self.surface, self.experiment = array("h"), array("h")
        # per paper served
        self.paper, self.variant = array("i"), array("h")
        self.probability = array("d")
        self.new: list[str] = []
        self.marked, self.bits = array("q"), array("B")  # papers with an outcome

    def read(self, records: Iterable[dict[str, Any]]) -> None:
        """Add the lists served, each as logged (``ServedList.to_json``: ``v`` one variant
        for all its papers or one per paper, ``new`` a character per paper, "1": new). The
        loop the report spends its time in: every name it uses is bound once."""
        since, seen, first_list, inf = self.since, self.seen, self.first_list, math.inf
        day_codes: dict[int, int] = {}  # unix day -> the code of its date
        days, users, surfaces, variants = self.days, self.users, self.surfaces, self.variants
        paper_code, variant_code = self.papers.__getitem__, variants.__getitem__
        by_id, done = self.by_id, self.outcomes.done
        interleave = {n for n, e in enumerate(self.experiments) if e.mode == "interleave"}
        add_length, add_offset, add_day = (self.length.append, self.offset.append,
                                           self.day.append)
        add_user, add_surface, add_experiment = (self.user.append, self.surface.append,
                                                 self.experiment.append)
        add_papers, add_variants = self.paper.extend, self.variant.extend
        add_probability, add_new = self.probability.extend, self.new.append
        size = self.size
        for data in records:
            list_id, at = data["l"], float(data["t"])
            if at < since or list_id in seen:
                continue
            seen.add(list_id)
            user = data["u"]
            if at < first_list.get(user, inf):
                first_list[user] = at
            papers = data["p"]
            n = len(papers)
            day = day_codes.get(int(at // 86400))
            if day is None:
                day = day_codes[int(at // 86400)] = days[_day(at)]
            experiment = by_id.get(data.get("x", ""), -1)
            add_length(n)
            add_offset(int(data.get("o", 0)))
            add_day(day)
            add_user(users[user])
            add_surface(surfaces[data["s"]])
            add_experiment(experiment)
            add_papers(map(paper_code, papers))
            names = data["v"]
            if isinstance(names, str):
                add_variants([variants[names]] * n)
            else:
                add_variants(map(variant_code, [*names[:n], *[""] * (n - len(names))]))
            shown = data.get("q", ())
            add_probability(shown if len(shown) == n
                            else [*shown[:n], *[math.nan] * (n - len(shown))])
            new = data.get("new", "")
            add_new(new if len(new) == n else (new + "0" * n)[:n])
            actions = done.get((list_id, user))
            if actions:
                self._join(actions, papers, size)
            if experiment in interleave:
                self._credit(self.experiments[experiment], self.interleaved[experiment],
                             papers, names, actions)
            size += n
        self.size = size

    def _join(self, actions: dict[str, int], papers: Sequence[str], start: int) -> None:
        """The outcomes of a list's papers, as bits of their rows."""
        for i, paper in enumerate(papers):
            bits = actions.get(paper)
            if bits:
                self.matched += bits.bit_count()
                self.marked.append(start + i)
                self.bits.append(bits & 0xFF)

    @staticmethod
    def _credit(experiment: Experiment, tally: _Interleaved, papers: Sequence[str],
                variants: str | Sequence[str], actions: dict[str, int] | None) -> None:
        """An interleaved list is won by the team credited with more likes, opens and clicks
        of its papers."""
        tally.impressions += len(papers)
        credits = [0, 0]
        for i, paper in enumerate(papers if actions else ()):
            if actions and actions.get(paper, 0) & CREDIT:
                variant = variants if isinstance(variants, str) else (
                    variants[i] if i < len(variants) else "")
                if variant == experiment.production:
                    credits[0] += 1
                elif variant == experiment.candidate:
                    credits[1] += 1
        if credits[0] > credits[1]:
            tally.production_wins += 1
        elif credits[1] > credits[0]:
            tally.candidate_wins += 1
        else:
            tally.ties += 1

    def report(self, corpus_papers: int, now: float, since: float | None) -> Report:
        width = np.int32 if self.size < 2**31 else np.int64
        lengths = _column(self.length)
        of_list = np.repeat(np.arange(len(lengths), dtype=width), lengths)  # each paper's list
        starts = (np.cumsum(lengths, dtype=width) - lengths).astype(width)
        place = _column(self.offset)[of_list] + np.arange(self.size, dtype=width) \
            - starts[of_list] + 1
        del starts
        variant = _column(self.variant).astype(np.int64)  # groups as bincount wants them
        n_variants, n_surfaces = len(self.variants), len(self.surfaces)
        by_surface = variant * n_surfaces + _column(self.surface)[of_list]
        by_day = _column(self.day)[of_list].astype(np.int64) * (n_variants * n_surfaces) \
            + by_surface
        bits = np.zeros(self.size, np.uint8)
        bits[_column(self.marked)] = _column(self.bits)
        liked = (bits & LIKE) != 0
        new = np.frombuffer("".join(self.new).encode("ascii", "replace"), np.uint8) == ord("1")
        # The first paper of each variant in its list: that list counts for the variant.
        # (A list's papers are consecutive rows: the first row of each run of one list among
        # the rows of a variant.)
        first = np.zeros(self.size, bool)
        for code in range(n_variants):
            served = np.flatnonzero(variant == code)
            runs = np.ones(len(served), bool)
            np.not_equal(of_list[served[1:]], of_list[served[:-1]], out=runs[1:])
            first[served[runs]] = True
        counts = _Counts(first, bits, liked, new, place)
        distinct = _distinct(by_day, _column(self.paper), len(self.papers),
                             n_variants * n_surfaces, n_surfaces)
        variant_names, surface_names = list(self.variants), list(self.surfaces)
        rows = []
        for group, figures in counts.figures(by_surface, n_variants * n_surfaces,
                                             distinct[1], corpus_papers):
            rows.append((variant_names[group // n_surfaces], surface_names[group % n_surfaces],
                         figures))
        for group, figures in counts.figures(variant, n_variants, distinct[2], corpus_papers):
            rows.append((variant_names[group], ALL, figures))
        variants: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        for name, surface, figures in sorted(rows, key=lambda row: row[:2]):
            variants[name][surface] = figures
        day_names = list(self.days)
        n_days = len(day_names)
        days = [{"day": day_names[group // (n_variants * n_surfaces)],
                 "variant": variant_names[group // n_surfaces % n_variants],
                 "surface": surface_names[group % n_surfaces], **figures}
                for group, figures in counts.figures(by_day, n_days * n_variants * n_surfaces,
                                                     distinct[0], corpus_papers)]
        days += [{"day": day_names[group // n_variants], "variant": variant_names[
                    group % n_variants], "surface": ALL, **figures}
                 for group, figures in counts.figures(by_day // n_surfaces,
                                                      n_days * n_variants, distinct[3],
                                                      corpus_papers)]
        days.sort(key=lambda row: (row["day"], row["variant"], row["surface"]))
        probability = _column(self.probability)
        shown = ~np.isnan(probability)
        waits = [self.outcomes.first_like[user] - start
                 for user, start in self.first_list.items()
                 if user in self.outcomes.first_like
                 and 0 <= self.outcomes.first_like[user] - start <= NEW_READER_DAYS * 86400]
        new_readers = {"readers": len(self.first_list), "liked_within_days": NEW_READER_DAYS,
                       "liked": len(waits),
                       "median_hours_to_first_like": round(median(waits) / 3600, 2)
                       if waits else None}
        results = [_experiment_result(e, self.interleaved[n], self._rates(
            n, variant, of_list, place, liked, variant_names) if e.mode == "ab" else None)
            for n, e in enumerate(self.experiments)]
        total = self.outcomes.total
        return Report(since, now, corpus_papers, dict(variants), days,
                      _places(variant, place, liked, variant_names), new_readers, results,
                      _reliability(probability[shown], liked[shown]), len(lengths), total,
                      total - self.matched)

    def _rates(self, code: int, variant: np.ndarray, of_list: np.ndarray, place: np.ndarray,
               liked: np.ndarray, variant_names: list[str]) -> dict[str, list[int]]:
        """An A/B experiment's readers: "variant\\0user" -> [liked, shown] at places 1 to 10,
        in the order first served."""
        inside = (_column(self.experiment)[of_list] == code) & (place <= 10)
        users = _column(self.user)[of_list][inside].astype(np.int64)
        keys = variant[inside] * max(len(self.users), 1) + users
        found, firsts, which = np.unique(keys, return_index=True, return_inverse=True)
        liked_per = np.bincount(which, liked[inside], minlength=len(found))
        shown_per = np.bincount(which, minlength=len(found))
        user_names = list(self.users)
        return {f"{variant_names[int(found[k]) // len(user_names)]}\0"
                f"{user_names[int(found[k]) % len(user_names)]}":
                [int(liked_per[k]), int(shown_per[k])] for k in np.argsort(firsts)}


class _Counts:
    """The per paper columns a tally counts, and its figures per group."""

    def __init__(self, first: np.ndarray, bits: np.ndarray, liked: np.ndarray,
                 new: np.ndarray, place: np.ndarray) -> None:
        self.columns = {"lists": first, "likes": liked, "dislikes": (bits & DISLIKE) != 0,
                        "not_now": (bits & NOT_NOW) != 0, "opens": (bits & (OPEN | CLICK)) != 0,
                        "new_served": new, "new_liked": new & liked}
        self.cuts = [(place <= cut, (place <= cut) & liked) for cut in CUTS]

    def figures(self, groups: np.ndarray, size: int, papers: np.ndarray,
                corpus_papers: int) -> Iterable[tuple[int, dict[str, Any]]]:
        """(group, its figures) of each group with papers served."""
        def count(column: np.ndarray | None = None) -> list[int]:
            return [int(x) for x in np.bincount(groups, column, minlength=size).round()]

        impressions = count()
        sums = {name: count(column) for name, column in self.columns.items()}
        cuts = [(count(shown), count(liked)) for shown, liked in self.cuts]
        for group in np.flatnonzero(np.asarray(impressions)):
            out: dict[str, Any] = {"lists": sums["lists"][group],
                                   "impressions": impressions[group]}
            out.update((name, sums[name][group])
                       for name in ("likes", "dislikes", "not_now", "opens"))
            for cut, (shown, liked) in zip(CUTS, cuts, strict=True):
                out[f"like_rate@{cut}"] = _rate(liked[group], shown[group])
            out["dislike_rate"] = _rate(sums["dislikes"][group], impressions[group])
            out["coverage"] = _rate(int(papers[group]), corpus_papers)
            out["new_served"] = _rate(sums["new_served"][group], impressions[group])
            out["new_liked"] = _rate(sums["new_liked"][group], sums["likes"][group])
            yield int(group), out


def _distinct(by_day: np.ndarray, paper: np.ndarray, papers: int, variant_surfaces: int,
              surfaces: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct papers served per (day, variant, surface), per (variant, surface), per
    variant and per (day, variant): each from the distinct pairs of a finer one."""
    papers = max(papers, 1)
    pairs = _unique(by_day * papers + paper)  # by_day: int64
    per_day = np.bincount(pairs // papers)
    per_day_variant = np.bincount(
        _unique(pairs // papers // max(surfaces, 1) * papers + pairs % papers) // papers)
    pairs = _unique(pairs // papers % variant_surfaces * papers + pairs % papers)
    per_surface = np.bincount(pairs // papers, minlength=variant_surfaces)
    pairs = _unique(pairs // papers // surfaces * papers + pairs % papers)
    per_variant = np.bincount(pairs // papers, minlength=variant_surfaces // max(surfaces, 1))
    return per_day, per_surface, per_variant, per_day_variant


def _places(variant: np.ndarray, place: np.ndarray, liked: np.ndarray,
            names: list[str]) -> dict[str, list[float | None]]:
    """The like rate by place, 1 to ``PLACES``, of each variant served there."""
    inside = (place >= 1) & (place <= PLACES)
    keys = variant[inside] * PLACES + place[inside] - 1
    size = len(names) * PLACES
    shown = np.bincount(keys, minlength=size).reshape(-1, PLACES)
    hits = np.bincount(keys, liked[inside], minlength=size).round().astype(np.int64).reshape(
        -1, PLACES)
    return {names[v]: [_rate(int(hits[v, p]), int(shown[v, p])) for p in range(PLACES)]
            for v in sorted(np.flatnonzero(shown.sum(axis=1)), key=lambda v: names[v])}


def _unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted: by sorting (numpy's hashing ``unique`` is several times
    slower on millions of integers)."""
    found = np.sort(values)
    keep = np.ones(len(found), bool)
    np.not_equal(found[1:], found[:-1], out=keep[1:])
    return found[keep]


def _column(values: array[Any]) -> np.ndarray:
    return (np.frombuffer(values, values.typecode) if len(values)
            else np.zeros(0, values.typecode))


def _bits(kinds: set[str]) -> int:
    found = 0
    for kind in kinds:
        found |= BITS.get(kind, 0)
    return found


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
    return _reliability(np.asarray([p for p, _ in pairs], np.float64),
                        np.asarray([y for _, y in pairs], np.float64))


def _reliability(probability: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    """``reliability`` of the probabilities shown and whether each paper was liked."""
    if not len(probability):
        return {"items": 0, "ece": None, "bins": []}
    labels = labels.astype(np.float64)
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
    return {"items": len(probability), "ece": round(error / len(probability), 4), "bins": bins}


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _day(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).date().isoformat()

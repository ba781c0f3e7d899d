"""`paperrec simulate`: a dataset's readers replayed day by day against a real deployment.

Each simulated day every reader (``SimulationOptions.users`` of them, drawn by the seed among
those with held-out likes) gets a digest of ``k`` papers from the running ranking code
(``Recommender.recommend`` with ``surface="digest"``: logged as served, papers already served
left out). Of the papers served that are in the reader's held-out library, each is liked
unless the reader does not look (``skip_chance``): the like is recorded (``FeedbackStore``,
so the next lists learn from it) and logged as an outcome of that list (``EventLog``).

The first ``days`` run an interleaving experiment of variant A (production) against B
(``ExperimentStore.start``; A against itself is the A/A check, its B team labelled
``<A>#B``); the verdict is the report's (``online.report``). Then ``paperrec train``'s job
refits the collaborative model and the probability shown on the simulation's own log
(``jobs.calibrate_from_log``), and the next ``days`` (production only) measure how well that
probability matches what readers like (the report's ``calibration``: ECE).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from recommender import wiring
from recommender.core.config import Settings
from recommender.core.errors import InvalidInput
from recommender.embedding.encoders import TextEncoder
from recommender.evaluation.dataset import Dataset, paper_vectors
from recommender.evaluation.methods import METHOD_NAMES, exact_max_for, make_method
from recommender.online.experiments import SAME_AS_PRODUCTION, interleaving_verdict
from recommender.online.report import build_report
from recommender.simulation.deployment import deployment
from recommender.simulation.method_variant import MethodVariant

DAY = 86400.0
START = dt.datetime(2026, 1, 5, tzinfo=dt.UTC).timestamp()  # the first simulated day
SERVE_AT = 7 * 3600.0  # the digests go out at 07:00 UTC
SIDES = ("A", "B")


@dataclass(frozen=True)
class SimulationOptions:
    users: int = 500
    days: int = 30
    variants: tuple[str, str] = ("hybrid", "popular")  # A (production), B (the candidate)
    seed: int = 0
    skip_chance: float = 0.3  # the chance a reader does not look at a paper they would like
    k: int = 10  # papers per digest
    next_month: bool = True  # then refit the probability on the log and measure it

    def check(self, known: list[str]) -> None:
        """InvalidInput saying what is wrong with these options."""
        if self.users < 1 or self.days < 1 or self.k < 1:
            raise InvalidInput("--users, --days and the digest size must be at least 1")
        if not 0 <= self.skip_chance < 1:
            raise InvalidInput(f"--skip-chance must be at least 0 and below 1, "
                               f"got {self.skip_chance}")
        for name in self.variants:
            if name not in known:
                raise InvalidInput(f"unknown variant {name!r}: choose a ranking variant or a "
                                   f"method of `paperrec evaluate`: {', '.join(known)}")


def known_variants(app: wiring.Paperrec) -> list[str]:
    """What ``--variants`` may name: the online variants, then the evaluation's methods."""
    return list(dict.fromkeys([*app.variants, *METHOD_NAMES]))


def run_simulation(settings: Settings, data: Dataset, options: SimulationOptions, *,
                   embedder: TextEncoder | None = None, progress: bool = True) -> dict[str, Any]:
    """Embed ``data``'s papers with the configured model (through the configured embedding
    cache: only text never seen is embedded), deploy them (``deployment``) and simulate."""
    base = wiring.build(settings, embedder=embedder)
    try:
        options.check(known_variants(base))
        vectors, _ = paper_vectors(data.papers, base.embedder, base.embedding_cache, progress)
        model = base.embedder
    finally:
        base.close()
    with deployment(data, vectors, settings, model, START, progress) as app:
        return simulate(app, data, vectors, options, progress)


def simulate(app: wiring.Paperrec, data: Dataset, vectors: np.ndarray,
             options: SimulationOptions, progress: bool = True,
             among: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the simulation on ``app``, a deployment of ``data`` (``deployment``); its
    figures (see the module's docstring). ``among``: draw the readers among these users
    only (runs over one deployment with readers of their own: the A/A benchmark; the verdict
    and the likes are each run's own, the report's figures per variant count every run's
    lists). The month after the experiment serves the deployment's production (``hybrid``),
    whatever A is."""
    started = time.perf_counter()
    options.check(known_variants(app))
    a, b = options.variants
    for name in (a, b):
        if name not in app.variants:  # an evaluation method: fitted on the dataset
            method = make_method(name, options.seed, exact_max_for(
                "auto", app.settings.exact_index_max))
            method.fit(data, vectors if method.needs_vectors else None)
            app.variants[name] = MethodVariant(name, method=method)
    rng = np.random.default_rng(options.seed)
    allowed = None if among is None else set(among)
    eligible = [i for i, (train, test) in enumerate(zip(data.train, data.test, strict=True))
                if len(train) and len(test) and (allowed is None or data.users[i] in allowed)]
    if not eligible:
        raise InvalidInput("no reader has both training and held-out likes to simulate")
    chosen = np.sort(rng.choice(eligible, min(options.users, len(eligible)), replace=False))
    ids = data.paper_ids
    readers = [data.users[i] for i in chosen]
    held = {data.users[i]: {ids[r] for r in data.test[i]} for i in chosen}
    # Started ``seed`` seconds before the first day: each seed's experiment has its own id,
    # so its own coins (``Experiment.seed``).
    experiment = app.experiments.start(a, b, "interleave", 0.5,
                                       START - 1 - options.seed % 86_400, same_allowed=True)
    side_of = {experiment.production: "A", experiment.candidate: "B"}
    likes_by_day: dict[str, list[int]] = {side: [] for side in SIDES}
    wins = [0, 0, 0]  # lists won by A, by B, tied (as the report counts them)
    impressions = 0
    first_significant: int | None = None
    bar = _bar(options.days * len(readers), "simulate (interleaving)", progress)
    for day in range(options.days):
        at = START + day * DAY + SERVE_AT
        liked_today = {side: 0 for side in SIDES}
        for user in readers:
            sides = _serve(app, user, at, options, held[user], rng, side_of)
            impressions += sides.pop("served")
            for side in SIDES:
                liked_today[side] += sides[side]
            credit_a, credit_b = sides["A"], sides["B"]
            wins[0 if credit_a > credit_b else 1 if credit_b > credit_a else 2] += 1
            if credit_a != credit_b:  # the verdict so far changed: significant from here on?
                running = interleaving_verdict(a, b, wins[0], wins[1], wins[2], impressions)
                if not running.significant:
                    first_significant = None
                elif first_significant is None:
                    first_significant = impressions
            bar.update()
        for side in SIDES:
            previous = likes_by_day[side][-1] if likes_by_day[side] else 0
            likes_by_day[side].append(previous + liked_today[side])
    bar.close()
    end = START + options.days * DAY
    stopped = app.experiments.stop(end)
    report = build_report(app.events, len(data.papers), end,
                          experiments=[stopped] if stopped else [])
    verdict = report.experiments[0]["verdict"] if report.experiments else {}
    winner = verdict.get("winner")
    b_key = b + SAME_AS_PRODUCTION if a == b else b
    result: dict[str, Any] = {
        "settings": {**asdict(options), "variants": [a, b], "readers": len(readers),
                     "papers": len(data.papers), "embedding": app.embedder.variant,
                     "start": dt.datetime.fromtimestamp(START, dt.UTC).date().isoformat()},
        "interleaving": {
            "winner": side_of.get(winner) if winner else None,
            "significant": bool(verdict.get("significant", False)),
            "p_value": verdict.get("p_value", 1.0),
            "impressions": verdict.get("impressions", 0),
            "lists_won": {"A": verdict.get("production_wins", 0),
                          "B": verdict.get("candidate_wins", 0),
                          "tied": verdict.get("ties", 0)},
            "b_win_rate": verdict.get("candidate_win_rate"),
            "significant_from_impressions": first_significant,
            "text": verdict.get("text", ""),
        },
        "variants": {
            a: {"side": "A", "likes": likes_by_day["A"][-1], "likes_by_day": likes_by_day["A"],
                **_online(report.variants.get(experiment.production, {}))},
            b_key: {"side": "B", "likes": likes_by_day["B"][-1],
                    "likes_by_day": likes_by_day["B"],
                    **_online(report.variants.get(experiment.candidate, {}))},
        },
        "likes": {side: likes_by_day[side][-1] for side in SIDES},
        "calibration_first_month": report.calibration,
    }
    if options.next_month:
        result["calibration"] = _next_month(app, data, readers, held, options, rng, progress)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def _serve(app: wiring.Paperrec, user: str, at: float, options: SimulationOptions,
           held: set[str], rng: np.random.Generator,
           side_of: dict[str, str]) -> dict[str, int]:
    """One digest to ``user`` and their likes of it: papers served, likes per side."""
    reading = app.recommender.recommend(user, options.k, now=at, exclude_served=True,
                                        surface="digest")
    served = reading.served
    found = {"A": 0, "B": 0, "served": 0}
    if served is None:
        return found
    found["served"] = len(served.papers)
    for place, paper in enumerate(served.papers):
        if paper not in held or rng.random() < options.skip_chance:
            continue
        liked_at = at + 60.0 * (place + 1)
        app.feedback.set(user, paper, "like", liked_at)
        app.events.outcome("like", user, reading.list_id, paper, liked_at)
        held.discard(paper)
        side = side_of.get(served.variants[place]) if place < len(served.variants) else None
        if side is not None:
            found[side] += 1
    return found


def _next_month(app: wiring.Paperrec, data: Dataset, readers: list[str],
                held: dict[str, set[str]], options: SimulationOptions,
                rng: np.random.Generator, progress: bool) -> dict[str, Any]:
    """Refit on the log (``paperrec train``), then ``days`` more of production alone: how
    well the probability shown matched the likes."""
    trained = app.train(progress=False)
    model = app.collaborative.get()
    fitted = model.calibration if model is not None else None
    begin = START + options.days * DAY
    bar = _bar(options.days * len(readers), "simulate (next month)", progress)
    likes = 0
    for day in range(options.days, 2 * options.days):
        at = START + day * DAY + SERVE_AT
        for user in readers:
            found = _serve(app, user, at, options, held[user], rng, {"hybrid": "A"})
            likes += found["A"]
            bar.update()
    bar.close()
    end = begin + options.days * DAY
    report = build_report(app.events, len(data.papers), end, since=begin)
    return {
        "source": fitted.fitted_from if fitted else "default",
        "fitted_on": ({"items": fitted.items, "liked": fitted.liked, "lists": fitted.lists,
                       "ece_newest_fifth": fitted.ece, "text": fitted.source}
                      if fitted else {}),
        "curve": ({"score": fitted.score, "likes": fitted.likes,
                   "intercept": fitted.intercept} if fitted else {}),
        "model_version": trained.version,
        "ece_next_month": report.calibration.get("ece"),
        "items_next_month": report.calibration.get("items"),
        "likes_next_month": likes,
        "reliability_next_month": report.calibration.get("bins", []),
    }


def _online(figures: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A variant's figures in the report (its digests), as the simulation reports them."""
    mine = figures.get("all", {})
    return {key: mine.get(key) for key in ("impressions", "like_rate@1", "like_rate@5",
                                           "like_rate@10", "coverage")}


class _NoBar:
    def update(self, n: int = 1) -> None:
        return None

    def close(self) -> None:
        return None


def _bar(total: int, what: str, progress: bool) -> Any:
    if not progress:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=what, unit="digest")

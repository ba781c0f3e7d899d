"""Run methods over a dataset and report their metrics."""


from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from recommender.core.config import Settings
from recommender.core.errors import InvalidInput
from recommender.embedding.cache import EmbeddingCache
from recommender.embedding.encoders import TextEncoder
from recommender.evaluation.dataset import Dataset, paper_vectors, with_new_papers
from recommender.evaluation.methods import (
    METHOD_NAMES,
    Hybrid,
    Method,
    TopRows,
    exact_max_for,
    make_method,
)
from recommender.evaluation.metrics import (
    METRICS,
    NEW_PAPER_METRICS,
    NEW_PAPERS_DEPTH,
    new_paper_metrics,
    top_rows,
    user_metrics,
)
from recommender.evaluation.onboarding import evaluate_onboarding
from recommender.index.content_space import normalise
from recommender.ranking import calibration
from recommender.ranking.interests import interests as topics
from recommender.storage.versions import write_atomically

CALIBRATION_FOLDS = 2  # users split in two: fitted on one half, measured on the other
# Probability thresholds whose effect on the lists the report shows (min_probability).
THRESHOLDS = (0.05, 0.1, 0.2, 0.3, 0.5)


def run_evaluation(
    data: Dataset, methods: list[str], seed: int, settings: Settings, embedder: TextEncoder,
    cache: EmbeddingCache, progress: bool = True, index: str = "auto",
    new_papers: float | None = None, onboarding: list[int] | None = None,
    interests: bool = False,
) -> dict[str, Any]:
    """Evaluate each method on every user with test papers; seconds include fitting.

    ``index`` (``methods.INDEX_KINDS``): the kind of index ``hybrid`` ranks through; ``auto``
    chooses by corpus size as the service does (``settings.exact_index_max``). The report's
    ``dataset.index`` says which kind was used (None when no method ranks through an index).

    ``new_papers``: the new-papers protocol (``dataset.with_new_papers``, the papers chosen by
    ``seed``); the report then has ``new_papers`` beside ``methods``: per method, the
    ``NEW_PAPER_METRICS`` of the new papers ranked among themselves, averaged over the users
    with a new paper in test (``users``).

    ``onboarding``: numbers of answers; the report then has ``onboarding``: the first list of
    simulated new readers after that many answers, for the product's questions and for random
    and popular ones (``evaluation.onboarding``).
    ``interests``: the report then has ``interests``: each method's nDCG@20 and Recall@20
    over the users whose training likes span several topics (``ranking.interests.interests``
    over their centred embeddings gives two clusters or more) and over the others.
    """
    exact_max = exact_max_for(index, settings.exact_index_max)
    unknown = [name for name in methods if name not in METHOD_NAMES]
    if unknown:
        raise InvalidInput(f"unknown method {unknown[0]!r}; choose from "
                           f"{', '.join(METHOD_NAMES)}")
    if seed < 0:
        raise InvalidInput(f"seed must be 0 or more, got {seed}")
    if new_papers is not None:
        data = with_new_papers(data, new_papers, seed)
    evaluated = [u for u, held in enumerate(data.test) if len(held)]
    if not evaluated:
        raise InvalidInput("no user has test papers that name a known paper")
    summary: dict[str, Any] = {**data.summary(), "index": None}
    built = [make_method(name, seed, exact_max) for name in methods]
    vectors = None
    if onboarding or interests or any(method.needs_vectors for method in built):
        started = time.perf_counter()
        vectors, embedded = paper_vectors(data.papers, embedder, cache, progress)
        summary.update(embedding_model=settings.model, embedding=embedder.variant,
                       newly_embedded=embedded,
                       embedding_seconds=round(time.perf_counter() - started, 3))
    new_rows = data.new_rows
    several = _several_topics(data, vectors, evaluated, seed) if interests else None
    per_user: dict[str, np.ndarray] = {}
    results: dict[str, dict[str, Any]] = {}
    on_new: dict[str, dict[str, float | int]] = {}
    for method in built:
        started = time.perf_counter()
        method.fit(data, vectors)
        if isinstance(method, Hybrid):
            summary["index"] = method.index_kind
        total = np.zeros(len(METRICS))
        new_total, new_users = np.zeros(len(NEW_PAPER_METRICS)), 0
        seen = calibration.Observations.empty()
        for user in tqdm(evaluated, desc=method.name, unit="user", disable=not progress):
            liked = data.train[user]
            output = method.scores(liked)
            measured = user_metrics(top_rows(output, liked), data.test[user])
            total += measured
            if several is not None:
                per_user.setdefault(method.name, np.zeros((len(data.test), len(METRICS))))[
                    user] = measured
            if isinstance(output, TopRows) and output.z is not None:
                top = slice(0, calibration.DEPTH)
                seen.add(output.z[top], len(liked), np.isin(output.rows[top], data.test[user]))
            if new_rows is not None:
                held_new = np.intersect1d(data.test[user], new_rows, assume_unique=True)
                if len(held_new):
                    new_total += _among_new(method, output, liked, new_rows, held_new)
                    new_users += 1
        results[method.name] = {
            **_averages(METRICS, total, len(evaluated)), "users": len(evaluated),
            "seconds": round(time.perf_counter() - started, 3),
        }
        if seen.z:
            results[method.name]["calibration"] = _calibration(seen, seed)
        if new_rows is not None:
            on_new[method.name] = {**_averages(NEW_PAPER_METRICS, new_total, new_users),
                                   "users": new_users}
    report: dict[str, Any] = {"methods": results}
    if new_rows is not None:
        report["new_papers"] = on_new
    if onboarding:
        assert vectors is not None
        started = time.perf_counter()
        report["onboarding"] = evaluate_onboarding(
            data, vectors, onboarding, seed, exact_max, calibration.default_for(settings.model),
            progress)
        report["onboarding"]["seconds"] = round(time.perf_counter() - started, 3)
    if several is not None:
        report["interests"] = _by_topics(per_user, evaluated, several)
    return {**report, "dataset": summary, "seed": seed}


def _among_new(method: Method, output: np.ndarray | TopRows, liked: np.ndarray,
               new_rows: np.ndarray, held_new: np.ndarray) -> np.ndarray:
    """The new-paper metrics of one user: the new papers ranked among themselves, by the
    scores the method already gave every paper, or by asking a method that ranks for itself
    to rank only them."""
    if isinstance(output, TopRows):
        output = method.scores(liked, among=new_rows)
    ranked = top_rows(output, liked, NEW_PAPERS_DEPTH, among=new_rows)
    return new_paper_metrics(ranked, held_new)


def _calibration(seen: calibration.Observations, seed: int) -> dict[str, Any] | None:
    """The probability of the top ``calibration.DEPTH`` items of each list, fitted on one half
    of the users' held-out likes and measured on the other half (then the other way round;
    None when either half has no liked or no unliked item to fit on):
    its expected calibration error over 10 bins, and, for each threshold, the share of items
    at or above it and how many of those the users liked (what ``min_probability`` keeps)."""
    folds = np.random.default_rng(seed).permutation(len(seen.z)) % CALIBRATION_FOLDS
    for fold in range(CALIBRATION_FOLDS):
        _, _, fitted_on = seen.arrays(np.flatnonzero(folds != fold).tolist())
        if len(np.unique(fitted_on)) < 2:
            return None  # too few users, or no held-out like among their lists: nothing to fit
    probability = np.zeros(0)
    labels = np.zeros(0, np.int64)
    for fold in range(CALIBRATION_FOLDS):
        fitted = calibration.fit(*seen.arrays(np.flatnonzero(folds != fold).tolist()),
                                 source="evaluation")
        z, likes, held = seen.arrays(np.flatnonzero(folds == fold).tolist())
        probability = np.concatenate([probability, fitted.probability(z, likes)])
        labels = np.concatenate([labels, held])
    kept = {f"{t:g}": {"items": round(float((probability >= t).mean()), 4),
                       "liked": round(float(labels[probability >= t].mean()), 4)
                       if (probability >= t).any() else None}
            for t in THRESHOLDS}
    return {"ece": round(calibration.expected_calibration_error(probability, labels), 4),
            "items": len(labels), "liked": round(float(labels.mean()), 4),
            "fitted": calibration.fit(*seen.arrays(), source="evaluation").to_dict(),
            "thresholds": kept}


INTEREST_METRICS = ("ndcg@20", "recall@20")


def _several_topics(data: Dataset, vectors: np.ndarray | None, evaluated: list[int],
                    seed: int) -> set[int]:
    """The evaluated users whose training likes form two interests or more
    (``ranking.interests.interests`` over the centred embeddings of their likes)."""
    assert vectors is not None, "the embeddings are loaded for --interests"
    centred = normalise(vectors - vectors.mean(axis=0))
    return {user for user in evaluated
            if len(np.unique(topics(centred[data.train[user]], seed))) > 1}


def _by_topics(per_user: dict[str, np.ndarray], evaluated: list[int],
               several: set[int]) -> dict[str, Any]:
    """Each method's INTEREST_METRICS averaged over the users of several topics, and over
    the others."""
    groups = {"several_topics": sorted(several),
              "one_topic": [user for user in evaluated if user not in several]}
    out: dict[str, Any] = {f"{name}_users": len(users) for name, users in groups.items()}
    for name, users in groups.items():
        out[name] = {method: {metric: float(values[users, METRICS.index(metric)].mean())
                              if users else 0.0 for metric in INTEREST_METRICS}
                     for method, values in per_user.items()}
    return out


def _averages(names: tuple[str, ...], total: np.ndarray, users: int) -> dict[str, float]:
    return {name: float(value / users) if users else 0.0
            for name, value in zip(names, total, strict=True)}


def render_table(report: dict[str, Any]) -> str:
    """The metrics of every method as a fixed-width table (and the new papers' as another)."""
    header = f"{'method':<18}" + "".join(f"{name:>12}" for name in (*METRICS, "seconds"))
    lines = [header, "-" * len(header)]
    for name, result in report["methods"].items():
        cells = "".join(f"{result[metric]:>12.4f}" for metric in METRICS)
        lines.append(f"{name:<18}{cells}{result['seconds']:>12.1f}")
    if "interests" in report:
        found = report["interests"]
        for group in ("several_topics", "one_topic"):
            header = f"{group.replace('_', ' ') + ' users':<18}" + "".join(
                f"{name:>12}" for name in INTEREST_METRICS)
            lines += ["", f"{found[group + '_users']} users", header, "-" * len(header)]
            for name, result in found[group].items():
                cells = "".join(f"{result[metric]:>12.4f}" for metric in INTEREST_METRICS)
                lines.append(f"{name:<18}{cells}")
    if "new_papers" in report:
        header = f"{'new papers only':<18}" + "".join(
            f"{name:>12}" for name in (*NEW_PAPER_METRICS, "users"))
        lines += ["", header, "-" * len(header)]
        for name, result in report["new_papers"].items():
            cells = "".join(f"{result[metric]:>12.4f}" for metric in NEW_PAPER_METRICS)
            lines.append(f"{name:<18}{cells}{result['users']:>12}")
    if "onboarding" in report:
        first = report["onboarding"]
        names = ("ndcg@20", "recall@20", "readers_with_a_like")
        header = f"{'first list':<22}" + "".join(f"{name:>21}" for name in names)
        lines += ["", header, "-" * len(header)]
        for n in sorted((key for key in first if key.isdigit()), key=int):
            for strategy, figures in first[n].items():
                label = f"{n} answers, {strategy}"
                lines.append(f"{label:<22}" + "".join(f"{figures[m]:>21.4f}" for m in names))
        lines.append(f"({first['users']} simulated new readers)")
    data = report["dataset"]
    lines.append(f"{data['papers']} papers, {data['users_with_test']} users with test papers, "
                 f"{data['train_likes']} training likes, {data['test_likes']} test likes, "
                 f"seed {report['seed']}"
                 + (f", {data['new_papers']} new papers ({data['moved_to_test']} training "
                    f"likes moved to test)" if data.get("new_papers") else "")
                 + (f", {data['index']} index" if data.get("index") else ""))
    return "\n".join(lines)


def write_report(report: dict[str, Any], path: Path) -> None:
    """Write the report as JSON, atomically (``storage.versions.write_atomically``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, lambda handle: handle.write(
        (json.dumps(report, indent=2) + "\n").encode()))

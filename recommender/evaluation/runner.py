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
from recommender.embedding.encoders import TextEncoder
from recommender.evaluation.dataset import Dataset, paper_vectors
from recommender.evaluation.methods import METHOD_NAMES, Hybrid, exact_max_for, make_method
from recommender.evaluation.metrics import METRICS, top_rows, user_metrics
from recommender.storage.versions import write_atomically


def run_evaluation(
    data: Dataset, methods: list[str], seed: int, settings: Settings, embedder: TextEncoder,
    progress: bool = True, index: str = "auto",
) -> dict[str, Any]:
    """Evaluate each method on every user with test papers; seconds include fitting.

    ``index`` (``methods.INDEX_KINDS``): the kind of index ``hybrid`` ranks through; ``auto``
    chooses by corpus size as the service does (``settings.exact_index_max``). The report's
    ``dataset.index`` says which kind was used (None when no method ranks through an index).
    """
    exact_max = exact_max_for(index, settings.exact_index_max)
    unknown = [name for name in methods if name not in METHOD_NAMES]
    if unknown:
        raise InvalidInput(f"unknown method {unknown[0]!r}; choose from "
                           f"{', '.join(METHOD_NAMES)}")
    if seed < 0:
        raise InvalidInput(f"seed must be 0 or more, got {seed}")
    evaluated = [u for u, held in enumerate(data.test) if len(held)]
    if not evaluated:
        raise InvalidInput("no user has test papers that name a known paper")
    summary: dict[str, Any] = {**data.summary(), "index": None}
    built = [make_method(name, seed, exact_max) for name in methods]
    vectors = None
    if any(method.needs_vectors for method in built):
        started = time.perf_counter()
        vectors, embedded = paper_vectors(data.papers, embedder, settings.embedding_cache_path,
                                          progress)
        summary.update(embedding_model=settings.model, embedding=embedder.variant,
                       newly_embedded=embedded,
                       embedding_seconds=round(time.perf_counter() - started, 3))
    results: dict[str, dict[str, float | int]] = {}
    for method in built:
        started = time.perf_counter()
        method.fit(data, vectors)
        if isinstance(method, Hybrid):
            summary["index"] = method.index_kind
        total = np.zeros(len(METRICS))
        for user in tqdm(evaluated, desc=method.name, unit="user", disable=not progress):
            liked = data.train[user]
            total += user_metrics(top_rows(method.scores(liked), liked), data.test[user])
        results[method.name] = {
            **{metric: float(value) for metric, value in zip(METRICS, total / len(evaluated),
                                                             strict=True)},
            "users": len(evaluated),
            "seconds": round(time.perf_counter() - started, 3),
        }
    return {"methods": results, "dataset": summary, "seed": seed}


def render_table(report: dict[str, Any]) -> str:
    """The metrics of every method as a fixed-width table."""
    header = f"{'method':<12}" + "".join(f"{name:>12}" for name in (*METRICS, "seconds"))
    lines = [header, "-" * len(header)]
    for name, result in report["methods"].items():
        cells = "".join(f"{result[metric]:>12.4f}" for metric in METRICS)
        lines.append(f"{name:<12}{cells}{result['seconds']:>12.1f}")
    data = report["dataset"]
    lines.append(f"{data['papers']} papers, {data['users_with_test']} users with test papers, "
                 f"{data['train_likes']} training likes, {data['test_likes']} test likes, "
                 f"seed {report['seed']}"
                 + (f", {data['index']} index" if data.get("index") else ""))
    return "\n".join(lines)


def write_report(report: dict[str, Any], path: Path) -> None:
    """Write the report as JSON, atomically (``storage.versions.write_atomically``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, lambda handle: handle.write(
        (json.dumps(report, indent=2) + "\n").encode()))

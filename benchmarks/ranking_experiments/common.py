"""Shared plumbing for the ranking experiments: data, vectors, protocols, reporting.

Everything goes through the library's own pieces (``load_dataset``, ``paper_vectors``,
``top_rows``, ``user_metrics``), so the standard figures are those ``paperrec evaluate``
would print. The new-papers protocol is the one issue 11 asks for: a fraction of the papers
(seeded) is removed from training entirely (their training likes move to test), and each
user's new papers are ranked among the new papers only (Recall@10/20, nDCG@10/20).
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from recommender.evaluation.dataset import Dataset, load_dataset, paper_vectors
from recommender.evaluation.metrics import METRICS, top_rows, user_metrics

DATA = Path("/work/shared/data/citeulike-a")
SHARED_CACHE = Path("/tmp/evaluation-data/embeddings.sqlite")
WORK = Path(os.environ.get("RANKING_EXPERIMENTS_TMP", "/tmp/ranking-experiments"))
MODEL = "all-MiniLM-L6-v2"  # the name the shared cache is keyed by
RESULTS = Path(__file__).with_name("results.md")
NEW_AT = (10, 20)


class Scorer(Protocol):
    """A ranking idea: fitted on one dataset's training likes, then a score per paper."""

    name: str

    def fit(self, data: Dataset, vectors: np.ndarray) -> None: ...

    def scores(self, user: int, liked: np.ndarray) -> np.ndarray: ...


def load(split: str) -> Dataset:
    folder = DATA / "splits" / split
    return load_dataset(DATA / "papers.jsonl", folder / "train.tsv", folder / "test.tsv",
                        on_problem=lambda _: None)


def raw_vectors(data: Dataset) -> np.ndarray:
    """The bundled model's unit embeddings (torch backend), from a copy of the shared cache;
    kept as .npy after the first read. Nothing is embedded when the cache is complete."""
    saved = WORK / "vectors.npy"
    if saved.exists():
        return np.load(saved)
    from recommender.embedding.encoders import shared_embedder

    WORK.mkdir(parents=True, exist_ok=True)
    cache = WORK / "embeddings.sqlite"
    if not cache.exists():
        shutil.copyfile(SHARED_CACHE, cache)
    vectors, embedded = paper_vectors(data.papers, shared_embedder(MODEL, 64, "torch"), cache,
                                      progress=False)
    if embedded:
        print(f"warning: {embedded} papers were embedded (cache incomplete)")
    np.save(saved, vectors)
    return vectors


def new_papers_split(data: Dataset, fraction: float, seed: int) -> tuple[Dataset, np.ndarray]:
    """``fraction`` of the papers leave training entirely: their likes move to test."""
    rng = np.random.default_rng(seed)
    n = len(data.papers)
    new = np.sort(rng.choice(n, int(round(fraction * n)), replace=False))
    is_new = np.zeros(n, dtype=bool)
    is_new[new] = True
    train = [rows[~is_new[rows]] for rows in data.train]
    test = [np.union1d(held, rows[is_new[rows]]) for rows, held in zip(data.train, data.test,
                                                                       strict=True)]
    return dataclasses.replace(data, train=train, test=test), new


def standard(scorer: Scorer, data: Dataset) -> dict[str, float]:
    """The library's protocol: every paper not in training, Recall@20/50/100/300, nDCG@20."""
    users = [u for u, held in enumerate(data.test) if len(held)]
    total = np.zeros(len(METRICS))
    for user in users:
        liked = data.train[user]
        total += user_metrics(top_rows(scorer.scores(user, liked), liked), data.test[user])
    return {m: round(float(v), 4) for m, v in zip(METRICS, total / len(users), strict=True)}


def among_new(scorer: Scorer, data: Dataset, new: np.ndarray) -> dict[str, float]:
    """Each user's held-out new papers ranked among the new papers only (a digest's
    candidates): Recall@10/20 and nDCG@10/20 (binary relevance, ideal over min(k, #held))."""
    is_new = np.zeros(len(data.papers), dtype=bool)
    is_new[new] = True
    depth = max(NEW_AT)
    discounts = 1.0 / np.log2(np.arange(2, depth + 2))
    sums = np.zeros(2 * len(NEW_AT))
    users = [u for u, held in enumerate(data.test) if is_new[held].any()]
    for user in users:
        held = data.test[user][is_new[data.test[user]]]
        scores = np.asarray(scorer.scores(user, data.train[user]))[new]
        best = np.argpartition(-scores, depth - 1)[:depth]
        best = best[np.lexsort((best, -scores[best]))]
        hits = np.isin(new[best], held)
        for i, k in enumerate(NEW_AT):
            ideal = discounts[: min(k, len(held))].sum()
            sums[i] += hits[:k].sum() / len(held)
            sums[len(NEW_AT) + i] += float(discounts[:k] @ hits[:k]) / ideal
    names = [f"recall@{k}" for k in NEW_AT] + [f"ndcg@{k}" for k in NEW_AT]
    return {name: round(float(v), 4) for name, v in zip(names, sums / len(users), strict=True)}


def timed(run: Callable[[], dict[str, float]]) -> dict[str, float]:
    started = time.perf_counter()
    figures = run()
    return {**figures, "seconds": round(time.perf_counter() - started, 1)}


def machine() -> str:
    return (f"{platform.node()}, {platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}")


def append_results(command: str, report: dict[str, Any]) -> None:
    """Append one run (command, date, machine, a table and the JSON) to results.md."""
    lines = [f"\n### `{command}`\n", f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {machine()}\n"]
    for protocol, rows in report["results"].items():
        if not rows:
            continue
        metrics = [m for m in next(iter(rows.values())) if m != "seconds"]
        lines.append(f"\n{protocol}:\n\n| method | " + " | ".join(metrics) + " | s |")
        lines.append("|---" * (len(metrics) + 2) + "|")
        for name, figures in rows.items():
            cells = " | ".join(f"{figures[m]:.4f}" for m in metrics)
            lines.append(f"| {name} | {cells} | {figures['seconds']} |")
    lines.append("\n<details><summary>JSON</summary>\n\n```json\n"
                 + json.dumps(report, indent=1) + "\n```\n</details>\n")
    with RESULTS.open("a") as handle:
        handle.write("\n".join(lines))

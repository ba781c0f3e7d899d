"""Offline evaluation: a dataset of papers and train/test likes, ranking metrics, the runner.

The protocol (DESIGN.md, "Offline evaluation protocol"): for every user with test papers,
rank every paper not in that user's training set; Recall@M is the share of the user's test
papers in the top M (M = 20, 50, 100, 300); nDCG@20 uses binary relevance and an ideal DCG
over min(20, #test) positions. Both are averaged over the users with test papers. Training
papers are never ranked, so they never count as hits. The methods live in ``baselines``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from .baselines import DEPTH, METHOD_NAMES, TopRows, make_method
from .config import Settings
from .embedder import cached_vectors
from .errors import InvalidInput
from .ingest import read_papers
from .papers import Paper, Rejection

RECALL_AT = (20, 50, 100, 300)
NDCG_AT = 20
METRICS = (*(f"recall@{m}" for m in RECALL_AT), f"ndcg@{NDCG_AT}")
_DISCOUNTS = 1.0 / np.log2(np.arange(2, NDCG_AT + 2))


@dataclass
class Dataset:
    """Papers in file order (a paper's row is its position) and each user's liked rows."""

    papers: list[Paper]
    users: list[str]  # everyone named in the train or test file
    train: list[np.ndarray]  # per user: sorted paper rows liked in training
    test: list[np.ndarray]  # per user: sorted held-out rows, none of them in ``train``
    rejected_papers: int = 0
    skipped_interactions: int = 0  # malformed lines and lines naming unknown papers
    test_in_train: int = 0  # test likes dropped because the user's training set has them

    @cached_property
    def paper_ids(self) -> list[str]:
        return [paper.id for paper in self.papers]

    @cached_property
    def like_counts(self) -> np.ndarray:
        """Training likes per paper row."""
        rows = np.concatenate([np.zeros(0, np.int64), *self.train])
        return np.bincount(rows, minlength=len(self.papers))

    def training_likes(self) -> dict[str, list[str]]:
        """User -> liked paper ids, for users with training likes (what CF models fit on)."""
        ids = self.paper_ids
        return {user: [ids[r] for r in rows]
                for user, rows in zip(self.users, self.train, strict=True) if len(rows)}

    def summary(self) -> dict[str, int]:
        return {
            "papers": len(self.papers),
            "users": len(self.users),
            "users_with_test": sum(1 for rows in self.test if len(rows)),
            "train_likes": sum(len(rows) for rows in self.train),
            "test_likes": sum(len(rows) for rows in self.test),
            "rejected_papers": self.rejected_papers,
            "skipped_interactions": self.skipped_interactions,
            "test_in_train": self.test_in_train,
        }


def load_dataset(
    papers: Path, train: Path, test: Path, on_problem: Callable[[str], None] = print
) -> Dataset:
    """Papers (JSONL or CSV, via ``read_papers``) and ``user<TAB>paper`` train/test files.

    Rejected papers, duplicate paper ids, malformed lines and lines naming unknown papers are
    reported through ``on_problem`` and skipped; the rest is used.
    """
    kept: list[Paper] = []
    row_of: dict[str, int] = {}
    rejected = 0
    for item in read_papers(papers):
        if isinstance(item, Rejection):
            rejected += 1
            on_problem(str(item))
        elif item.id in row_of:
            rejected += 1
            on_problem(f"{papers}: duplicate paper id {item.id!r}; kept the first")
        else:
            row_of[item.id] = len(kept)
            kept.append(item)
    if not kept:
        raise InvalidInput(f"{papers}: no usable papers (expected JSONL or CSV with id, title, "
                           f"abstract)")
    user_of: dict[str, int] = {}
    skipped = 0
    pairs: list[list[set[int]]] = [[], []]
    for part, path in enumerate((train, test)):
        for line, result in _interactions(path, row_of):
            if isinstance(result, str):
                skipped += 1
                on_problem(f"{path}:{line}: {result}")
                continue
            user, row = result
            if user not in user_of:
                user_of[user] = len(user_of)
                pairs[0].append(set())
                pairs[1].append(set())
            pairs[part][user_of[user]].add(row)
    overlap = sum(len(liked & held) for liked, held in zip(*pairs, strict=True))
    return Dataset(
        papers=kept,
        users=list(user_of),
        train=[np.array(sorted(liked), dtype=np.int64) for liked in pairs[0]],
        test=[np.array(sorted(held - liked), dtype=np.int64)
              for liked, held in zip(*pairs, strict=True)],
        rejected_papers=rejected,
        skipped_interactions=skipped,
        test_in_train=overlap,
    )


def _interactions(
    path: Path, row_of: dict[str, int]
) -> Iterator[tuple[int, tuple[str, int] | str]]:
    """(line number, (user, paper row) or the reason the line is skipped)."""
    if not path.is_file():
        raise InvalidInput(f"{path}: no such file (expected user<TAB>paper lines)")
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig").rstrip("\r\n")
            except UnicodeDecodeError:
                yield number, "line is not valid UTF-8 text"
                continue
            if not line.strip():
                continue
            fields = [field.strip() for field in line.split("\t")]
            if len(fields) != 2 or not all(fields):
                yield number, "expected user<TAB>paper"
            elif fields[1] not in row_of:
                yield number, f"unknown paper {fields[1]!r}; skipped"
            else:
                yield number, (fields[0], row_of[fields[1]])


def paper_vectors(
    papers: Sequence[Paper], settings: Settings, progress: bool = True
) -> tuple[np.ndarray, int]:
    """Unit-length embeddings of ``Paper.text`` in paper order, and how many were new.

    Goes through the embedding cache (by model and content hash), so only text never seen
    before is embedded.
    """
    return cached_vectors(
        settings.model, settings.embed_batch_size, settings.embedding_cache_path,
        [paper.content_hash for paper in papers],
        lambda missing: {p.content_hash: p.text for p in papers if p.content_hash in missing},
        progress, settings.embed_backend,
    )


def top_rows(output: np.ndarray | TopRows, liked: np.ndarray, depth: int = DEPTH) -> np.ndarray:
    """The best ``depth`` rows of a method's output, best first, never a training row."""
    if isinstance(output, TopRows):
        rows = np.asarray(output.rows, dtype=np.int64)
        return rows[~np.isin(rows, liked)][:depth]
    scores = np.asarray(output)
    candidates = np.ones(len(scores), dtype=bool)
    candidates[liked] = False
    rows = np.flatnonzero(candidates)
    depth = min(depth, len(rows))
    if depth == 0:
        return rows
    kept = scores[rows]
    best = np.argpartition(-kept, depth - 1)[:depth]
    best = best[np.lexsort((best, -kept[best]))]  # score, then lower row first
    return rows[best]


def user_metrics(ranked: np.ndarray, held_out: np.ndarray) -> np.ndarray:
    """Recall@M for each M in ``RECALL_AT``, then nDCG@20, for one user with test papers."""
    hits = np.isin(ranked, held_out)
    recalls = [hits[:m].sum() / len(held_out) for m in RECALL_AT]
    top = hits[:NDCG_AT]
    dcg = float(_DISCOUNTS[: len(top)] @ top)
    ideal = float(_DISCOUNTS[: min(NDCG_AT, len(held_out))].sum())
    return np.array([*recalls, dcg / ideal])


def run_evaluation(
    data: Dataset, methods: list[str], seed: int, settings: Settings, progress: bool = True
) -> dict[str, Any]:
    """Evaluate each method on every user with test papers; seconds include fitting."""
    unknown = [name for name in methods if name not in METHOD_NAMES]
    if unknown:
        raise InvalidInput(f"unknown method {unknown[0]!r}; choose from "
                           f"{', '.join(METHOD_NAMES)}")
    if seed < 0:
        raise InvalidInput(f"seed must be 0 or more, got {seed}")
    evaluated = [u for u, held in enumerate(data.test) if len(held)]
    if not evaluated:
        raise InvalidInput("no user has test papers that name a known paper")
    summary: dict[str, Any] = data.summary()
    built = [make_method(name, seed) for name in methods]
    vectors = None
    if any(method.needs_vectors for method in built):
        started = time.perf_counter()
        vectors, embedded = paper_vectors(data.papers, settings, progress)
        summary.update(embedding_model=settings.model, newly_embedded=embedded,
                       embedding_seconds=round(time.perf_counter() - started, 3))
    results: dict[str, dict[str, float | int]] = {}
    for method in built:
        started = time.perf_counter()
        method.fit(data, vectors)
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
                 f"seed {report['seed']}")
    return "\n".join(lines)


def write_report(report: dict[str, Any], path: Path) -> None:
    """Write the report as JSON atomically: a temp file beside it, then ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w") as handle:
            json.dump(report, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)

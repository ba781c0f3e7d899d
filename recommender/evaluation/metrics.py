"""Offline evaluation: a dataset of papers and train/test likes, ranking metrics, the runner.

The protocol (DESIGN.md, "Offline evaluation protocol"): for every user with test papers,
rank every paper not in that user's training set; Recall@M is the share of the user's test
papers in the top M (M = 20, 50, 100, 300); nDCG@20 uses binary relevance and an ideal DCG
over min(20, #test) positions. Both are averaged over the users with test papers. Training
papers are never ranked, so they never count as hits. The methods live in ``methods``.

The new-papers protocol (``dataset.with_new_papers``) adds, for every user with a new paper
in test, the ranking of the new papers among themselves: Recall and nDCG at 10 and 20 over
the user's new test papers (``new_paper_metrics``).
"""

from __future__ import annotations

import numpy as np

from recommender.evaluation.methods import DEPTH, TopRows

RECALL_AT = (20, 50, 100, 300)
NDCG_AT = 20
METRICS = (*(f"recall@{m}" for m in RECALL_AT), f"ndcg@{NDCG_AT}")
# The new-papers protocol ranks only the new papers (the candidates of a digest, which shows
# five to ten of them): Recall and nDCG at 10 and 20.
NEW_PAPERS_AT = (10, 20)
NEW_PAPER_METRICS = (*(f"recall@{m}" for m in NEW_PAPERS_AT),
                     *(f"ndcg@{m}" for m in NEW_PAPERS_AT))
NEW_PAPERS_DEPTH = max(NEW_PAPERS_AT)


def top_rows(output: np.ndarray | TopRows, liked: np.ndarray, depth: int = DEPTH,
             among: np.ndarray | None = None) -> np.ndarray:
    """The best ``depth`` rows of a method's output, best first, never a training row; with
    ``among``, only those rows are candidates (the new papers, ranked among themselves)."""
    if isinstance(output, TopRows):
        rows = np.asarray(output.rows, dtype=np.int64)
        keep = ~np.isin(rows, liked)
        if among is not None:
            keep &= np.isin(rows, among)
        return rows[keep][:depth]
    scores = np.asarray(output)
    candidates = np.ones(len(scores), dtype=bool)
    if among is not None:
        candidates[:] = False
        candidates[among] = True
    candidates[liked] = False
    rows = np.flatnonzero(candidates)
    depth = min(depth, len(rows))
    if depth == 0:
        return rows
    kept = scores[rows]
    best = np.argpartition(-kept, depth - 1)[:depth]
    best = best[np.lexsort((best, -kept[best]))]  # score, then lower row first
    return rows[best]


def _recall_ndcg(ranked: np.ndarray, held_out: np.ndarray, recall_at: tuple[int, ...],
                 ndcg_at: tuple[int, ...]) -> np.ndarray:
    """Recall@M for each M in ``recall_at``, then nDCG@k for each k in ``ndcg_at`` (binary
    relevance, ideal DCG over min(k, #held out) positions)."""
    hits = np.isin(ranked, held_out)
    recalls = [hits[:m].sum() / len(held_out) for m in recall_at]
    ndcgs = []
    for k in ndcg_at:
        discounts = 1.0 / np.log2(np.arange(2, k + 2))
        top = hits[:k]
        ideal = float(discounts[: min(k, len(held_out))].sum())
        ndcgs.append(float(discounts[: len(top)] @ top) / ideal)
    return np.array([*recalls, *ndcgs])


def user_metrics(ranked: np.ndarray, held_out: np.ndarray) -> np.ndarray:
    """Recall@M for each M in ``RECALL_AT``, then nDCG@20, for one user with test papers."""
    return _recall_ndcg(ranked, held_out, RECALL_AT, (NDCG_AT,))


def new_paper_metrics(ranked: np.ndarray, held_out: np.ndarray) -> np.ndarray:
    """``NEW_PAPER_METRICS`` for one user: ``ranked`` holds new papers only, ``held_out`` the
    user's new test papers."""
    return _recall_ndcg(ranked, held_out, NEW_PAPERS_AT, NEW_PAPERS_AT)

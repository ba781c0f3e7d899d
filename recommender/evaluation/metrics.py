"""Offline evaluation: a dataset of papers and train/test likes, ranking metrics, the runner.

The protocol (DESIGN.md, "Offline evaluation protocol"): for every user with test papers,
rank every paper not in that user's training set; Recall@M is the share of the user's test
papers in the top M (M = 20, 50, 100, 300); nDCG@20 uses binary relevance and an ideal DCG
over min(20, #test) positions. Both are averaged over the users with test papers. Training
papers are never ranked, so they never count as hits. The methods live in ``methods``.
"""

from __future__ import annotations

import numpy as np

from recommender.evaluation.methods import DEPTH, TopRows

RECALL_AT = (20, 50, 100, 300)
NDCG_AT = 20
METRICS = (*(f"recall@{m}" for m in RECALL_AT), f"ndcg@{NDCG_AT}")
_DISCOUNTS = 1.0 / np.log2(np.arange(2, NDCG_AT + 2))

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



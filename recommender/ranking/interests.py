"""Several interests in one list: a reader who follows graph learning and federated learning
gets both on their list, not a blend that lands between them or a list that one of them
fills.

A reader's interests are groups of their liked rows: their collections
(``recommender.feedback.collections``), or, in the offline evaluation, the clusters of their
likes (``interests``: k-means on the liked papers' vectors, k chosen by the silhouette).
``rank_interests`` ranks the whole profile and each interest on its own (the interest's
likes against the reader's dislikes, the reader's other likes hidden) and interleaves the
lists, the whole profile first in each round, so every interest reaches the top of the list.
The items keep the whole profile's score parts (``score``), so their reasons and
probabilities read as those of any list. Pure functions over arrays, as ``rank``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from recommender.ranking.context import RankingContext
from recommender.ranking.rank import Ranked, rank
from recommender.ranking.request import ListRequest
from recommender.ranking.scoring import close_likes, nearest_likes, score

MAX_INTERESTS = 4  # clusters of one reader's likes at most
MIN_LIKES_PER_INTEREST = 3  # a cluster of fewer likes is no interest of its own
# The mean silhouette (cosine distance) a split into clusters needs to count as several
# interests; below it the likes are one interest. Fixed before measuring (docs/evaluation.md,
# "Several interests").
SILHOUETTE_MIN = 0.1
# ... and its clusters' mean directions must be apart: cosine at most this (the silhouette
# alone does not see scale: it splits a tight group of near-identical papers as readily).
CENTRES_MAX_SIMILARITY = 0.5
KMEANS_ROUNDS = 20
MAX_LISTS = 8  # interests ranked for one overall list at most (the largest)


def interests(vectors: np.ndarray, seed: int = 0) -> np.ndarray:
    """A label per liked paper (0 .. k-1): k-means on the unit ``vectors`` for every k from
    2 to the most the rule allows (``MAX_INTERESTS``, ``MIN_LIKES_PER_INTEREST`` likes each),
    the k with the best mean silhouette if it reaches ``SILHOUETTE_MIN`` and no two of its
    clusters' mean directions have a cosine above ``CENTRES_MAX_SIMILARITY``, else one
    interest (all zeros)."""
    n = len(vectors)
    best_labels, best = np.zeros(n, np.int64), SILHOUETTE_MIN
    most = min(MAX_INTERESTS, n // MIN_LIKES_PER_INTEREST)
    if most < 2:
        return best_labels
    unit = _unit(np.asarray(vectors, dtype=np.float32))
    similarity = unit @ unit.T
    for k in range(2, most + 1):
        labels = _kmeans(unit, k, seed)
        if np.bincount(labels, minlength=k).min() < MIN_LIKES_PER_INTEREST:
            continue
        centres = _unit(np.stack([unit[labels == c].mean(axis=0) for c in range(k)]))
        between = centres @ centres.T
        if float(between[~np.eye(k, dtype=bool)].max()) > CENTRES_MAX_SIMILARITY:
            continue
        quality = _silhouette(similarity, labels, k)
        if quality >= best:
            best_labels, best = labels, quality
    return best_labels


def groups_of(liked: np.ndarray, labels: np.ndarray) -> list[np.ndarray]:
    """The liked rows of each interest, the largest first."""
    found = [liked[labels == label] for label in np.unique(labels)]
    return sorted(found, key=lambda rows: (-len(rows), int(rows.min())))


def rank_interests(ctx: RankingContext, request: ListRequest,
                   groups: list[np.ndarray]) -> Ranked:
    """The model's part of the request's page, the whole profile's list interleaved with
    each interest's (at most ``MAX_LISTS``, the largest); ``rank`` itself for fewer than two
    interests."""
    groups = sorted((np.asarray(g, np.int64) for g in groups if len(g)),
                    key=lambda rows: -len(rows))[:MAX_LISTS]
    if len(groups) < 2:
        return rank(ctx, request)
    _, offset, k = request.page()
    want = offset + k
    # Each list from its start, as long as the page's end (its followed papers come first).
    start = replace(request, offset=0, k=len(request.plan.followed) + want)
    lists = [rank(ctx, start).rows]
    everyone = np.concatenate([request.liked, request.hidden])
    for group in groups:
        lists.append(rank(ctx, replace(start, liked=group, liked_vectors=None,
                                       hidden=np.setdiff1d(everyone, group))).rows)
    rows = interleave(lists, want)[offset:want]
    parts = score(ctx, request, rows=rows)
    nearest, nearest_sim = nearest_likes(ctx, parts.vectors, request.liked)
    return Ranked(rows, parts.total, parts.content, nearest, nearest_sim, parts.collaborative,
                  parts.popularity, request.personalized, parts.scale,
                  close_likes(ctx, parts.vectors, request.liked, request.liked_vectors))


def interleave(lists: list[np.ndarray], want: int) -> np.ndarray:
    """Round robin over the lists, best first, each row once: the first list's best, the
    second's best not taken yet, and so on, until ``want`` rows (or the lists run out)."""
    taken: set[int] = set()
    out: list[int] = []
    positions = [0] * len(lists)
    while len(out) < want and any(p < len(rows) for p, rows in zip(positions, lists,
                                                                    strict=True)):
        for i, rows in enumerate(lists):
            while positions[i] < len(rows) and int(rows[positions[i]]) in taken:
                positions[i] += 1
            if positions[i] < len(rows) and len(out) < want:
                row = int(rows[positions[i]])
                taken.add(row)
                out.append(row)
                positions[i] += 1
    return np.asarray(out, dtype=np.int64)


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def _kmeans(unit: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Spherical k-means (cosine), seeded by k-means++ from ``seed``: a label per row."""
    rng = np.random.default_rng(seed)
    n = len(unit)
    centres = [int(rng.integers(n))]
    for _ in range(1, k):
        distance = 1.0 - (unit @ unit[centres].T).max(axis=1)
        distance = np.maximum(distance, 0.0)
        total = float(distance.sum())
        pick = int(rng.integers(n)) if total <= 0 else int(rng.choice(n, p=distance / total))
        centres.append(pick)
    means = unit[centres]
    labels = np.zeros(n, np.int64)
    for round_ in range(KMEANS_ROUNDS):
        new = np.argmax(unit @ means.T, axis=1)
        if round_ and np.array_equal(new, labels):
            break
        labels = new
        for c in range(k):
            members = unit[labels == c]
            if len(members):
                means[c] = _unit(members.mean(axis=0, keepdims=True))[0]
    return labels


def _silhouette(similarity: np.ndarray, labels: np.ndarray, k: int) -> float:
    """Mean silhouette of the labels, with cosine distance (1 - similarity)."""
    distance = 1.0 - similarity
    n = len(labels)
    values = np.zeros(n)
    for i in range(n):
        own = labels == labels[i]
        own[i] = False
        if not own.any():
            continue  # a point alone in its cluster: silhouette 0
        inside = float(distance[i, own].mean())
        outside = min(float(distance[i, labels == c].mean())
                      for c in range(k) if c != labels[i] and (labels == c).any())
        values[i] = (outside - inside) / max(inside, outside, 1e-12)
    return float(values.mean())

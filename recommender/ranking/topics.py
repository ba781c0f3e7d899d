"""The topics of an index version: its papers grouped by k-means over the content space, each
topic with the papers that stand for it best, and the topics in an order that spreads them.

A new reader's first questions (``onboarding``) are one paper per topic, in that order: the
first few answers then cover as much of what the collection's readers like as few answers
can (on citeulike-a, benchmarks/results/evaluation/P10-onboarding.json). Computed once per
index version (``TopicCache``) with bounded work whatever the corpus size: k-means runs on at
most ``FIT_SAMPLE`` papers and its topics are laid on at most ``ASSIGN_SAMPLE`` (evenly spaced
rows plus the most liked ones), about a second at 17k papers, the same at 1M.

Pure functions over arrays (no Redis, no clock, no files).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

MAX_TOPICS = 48
PAPERS_PER_TOPIC = 5  # a topic for every five papers of a small corpus (7 of the 38 samples)
FIT_SAMPLE = 5_000  # rows k-means is fitted on (over 100 a topic)
ASSIGN_SAMPLE = 50_000  # rows laid on the topics (the representatives are among them)
ITERATIONS = 20
REPRESENTATIVES = 20  # kept per topic, best first
# A representative is close to its topic's centre and liked by many: a paper a reader of the
# topic is likely to know. Popularity is in [0, 1] (``RankingContext``). Chosen on citeulike-a
# P10 (300 simulated readers answering 10 questions, ``evaluation.onboarding``): with 0.2,
# 3.7% of them met a paper of their own library; with 1.0, 12%; with 5.0, 10%.
POPULARITY_PULL = 1.0
# A topic's weight in the spread order: the popularity of its papers, plus this much a paper
# (so a collection nobody has liked yet is spread by the topics' sizes).
SIZE_WEIGHT = 0.01


@dataclass(frozen=True)
class Topics:
    """``centres`` (topics, d), unit length; ``order``: the topics, spread and the most
    liked first (``_spread_order``); ``representatives[t]``: rows of topic t, best
    first; ``sizes[t]``: the papers of the assigned sample in topic t."""

    centres: np.ndarray
    order: np.ndarray
    representatives: list[np.ndarray]
    sizes: np.ndarray

    def __len__(self) -> int:
        return len(self.centres)

    def of(self, vectors: np.ndarray) -> np.ndarray:
        """The topic of each vector (its nearest centre)."""
        if not len(vectors):
            return np.zeros(0, np.int64)
        return np.asarray(np.asarray(vectors, np.float32) @ self.centres.T).argmax(axis=1)


def topic_count(papers: int) -> int:
    return max(1, min(MAX_TOPICS, papers // PAPERS_PER_TOPIC))


def find_topics(vectors: np.ndarray, popularity: np.ndarray, popular_rows: np.ndarray,
                seed: int = 0) -> Topics:
    """The topics of the papers whose content-space ``vectors`` these are (``popularity`` and
    ``popular_rows`` as ``RankingContext`` has them)."""
    n = len(vectors)
    rows = _sample(n, ASSIGN_SAMPLE, popular_rows)
    sample = _unit(np.asarray(vectors[rows], dtype=np.float32))
    rng = np.random.default_rng(seed)
    fit_on = sample if len(sample) <= FIT_SAMPLE else sample[
        np.sort(rng.choice(len(sample), FIT_SAMPLE, replace=False))]
    centres = _kmeans(fit_on, topic_count(n), rng)
    sims = sample @ centres.T
    topic = sims.argmax(axis=1)
    merit = sims[np.arange(len(rows)), topic] + POPULARITY_PULL * popularity[rows]
    representatives, sizes = [], np.zeros(len(centres), np.int64)
    readers = np.zeros(len(centres))  # how much of the collection's liking each topic has
    for t in range(len(centres)):
        members = np.flatnonzero(topic == t)
        sizes[t] = len(members)
        readers[t] = float(popularity[rows[members]].sum()) + SIZE_WEIGHT * len(members)
        best = members[np.argsort(-merit[members], kind="stable")[:REPRESENTATIVES]]
        representatives.append(rows[best])
    kept = np.flatnonzero(sizes > 0)  # k-means may leave a centre without papers
    centres, sizes, readers = centres[kept], sizes[kept], readers[kept]
    representatives = [representatives[t] for t in kept]
    return Topics(centres, _spread_order(centres, readers), representatives, sizes)


def _sample(n: int, most: int, popular_rows: np.ndarray) -> np.ndarray:
    """Every row up to ``most``; beyond, evenly spaced rows and the most liked ones."""
    if n <= most:
        return np.arange(n, dtype=np.int64)
    spaced = np.linspace(0, n - 1, most - len(popular_rows)).astype(np.int64)
    return np.unique(np.concatenate([spaced, np.asarray(popular_rows, np.int64)]))


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def _kmeans(vectors: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Spherical k-means (cosine), seeded by greedy k-means++ (each new centre the best of a
    few drawn candidates, as scikit-learn's); unit-length centres."""
    k = min(k, len(vectors))
    tries = 2 + int(np.log(k + 1))
    centres = np.empty((k, vectors.shape[1]), np.float32)
    centres[0] = vectors[rng.integers(len(vectors))]
    closest = np.maximum(1.0 - vectors @ centres[0], 0.0)
    for i in range(1, k):
        weights = closest**2
        total = float(weights.sum())
        if total <= 0:  # fewer distinct papers than topics
            centres[i] = vectors[rng.integers(len(vectors))]
            continue
        picks = rng.choice(len(vectors), tries, p=weights / total)
        options = np.minimum(closest, np.maximum(1.0 - vectors[picks] @ vectors.T, 0.0))
        best = int(np.argmin((options**2).sum(axis=1)))
        centres[i], closest = vectors[picks[best]], options[best]
    for _ in range(ITERATIONS):
        assigned = (vectors @ centres.T).argmax(axis=1)
        members = np.zeros((len(centres), len(vectors)), np.float32)
        members[assigned, np.arange(len(vectors))] = 1.0
        sums = members @ vectors  # a product, not np.add.at: a tenth of the time
        empty = np.linalg.norm(sums, axis=1) == 0
        sums[empty] = centres[empty]  # an empty topic keeps its centre
        moved = _unit(sums)
        if np.allclose(moved, centres, atol=1e-6):
            break
        centres = moved
    return centres


def _spread_order(centres: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The heaviest topic first, then each time the topic that is heaviest times farthest
    (one minus its cosine to the nearest topic before it): a weighted farthest-point order,
    which spreads over the collection without leading with its loneliest corner."""
    if not len(centres):
        return np.zeros(0, np.int64)
    order = [int(np.argmax(weights))]
    nearest = centres @ centres[order[0]]
    for _ in range(len(centres) - 1):
        merit = weights * (1.0 - nearest)
        merit[order] = -np.inf
        pick = int(np.argmax(merit))
        order.append(pick)
        nearest = np.maximum(nearest, centres @ centres[pick])
    return np.asarray(order, np.int64)


class TopicCache:
    """The topics of the index version served now, found once per version (older ones are
    dropped)."""

    def __init__(self) -> None:
        self._version: str | None = None
        self._topics: Topics | None = None
        self._lock = threading.Lock()

    def get(self, version: str, vectors: np.ndarray, popularity: np.ndarray,
            popular_rows: np.ndarray) -> Topics:
        with self._lock:
            if self._version != version or self._topics is None:
                self._topics = find_topics(vectors, popularity, popular_rows)
                self._version = version
            return self._topics

"""Synthetic data for sizes beyond the real corpus: retrieval vectors shaped like the
service's, readers who like papers of a few topics, and sizes written as ``100k`` or ``1M``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from recommender.index.content_space import normalise

DIM = 384  # all-MiniLM-L6-v2's width
SPECTRUM_DECAY = 0.4
TOPIC_SPREAD = 1.0
SUBTOPIC_SPREAD = 1.2
PAPER_SPREAD = 1.4
GROUP_SIZE_SIGMA = 0.7


def parse_size(text: str) -> int:
    """``20k`` -> 20000, ``1M`` -> 1000000, ``16980`` -> 16980."""
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * scale)


def size_label(n: int) -> str:
    """The other way: 1000000 -> ``1M``, 250000 -> ``250k``."""
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def synthetic_vectors(n: int, seed: int, dim: int = DIM) -> np.ndarray:
    """Unit vectors shaped like the service's retrieval vectors (centred, neighbour-augmented
    sentence embeddings), for sizes beyond the real corpus.

    A three-level Gaussian mixture: fields (one per 2,500 papers), topics (one per 250) and
    subtopics (one per 25; 40,000 at 1M), papers around subtopics; the sizes of groups vary
    (log-normal) and the spectrum decays as a power law, as sentence embeddings are far from
    isotropic. The spreads were fitted so that, at 17k papers, the similarities to the 1st,
    10th and 100th neighbour, the explained variance of the top principal components and the
    recall of IVF and HNSW at small settings match the real citeulike-a retrieval vectors
    (``python -m benchmarks.index --calibrate``). The density stays the same as n grows: more
    papers, more topics.
    """
    rng = np.random.default_rng(seed)
    scale = np.arange(1, dim + 1, dtype=np.float32) ** -SPECTRUM_DECAY
    scale /= np.sqrt((scale**2).sum())
    centres = rng.standard_normal((max(2, n // 2_500), dim), dtype=np.float32)
    for group, spread in ((250, TOPIC_SPREAD), (25, SUBTOPIC_SPREAD)):
        parents = rng.choice(len(centres), size=max(2, n // group),
                             p=_sizes(rng, len(centres)))
        centres = centres[parents] + spread * rng.standard_normal(
            (len(parents), dim), dtype=np.float32)
    assignment = rng.choice(len(centres), size=n, p=_sizes(rng, len(centres)))
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        part = assignment[start:start + 100_000]
        noise = rng.standard_normal((len(part), dim), dtype=np.float32)
        out[start:start + len(part)] = normalise((centres[part] + PAPER_SPREAD * noise) * scale)
    return out


def _sizes(rng: np.random.Generator, groups: int) -> np.ndarray:
    weights = rng.lognormal(0.0, GROUP_SIZE_SIGMA, groups)
    return weights / weights.sum()


def user_likes(path: Path, vectors: np.ndarray, likes: list[int], users: int,
               seed: int) -> dict[int, list[np.ndarray]]:
    """``users`` readers per like count, each liking papers of one to five topics: seed papers
    and their nearest neighbours (exact search). Kept in ``path``, so that runs compared side
    by side rank the same readers."""
    if path.exists():
        saved = np.load(path)
        if all(f"{count}-{u}" in saved for count in likes for u in range(users)):
            return {count: [saved[f"{count}-{u}"] for u in range(users)] for count in likes}
    plans = []  # (count, user's rng, seeds, neighbours per seed)
    for count in likes:
        for u in range(users):
            rng = np.random.default_rng([seed, count, u])
            seeds = rng.choice(len(vectors), size=int(rng.integers(1, 6)), replace=False)
            plans.append((count, rng, seeds, max(10, 3 * -(-count // len(seeds)))))
    queries = np.concatenate([seeds for _, _, seeds, _ in plans])
    most = max(m for *_, m in plans)
    near = np.empty((len(queries), most), np.int64)
    for start in range(0, len(queries), 256):
        sims = vectors @ vectors[queries[start:start + 256]].T  # (n, batch)
        top = np.argpartition(-sims, most, axis=0)[:most].T
        order = np.argsort(-np.take_along_axis(sims.T, top, axis=1), axis=1)
        near[start:start + len(top)] = np.take_along_axis(top, order, axis=1)
    out: dict[int, list[np.ndarray]] = {count: [] for count in likes}
    at = 0
    for count, rng, seeds, per_seed in plans:
        pool = np.unique(near[at:at + len(seeds), :per_seed])
        at += len(seeds)
        out[count].append(np.sort(rng.choice(pool, size=count, replace=False)))
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, Any] = {f"{count}-{u}": liked for count in likes
                              for u, liked in enumerate(out[count])}
    np.savez(path, **arrays)
    return out

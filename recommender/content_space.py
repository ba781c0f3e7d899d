"""ContentSpace: the retrieval vectors built from raw sentence embeddings of one corpus.

Raw embeddings of short scientific titles crowd into a narrow cone, and a single liked paper
is a thin query. Three standard retrieval steps, all unsupervised, fix much of that:

1. centring: subtract the corpus mean, so cosines measure what sets papers apart;
2. database-side augmentation (DBA): each paper's vector is blended with its nearest
   neighbours', weighted by similarity cubed, so near-duplicates and close work agree;
3. query expansion (AQE, at request time): a liked paper queries with itself plus its
   neighbours, the same way.

The neighbour lists computed here are stored with each index version and reused for query
expansion; nothing depends on a particular dataset.
"""

from __future__ import annotations

from dataclasses import dataclass

import faiss
import numpy as np

AUGMENT_NEIGHBOURS = 10
QUERY_NEIGHBOURS = 10
STORED_NEIGHBOURS = 20
NEIGHBOUR_POWER = 3.0
HNSW_M = 32
HNSW_EF = 128


@dataclass
class ContentSpace:
    vectors: np.ndarray  # (n, d) float32 unit rows: the retrieval vectors
    mean: np.ndarray  # (d,) corpus mean of the raw embeddings (to centre queries)
    neighbours: np.ndarray  # (n, STORED_NEIGHBOURS) int32 rows, best first (-1: none)
    neighbour_sims: np.ndarray  # (n, STORED_NEIGHBOURS) float32


def normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)


def nearest_neighbours(
    vectors: np.ndarray, k: int, exact_max: int
) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest other rows of every row (inner product): exact, or HNSW when large."""
    n, dim = vectors.shape
    k = min(k, n - 1)
    if k <= 0:
        return np.zeros((n, 0), np.int32), np.zeros((n, 0), np.float32)
    index: faiss.Index
    if n <= exact_max:
        index = faiss.IndexFlatIP(dim)
    else:
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = HNSW_EF
    index.add(vectors)
    sims, rows = index.search(vectors, k + 1)
    # Drop each row itself (usually first; not always, with exact duplicates).
    keep = rows != np.arange(n)[:, None]
    keep[keep.sum(axis=1) > k, -1] = False
    rows = rows[keep].reshape(n, k)
    sims = sims[keep].reshape(n, k)
    return rows.astype(np.int32), sims.astype(np.float32)


def _blend(base: np.ndarray, rows: np.ndarray, sims: np.ndarray) -> np.ndarray:
    weights = np.where(rows >= 0, np.maximum(sims, 0.0) ** NEIGHBOUR_POWER, 0.0)
    return normalise(base + np.einsum("...k,...kd->...d", weights, base[np.maximum(rows, 0)]))


def build_content_space(raw: np.ndarray, exact_max: int = 50_000) -> ContentSpace:
    raw = np.asarray(raw, dtype=np.float32)
    mean = raw.mean(axis=0)
    centred = normalise(raw - mean)
    rows, sims = nearest_neighbours(centred, AUGMENT_NEIGHBOURS, exact_max)
    augmented = _blend(centred, rows, sims)
    rows, sims = nearest_neighbours(augmented, STORED_NEIGHBOURS, exact_max)
    return ContentSpace(augmented, mean.astype(np.float32), rows, sims)


def expand_queries(
    vectors: np.ndarray, neighbours: np.ndarray, neighbour_sims: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """One query vector per liked row: the paper plus its nearest neighbours (AQE)."""
    rows = np.asarray(rows, dtype=np.int64)
    near = neighbours[rows, :QUERY_NEIGHBOURS]
    sims = neighbour_sims[rows, :QUERY_NEIGHBOURS]
    weights = np.where(near >= 0, np.maximum(sims, 0.0) ** NEIGHBOUR_POWER, 0.0)
    queries = vectors[rows] + np.einsum("qk,qkd->qd", weights, vectors[np.maximum(near, 0)])
    return normalise(queries)


def centre_query(raw_query: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """A search text's raw embedding, moved into the space (centred, unit length)."""
    return normalise(np.asarray(raw_query, dtype=np.float32) - mean)

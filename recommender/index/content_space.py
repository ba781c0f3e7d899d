"""ContentSpace: the retrieval vectors built from raw sentence embeddings of one corpus.

Raw embeddings of short scientific titles crowd into a narrow cone, and a single liked paper
is a thin query. Two standard retrieval steps, all unsupervised, fix much of that:

1. centring: subtract the corpus mean, so cosines measure what sets papers apart;
2. database-side augmentation (DBA): each paper's vector is blended with its nearest
   neighbours', weighted by similarity cubed, so near-duplicates and close work agree;
The neighbour lists computed here are stored with each index version (similar papers,
candidates, density); nothing depends on a particular dataset. Up to the exact limit both
graphs are exact (a FlatIP search of every paper). Above it a full build makes one HNSW
graph, over the centred vectors, and finds both graphs among its links, scored exactly,
rather than searching every paper against every other (``linked_neighbours``); the blended
vectors then replace the centred ones in that index, which serves them. Query expansion (a liked
paper querying with its neighbours too) was measured and dropped: it lowered every figure of
the evaluation (benchmarks/ranking_experiments/results.md).

``extend_content_space`` adds a few papers to a built space without redoing the whole graph
(an incremental rebuild). It keeps the previous mean and is exact for the added papers and
for every paper's augmentation list; see its docstring for what it approximates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import faiss
import numpy as np

from recommender.core.phases import PhaseClock

AUGMENT_NEIGHBOURS = 10
STORED_NEIGHBOURS = 20
NEIGHBOUR_POWER = 3.0
HNSW_M = 32
HNSW_EF = 128
# A full HNSW build finds its graphs in the one HNSW graph it builds (docs/benchmarks/rebuild.md,
# "One HNSW graph"): the augmentation lists among each paper's level-0 links and the links
# of its LINK_HOPS best ones, scored exactly; the stored lists the same way (NEIGHBOUR_HOPS).
LINK_HOPS = 4
NEIGHBOUR_HOPS = 8
BLEND_CHUNK = 8192  # papers blended at a time (each gathers its neighbours' vectors)
SEARCH_CHUNK = 16_384  # rows searched at a time for their nearest neighbours
LINK_CHUNK = 4096  # rows whose linked candidates are scored at a time (~600 each)
REVERSE_CANDIDATES = 64  # approximate (HNSW) extension: candidates searched per added paper


@dataclass
class ContentSpace:
    vectors: np.ndarray  # (n, d) float32 unit rows: the retrieval vectors
    mean: np.ndarray  # (d,) corpus mean of the raw embeddings (to centre queries)
    neighbours: np.ndarray  # (n, STORED_NEIGHBOURS) int32 rows, best first (-1: none)
    neighbour_sims: np.ndarray  # (n, STORED_NEIGHBOURS) float32
    # The augmentation graph in the centred space (what DBA blended), kept so that an
    # incremental build can tell whose augmented vector a new paper changes.
    augment_neighbours: np.ndarray | None = None  # (n, AUGMENT_NEIGHBOURS) int32
    augment_sims: np.ndarray | None = None  # (n, AUGMENT_NEIGHBOURS) float32


def normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as a new float32 array."""
    return unit_rows(np.array(matrix, dtype=np.float32))


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale the rows of this float32 array to unit length in place, and return it: at a
    million papers each temporary copy of the vectors is 1.5 GB."""
    norms = np.sqrt(np.einsum("...d,...d->...", matrix, matrix))[..., None]
    matrix /= np.maximum(norms, 1e-12)
    return matrix


def build_faiss(vectors: np.ndarray, exact_max: int) -> Any:
    """Exact inner product for small corpora, HNSW above ``exact_max`` papers."""
    dim = vectors.shape[1]
    index: Any
    if len(vectors) <= exact_max:
        index = faiss.IndexFlatIP(dim)
    else:
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = HNSW_EF
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def nearest_neighbours(
    vectors: np.ndarray, k: int, exact_max: int, index: Any | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest other rows of every row (inner product): exact, or HNSW when large.
    ``index``: one already built over exactly these vectors (default: ``build_faiss``)."""
    n = len(vectors)
    k = min(k, n - 1)
    if k <= 0:
        return np.zeros((n, 0), np.int32), np.zeros((n, 0), np.float32)
    index = build_faiss(vectors, exact_max) if index is None else index
    rows = np.empty((n, k), np.int32)
    sims = np.empty((n, k), np.float32)
    # A chunk at a time: FAISS answers in int64 and float32 with one more column, and the
    # whole answer at once was 1 GB more at a million papers.
    for start in range(0, n, SEARCH_CHUNK):
        part = slice(start, min(n, start + SEARCH_CHUNK))
        found_sims, found = index.search(np.ascontiguousarray(vectors[part]), k + 1)
        # Drop each row itself (usually first; not always, with exact duplicates).
        keep = found != np.arange(part.start, part.stop)[:, None]
        keep[keep.sum(axis=1) > k, -1] = False
        rows[part] = found[keep].reshape(-1, k)
        sims[part] = found_sims[keep].reshape(-1, k)
    return rows, sims


def linked_neighbours(index: Any, vectors: np.ndarray, k: int,
                      hops: int = LINK_HOPS) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest other rows of every row, approximately, from an HNSW index built over
    exactly these vectors, without searching it: each row's candidates are its level-0
    links and the links of its ``hops`` most similar linked rows (one step of neighbour
    descent), scored exactly. At 250k papers: 97.9% of the true 10 nearest with 4 hops (a
    search at efSearch 128: 99.1%), 98.3% of the true 20 with 8, in a third of a search's
    time or less (docs/benchmarks/rebuild.md)."""
    n = len(vectors)
    k = min(k, n - 1)
    rows = np.full((n, k), -1, np.int32)
    sims = np.full((n, k), -np.inf, np.float32)
    if k <= 0:
        return rows, sims
    hnsw = index.hnsw
    offsets = faiss.vector_to_array(hnsw.offsets).astype(np.int64)
    table = faiss.rev_swig_ptr(hnsw.neighbors.data(), hnsw.neighbors.size())
    width = hnsw.nb_neighbors(0)  # level-0 links first in each node's slice, -1 padded
    for start in range(0, n, LINK_CHUNK):
        part = np.arange(start, min(n, start + LINK_CHUNK))
        links = table[offsets[part, None] + np.arange(width)]
        link_sims = _score(vectors, part, links)
        best_links = np.argpartition(-link_sims, min(hops, width) - 1, axis=1)[:, :hops]
        via = np.take_along_axis(links, best_links, axis=1)
        further = table[offsets[np.maximum(via, 0), None] + np.arange(width)]
        further[via < 0] = -1
        candidates = np.concatenate([links, further.reshape(len(part), -1)], axis=1)
        candidates.sort(axis=1)
        candidates[:, 1:][candidates[:, 1:] == candidates[:, :-1]] = -1  # each once
        found = _score(vectors, part, candidates)
        best = np.argpartition(-found, k - 1, axis=1)[:, :k]
        best_sims = np.take_along_axis(found, best, axis=1)
        order = np.argsort(-best_sims, axis=1, kind="stable")
        rows[part] = np.take_along_axis(np.take_along_axis(candidates, best, axis=1), order,
                                        axis=1)
        sims[part] = np.take_along_axis(best_sims, order, axis=1)
    rows[~np.isfinite(sims)] = -1
    return rows, sims


def _score(vectors: np.ndarray, part: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Inner products of each row of ``part`` with its candidate rows (FAISS, threaded);
    -inf for -1 and for the row itself."""
    ids = np.where(candidates < 0, part[:, None], candidates).astype(np.int64)
    out = np.empty(ids.shape, np.float32)
    query = np.ascontiguousarray(vectors[part])
    faiss.fvec_inner_products_by_idx(  # type: ignore[attr-defined]  # not in the stubs
        faiss.swig_ptr(out), faiss.swig_ptr(query), faiss.swig_ptr(vectors),
        faiss.swig_ptr(ids), vectors.shape[1], len(part), ids.shape[1])
    out[ids == part[:, None]] = -np.inf
    return out


def stored_vectors(index: Any) -> np.ndarray:
    """The vectors an HNSW index holds, as a writable (n, d) view of its own memory (valid
    while the index lives). Writing them changes the scores it returns, not its links."""
    storage: Any = faiss.downcast_index(index.storage)
    flat = faiss.rev_swig_ptr(storage.get_xb(), storage.ntotal * storage.d)
    return np.asarray(flat).reshape(storage.ntotal, storage.d)


def refresh_stored_vectors(index: Any, rows: np.ndarray, vectors: np.ndarray) -> None:
    """Overwrite the vectors an HNSW index holds for these rows, in place. The graph's links
    stay as they were built (chosen for the old vectors); the scores it returns are those of
    the new vectors."""
    stored_vectors(index)[rows] = vectors


def _blend(base: np.ndarray, rows: np.ndarray, sims: np.ndarray,
           own: np.ndarray | None = None) -> np.ndarray:
    """DBA: each row (or each of ``own``) plus its neighbours ``rows``, weighted sim**3."""
    weights = np.where(rows >= 0, np.maximum(sims, 0.0) ** NEIGHBOUR_POWER, 0.0)
    mine = base if own is None else base[own]
    return normalise(mine + np.einsum("...k,...kd->...d", weights, base[np.maximum(rows, 0)]))


def build_content_space(raw: np.ndarray, exact_max: int,
                        mean: np.ndarray | None = None) -> ContentSpace:
    """The whole space from scratch; ``mean`` (default: the corpus mean) centres it."""
    return build_indexed_space(raw, exact_max, mean)[0]


def build_indexed_space(raw: np.ndarray, exact_max: int, mean: np.ndarray | None = None,
                        clock: PhaseClock | None = None,
                        overwrite: bool = False) -> tuple[ContentSpace, Any]:
    """The whole space and the FAISS index over its vectors (``build_faiss``): the stored
    neighbours are searched in the index that is served, so a build makes that HNSW graph
    once, not twice. ``clock`` is told when each step ends. ``overwrite``: ``raw`` (float32)
    is centred in place and then holds the retrieval vectors, so the build holds one copy of
    the vectors fewer (1.4 GiB a million papers; the caller's reference keeps ``raw`` alive
    to the end); the caller must not read it as raw vectors afterwards."""
    clock = clock or PhaseClock()
    raw = np.asarray(raw, dtype=np.float32)
    mean = raw.mean(axis=0) if mean is None else np.asarray(mean, dtype=np.float32)
    if overwrite:
        raw -= mean
        centred = unit_rows(raw)
    else:
        centred = unit_rows(raw - mean)
    del raw
    clock.lap("centre")
    if len(centred) > exact_max:
        return _one_graph_space(centred, mean, clock)
    aug_rows, aug_sims = nearest_neighbours(centred, AUGMENT_NEIGHBOURS, exact_max)
    clock.lap("augmentation graph")
    augmented = np.empty_like(centred)
    for start in range(0, len(centred), BLEND_CHUNK):  # all at once: 15 GB at 1M papers
        part = np.arange(start, min(len(centred), start + BLEND_CHUNK))
        augmented[part] = _blend(centred, aug_rows[part], aug_sims[part], own=part)
    if overwrite:  # back into the caller's array, which outlives the build anyway
        centred[...] = augmented
        augmented = centred
    del centred  # not needed past the blend (unless it is ``augmented`` now): 1.4 GiB at 1M
    clock.lap("blend")
    index = build_faiss(augmented, exact_max)
    clock.lap("faiss index")
    rows, sims = nearest_neighbours(augmented, STORED_NEIGHBOURS, exact_max, index)
    clock.lap("neighbour graph")
    space = ContentSpace(augmented, mean.astype(np.float32), rows, sims, aug_rows, aug_sims)
    return space, index


def _one_graph_space(centred: np.ndarray, mean: np.ndarray,
                     clock: PhaseClock) -> tuple[ContentSpace, Any]:
    """An HNSW build (above the exact limit) with one HNSW graph, built over the centred
    vectors: the augmentation lists are found among its links; the blended vectors are
    written into the index's own copy of the vectors (the graph then serves them: DBA moves
    each paper towards its neighbours, so the links stay good, as an incremental build also
    relies on) and back into ``centred``, which holds the retrieval vectors afterwards; the
    stored lists are found among the links too. No all-pairs search, one copy of the vectors
    besides the index's (docs/benchmarks/rebuild.md, "One HNSW graph")."""
    index = build_faiss(centred, exact_max=0)
    clock.lap("faiss index")
    aug_rows, aug_sims = linked_neighbours(index, centred, AUGMENT_NEIGHBOURS)
    clock.lap("augmentation graph")
    served = stored_vectors(index)
    for start in range(0, len(centred), BLEND_CHUNK):
        part = np.arange(start, min(len(centred), start + BLEND_CHUNK))
        served[part] = _blend(centred, aug_rows[part], aug_sims[part], own=part)
    centred[...] = served
    augmented = centred
    clock.lap("blend")
    rows, sims = linked_neighbours(index, augmented, STORED_NEIGHBOURS, NEIGHBOUR_HOPS)
    clock.lap("neighbour graph")
    return ContentSpace(augmented, mean.astype(np.float32), rows, sims, aug_rows,
                        aug_sims), index


# (added rows, their vectors) -> (rows, K) candidate rows to score for each, -1 for none
Candidates = Callable[[np.ndarray, np.ndarray], np.ndarray]


def extend_augmentation(
    prev: ContentSpace, raw: np.ndarray, candidates: Candidates | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Step 1 of an incremental build: the augmented vectors with papers appended.

    ``raw`` holds the previous papers' raw embeddings in the previous order, then the added
    ones. Centred on the previous mean. The added papers get their augmentation lists; each
    old paper that an added one enters the top AUGMENT_NEIGHBOURS of (beats its current
    worst) gets its list merged; exactly those papers and the added ones are re-blended.
    With ``candidates=None`` every similarity is computed (exact: the result is what
    ``build_content_space(raw, mean=prev.mean)`` gives); otherwise only the rows
    ``candidates`` proposes for each added paper are scored (for large corpora).

    Returns (vectors, augment_neighbours, augment_sims, old rows whose vector changed).
    """
    if prev.augment_neighbours is None or prev.augment_sims is None:
        raise ValueError("the previous space has no augmentation graph to extend")
    n_old = len(prev.vectors)
    centred = unit_rows(np.asarray(raw, dtype=np.float32) - prev.mean)
    old_rows = np.asarray(prev.augment_neighbours)
    old_sims = np.asarray(prev.augment_sims)
    add_rows, add_sims, gains = _lists_for_added(centred, n_old, old_rows.shape[1],
                                                 old_sims[:, -1], candidates)
    gainers, merged_rows, merged_sims = _merge(old_rows, old_sims, gains)
    aug_rows = np.concatenate([old_rows, add_rows]).astype(np.int32)
    aug_sims = np.concatenate([old_sims, add_sims]).astype(np.float32)
    aug_rows[gainers], aug_sims[gainers] = merged_rows, merged_sims
    vectors = np.empty_like(centred)
    vectors[:n_old] = prev.vectors
    redo = np.concatenate([gainers, np.arange(n_old, len(centred))])
    for start in range(0, len(redo), BLEND_CHUNK):
        part = redo[start : start + BLEND_CHUNK]
        vectors[part] = _blend(centred, aug_rows[part], aug_sims[part], own=part)
    return vectors, aug_rows, aug_sims, gainers


def extend_neighbours(
    prev: ContentSpace, vectors: np.ndarray, changed: np.ndarray, candidates: Candidates | None
) -> tuple[np.ndarray, np.ndarray]:
    """Step 2: the stored neighbour lists over ``vectors`` (old rows first, then added).

    Added papers are searched against every paper (exactly when ``candidates`` is None).
    Old papers keep their list's members with similarities recomputed where either end's
    vector changed, and take in each added paper that now beats their worst member.
    Approximation: an old paper does not take in an OLD paper whose vector changed so as to
    newly enter its top list, nor drop below-list old papers back in (DBA changes from 1%
    new papers are small; docs/benchmarks/rebuild.md measures the agreement).
    """
    n_old = len(prev.neighbours)
    rows = np.array(prev.neighbours, dtype=np.int32)
    sims = np.array(prev.neighbour_sims, dtype=np.float32)
    is_changed = np.zeros(len(vectors), dtype=bool)
    is_changed[changed] = True
    stale = is_changed[:n_old, None] | (is_changed[np.maximum(rows, 0)] & (rows >= 0))
    at_row, at_col = np.nonzero(stale)
    for start in range(0, len(at_row), 1 << 18):
        r, c = at_row[start : start + (1 << 18)], at_col[start : start + (1 << 18)]
        sims[r, c] = np.einsum("id,id->i", vectors[r], vectors[rows[r, c]])
    resort = np.unique(at_row)
    order = np.argsort(-sims[resort], axis=1, kind="stable")
    rows[resort] = np.take_along_axis(rows[resort], order, axis=1)
    sims[resort] = np.take_along_axis(sims[resort], order, axis=1)
    add_rows, add_sims, gains = _lists_for_added(vectors, n_old, rows.shape[1], sims[:, -1],
                                                 candidates)
    gainers, merged_rows, merged_sims = _merge(rows, sims, gains)
    rows[gainers], sims[gainers] = merged_rows, merged_sims
    return np.concatenate([rows, add_rows]), np.concatenate([sims, add_sims])


Gains = tuple[np.ndarray, np.ndarray, np.ndarray]  # (old row, added row, similarity)


def _lists_for_added(
    space: np.ndarray, n_old: int, k: int, worst: np.ndarray, candidates: Candidates | None
) -> tuple[np.ndarray, np.ndarray, Gains]:
    """The top-k list of every added row, and each (old row, added row) pair whose
    similarity beats the old row's current worst, ``worst[old row]``."""
    n = len(space)
    added = np.arange(n_old, n)
    out_rows = np.zeros((len(added), k), np.int32)
    out_sims = np.zeros((len(added), k), np.float32)
    gains: list[list[np.ndarray]] = [[], [], []]
    chunk = max(1, (1 << 25) // n) if candidates is None else 1024
    for start in range(0, len(added), chunk):
        query = added[start : start + chunk]
        if candidates is None:
            sims = space[query] @ space.T
            ids = np.broadcast_to(np.arange(n), sims.shape)
        else:
            ids = candidates(query, space[query])
            sims = np.einsum("qd,qkd->qk", space[query], space[np.maximum(ids, 0)])
            sims[ids < 0] = -np.inf
        sims[ids == query[:, None]] = -np.inf
        best = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        best_sims = np.take_along_axis(sims, best, axis=1)
        order = np.argsort(-best_sims, axis=1, kind="stable")
        out_rows[start : start + len(query)] = np.take_along_axis(
            np.take_along_axis(ids, best, axis=1), order, axis=1)
        out_sims[start : start + len(query)] = np.take_along_axis(best_sims, order, axis=1)
        old = (ids >= 0) & (ids < n_old)
        old &= sims > worst[np.clip(ids, 0, n_old - 1)]
        at_query, at_col = np.nonzero(old)
        gains[0].append(ids[at_query, at_col])
        gains[1].append(query[at_query])
        gains[2].append(sims[at_query, at_col])
    out_rows[~np.isfinite(out_sims)] = -1
    joined = [np.concatenate(g) if g else np.zeros(0) for g in gains]
    return out_rows, out_sims, (joined[0].astype(np.int64), joined[1].astype(np.int64),
                                joined[2].astype(np.float32))


def _merge(rows: np.ndarray, sims: np.ndarray,
           gains: Gains) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge each gaining old row's list with its gains; (gaining rows, new lists)."""
    owner, row, sim = gains
    k = rows.shape[1]
    order = np.lexsort((-sim, owner))
    owner, row, sim = owner[order], row[order], sim[order]
    gainers, first, counts = np.unique(owner, return_index=True, return_counts=True)
    slot = np.arange(len(owner)) - np.repeat(first, counts)
    keep = slot < k  # an old row can take at most k gains
    extra_rows = np.full((len(gainers), k), -1, np.int32)
    extra_sims = np.full((len(gainers), k), -np.inf, np.float32)
    at = np.repeat(np.arange(len(gainers)), counts)[keep]
    extra_rows[at, slot[keep]] = row[keep]
    extra_sims[at, slot[keep]] = sim[keep]
    both_rows = np.concatenate([rows[gainers], extra_rows], axis=1)
    both_sims = np.concatenate([sims[gainers], extra_sims], axis=1)
    best = np.argsort(-both_sims, axis=1, kind="stable")[:, :k]
    return (gainers, np.take_along_axis(both_rows, best, axis=1),
            np.take_along_axis(both_sims, best, axis=1))


def centre_query(raw_query: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """A search text's raw embedding, moved into the space (centred, unit length)."""
    return normalise(np.asarray(raw_query, dtype=np.float32) - mean)

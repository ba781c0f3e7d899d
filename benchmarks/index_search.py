"""The index benchmark's index kinds and how they are searched and timed: each FAISS kind
with the search settings it sweeps, a ``Searcher`` that re-scores candidates exactly, and
single-query and batch timings (wall and CPU), recall against exact search, and the batch
shapes the ranking asks for."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import faiss
import numpy as np

from benchmarks.harness import log
from benchmarks.synthetic import DIM
from recommender.index.content_space import HNSW_EF, HNSW_M

K = 100  # recall@K and the k of single queries
BATCH_K = 200  # reading_list._candidates: max(200, 4 * want) with want <= 50


@dataclass
class Kind:
    """One index type: how to build it and which search settings to sweep."""

    name: str
    factory: Callable[[int], Any]  # n -> untrained index
    sweep: list[dict[str, int]] = field(default_factory=lambda: [{}])
    rerank: int = 0  # search rerank x k with the index, re-score exactly from the vectors
    service: str = ""  # "exact" / "approximate": what index.py builds at some size
    train_per_list: int = 64


def nlist_for(n: int) -> int:
    """Inverted lists: a power of two near 4 sqrt(n) (512 at 17k, 1024 at 100k, 4096 at 1M)."""
    return int(2 ** round(np.log2(4 * np.sqrt(n))))


def hnsw(m: int, ef_construction: int) -> Callable[[int], Any]:
    def make(n: int) -> Any:
        index = faiss.IndexHNSWFlat(DIM, m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        return index
    return make


def factory(spec: Callable[[int], str]) -> Callable[[int], Any]:
    return lambda n: faiss.index_factory(DIM, spec(n), faiss.METRIC_INNER_PRODUCT)


EF_SWEEP = [{"efSearch": ef} for ef in (16, 32, 64, 128, 256, 512)]
NPROBE_SWEEP = [{"nprobe": p} for p in (4, 8, 16, 32, 64, 128)]

KINDS = {
    "exact": Kind("exact", lambda n: faiss.IndexFlatIP(DIM), service="exact"),
    "hnsw32": Kind("hnsw32", hnsw(HNSW_M, 40), EF_SWEEP, service="approximate"),
    "hnsw32_efc100": Kind("hnsw32_efc100", hnsw(HNSW_M, 100), EF_SWEEP),
    "hnsw16": Kind("hnsw16", hnsw(16, 40), EF_SWEEP),
    "ivf_flat": Kind("ivf_flat", factory(lambda n: f"IVF{nlist_for(n)},Flat"), NPROBE_SWEEP),
    "ivf_sq8_rerank": Kind("ivf_sq8_rerank", factory(lambda n: f"IVF{nlist_for(n)},SQ8"),
                           NPROBE_SWEEP, rerank=2),
    "ivf_pq48_rerank": Kind("ivf_pq48_rerank", factory(lambda n: f"IVF{nlist_for(n)},PQ48"),
                            NPROBE_SWEEP, rerank=4),
    "hnsw32_sq8_rerank": Kind("hnsw32_sq8_rerank", factory(lambda n: "HNSW32,SQ8"),
                              EF_SWEEP, rerank=2),
}
DEFAULT_KINDS = "exact,hnsw32,hnsw32_efc100,hnsw16,ivf_flat,ivf_sq8_rerank,ivf_pq48_rerank"


def set_params(index: Any, params: dict[str, int]) -> None:
    inner: Any = faiss.downcast_index(index)
    for key, value in params.items():
        if key == "efSearch":
            inner.hnsw.efSearch = value
        elif key == "nprobe":
            faiss.extract_index_ivf(inner).nprobe = value


class Searcher:
    """index.search, plus exact re-scoring of rerank x k candidates from the vectors.

    ``faiss_cpu`` is the CPU time of the last index.search alone: the service's ranking scores
    its candidates exactly anyway, so there the re-scoring here comes for free.
    """

    def __init__(self, index: Any, vectors: np.ndarray, rerank: int,
                 params: Callable[[int], Any] | None = None) -> None:
        self.index, self.vectors, self.rerank = index, vectors, rerank
        self.params = params  # k -> faiss.SearchParameters for this call
        self.faiss_cpu = 0.0

    def __call__(self, queries: np.ndarray, k: int) -> np.ndarray:
        start = time.process_time()
        wanted = max(1, self.rerank) * k
        if self.params is None:
            _, rows = self.index.search(queries, wanted)
        else:
            _, rows = self.index.search(queries, wanted, params=self.params(wanted))
        self.faiss_cpu = time.process_time() - start
        if not self.rerank:
            return rows
        found = self.vectors[np.maximum(rows, 0)]  # (q, rerank * k, d)
        scores = np.matmul(found, queries[:, :, None])[:, :, 0]
        scores[rows < 0] = -np.inf
        best = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(scores, best, 1).argsort(axis=1)[:, ::-1]
        return np.take_along_axis(rows, np.take_along_axis(best, order, 1), 1)


# ---------------------------------------------------------------------------------------------
# Measuring


def percentiles(wall: list[float], cpu: list[float] | None = None,
                faiss_cpu: list[float] | None = None) -> dict[str, float]:
    """p50/p99/mean in ms of wall-clock time and, when given, of CPU time.

    On a shared, oversubscribed machine the wall clock includes time spent waiting for a core;
    the CPU time of the searching thread is what the search costs on an idle core.
    """
    out = {}
    for name, seconds in (("", wall), ("cpu_", cpu), ("faiss_cpu_", faiss_cpu)):
        if seconds is None:
            continue
        ms = np.asarray(seconds) * 1e3
        out[f"{name}p50_ms"] = round(float(np.percentile(ms, 50)), 3)
        out[f"{name}p99_ms"] = round(float(np.percentile(ms, 99)), 3)
        out[f"{name}mean_ms"] = round(float(ms.mean()), 3)
    return out


def recall(found: np.ndarray, truth: np.ndarray, k: int) -> float:
    hits = [len(np.intersect1d(f[:k], t[:k])) for f, t in zip(found, truth, strict=True)]
    return round(float(np.mean(hits)) / k, 4)


def timed(search: Searcher, queries: np.ndarray, k: int) -> tuple[np.ndarray, float, float]:
    """Rows found, wall seconds and CPU seconds (all threads of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    rows = search(queries, k)
    return rows, time.perf_counter() - wall, time.process_time() - cpu


def single_queries(search: Searcher, queries: np.ndarray,
                   k: int) -> tuple[np.ndarray, dict[str, float]]:
    search(queries[:5], k)  # warm up
    rows, walls, cpus, faiss_cpus = [], [], [], []
    for q in queries:
        found, wall, cpu = timed(search, q[None, :], k)
        rows.append(found[0])
        walls.append(wall)
        cpus.append(cpu)
        faiss_cpus.append(search.faiss_cpu)
    return np.stack(rows), percentiles(walls, cpus, faiss_cpus if search.rerank else None)


def batch_queries(search: Searcher, queries: np.ndarray, rows: int, k: int,
                  repeats: int) -> tuple[np.ndarray, dict[str, float]]:
    """``repeats`` searches of ``rows`` query rows each (CPU time summed over threads)."""
    first, walls, cpus, faiss_cpus = None, [], [], []
    search(queries[:rows], k)  # warm up
    for r in range(repeats):
        part = np.ascontiguousarray(np.roll(queries, -r * rows, axis=0)[:rows])
        found, wall, cpu = timed(search, part, k)
        walls.append(wall)
        cpus.append(cpu)
        faiss_cpus.append(search.faiss_cpu)
        if first is None:
            first = found
    assert first is not None
    return first, percentiles(walls, cpus, faiss_cpus if search.rerank else None)


@contextmanager
def threads(count: int) -> Iterator[None]:
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(count)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


# (query rows, k): 100 likes searched one by one with 200 candidates each (the brief), fewer
# candidates per like, and 8 interest clusters with per_query = max(100, 4 * want) (what the
# ranking searched before its one search and graph walk).
BATCH_SHAPES = ((100, 200), (100, 50), (100, 20), (16, 200), (8, 200), (8, 100))


def batch_shapes(search: Searcher, index: Any, params: dict[str, int], queries: np.ndarray,
                 truth: np.ndarray, batch_repeats: int) -> list[dict[str, Any]]:
    """At the chosen setting: other shapes of the per-request search (fewer query rows, or
    fewer candidates per row), the levers the ranking code has for users with many likes."""
    set_params(index, params)
    repeats = batch_repeats if params or index.ntotal <= 100_000 else 5
    out = []
    for rows, k in BATCH_SHAPES:
        with threads(1):
            found, timing = batch_queries(search, queries, rows, k, repeats)
        out.append({"rows": rows, "k": k, **params, f"recall@{k}": recall(found, truth[:rows], k),
                    "1thread": timing})
        log(f"   batch {rows} x k={k}: cpu p50 {timing['cpu_p50_ms']} ms "
            f"wall p50 {timing['p50_ms']} ms")
    return out


# What the ranking asked for per request (results/index.json): 8 interest clusters (before
# them, one row per like) with per_query = max(100, 4 * want) candidates each; it now makes
# one search for the user's direction and walks the neighbour graph.
SERVICE_SHAPES = ((8, 100), (8, 200), (100, 100), (100, 200))


def service_shapes(index: Any, vectors: np.ndarray, chosen: dict[str, int],
                   queries: np.ndarray, truth: np.ndarray,
                   repeats: int) -> list[dict[str, Any]]:
    """The per-request searches with the settings recommended for the service: HNSW with
    efSearch = max(HNSW_EF, k) per call (FAISS does not raise efSearch to k by itself, so
    k=200 at efSearch 128 loses recall), IVF with the chosen nprobe and twice it."""
    inner: Any = faiss.downcast_index(index)
    api: Any = faiss  # the type stubs lack the SearchParameters classes

    def hnsw_params(k: int) -> Any:
        return api.SearchParametersHNSW(efSearch=max(HNSW_EF, k))

    def ivf_params(nprobe: int) -> Callable[[int], Any]:
        return lambda k: api.SearchParametersIVF(nprobe=nprobe)

    variants: list[tuple[str, Callable[[int], Any]]] = []
    if hasattr(inner, "hnsw"):
        variants.append((f"efSearch=max({HNSW_EF},k)", hnsw_params))
    elif "nprobe" in chosen:
        variants += [(f"nprobe={p}", ivf_params(p))
                     for p in (chosen["nprobe"], 2 * chosen["nprobe"])]
    out = []
    for label, params in variants:
        search = Searcher(index, vectors, 0, params)
        for rows, k in SERVICE_SHAPES:
            with threads(1):
                found, timing = batch_queries(search, queries, rows, k, repeats)
            out.append({"setting": label, "rows": rows, "k": k,
                        f"recall@{k}": recall(found, truth[:rows], k), "1thread": timing})
            log(f"   service {label} {rows} x k={k}: recall {out[-1][f'recall@{k}']:.3f} "
                f"cpu p50 {timing['cpu_p50_ms']} ms wall p50 {timing['p50_ms']} ms")
    return out


def best_setting(settings: list[dict[str, Any]], target: float) -> dict[str, int]:
    """The cheapest search setting reaching the recall target (sweeps go from cheap to
    costly; the last one when none does)."""
    best = next((s for s in settings if s["recall@100"] >= target), settings[-1])
    return {k: v for k, v in best.items() if k in ("efSearch", "nprobe")}


def describe(index: Any) -> str:
    index = faiss.downcast_index(index)
    name = type(index).__name__
    if hasattr(index, "nlist"):
        name += f"(nlist={index.nlist})"
    if hasattr(index, "hnsw"):
        name += f"(M={index.hnsw.nb_neighbors(0) // 2}, efConstruction={index.hnsw.efConstruction})"
    return name

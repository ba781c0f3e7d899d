"""The index benchmark's memory: what a fresh process holds after loading an index file, read
or memory-mapped (``probe``, run as ``python -m benchmarks.index_memory INDEX MODE QUERIES
PARAMS [--hold]``: a gunicorn worker's view), two such processes sharing one file, the
OpenMP threads a request thread gets, and the first searches on a memory-mapped index
evicted from the page cache (``cold_start``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from benchmarks.harness import log
from benchmarks.index_search import K, percentiles, set_params
from benchmarks.synthetic import DIM, synthetic_vectors
from recommender.index.content_space import HNSW_M


def memory() -> dict[str, float]:
    """This process's smaps_rollup, in MiB."""
    return smaps(os.getpid())


def smaps(pid: int) -> dict[str, float]:
    fields = {"Rss", "Pss", "Pss_Anon", "Pss_File", "Shared_Clean", "Private_Clean",
              "Private_Dirty", "Anonymous"}
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        parts = line.split()
        if parts and parts[0].rstrip(":") in fields:
            out[parts[0].rstrip(":").lower() + "_mb"] = round(int(parts[1]) / 1024, 1)
    return out


# ---------------------------------------------------------------------------------------------
# Subprocess probe: a fresh process loads one index file (as a gunicorn worker would)


def probe(path: str, mode: str, queries_path: str, params: str, hold: bool) -> None:
    faiss.omp_set_num_threads(1)
    queries = np.load(queries_path)
    before = memory()
    start = time.perf_counter()
    flags = faiss.IO_FLAG_MMAP_IFC if mode == "mmap" else 0
    index = faiss.read_index(path, flags)
    load_s = time.perf_counter() - start
    set_params(index, json.loads(params))
    loaded = memory()
    walls, cpus = [], []
    for q in queries:
        wall, cpu = time.perf_counter(), time.process_time()
        index.search(q[None, :], K)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    searched = memory()
    skip = len(queries) // 10  # the first searches fault the pages in
    report = {"mode": mode, "load_s": round(load_s, 3), "baseline": before, "loaded": loaded,
              "after_searches": searched, "searches": len(queries),
              "single": percentiles(walls[skip:], cpus[skip:])}
    print(json.dumps(report), flush=True)
    if hold:
        sys.stdin.read()  # the parent reads our smaps, then closes stdin


def run_probe(path: Path, mode: str, queries_path: Path, params: dict[str, int],
              hold: bool = False) -> subprocess.Popen[str] | dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.index_memory", str(path), mode, str(queries_path),
           json.dumps(params)]
    if hold:
        cmd.append("--hold")
        return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.splitlines()[-1]))


def shared_workers(path: Path, queries_path: Path, params: dict[str, int],
                   workers: int = 2) -> dict[str, Any]:
    """``workers`` processes hold the same index at once: RSS and PSS of each."""
    out: dict[str, Any] = {"index_file": path.name, "file_mb": round(path.stat().st_size / 2**20)}
    for mode in ("read", "mmap"):
        procs = [run_probe(path, mode, queries_path, params, hold=True) for _ in range(workers)]
        reports = []
        for proc in procs:
            assert isinstance(proc, subprocess.Popen) and proc.stdout is not None
            reports.append(json.loads(proc.stdout.readline()))
        together = [smaps(proc.pid) for proc in procs]  # type: ignore[union-attr]
        for proc in procs:
            assert isinstance(proc, subprocess.Popen) and proc.stdin is not None
            proc.stdin.close()
            proc.wait()
        out[mode] = {"per_worker": together,
                     "alone_after_load": [r["loaded"] for r in reports],
                     "load_s": [r["load_s"] for r in reports]}
        print(f"  share {mode}: " + ", ".join(
            f"RSS {m['rss_mb']:.0f} MiB PSS {m['pss_mb']:.0f} MiB" for m in together),
            file=sys.stderr, flush=True)
    return out


def openmp_per_thread(seed: int) -> dict[str, Any]:
    """What a gunicorn request thread gets after the worker limits FAISS to one thread in its
    main thread (as service/server.py does): OpenMP keeps the thread count per thread."""
    faiss.omp_set_num_threads(1)
    vectors = synthetic_vectors(50_000, seed)
    index = faiss.IndexHNSWFlat(DIM, HNSW_M, faiss.METRIC_INNER_PRODUCT)
    index.add(vectors)
    out: dict[str, Any] = {}

    def measure(label: str, set_here: bool) -> None:
        if set_here:
            faiss.omp_set_num_threads(1)
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(100):
            index.search(vectors[:8], K)
        out[label] = {"omp_get_max_threads": faiss.omp_get_max_threads(),
                      "wall_ms_per_8_row_search": round((time.perf_counter() - wall) * 10, 3),
                      "cpu_ms_per_8_row_search": round((time.process_time() - cpu) * 10, 3)}

    measure("main thread, after omp_set_num_threads(1)", False)
    for label, set_here in (("new thread", False), ("new thread, set in it", True)):
        thread = threading.Thread(target=measure, args=(label, set_here))
        thread.start()
        thread.join()
    return out


def cold_start(path: Path, queries: np.ndarray, params: dict[str, int]) -> dict[str, Any]:
    """The first searches (8 rows, k=100) on a memory-mapped index, with the file evicted
    from the page cache (POSIX_FADV_DONTNEED, this file only) and then: nothing, a
    posix_fadvise(WILLNEED) hint, or one sequential read of the file."""
    def evict() -> None:
        with open(path, "rb") as file:
            os.posix_fadvise(file.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)

    def read_through() -> None:
        buffer = bytearray(1 << 24)
        with open(path, "rb", buffering=0) as file:
            while file.readinto(buffer):
                pass

    def willneed() -> None:
        with open(path, "rb") as file:
            os.posix_fadvise(file.fileno(), 0, 0, os.POSIX_FADV_WILLNEED)

    out: dict[str, Any] = {"index_file": path.name,
                           "file_mb": round(path.stat().st_size / 2**20), **params}
    faiss.omp_set_num_threads(1)
    for name, warm in (("cold", None), ("willneed", willneed), ("read_through", read_through)):
        evict()
        start = time.perf_counter()
        if warm is not None:
            warm()
        warm_s = time.perf_counter() - start
        index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)
        set_params(index, params)
        batches = []
        for i in range(5):
            start = time.perf_counter()
            index.search(queries[8 * i:8 * i + 8], K)
            batches.append(round((time.perf_counter() - start) * 1e3, 1))
        out[name] = {"warm_s": round(warm_s, 2), "first_batches_8x100_ms": batches}
        log(f"{name}: warm-up {warm_s:.2f} s, first 8-query searches {batches} ms")
        del index
    return out


if __name__ == "__main__":
    probe(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], "--hold" in sys.argv[5:])

"""Index: build time, memory and query latency of the exact FAISS index and
of approximate ones, at 17k, 100k and 1M papers, with recall@100 against exact search.

For every size it measures:

- the exact index (``IndexFlatIP``, what ``recommender/index/store.py`` builds up to
  ``PAPERREC_EXACT_INDEX_MAX``) and the approximate one the service builds above it (HNSW,
  M=32, efConstruction 40, efSearch 128), plus alternatives (IVF-Flat, IVF-SQ8 and IVF-PQ
  re-scored exactly from the retrieval vectors, HNSW at other efSearch / efConstruction);
- build time, file size, resident memory of a fresh process after ``faiss.read_index`` and
  after a memory-mapped load (``IO_FLAG_MMAP_IFC``), each measured in a subprocess;
- single-query latency (k=100; p50, p99) and the latency of one search with 100 query rows
  (k=200: the candidates per like ``candidates.find_candidates`` asks for), with one FAISS
  thread (a gunicorn worker) and, for the batch, with all cores;
- recall@100: the share of the exact top 100 that the approximate top 100 contains.

The 17k case uses the real citeulike-a embeddings (the configured model, through the
benchmarks' embedding cache in var/bench; --embed fills it, minutes on 2 cores) turned into
the service's retrieval vectors (``build_content_space``). Larger sizes use synthetic 384-d
vectors shaped like those (``benchmarks.synthetic.synthetic_vectors``). Queries are what the
service sends: a random paper's vector (results recorded before 2026-11-30 used queries
expanded with 10 neighbours).

``--share`` also starts two processes that load the same index file and reports each one's
RSS and PSS (from /proc/<pid>/smaps_rollup), once with read_index and once memory-mapped:
that is what N gunicorn workers each hold. ``--cold-start`` times the first searches on a
memory-mapped index evicted from the page cache; ``--calibrate`` compares the real and the
synthetic vectors at 17k; ``--table`` prints the Markdown table of the results file.

    python -m benchmarks.index --sizes 17k,100k --share      # about 11 min, 2 cores
    python -m benchmarks.index --sizes 1M --share            # about 30 min, ~6 GB

Each size is a part of the results file (so sizes can be run separately), and so are the
other modes' figures (``calibration``, ``cold-start``, ``openmp-threads``).

The figures and what they show: docs/benchmarks/lists.md ("The FAISS index").
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from benchmarks import citeulike, harness
from benchmarks.harness import log
from benchmarks.index_memory import cold_start, openmp_per_thread, run_probe, shared_workers
from benchmarks.index_search import (
    BATCH_K,
    DEFAULT_KINDS,
    KINDS,
    K,
    Searcher,
    batch_queries,
    batch_shapes,
    best_setting,
    describe,
    nlist_for,
    recall,
    service_shapes,
    set_params,
    single_queries,
    threads,
)
from benchmarks.synthetic import synthetic_vectors
from recommender.index.content_space import HNSW_EF, HNSW_M, build_content_space

SIZES = {"17k": 16_980, "100k": 100_000, "1M": 1_000_000}


def real_vectors(embed: bool) -> np.ndarray | None:
    """The citeulike-a retrieval vectors, from the benchmarks' embedding cache (embedding
    what is missing from it), or None when papers are missing from it, unless ``embed``."""
    app = harness.workspace()
    papers = citeulike.papers()
    if not embed and app.embedding_cache.missing(app.embedder.variant,
                                                 [p.content_hash for p in papers]):
        return None
    raw, _ = citeulike.vectors(app, papers)
    return build_content_space(raw, app.settings.exact_index_max).vectors


def service_queries(vectors: np.ndarray, count: int, seed: int) -> dict[str, Any]:
    """Queries as the service makes them (random papers: a liked paper queries with its own
    vector), their exact top BATCH_K rows, and the data set's neighbour profile."""
    n = len(vectors)
    rows = np.random.default_rng(seed + 1).choice(n, size=count, replace=False)
    exact = faiss.IndexFlatIP(vectors.shape[1])
    exact.add(vectors)
    queries = np.ascontiguousarray(vectors[rows])
    sims, truth = exact.search(queries, BATCH_K)
    # Mean similarity of a query to its 1st, 10th and 100th neighbour: how crowded the space
    # is, to compare the real and the synthetic vectors.
    profile = {f"sim@{r}": round(float(sims[:, r - 1].mean()), 4) for r in (1, 10, 100)}
    return {"queries": queries, "truth": truth, "profile": profile}


def calibration(vectors: np.ndarray, seed: int) -> dict[str, float]:
    """What the synthetic vectors were fitted on: neighbour similarities, the share of variance
    in the top principal components, and the recall@100 of small IVF and HNSW settings."""
    reference = service_queries(vectors, 300, seed)
    queries, truth = reference["queries"], reference["truth"]
    out = dict(reference["profile"])
    sample = vectors[np.random.default_rng(seed).choice(len(vectors), 8000, replace=False)]
    variance = np.linalg.svd(sample - sample.mean(axis=0), compute_uv=False) ** 2
    variance /= variance.sum()
    for top in (10, 50, 150):
        out[f"variance_top{top}"] = round(float(variance[:top].sum()), 3)
    ivf = faiss.index_factory(vectors.shape[1], "IVF512,Flat", faiss.METRIC_INNER_PRODUCT)
    ivf.train(vectors)
    ivf.add(vectors)
    for nprobe in (2, 4, 8):
        faiss.extract_index_ivf(ivf).nprobe = nprobe
        out[f"ivf512_nprobe{nprobe}_recall@100"] = recall(ivf.search(queries, K)[1], truth, K)
    graph = faiss.IndexHNSWFlat(vectors.shape[1], HNSW_M, faiss.METRIC_INNER_PRODUCT)
    graph.add(vectors)
    for ef in (8, 16):
        graph.hnsw.efSearch = ef
        out[f"hnsw32_ef{ef}_recall@100"] = recall(graph.search(queries, K)[1], truth, K)
    return out


def bench_size(label: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    n = SIZES[label]
    log(f"== {label}: preparing data")
    vectors = None
    source = "synthetic"
    if label == "17k" and not args.synthetic_17k:
        vectors = real_vectors(args.embed)
        source = "citeulike-a (the configured model, content space)" if vectors is not None \
            else source
        if vectors is None:
            log("   citeulike-a is not all in the embedding cache; using synthetic vectors "
                "(pass --embed to embed it)")
    if vectors is None:
        vectors = synthetic_vectors(n, args.seed)
    n = len(vectors)
    with threads(args.build_threads):
        reference = service_queries(vectors, args.queries, args.seed)
    queries, truth = reference["queries"], reference["truth"]
    result: dict[str, Any] = {
        "papers": n, "dim": int(vectors.shape[1]), "vectors": source,
        "vectors_mb": round(vectors.nbytes / 2**20), "queries": len(queries),
        "neighbours": reference["profile"], "indexes": {},
    }
    if args.compare_synthetic and label == "17k" and source != "synthetic":
        twin = synthetic_vectors(n, args.seed)
        result["synthetic_neighbours"] = service_queries(twin, args.queries, args.seed)["profile"]
    queries_path = workdir / f"queries-{label}.npy"
    np.save(queries_path, queries[: args.probe_searches])

    for name in args.kinds:
        kind = KINDS[name]
        if label in args.skip.get(name, ()):  # e.g. hnsw32_efc100 at 1M
            continue
        log(f"-- {label} {name}: building")
        index = kind.factory(n)
        load_before = harness.load_average()
        start = time.perf_counter()
        with threads(args.build_threads):
            if not index.is_trained:
                sample = np.random.default_rng(args.seed).choice(
                    n, size=min(n, kind.train_per_list * nlist_for(n)), replace=False)
                index.train(vectors[np.sort(sample)])
            train_s = time.perf_counter() - start
            index.add(vectors)
        build_s = time.perf_counter() - start
        path = workdir / f"{label}-{name}.faiss"
        faiss.write_index(index, str(path))
        entry: dict[str, Any] = {
            "factory": describe(index), "service": kind.service,
            "build_s": round(build_s, 1), "train_s": round(train_s, 1),
            "build_threads": args.build_threads, "load_during_build": load_before,
            "file_mb": round(path.stat().st_size / 2**20, 1), "rerank": kind.rerank,
            "settings": [],
        }
        log(f"   built in {build_s:.1f} s, {entry['file_mb']} MiB")
        search = Searcher(index, vectors, kind.rerank)
        single_count = args.queries if name != "exact" or n <= 100_000 else args.exact_queries
        for params in kind.sweep:
            set_params(index, params)
            row: dict[str, Any] = dict(params)
            row["load_avg"] = harness.load_average()
            with threads(1):
                found, row["single_k100_1thread"] = single_queries(
                    search, queries[:single_count], K)
                row["recall@100"] = recall(found, truth[: len(found)], K)
                repeats = args.batch_repeats if name != "exact" or n <= 100_000 else 5
                batch, row["batch100_k200_1thread"] = batch_queries(
                    search, queries, args.batch, BATCH_K, repeats)
                row["batch_recall@200"] = recall(batch, truth[: args.batch], BATCH_K)
            with threads(args.build_threads):
                _, row[f"batch100_k200_{args.build_threads}threads"] = batch_queries(
                    search, queries, args.batch, BATCH_K, repeats)
            entry["settings"].append(row)
            single, batch1 = row["single_k100_1thread"], row["batch100_k200_1thread"]
            log(f"   {params or ''} recall@100 {row['recall@100']:.4f}; single p50/p99 "
                f"cpu {single['cpu_p50_ms']}/{single['cpu_p99_ms']} ms wall "
                f"{single['p50_ms']}/{single['p99_ms']} ms; batch p50 cpu {batch1['cpu_p50_ms']} "
                f"wall {batch1['p50_ms']} ms (1 thread), wall "
                f"{row[f'batch100_k200_{args.build_threads}threads']['p50_ms']} ms "
                f"({args.build_threads} threads)")
        params = best_setting(entry["settings"], args.target)
        if kind.sweep != [{}] or name == "exact":
            entry["batch_shapes"] = batch_shapes(search, index, params, queries, truth,
                                                 args.batch_repeats)
        if not kind.rerank and kind.sweep != [{}]:
            entry["service_shapes"] = service_shapes(index, vectors, params, queries, truth,
                                                     args.batch_repeats)
        del search, index
        entry["memory"] = {mode: run_probe(path, mode, queries_path, params)
                           for mode in ("read", "mmap")}
        entry["memory"]["params"] = params
        log(f"   fresh process RSS after load: read "
            f"{entry['memory']['read']['loaded']['rss_mb']:.0f} MiB, mmap "
            f"{entry['memory']['mmap']['loaded']['rss_mb']:.0f} MiB (baseline "
            f"{entry['memory']['read']['baseline']['rss_mb']:.0f} MiB)")
        result["indexes"][name] = entry
        if args.share and name in args.share_kinds:
            result.setdefault("shared_workers", {})[name] = shared_workers(
                path, queries_path, params)
        if not args.keep_files:
            path.unlink()
    return result


bench = harness.Benchmark("index", __doc__)
bench.option("--sizes", default="17k,100k,1M", quick="17k",
             help="comma-separated, of 17k, 100k, 1M")
bench.option("--kinds", default=DEFAULT_KINDS, quick="exact,hnsw32",
             help=f"index kinds, of {', '.join(KINDS)}")
bench.option("--skip", default="hnsw32_efc100@1M,hnsw16@1M,ivf_pq48_rerank@1M",
             help="kind@size pairs not to run (the slow builds at 1M that did not pay at 100k)")
bench.option("--queries", type=int, default=1000, quick=200,
             help="queries for recall and single-query latency")
bench.option("--exact-queries", type=int, default=100,
             help="single queries for the exact index at 1M (each scans 1.5 GB)")
bench.option("--batch", type=int, default=100,
             help="query rows in one batch search (a user with 100 likes)")
bench.option("--batch-repeats", type=int, default=30, quick=3, help="batch searches timed")
bench.option("--build-threads", type=int, default=os.cpu_count() or 1,
             help="FAISS threads for building, ground truth and the multi-thread batch")
bench.option("--target", type=float, default=0.95,
             help="recall@100 an approximate setting must reach")
bench.option("--share", action="store_true",
             help="also run two processes holding the same index (read vs mmap)")
bench.option("--share-kinds", default="hnsw32,ivf_flat", help="index kinds for --share")
bench.option("--probe-searches", type=int, default=1000, quick=100,
             help="searches a fresh process runs after loading")
bench.option("--embed", action="store_true",
             help="embed the citeulike-a papers missing from the benchmarks' cache")
bench.option("--synthetic-17k", action="store_true", quick=True,
             help="use synthetic vectors at 17k too")
bench.option("--compare-synthetic", action="store_true",
             help="at 17k, also report the neighbour profile of synthetic vectors")
bench.option("--workdir", type=Path, default=None,
             help="where index files are written (default: a temporary directory)")
bench.option("--keep-files", action="store_true", help="keep the index files")
bench.option("--seed", type=int, default=0, help="of the vectors and queries")
bench.option("--cold-start", type=Path, metavar="INDEX_FILE",
             help="only measure the first searches on a memory-mapped index file (kept with "
                  "--keep-files) evicted from the page cache")
bench.option("--cold-queries", type=Path, metavar="QUERIES_NPY",
             help="queries for --cold-start (the queries-<size>.npy in --workdir)")
bench.option("--cold-params", default='{"efSearch": 128}', help="search settings for --cold-start")
bench.option("--threads-check", action="store_true",
             help="only show the OpenMP thread count a new thread gets after "
                  "omp_set_num_threads(1) in the main thread")
bench.option("--calibrate", action="store_true",
             help="only compare the real citeulike-a vectors with synthetic ones of the same "
                  "size (what synthetic_vectors was fitted on)")
bench.option("--table", action="store_true",
             help="only print the Markdown table of the results file (--out)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    args = bench.parse(argv)
    args.sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    args.kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    args.share_kinds = [k.strip() for k in args.share_kinds.split(",") if k.strip()]
    for value, known, what in ((args.sizes, SIZES, "size"), (args.kinds, KINDS, "kind")):
        for item in value:
            if item not in known:
                bench.parser.error(f"unknown {what} {item!r}; choose from {', '.join(known)}")
    skip: dict[str, set[str]] = {}
    for pair in filter(None, args.skip.split(",")):
        kind, _, size = pair.partition("@")
        skip.setdefault(kind, set()).add(size)
    args.skip = skip
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.table:
        print(render_table(harness.read_results(args.out)))
        return
    if args.cold_start:
        if args.cold_queries is None:
            raise SystemExit("--cold-start needs --cold-queries")
        bench.record(args, {"cold_start": cold_start(
            args.cold_start, np.load(args.cold_queries), json.loads(args.cold_params))},
            part="cold-start")
        return
    if args.threads_check:
        bench.record(args, {"openmp_per_thread": openmp_per_thread(args.seed)},
                     part="openmp-threads")
        return
    if args.calibrate:
        real = real_vectors(args.embed)
        if real is None:
            raise SystemExit("--calibrate needs the citeulike-a embeddings: pass --embed")
        with threads(args.build_threads):
            found = {"real citeulike-a": calibration(real, args.seed),
                     "synthetic": calibration(synthetic_vectors(len(real), args.seed), args.seed)}
        bench.record(args, {"calibration": found}, part="calibration")
        return
    service = {"exact_max": 50_000, "hnsw_m": HNSW_M, "hnsw_ef_search": HNSW_EF,
               "hnsw_ef_construction": 40}
    with tempfile.TemporaryDirectory(prefix="paperrec-index-bench-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for label in args.sizes:
            started = time.perf_counter()
            result = bench_size(label, args, workdir)
            result["wall_s"] = round(time.perf_counter() - started)
            bench.record(args, {"service": service, **result}, part=label)


def render_table(results: dict[str, Any]) -> str:
    """Markdown: per size and index kind, the cheapest setting that reached the recall target
    (and, for HNSW, also the efSearch the service uses now)."""
    lines = [
        "| papers | index | setting | build s | file MiB | private MiB per worker, read / mmap "
        "| recall@100 | 1 query k=100 p50 / p99 ms | recall@200 of the batch "
        "| 100 queries k=200 p50 / p99 ms | same, 2 threads, wall p50 ms |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, size in results.get("parts", {}).items():
        if label not in SIZES:
            continue
        service_ef = size.get("service", {}).get("hnsw_ef_search")
        for name, entry in size["indexes"].items():
            chosen = entry["memory"]["params"]
            settings = [chosen]
            if entry["service"] == "approximate" and chosen.get("efSearch") != service_ef:
                settings.append({"efSearch": service_ef})
            memory = entry["memory"]
            private = [memory[m]["after_searches"]["anonymous_mb"]
                       - memory[m]["baseline"]["anonymous_mb"] for m in ("read", "mmap")]
            for params in settings:
                row = next(s for s in entry["settings"]
                           if all(s.get(k) == v for k, v in params.items()))
                setting = ", ".join(f"{k} {v}" for k, v in params.items()) or "-"
                if entry["rerank"]:
                    setting += f", re-score {entry['rerank']}k"
                if params is not chosen:
                    setting += " (service now)"
                threads_key = next(k for k in row if k.startswith("batch100_k200_")
                                   and not k.endswith("1thread"))
                single, batch = row["single_k100_1thread"], row["batch100_k200_1thread"]
                service = f" ({entry['service']})" if entry["service"] else ""
                faiss_only = (f" (FAISS {batch['faiss_cpu_p50_ms']:.1f})"
                              if "faiss_cpu_p50_ms" in batch else "")
                lines.append(
                    f"| {label} | {name}{service} | {setting} | {entry['build_s']:.0f} "
                    f"| {entry['file_mb']:.0f} | {private[0]:.0f} / {private[1]:.0f} "
                    f"| {row['recall@100']:.3f} | {single['cpu_p50_ms']:.2f} / "
                    f"{single['cpu_p99_ms']:.2f} | {row['batch_recall@200']:.3f} "
                    f"| {batch['cpu_p50_ms']:.1f}{faiss_only} / {batch['cpu_p99_ms']:.1f} "
                    f"| {row[threads_key]['p50_ms']:.1f} |")
    return "\n".join(lines)



if __name__ == "__main__":
    main()

"""Embedding: papers per second of plain sentence-transformers
``encode``, of each embedding backend and of rebuild-index in worker processes, side by side on real
abstracts, with the mean cosine of each one's vectors to sentence-transformers' and, with
--recall, the citeulike-a P10 Recall@300 of the content method on each backend's vectors.

Contestants: ``sentence-transformers`` is ``SentenceTransformer.encode(texts)`` with its
defaults (what speedups are against); the backends (``recommender/embedding/``,
``PAPERREC_EMBED_BACKEND``) are ``Embedder.encode`` in this process: ``torch``
(sentence-transformers with paperrec's batch size), ``onnx`` (the same model exported to ONNX,
run by ONNX Runtime) and ``onnx-int8`` (that export with int8 weights); ``rebuild-index (N
processes)`` is rebuild-index's embedding with ``PAPERREC_EMBED_PROCESSES=N`` (one per core
unless --processes), ``embed_into_cache`` into a fresh cache, starting the workers included. All use
the same model (the bundled all-MiniLM-L6-v2 unless --model).

Corpora: the 38 sample abstracts (``recommender/corpus/sample_data``), a fixed sample of
citeulike-a papers that have an abstract (title + abstract, as embedded by the service; 1,929
have one, --limit caps it: arXiv-length abstracts) and, with --mixed, a fixed sample of all
citeulike-a papers (mostly titles alone, as the corpus). Every repeat embeds each corpus once
with each contestant, in a rotating order, so that a noisy, shared machine slows all of them
alike; the figures are the median over repeats, and ``speedup`` is the median of the
per-repeat ratios to plain sentence-transformers.

--recall embeds all 16,980 citeulike-a papers with each backend through the benchmarks'
embedding cache (var/bench; a second run embeds nothing) and evaluates the ``content`` method
(and any other --methods) on the P10 split with the application's ``evaluate``, as
``paperrec evaluate`` does.

    python -m benchmarks.embedding --backends onnx-int8 --limit 400 --mixed 2000 \
        --repeats 3     # about 10 min on 2 busy cores
    python -m benchmarks.embedding --limit 1000 --repeats 3 --recall
        # about 35 min on 2 busy cores: 20 min side by side, 16 min to embed 3 x 16,980 papers
    python -m benchmarks.embedding --limit 200 --repeats 3 --backends torch,onnx-int8
    python -m benchmarks.embedding --cold-start-only     # start-up time and memory

Each backend also starts once in a fresh process (``cold_start``: seconds to the first vector,
peak memory, whether torch was imported), as a gunicorn worker does. The side-by-side run and
``--cold-start-only`` are two parts of the results file.

The figures and what they show: docs/benchmarks/embedding.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import citeulike, harness
from recommender import jobs
from recommender.core.config import DEFAULT_MODEL
from recommender.core.papers import Paper
from recommender.corpus.formats import read_papers
from recommender.embedding.cache import EmbeddingCache, embed_into_cache
from recommender.embedding.encoders import BACKENDS, Embedder, check_backend, shared_embedder
from recommender.embedding.models import load_model
from recommender.embedding.processes import MIN_CHARACTERS

REFERENCE = "torch"  # the backend --recall compares the others to
PLAIN = "sentence-transformers"  # model.encode(texts), its defaults: what speedups are against
DEFAULT = "rebuild-index"  # embed_into_cache in worker processes (PAPERREC_EMBED_PROCESSES)

Encode = Callable[[list[str]], np.ndarray]

bench = harness.Benchmark("embedding", __doc__)
bench.option("--backends", default=",".join(BACKENDS), quick="onnx-int8",
             help=f"comma-separated, of {', '.join(BACKENDS)}")
bench.option("--model", default=DEFAULT_MODEL, help="sentence-transformers model")
bench.option("--repeats", type=int, default=5, quick=1,
             help="times each corpus is embedded by each backend")
bench.option("--limit", type=int, default=2000, quick=16,
             help="citeulike-a papers with abstracts to embed (1,929 have one); 0 for all")
bench.option("--mixed", type=int, default=2000, quick=0,
             help="also a sample of this many of all citeulike-a papers (mostly titles "
                  "alone, 11%% with an abstract, as the corpus); 0: none")
bench.option("--processes", type=int, default=len(os.sched_getaffinity(0)), quick=1,
             help="PAPERREC_EMBED_PROCESSES of the rebuild-index path")
bench.option("--no-cold-start", action="store_true",
             help="skip the start-up time and memory of each backend")
bench.option("--batch-size", type=int, default=64, help="embedder batch size")
bench.option("--seed", type=int, default=0, help="sample and evaluation seed")
bench.option("--recall", action="store_true",
             help="also embed all citeulike-a papers and evaluate Recall@M")
bench.option("--split", default="P10", help="citeulike-a split for --recall")
bench.option("--methods", default="content", help="evaluation methods for --recall")
bench.option("--export-dir", type=Path, default=None,
             help="where ONNX exports are kept (default: ~/.cache/paperrec/embedders)")
bench.option("--cold-start-only", action="store_true",
             help="measure only the cold starts (their own part of the results file)")


def sample_texts() -> list[str]:
    return [p.text for path in jobs.sample_files() for p in read_papers(path)
            if isinstance(p, Paper)]


def load_embedders(model: str, backends: list[str], batch_size: int,
                   export_dir: Path | None) -> tuple[dict[str, Embedder], dict[str, float]]:
    """Each backend's embedder, loaded (and exported, the first time) by embedding one text."""
    embedders, seconds = {}, {}
    for backend in backends:
        started = time.perf_counter()
        embedders[backend] = Embedder(model, batch_size, backend, export_dir)
        embedders[backend].encode(["warm up"])
        seconds[backend] = round(time.perf_counter() - started, 2)
        harness.log(f"{backend}: loaded in {seconds[backend]} s")
    return embedders, seconds


def contestants(model: str, embedders: dict[str, Embedder], processes: int,
                scratch: Path) -> dict[str, Encode]:
    """What is timed: plain sentence-transformers ``encode`` (its defaults), each backend's
    ``Embedder.encode`` in this process, and rebuild-index's embedding with ``processes``
    worker processes (``embed_into_cache`` into a fresh cache, starting them included; texts
    under ``MIN_CHARACTERS`` in all: in process)."""
    plain = load_model(model)
    default = embedders.get("onnx-int8") or Embedder(model, backend="onnx-int8")

    def rebuild(texts: list[str]) -> np.ndarray:
        path = scratch / f"cache-{time.monotonic_ns()}.sqlite"
        cache = EmbeddingCache(path)
        try:
            by_hash = {f"{n}": text for n, text in enumerate(texts)}
            embed_into_cache(default, cache, by_hash, progress=False, processes=processes)
            found = cache.get(default.variant, list(by_hash))
        finally:
            cache.close()
            for leftover in scratch.glob(f"{path.name}*"):
                leftover.unlink()
        return np.stack([found[h] for h in by_hash])

    return {PLAIN: plain.encode,
            **{name: embedder.encode for name, embedder in embedders.items()},
            f"{DEFAULT} ({processes} processes)": rebuild}


def throughput(encoders: dict[str, Encode], texts: list[str], repeats: int,
               corpus: str) -> dict[str, Any]:
    """Every repeat embeds all texts with each contestant (rotating order); medians and
    ratios to plain sentence-transformers, and the mean cosine of each one's vectors to its."""
    names = list(encoders)
    for name in names:  # warm-up on real lengths: the first call on long inputs is slower
        encoders[name](texts[:16])
    times: dict[str, list[float]] = {name: [] for name in names}
    vectors: dict[str, np.ndarray] = {}
    for repeat, name in harness.interleaved(names, repeats):
        started = time.perf_counter()
        vectors[name] = np.asarray(encoders[name](texts), dtype=np.float32)
        times[name].append(time.perf_counter() - started)
        if name == names[(repeat - 1) % len(names)]:  # the last of this repeat
            harness.log(f"{corpus} repeat {repeat + 1}/{repeats}: " + ", ".join(
                f"{n} {len(texts) / times[n][-1]:.1f}/s" for n in names)
                + f" (load {harness.load_average():.1f})")
    reference = vectors.get(PLAIN)
    characters = sum(map(len, texts))
    out: dict[str, Any] = {"papers": len(texts),
                           "mean_chars": round(characters / len(texts), 1),
                           "rebuild_starts_workers": characters >= MIN_CHARACTERS}
    for name in names:
        median = float(np.median(times[name]))
        row: dict[str, Any] = {"papers_per_second": round(len(texts) / median, 2),
                               "median_seconds": round(median, 3),
                               "seconds": [round(t, 3) for t in times[name]]}
        if PLAIN in times:
            row["speedup"] = harness.paired_ratio(times[name], times[PLAIN])
            row["speedup_of_medians"] = round(float(np.median(times[PLAIN])) / median, 3)
        if reference is not None:
            cosine = np.sum(vectors[name] * reference, axis=1) / (
                np.linalg.norm(vectors[name], axis=1) * np.linalg.norm(reference, axis=1))
            row["mean_cosine"] = round(float(cosine.mean()), 5)
            row["min_cosine"] = round(float(cosine.min()), 5)
        out[name] = row
    return out


COLD_START = """
import json, sys, time
started = time.perf_counter()
from recommender.embedding.encoders import Embedder
Embedder(sys.argv[1], 64, sys.argv[2], None if sys.argv[3] == "-" else __import__("pathlib").Path(
    sys.argv[3])).encode(["warm up"])
print(json.dumps({"seconds": round(time.perf_counter() - started, 2),
                  "peak_rss_mb": int(next(line.split()[1] for line in open("/proc/self/status")
                                          if line.startswith("VmHWM"))) // 1024,
                  "imports_torch": "torch" in sys.modules}))
"""


def cold_start(model: str, backends: list[str], export_dir: Path | None) -> dict[str, Any]:
    """Each backend in a fresh process (as a gunicorn worker starts): seconds from import to
    the first vector, peak resident memory, and whether torch was imported at all. The
    export is made beforehand (``load_embedders``), so this is the cost of every later start."""
    out = {}
    for backend in backends:
        done = subprocess.run(
            [sys.executable, "-c", COLD_START, model, backend, str(export_dir or "-")],
            cwd=harness.ROOT, capture_output=True, text=True, check=True)
        out[backend] = json.loads(done.stdout.strip().splitlines()[-1])
        harness.log(f"{backend}: cold start {out[backend]}")
    return out


def recall(args: argparse.Namespace, backends: list[str]) -> dict[str, Any]:
    """Each backend's vectors of every paper (through the benchmarks' embedding cache) and
    the evaluation of ``--methods`` over them, as `paperrec evaluate` runs it."""
    data = citeulike.split(args.split)
    out: dict[str, Any] = {"split": args.split, **data.summary()}
    reference: np.ndarray | None = None
    for backend in backends:
        embedder = shared_embedder(args.model, args.batch_size, backend)
        app = harness.workspace(embedder, model=args.model, embed_batch_size=args.batch_size)
        report = app.evaluate(data, args.methods, seed=args.seed, progress=False)
        vectors, _ = citeulike.vectors(app, data.papers, progress=False)
        app.close()
        embedded = report["dataset"].get("newly_embedded", 0)
        seconds = report["dataset"].get("embedding_seconds", 0.0)
        row: dict[str, Any] = {"newly_embedded": embedded, "embedding_seconds": seconds}
        if embedded == len(data.papers) and seconds:
            row["papers_per_second_all"] = round(embedded / seconds, 1)
        if backend == REFERENCE:
            reference = vectors
        if reference is not None:
            row["mean_cosine"] = round(float(np.sum(vectors * reference, axis=1).mean()), 5)
        row["methods"] = {name: {metric: round(value, 5) for metric, value in figures.items()
                                 if metric.startswith(("recall@", "ndcg@"))}
                          for name, figures in report["methods"].items()}
        harness.log(f"{backend}: {row}")
        out[backend] = row
    base = out.get(REFERENCE, {}).get("methods", {})
    for backend in backends:
        for name, metrics in out[backend]["methods"].items():
            if name in base and base[name]["recall@300"]:
                metrics["recall@300_relative"] = round(
                    metrics["recall@300"] / base[name]["recall@300"] - 1, 5)
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    args = bench.parse(argv)
    args.backends = [check_backend(b.strip()) for b in args.backends.split(",") if b.strip()]
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if args.repeats < 1:
        bench.parser.error("--repeats must be 1 or more")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    backends = sorted(args.backends, key=lambda b: b != REFERENCE)  # the reference first
    report: dict[str, Any] = {"model": args.model, "batch_size": args.batch_size}
    if args.cold_start_only:
        load_embedders(args.model, backends, args.batch_size, args.export_dir)  # exports
        report["cold_start"] = cold_start(args.model, backends, args.export_dir)
        bench.record(args, report, part="cold-start")
        return 0
    import torch

    report.update(repeats=args.repeats, torch_threads=torch.get_num_threads(),
                  load_average_start=list(os.getloadavg()))
    embedders, report["load_seconds"] = load_embedders(args.model, backends, args.batch_size,
                                                       args.export_dir)
    if not args.no_cold_start:
        report["cold_start"] = cold_start(args.model, backends, args.export_dir)
    report["processes"] = args.processes
    with tempfile.TemporaryDirectory(prefix="paperrec-embedding-") as scratch:
        encoders = contestants(args.model, embedders, args.processes, Path(scratch))
        report["corpora"] = {"sample": throughput(encoders, sample_texts(), args.repeats,
                                                  "sample")}
        report["corpora"]["citeulike-a"] = throughput(
            encoders, citeulike.texts(args.limit, args.seed), args.repeats, "citeulike-a")
        if args.mixed:
            report["corpora"]["citeulike-a mixed"] = throughput(
                encoders, citeulike.texts(args.mixed, args.seed, abstracts=False),
                args.repeats, "citeulike-a mixed")
    if args.recall:
        report["recall"] = recall(args, backends)
    bench.record(args, report, part="side-by-side")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

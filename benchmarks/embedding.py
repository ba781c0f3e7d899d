"""Embedding benchmark (issues 6 and 14): papers per second of plain sentence-transformers
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

--recall embeds all 16,980 citeulike-a papers with each backend through the embedding cache in
--data-dir (a second run embeds nothing) and evaluates the ``content`` method (and any other
--methods that use the vectors) on the P10 split, as ``paperrec evaluate`` does.

    .venv/bin/python benchmarks/embedding.py --backends onnx-int8 --limit 400 --mixed 2000 \
        --repeats 3     # about 10 min on 2 busy cores
    .venv/bin/python benchmarks/embedding.py --limit 1000 --repeats 3 --recall
        # about 35 min on 2 busy cores: 20 min side by side, 16 min to embed 3 x 16,980 papers
    .venv/bin/python benchmarks/embedding.py --limit 200 --repeats 3 --backends torch,onnx-int8
    .venv/bin/python benchmarks/embedding.py --cold-start-only     # start-up time and memory

Each backend also starts once in a fresh process (``cold_start``: seconds to the first vector,
peak memory, whether torch was imported), as a gunicorn worker does.

Prints one JSON document and writes it to benchmarks/results/embedding.json (--output).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recommender import jobs  # noqa: E402
from recommender.core.config import DEFAULT_MODEL, Settings  # noqa: E402
from recommender.core.papers import Paper  # noqa: E402
from recommender.corpus.formats import read_papers  # noqa: E402
from recommender.embedding.cache import EmbeddingCache, cached_vectors, embed_into_cache  # noqa: E402
from recommender.embedding.encoders import (  # noqa: E402
    BACKENDS,
    Embedder,
    check_backend,
    shared_embedder,  # noqa: E402
)
from recommender.embedding.models import load_model  # noqa: E402
from recommender.embedding.processes import MIN_CHARACTERS  # noqa: E402
from recommender.evaluation.dataset import Dataset, load_dataset  # noqa: E402
from recommender.evaluation.methods import make_method  # noqa: E402
from recommender.evaluation.metrics import METRICS, top_rows, user_metrics  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "embedding.json"
CITEULIKE = Path("/work/shared/data/citeulike-a")
REFERENCE = "torch"  # the backend --recall compares the others to
PLAIN = "sentence-transformers"  # model.encode(texts), its defaults: what speedups are against
DEFAULT = "rebuild-index"  # embed_into_cache in worker processes (PAPERREC_EMBED_PROCESSES)

Encode = Callable[[list[str]], np.ndarray]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def sample_texts() -> list[str]:
    return [p.text for path in jobs.sample_files() for p in read_papers(path)
            if isinstance(p, Paper)]


def citeulike_texts(papers: Path, limit: int, seed: int, abstracts: bool = True) -> list[str]:
    """Title + abstract of a fixed random sample of the papers that have an abstract (else of
    all papers, mostly titles alone, as the corpus is)."""
    texts = [p.text for p in read_papers(papers)
             if isinstance(p, Paper) and (p.abstract or not abstracts)]
    if limit and limit < len(texts):
        rows = np.sort(np.random.default_rng(seed).choice(len(texts), limit, replace=False))
        texts = [texts[r] for r in rows]
    return texts


def load_embedders(model: str, backends: list[str], batch_size: int,
                   export_dir: Path | None) -> tuple[dict[str, Embedder], dict[str, float]]:
    """Each backend's embedder, loaded (and exported, the first time) by embedding one text."""
    embedders, seconds = {}, {}
    for backend in backends:
        started = time.perf_counter()
        embedders[backend] = Embedder(model, batch_size, backend, export_dir)
        embedders[backend].encode(["warm up"])
        seconds[backend] = round(time.perf_counter() - started, 2)
        log(f"{backend}: loaded in {seconds[backend]} s")
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
    for repeat in range(repeats):
        for name in names[repeat % len(names):] + names[:repeat % len(names)]:
            started = time.perf_counter()
            vectors[name] = np.asarray(encoders[name](texts), dtype=np.float32)
            times[name].append(time.perf_counter() - started)
        log(f"{corpus} repeat {repeat + 1}/{repeats}: " + ", ".join(
            f"{name} {len(texts) / times[name][-1]:.1f}/s" for name in names)
            + f" (load {os.getloadavg()[0]:.1f})")
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
            paired = np.array(times[PLAIN]) / np.array(times[name])
            row["speedup"] = round(float(np.median(paired)), 3)
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
            cwd=ROOT, capture_output=True, text=True, check=True)
        out[backend] = json.loads(done.stdout.strip().splitlines()[-1])
        log(f"{backend}: cold start {out[backend]}")
    return out


def content_recall(data: Dataset, vectors: np.ndarray, methods: list[str],
                   seed: int) -> dict[str, dict[str, float]]:
    """The offline protocol of ``evaluation.run_evaluation`` on these vectors."""
    evaluated = [u for u, held in enumerate(data.test) if len(held)]
    results = {}
    for name in methods:
        method = make_method(name, seed)
        method.fit(data, vectors)
        total = np.zeros(len(METRICS))
        for user in evaluated:
            liked = data.train[user]
            total += user_metrics(top_rows(method.scores(liked), liked), data.test[user])
        results[name] = {metric: round(float(value), 5)
                         for metric, value in zip(METRICS, total / len(evaluated), strict=True)}
    return results


def recall(args: argparse.Namespace, backends: list[str]) -> dict[str, Any]:
    split = args.citeulike / "splits" / args.split
    data = load_dataset(args.citeulike / "papers.jsonl", split / "train.tsv",
                        split / "test.tsv", on_problem=log)
    settings = Settings(data_dir=args.data_dir, model=args.model,
                        embed_batch_size=args.batch_size)
    hashes = [p.content_hash for p in data.papers]

    def texts_of(missing: set[str]) -> dict[str, str]:
        return {p.content_hash: p.text for p in data.papers if p.content_hash in missing}

    out: dict[str, Any] = {"split": args.split, **data.summary()}
    reference: np.ndarray | None = None
    for backend in backends:
        started = time.perf_counter()
        embedder = shared_embedder(settings.model, settings.embed_batch_size, backend)
        vectors, embedded = cached_vectors(embedder, settings.embedding_cache_path, hashes,
                                           texts_of, progress=True)
        seconds = time.perf_counter() - started
        row: dict[str, Any] = {"newly_embedded": embedded, "embedding_seconds": round(seconds, 1)}
        if embedded == len(hashes):
            row["papers_per_second_all"] = round(embedded / seconds, 1)
        if backend == REFERENCE:
            reference = vectors
        if reference is not None:
            row["mean_cosine"] = round(float(np.sum(vectors * reference, axis=1).mean()), 5)
        row["methods"] = content_recall(data, vectors, args.methods, args.seed)
        log(f"{backend}: {row}")
        out[backend] = row
    base = out.get(REFERENCE, {}).get("methods", {})
    for backend in backends:
        for name, metrics in out[backend]["methods"].items():
            if name in base and base[name]["recall@300"]:
                metrics["recall@300_relative"] = round(
                    metrics["recall@300"] / base[name]["recall@300"] - 1, 5)
    return out


def machine() -> dict[str, Any]:
    import onnxruntime
    import sentence_transformers
    import torch

    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
               platform.processor())
    return {"nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "onnxruntime": onnxruntime.__version__,
            "sentence_transformers": sentence_transformers.__version__,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Embedding benchmark: papers/s of each backend side by side, mean cosine to "
                    "sentence-transformers (torch), and with --recall the citeulike-a Recall@300.")
    parser.add_argument("--backends", default=",".join(BACKENDS),
                        help=f"comma-separated, of {', '.join(BACKENDS)} (default: all)")
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help="sentence-transformers model (default: the bundled %(default)s)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="times each corpus is embedded by each backend (default: 5)")
    parser.add_argument("--limit", type=int, default=2000,
                        help="citeulike-a papers with abstracts to embed; 0 for all (default: "
                             "2000, i.e. all 1,929)")
    parser.add_argument("--mixed", type=int, default=2000,
                        help="also a sample of this many of all citeulike-a papers (mostly "
                             "titles alone, 11%% with an abstract, as the corpus); 0: none "
                             "(default: 2000)")
    parser.add_argument("--processes", type=int, default=len(os.sched_getaffinity(0)),
                        help="PAPERREC_EMBED_PROCESSES of the rebuild-index path (default: one "
                             "per core, %(default)s)")
    parser.add_argument("--no-cold-start", action="store_true",
                        help="skip the start-up time and memory of each backend")
    parser.add_argument("--batch-size", type=int, default=64, help="default: 64")
    parser.add_argument("--seed", type=int, default=0, help="sample and evaluation seed")
    parser.add_argument("--citeulike", type=Path, default=CITEULIKE,
                        help="citeulike-a directory (papers.jsonl, splits/)")
    parser.add_argument("--recall", action="store_true",
                        help="also embed all citeulike-a papers and evaluate Recall@M")
    parser.add_argument("--split", default="P10", help="citeulike-a split (default: P10)")
    parser.add_argument("--methods", default="content",
                        help="evaluation methods for --recall (default: content)")
    parser.add_argument("--data-dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "paperrec-embedding-benchmark",
                        help="embedding cache for --recall, kept between runs (default: "
                             "%(default)s)")
    parser.add_argument("--export-dir", type=Path, default=None,
                        help="where ONNX exports are kept (default: ~/.cache/paperrec/embedders)")
    parser.add_argument("--cold-start-only", action="store_true",
                        help="measure only the cold starts and merge them into --output")
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help=f"JSON results (default: {RESULTS.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    args.backends = [check_backend(b.strip()) for b in args.backends.split(",") if b.strip()]
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if args.repeats < 1:
        parser.error("--repeats must be 1 or more")
    return args


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else argv
    args = parse_args(raw)
    backends = sorted(args.backends, key=lambda b: b != REFERENCE)  # the reference first
    report: dict[str, Any] = {
        "benchmark": "embedding", "command": " ".join(["benchmarks/embedding.py", *raw]),
        "model": args.model, "batch_size": args.batch_size, "repeats": args.repeats,
        "machine": machine(), "load_average_start": list(os.getloadavg()),
    }
    if args.cold_start_only:
        load_embedders(args.model, backends, args.batch_size, args.export_dir)  # exports
        merged = json.loads(args.output.read_text()) if args.output.exists() else report
        merged["cold_start"] = cold_start(args.model, backends, args.export_dir)
        write(merged, args.output)
        return 0
    embedders, report["load_seconds"] = load_embedders(args.model, backends, args.batch_size,
                                                       args.export_dir)
    if not args.no_cold_start:
        report["cold_start"] = cold_start(args.model, backends, args.export_dir)
    report["processes"] = args.processes
    with tempfile.TemporaryDirectory(prefix="paperrec-embedding-") as scratch:
        encoders = contestants(args.model, embedders, args.processes, Path(scratch))
        report["corpora"] = {"sample": throughput(encoders, sample_texts(), args.repeats,
                                                  "sample")}
        papers = args.citeulike / "papers.jsonl"
        if papers.exists():
            report["corpora"]["citeulike-a"] = throughput(
                encoders, citeulike_texts(papers, args.limit, args.seed), args.repeats,
                "citeulike-a")
            if args.mixed:
                report["corpora"]["citeulike-a mixed"] = throughput(
                    encoders, citeulike_texts(papers, args.mixed, args.seed, abstracts=False),
                    args.repeats, "citeulike-a mixed")
        else:
            log(f"{papers} not found: citeulike-a skipped")
    if args.recall:
        report["recall"] = recall(args, backends)
    report["load_average_end"] = list(os.getloadavg())
    write(report, args.output)
    return 0


def write(report: dict[str, Any], path: Path) -> None:
    """Print the report and write it to ``path`` atomically."""
    text = json.dumps(report, indent=2)
    print(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text + "\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    raise SystemExit(main())

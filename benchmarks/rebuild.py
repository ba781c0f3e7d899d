"""Rebuild benchmark (issue 6): an incremental rebuild that adds 1% new papers, against a
full rebuild.

citeulike-a (16,980 papers): 1% of the papers (seeded) are held out; the rest are ingested
into a fresh data dir and indexed with a full build; then the held-out 1% are ingested and
`rebuild-index` runs again, which extends the previous version (incremental). Measured:

- end to end (``jobs.rebuild_index``, as `paperrec rebuild-index` runs it): the full build
  of all papers from cached embeddings (``--full``), and the incremental one after the 1% are
  ingested, embedding those 1% for real (their vectors are deleted from the copied cache);
  the model load is timed apart (a fresh process pays it once per rebuild);
- a full rebuild from an EMPTY cache: embedding every paper is extrapolated from embedding
  a sample (``--embed-sample`` papers, default backend) plus the full build above;
- publish only (``IndexStore.publish`` with the vectors in memory): full vs incremental;
- agreement: the share of each paper's 20 stored neighbours that the incremental version has
  in common with a full build (new papers, old papers), and the mean drift.

``--synthetic 100k`` repeats the publish-only measurement on synthetic 384-d vectors
(``benchmarks/index.py`` ``synthetic_vectors``, plus a common offset as raw embeddings
have), where the index is HNSW.

The embedding cache is copied from ``--cache`` (never modified; its vectors are relabelled
in the copy as the current default embedding variant, so they count as cached).

    .venv/bin/python benchmarks/rebuild.py                      # citeulike-a, about 5 min
    .venv/bin/python benchmarks/rebuild.py --synthetic 100k     # plus 100k, about 15 min

Prints one JSON document and writes benchmarks/results/rebuild.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from index import machine, synthetic_vectors  # type: ignore[import-not-found]  # noqa: E402

from recommender import jobs, wiring  # noqa: E402
from recommender.core.config import Settings  # noqa: E402
from recommender.corpus.store import CorpusStore  # noqa: E402
from recommender.embedding.encoders import shared_embedder  # noqa: E402
from recommender.index.paper_index import PaperIndex  # noqa: E402
from recommender.index.store import IndexStore, mean_drift  # noqa: E402

PAPERS = Path("/work/shared/data/citeulike-a/papers.jsonl")
CACHE = Path("/tmp/lt-cul/data/embeddings.sqlite")
RESULTS = ROOT / "benchmarks" / "results" / "rebuild.json"


def ingest(settings: Settings, path: Path) -> None:
    """``paperrec ingest PATH``."""
    jobs.ingest(wiring.build(settings).corpus, [path], on_rejection=lambda r: None)


def rebuild(settings: Settings, full: bool = False) -> jobs.RebuildSummary:
    """``paperrec rebuild-index [--full]``, through the product's own code."""
    parts = wiring.build(settings)
    return jobs.rebuild_index(parts.corpus, parts.embedder, settings.embedding_cache_path,
                              parts.index_store, settings.exact_index_max, settings.model,
                              progress=False, full=full)


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def median(values: list[float]) -> dict[str, Any]:
    return {"median_s": round(statistics.median(values), 3), "runs_s": [round(v, 3)
                                                                        for v in values]}


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean([len(set(x) & set(y)) / max(len(x), 1) for x, y in
                          zip(a, b, strict=True)]))


def agreement(inc: PaperIndex, full: PaperIndex, n_old: int) -> dict[str, float]:
    """Neighbour lists of the incremental version vs a full build (matched by paper id)."""
    to_full = np.array([full.row(pid) for pid in inc.ids])
    from_full = np.empty_like(to_full)
    from_full[to_full] = np.arange(len(to_full))
    mine = np.asarray(inc.space.neighbours)
    theirs = from_full[np.asarray(full.space.neighbours)[to_full]]
    return {"new_papers": round(overlap(mine[n_old:], theirs[n_old:]), 4),
            "old_papers": round(overlap(mine[:n_old], theirs[:n_old]), 4)}


def publish_only(raw: np.ndarray, n_old: int, repeats: int, exact_max: int,
                 work: Path) -> dict[str, Any]:
    """Full vs incremental ``IndexStore.publish`` of n_old + (n - n_old) papers."""
    ids = [f"p{i}" for i in range(len(raw))]
    hashes = [f"h{i}" for i in range(len(raw))]
    days = np.full(len(raw), np.nan)
    full_times, inc_times = [], []
    full = inc = None
    for attempt in range(repeats):
        store = IndexStore(work / f"full-{attempt}")
        seconds, full = timed(lambda s=store: s.publish(ids, raw, days, "m", exact_max,
                                                        hashes=hashes, full=True))
        full_times.append(seconds)
        shutil.rmtree(work / f"full-{attempt}")
    store = IndexStore(work / "base")
    base_seconds, base = timed(lambda: store.publish(ids[:n_old], raw[:n_old], days[:n_old],
                                                     "m", exact_max, hashes=hashes[:n_old]))
    snapshot = work / "snapshot"
    shutil.copytree(work / "base", snapshot)
    for _ in range(repeats):
        shutil.rmtree(work / "base")
        shutil.copytree(snapshot, work / "base")
        store = IndexStore(work / "base")
        seconds, inc = timed(lambda s=store: s.publish(ids, raw, days, "m", exact_max,
                                                       hashes=hashes))
        assert inc.meta["build"] == "incremental", inc.meta["build_reason"]
        inc_times.append(seconds)
    assert full is not None and inc is not None
    return {
        "papers": len(raw), "added": len(raw) - n_old, "kind": inc.meta["kind"],
        "full_publish": median(full_times),
        "incremental_publish": median(inc_times),
        "ratio": round(statistics.median(inc_times) / statistics.median(full_times), 4),
        "incremental_reason": inc.meta["build_reason"],
        "mean_drift": round(mean_drift(raw, base.space.mean), 5),
        "neighbour_overlap_with_full": agreement(inc, full, n_old),
    }


def citeulike(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    lines = [line for line in args.papers.read_text().splitlines() if line.strip()]
    rng = np.random.default_rng(args.seed)
    held = set(rng.choice(len(lines), size=round(len(lines) * args.fraction), replace=False))
    (work / "old.jsonl").write_text("\n".join(x for i, x in enumerate(lines) if i not in held))
    (work / "new.jsonl").write_text("\n".join(x for i, x in enumerate(lines) if i in held))
    data = work / "data"
    data.mkdir()
    settings = Settings.from_env(data_dir=data)
    embedder = shared_embedder(settings.model, settings.embed_batch_size,
                               settings.embed_backend)
    shutil.copy(args.cache, settings.embedding_cache_path)
    with sqlite3.connect(settings.embedding_cache_path) as db:
        cached_as = db.execute("SELECT DISTINCT model FROM vectors").fetchall()
        db.execute("UPDATE OR REPLACE vectors SET model = ?", (embedder.variant,))

    # Embedding from an empty cache: model load, then a sample, extrapolated.
    load_s, _ = timed(lambda: embedder.encode(["warm up"]))
    texts = [json.loads(x).get("title", "") + ". " + (json.loads(x).get("abstract") or "")
             for x in rng.choice(lines, size=args.embed_sample, replace=False)]
    sample_s, _ = timed(lambda: embedder.encode(texts))
    embed_all_s = sample_s / len(texts) * len(lines)

    ingest(settings, work / "old.jsonl")
    base = rebuild(settings, full=True)
    snapshot = work / "snapshot"
    shutil.copytree(data, snapshot)
    ingest(settings, work / "new.jsonl")
    full_runs = []
    for _ in range(args.repeats):
        summary = rebuild(settings, full=True)
        full_runs.append(summary.seconds)
    papers = summary.papers

    incremental_runs, embedded = [], 0
    for _ in range(args.repeats):
        shutil.rmtree(data)
        shutil.copytree(snapshot, data)
        ingest(settings, work / "new.jsonl")
        corpus = CorpusStore(settings.corpus_path)
        try:
            new_hashes = [h for _, h, _ in corpus.index_rows()][base.papers:]
        finally:
            corpus.close()
        with sqlite3.connect(settings.embedding_cache_path) as db:  # embed the 1% for real
            db.executemany("DELETE FROM vectors WHERE content_hash = ?",
                           [(h,) for h in new_hashes])
        summary = rebuild(settings)
        assert summary.build == "incremental", summary.reason
        incremental_runs.append(summary.seconds)
        embedded = summary.embedded

    # Publish only, with the vectors in memory (the same papers, old ones first).
    store = IndexStore(settings.index_dir)
    final = store.load(str(store.current_version()))
    by_id = dict(zip(final.ids, range(len(final.ids)), strict=True))
    raw = _raw_vectors(settings, final.ids)
    assert len(by_id) == len(raw)
    publish = publish_only(raw, base.papers, args.repeats, settings.exact_index_max,
                           work / "publish")

    full_s = statistics.median(full_runs)
    inc_s = statistics.median(incremental_runs)
    return {
        "papers": papers, "added": papers - base.papers, "newly_embedded": embedded,
        "cache_copied_from": str(args.cache), "cached_variant": [m for (m,) in cached_as],
        "relabelled_as": embedder.variant,
        "embedding": {"model_load_s": round(load_s, 2), "sample": len(texts),
                      "sample_s": round(sample_s, 2),
                      "papers_per_s": round(len(texts) / sample_s, 1),
                      "all_papers_extrapolated_s": round(embed_all_s, 1)},
        "full_rebuild_from_cache": median(full_runs),
        "full_rebuild_from_empty_cache_s": round(embed_all_s + full_s, 1),
        "incremental_rebuild": median(incremental_runs),
        "incremental_rebuild_note": "end to end, embedding the 1% new papers; the model is "
                                    "already loaded (add model_load_s for a fresh process)",
        "ratio_incremental_to_full_from_empty_cache": round(
            (inc_s + load_s) / (embed_all_s + load_s + full_s), 4),
        "ratio_incremental_to_full_from_cache": round(inc_s / full_s, 4),
        "publish_only": publish,
    }


def _raw_vectors(settings: Settings, ids: list[str]) -> np.ndarray:
    corpus = CorpusStore(settings.corpus_path)
    try:
        hash_of = {pid: h for pid, h, _ in corpus.index_rows()}
    finally:
        corpus.close()
    variant = shared_embedder(settings.model, settings.embed_batch_size,
                              settings.embed_backend).variant
    with sqlite3.connect(settings.embedding_cache_path) as db:
        vectors = {h: np.frombuffer(blob, dtype=np.float32) for h, blob in db.execute(
            "SELECT content_hash, vector FROM vectors WHERE model = ?", (variant,))}
    return np.stack([vectors[hash_of[pid]] for pid in ids])


def synthetic(size: int, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    raw = synthetic_vectors(size, seed=args.seed) + 0.05  # a common offset, as real ones
    rng = np.random.default_rng(args.seed)
    raw = raw[rng.permutation(size)]  # new papers from every topic
    n_old = size - round(size * args.fraction)
    settings = Settings.from_env()
    return publish_only(raw, n_old, args.synthetic_repeats, settings.exact_index_max,
                        work / f"synthetic-{size}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", type=Path, default=PAPERS, help="citeulike-a papers.jsonl")
    parser.add_argument("--cache", type=Path, default=CACHE,
                        help="an embeddings.sqlite holding their vectors (copied, not changed)")
    parser.add_argument("--fraction", type=float, default=0.01, help="share held out (0.01)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per timing (3)")
    parser.add_argument("--embed-sample", type=int, default=512,
                        help="papers embedded to extrapolate a full embedding (512)")
    parser.add_argument("--synthetic", default="", metavar="SIZES",
                        help="also synthetic sizes, e.g. 100k (publish only)")
    parser.add_argument("--synthetic-repeats", type=int, default=1, help="runs per timing (1)")
    parser.add_argument("--skip-citeulike", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report: dict[str, Any] = {"benchmark": "rebuild", "machine": machine(),
                              "load_avg_start": round(os.getloadavg()[0], 2)}
    with tempfile.TemporaryDirectory(prefix="paperrec-rebuild-") as tmp:
        if not args.skip_citeulike:
            (Path(tmp) / "cul").mkdir()
            report["citeulike_a"] = citeulike(args, Path(tmp) / "cul")
        for label in filter(None, args.synthetic.split(",")):
            size = int(float(label.lower().rstrip("km")) * (1_000_000 if label.lower()
                                                              .endswith("m") else 1000))
            report[f"synthetic_{label}"] = synthetic(size, args, Path(tmp))
    report["load_avg_end"] = round(os.getloadavg()[0], 2)
    text = json.dumps(report, indent=2)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_suffix(".tmp")
    tmp_out.write_text(text + "\n")
    os.replace(tmp_out, args.out)


if __name__ == "__main__":
    main()

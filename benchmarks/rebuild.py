"""Rebuild: an incremental rebuild that adds 1% new papers, against a full rebuild.

citeulike-a (16,980 papers; ``--limit`` fewer): 1% of the papers (seeded) are held out; the
rest are ingested into a fresh data dir and indexed with a full build; then the held-out 1%
are ingested and `rebuild-index` runs again, which extends the previous version (incremental).
Measured:

- end to end (the application's ``rebuild_index``, as `paperrec rebuild-index` runs it):
  the full build of all papers from cached embeddings (``--full``), and the incremental one
  after the 1% are ingested, embedding those 1% for real (their vectors are deleted from the
  copied cache); the model load is timed apart (a fresh process pays it once per rebuild);
- a full rebuild from an EMPTY cache: embedding every paper is extrapolated from embedding
  a sample (``--embed-sample`` papers, default backend) plus the full build above;
- publish only (``IndexStore.publish`` with the vectors in memory): full vs incremental;
- agreement: the share of each paper's 20 stored neighbours that the incremental version has
  in common with a full build (new papers, old papers), and the mean drift.

``--synthetic 100k`` repeats the publish-only measurement on synthetic 384-d vectors
(``benchmarks.synthetic``, plus a common offset as raw embeddings have), where the index is
HNSW.

The data dir starts with a copy of the benchmarks' embedding cache (var/bench), which holds
every citeulike-a paper (embedded the first time, once).

    python -m benchmarks.rebuild                      # citeulike-a, about 5 min
    python -m benchmarks.rebuild --synthetic 100k     # plus 100k, about 15 min

The figures and what they show: docs/benchmarks/rebuild.md ("Incremental against full").
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import citeulike, harness
from benchmarks.synthetic import parse_size, synthetic_vectors
from recommender import wiring
from recommender.core.config import Settings
from recommender.index.paper_index import PaperIndex
from recommender.index.store import IndexStore, mean_drift

bench = harness.Benchmark("rebuild", __doc__)
bench.option("--limit", type=int, default=0, quick=2000,
             help="citeulike-a papers used; 0: all")
bench.option("--fraction", type=float, default=0.01, help="share held out")
bench.option("--repeats", type=int, default=3, quick=1, help="runs per timing")
bench.option("--embed-sample", type=int, default=512, quick=64,
             help="papers embedded to extrapolate a full embedding")
bench.option("--synthetic", default="", metavar="SIZES",
             help="also synthetic sizes, e.g. 100k (publish only)")
bench.option("--synthetic-repeats", type=int, default=1, help="runs per timing")
bench.option("--skip-citeulike", action="store_true", help="only the synthetic sizes")
bench.option("--seed", type=int, default=0, help="of the papers held out")


def ingest(app: wiring.Paperrec, path: Path) -> None:
    """``paperrec ingest PATH``."""
    app.ingest([path], on_rejection=lambda r: None)


def median(values: list[float]) -> dict[str, Any]:
    return {"median_s": harness.median(values), "runs_s": [round(v, 3) for v in values]}


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
        seconds, full = harness.timed(partial(store.publish, ids, raw, days, "m", exact_max,
                                              hashes=hashes, full=True))
        full_times.append(seconds)
        shutil.rmtree(work / f"full-{attempt}")
    store = IndexStore(work / "base")
    base = store.publish(ids[:n_old], raw[:n_old], days[:n_old], "m", exact_max,
                         hashes=hashes[:n_old])
    snapshot = work / "snapshot"
    shutil.copytree(work / "base", snapshot)
    for _ in range(repeats):
        shutil.rmtree(work / "base")
        shutil.copytree(snapshot, work / "base")
        store = IndexStore(work / "base")
        seconds, version = harness.timed(partial(store.publish, ids, raw, days, "m", exact_max,
                                                 hashes=hashes))
        assert version.meta["build"] == "incremental", version.meta["build_reason"]
        inc_times.append(seconds)
        inc = version
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


def papers_file(limit: int) -> list[str]:
    """citeulike-a's records (JSON lines), every paper in the benchmarks' embedding cache."""
    workspace = harness.workspace()
    try:
        citeulike.vectors(workspace, citeulike.papers())  # embeds what is missing, once
    finally:
        workspace.close()
    lines = [line for line in citeulike.PAPERS.read_text().splitlines() if line.strip()]
    return lines[:limit] if limit else lines


def citeulike_a(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    lines = papers_file(args.limit)
    rng = np.random.default_rng(args.seed)
    held = set(rng.choice(len(lines), size=max(1, round(len(lines) * args.fraction)),
                          replace=False))
    (work / "old.jsonl").write_text("\n".join(x for i, x in enumerate(lines) if i not in held))
    (work / "new.jsonl").write_text("\n".join(x for i, x in enumerate(lines) if i in held))
    data = work / "data"
    data.mkdir()
    settings = Settings.from_env(data_dir=data)
    harness.seed_embeddings(settings)
    app = wiring.build(settings)
    embedder = app.embedder

    # Embedding from an empty cache: model load, then a sample, extrapolated.
    load_s, _ = harness.timed(lambda: embedder.encode(["warm up"]))
    texts = [json.loads(x).get("title", "") + ". " + (json.loads(x).get("abstract") or "")
             for x in rng.choice(lines, size=args.embed_sample, replace=False)]
    sample_s, _ = harness.timed(lambda: embedder.encode(texts))
    embed_all_s = sample_s / len(texts) * len(lines)

    ingest(app, work / "old.jsonl")
    base = app.rebuild_index(full=True, progress=False)
    app.close()
    snapshot = work / "snapshot"
    shutil.copytree(data, snapshot)
    app = wiring.build(settings, embedder=embedder)
    ingest(app, work / "new.jsonl")
    full_runs = []
    for _ in range(args.repeats):
        summary = app.rebuild_index(full=True, progress=False)
        full_runs.append(summary.seconds)
    papers = summary.papers
    app.close()

    incremental_runs, embedded = [], 0
    for _ in range(args.repeats):
        shutil.rmtree(data)
        shutil.copytree(snapshot, data)
        app = wiring.build(settings, embedder=embedder)
        ingest(app, work / "new.jsonl")
        new_hashes = [h for _, h, _ in app.corpus.index_rows()][base.papers:]
        forget(settings, new_hashes)  # so that the 1% are embedded for real
        summary = app.rebuild_index(progress=False)
        assert summary.build == "incremental", summary.reason
        incremental_runs.append(summary.seconds)
        embedded = summary.embedded
        raw = raw_vectors(app)
        app.close()

    # Publish only, with the vectors in memory (the same papers, old ones first).
    publish = publish_only(raw, base.papers, args.repeats, settings.exact_index_max,
                           work / "publish")
    full_s = statistics.median(full_runs)
    inc_s = statistics.median(incremental_runs)
    return {
        "papers": papers, "added": papers - base.papers, "newly_embedded": embedded,
        "embedding_variant": embedder.variant,
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


def forget(settings: Settings, hashes: list[str]) -> None:
    """Delete these texts' vectors from the data dir's embedding cache (a benchmark's edit:
    the cache itself never forgets)."""
    with sqlite3.connect(settings.embedding_cache_path) as db:
        db.executemany("DELETE FROM vectors WHERE content_hash = ?", [(h,) for h in hashes])


def raw_vectors(app: wiring.Paperrec) -> np.ndarray:
    """The embeddings of the current index version's papers, in its order."""
    version = app.index_store.load(str(app.index_store.current_version()))
    hash_of = {pid: h for pid, h, _ in app.corpus.index_rows()}
    return app.embedding_cache.matrix(app.embedder.variant,
                                      [hash_of[pid] for pid in version.ids])


def synthetic(size: int, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    raw = synthetic_vectors(size, seed=args.seed) + 0.05  # a common offset, as real ones
    rng = np.random.default_rng(args.seed)
    raw = raw[rng.permutation(size)]  # new papers from every topic
    n_old = size - round(size * args.fraction)
    return publish_only(raw, n_old, args.synthetic_repeats, Settings().exact_index_max,
                        work / f"synthetic-{size}")


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    report: dict[str, Any] = {"load_avg_start": harness.load_average()}
    with tempfile.TemporaryDirectory(prefix="paperrec-rebuild-") as tmp:
        if not args.skip_citeulike:
            (Path(tmp) / "cul").mkdir()
            report["citeulike_a"] = citeulike_a(args, Path(tmp) / "cul")
        for label in filter(None, args.synthetic.split(",")):
            report[f"synthetic_{label}"] = synthetic(parse_size(label), args, Path(tmp))
    bench.record(args, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

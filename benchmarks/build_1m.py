"""Building a million papers: `paperrec ingest` and `paperrec rebuild-index --full`.

Writes ``--papers`` records (default 1M) in the arXiv metadata snapshot format (Kaggle's
``arxiv-metadata-oai-snapshot.json``: one JSON object a line with id, submitter, authors,
title, comments, journal-ref, doi, report-no, categories, license, abstract, versions,
update_date, authors_parsed), then times the product's two commands on them, each in its own
process with a fresh data dir: wall time and peak resident memory (the kernel's high-water
mark of the process, from ``wait4``; and the sum over the process tree, sampled twice a
second).

Records. Every abstract with some text in the corpora on disk (citeulike-a's 1,929, the 38
ICML 2026 seeds, the replayed arXiv records) is a source; its real embedding (the configured
model) is kept in the benchmarks' embedding cache (var/bench). A record takes a
source, two or three of that source's nearest sources by embedding (so it stays on one
topic), and strings sentences from them, starting with the first source's opening, until a
length drawn around arXiv's ~1,000 characters. Its title joins the first half of the first
source's title and the second half of a random citeulike-a title; 1 to 8 authors with
generated names; arXiv ids month by month from 2007-04 to 2026-11 (more papers each year);
one or two versions.

Embedding. ``--embed-sample`` records (spread over the file) are left out of the embedding
cache, so the timed ``rebuild-index`` embeds them for real with the product's model; the
rate extrapolates the embedding of all records. Every other record's vector is pre-filled in
the product's cache (variant and content hash, as ``rebuild-index`` looks them up): the
normalised mean of its sources' real embeddings weighted by the characters each gave, plus
Gaussian noise of norm ``--noise``. The embedded sample measures how close that is: the
cosine of each sample record's real embedding to its would-be pre-filled vector.

    python -m benchmarks.build_1m --papers 20k        # a few minutes
    flock /tmp/paperrec-bench.lock python -m benchmarks.build_1m --papers 1M

Each size is a part of the results file. Generated data goes under ``--workdir`` (default
var/bench/build-1m, not in git); ``--keep`` keeps each size's data dir. The records and
pre-filled vectors stay there (``generated.json`` names their parameters): ``--reuse`` takes
them again when the parameters are the same, instead of generating them anew (about 9
minutes at 2.5M), and ``--generate-only`` stops after writing them.

The figures and what they show: docs/benchmarks/rebuild.md ("Building a million papers").
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from benchmarks import harness
from benchmarks.build_1m_records import SNAPSHOT, generate, load_sources
from benchmarks.synthetic import parse_size, size_label
from recommender.embedding.cache import EmbeddingCache


def run_measured(command: list[str], env: dict[str, str], log: Path) -> dict[str, Any]:
    """Run one command under GNU time; its wall time, exit status, peak resident memory
    (time's "Maximum resident set size": the kernel's high-water mark, no sampling gaps; time
    is small, so what its child carries over its exec is nothing) and the peak of the sum over
    the process tree (sampled every 0.5 s, to show nothing else was spawned)."""
    usage = log.with_suffix(".time")
    with log.open("w") as handle:
        started = time.perf_counter()
        proc = subprocess.Popen(["/usr/bin/time", "-v", "-o", str(usage), *command], env=env,
                                stdout=handle, stderr=subprocess.STDOUT)
        tree_peak = [0]
        done = threading.Event()

        def sample() -> None:
            try:
                parent = psutil.Process(proc.pid)
                while not done.wait(0.5):
                    total = 0
                    for p in parent.children(recursive=True):
                        with contextlib.suppress(psutil.Error):
                            total += p.memory_info().rss
                    tree_peak[0] = max(tree_peak[0], total)
            except psutil.Error:
                return

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        proc.wait()
        seconds = time.perf_counter() - started
        done.set()
        sampler.join()
    fields = dict(line.strip().rsplit(": ", 1) for line in usage.read_text().splitlines()
                  if ": " in line)
    return {"seconds": round(seconds, 1),
            "peak_rss_gib": round(int(fields["Maximum resident set size (kbytes)"]) / 2**20, 3),
            "tree_peak_rss_gib_sampled": round(tree_peak[0] / 2**30, 3),
            "cpu_seconds": round(float(fields["User time (seconds)"])
                                 + float(fields["System time (seconds)"]), 1),
            "exit": proc.returncode, "command": " ".join(["paperrec", *command[1:]]),
            "output": log.read_text()[-3000:]}


BARE = Path(__file__).with_name("ingest_speed_child.py")


def ingest_phases(output: str) -> dict[str, float]:
    """Seconds per phase from `paperrec ingest`'s last line ("ingest took 12.0 s (1,667
    records/s): read 4.1 s, store 6.9 s, ...")."""
    found = re.search(r"ingest took [\d.]+ s \([^)]*\): (.*)", output)
    return {name: float(seconds) for name, seconds in
            re.findall(r"([a-z][a-z ]*) ([\d.]+) s", found.group(1))} if found else {}


def disk_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def sample_fidelity(folder: Path, cache_path: Path, variant: str) -> dict[str, Any]:
    """How close the pre-filled vectors are to the model: for the records the rebuild
    embedded, the cosine of the real embedding to the vector they would have been given,
    and to its noiseless mixture of source embeddings."""
    hashes = json.loads((folder / "sample-hashes.json").read_text())
    if not hashes:
        return {}
    cache = EmbeddingCache(cache_path)
    found = cache.get(variant, hashes)
    cache.close()
    real = np.stack([found[h] for h in hashes])
    figures: dict[str, Any] = {"records": len(hashes)}
    for name in ("prefill", "mixture"):
        cos = np.einsum("id,id->i", np.load(folder / f"sample-{name}.npy"), real)
        figures[f"real_to_{name}_cosine"] = {
            "mean": round(float(cos.mean()), 4), "p10": round(float(np.percentile(cos, 10)), 4),
            "p90": round(float(np.percentile(cos, 90)), 4)}
    return figures


bench = harness.Benchmark("build_1m", __doc__)
bench.option("--papers", default="1M", quick="2k", help="records to write: 20k, 250k, 1M ...")
bench.option("--embed-sample", type=int, default=2000, quick=50,
             help="records embedded for real by the rebuild")
bench.option("--noise", type=float, default=0.5,
             help="norm of the Gaussian noise added to a pre-filled vector (0.5: the model's "
                  "own vectors of recombined abstracts sit at a cosine of about 0.88 to their "
                  "sources' mixture, as noise of norm 0.54 puts it)")
bench.option("--workdir", type=Path, default=harness.WORK / "build-1m",
             help="where the records and data dirs are generated")
bench.option("--seed", type=int, default=0, help="of the records")
bench.option("--keep", action="store_true", help="keep the data dir afterwards")
bench.option("--reuse", action="store_true",
             help="take the records generated before with the same parameters, if any")
bench.option("--generate-only", action="store_true",
             help="write the records and pre-filled vectors, time nothing")


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    n = parse_size(args.papers)
    label = size_label(n)
    variant = harness.workspace().embedder.variant
    folder = args.workdir / label
    parameters = {"records": n, "embed_sample": args.embed_sample, "noise": args.noise,
                  "seed": args.seed, "variant": variant}
    made = folder / "generated.json"
    prefilled = folder / "prefilled-embeddings.sqlite"
    reused = args.reuse and made.exists() and \
        json.loads(made.read_text())["parameters"] == parameters
    if reused:
        generated, prepare, sources_count = (json.loads(made.read_text())[key] for key in
                                             ("figures", "prepare_seconds", "sources"))
        harness.log(f"reusing the records generated in {folder}")
    else:
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        started = time.perf_counter()
        sources, sentences, vectors, titles = load_sources()
        prepare = round(time.perf_counter() - started, 1)
        generated = generate(n, folder, prefilled, variant, args.embed_sample,
                             args.noise, args.seed, sources, sentences, vectors, titles)
        sources_count = len(sources)
        made.write_text(json.dumps({"parameters": parameters, "figures": generated,
                                    "prepare_seconds": prepare, "sources": sources_count}))
        harness.log(f"generated in {generated['seconds']} s")
    if args.generate_only:
        return 0
    data_dir = folder / "data"
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir()
    cache_path = data_dir / "embeddings.sqlite"
    shutil.copyfile(prefilled, cache_path)  # the rebuild writes the sample's vectors into it
    harness.log("ingesting")

    env = {**os.environ, "PAPERREC_DATA_DIR": str(data_dir)}
    paperrec = str(Path(sys.executable).with_name("paperrec"))
    ingest = run_measured([paperrec, "ingest", str(folder / SNAPSHOT)], env,
                          folder / "ingest.log")
    harness.log(f"ingest: {ingest['seconds']} s, {ingest['peak_rss_gib']} GiB; bare insert")
    bare = run_measured([sys.executable, str(BARE), "bare", str(folder / "bare"),
                         str(folder / SNAPSHOT)], env, folder / "bare.log")
    bare["seconds_inside"] = json.loads(bare["output"].strip().splitlines()[-1])["seconds"]
    harness.log(f"bare insert: {bare['seconds']} s; rebuilding")
    rebuild = run_measured([paperrec, "rebuild-index", "--full"], env, folder / "rebuild.log")
    harness.log(f"rebuild: {rebuild['seconds']} s, {rebuild['peak_rss_gib']} GiB")

    index_root = data_dir / "index"
    current = (index_root / "CURRENT").read_text().strip() if (index_root / "CURRENT").exists() \
        else ""
    version_dir = index_root / "versions" / current
    meta = json.loads((version_dir / "meta.json").read_text()) if current else {}
    phases = meta.get("phases", {})
    embedded = int(m.group(1)) if (m := re.search(r"(\d+) newly embedded",
                                                   rebuild["output"])) else 0
    embed_seconds = phases.get("embed", {}).get("seconds", 0.0)
    rate = embedded / embed_seconds if embed_seconds else None
    result = {
        "papers": int(meta.get("count", 0)),
        "records_written": n,
        "ingest": {**ingest, "phases": ingest_phases(ingest["output"]),
                   "times_bare": round(ingest["seconds"] / bare["seconds"], 2)},
        "bare_insert": {**bare, "command": "python benchmarks/ingest_speed_child.py bare "
                        "(one INSERT of id and JSON line per record, one transaction)"},
        "rebuild": {**rebuild, "phases": phases, "build": meta.get("build"),
                    "index_kind": meta.get("kind")},
        "embedding": {
            "embedded_for_real": embedded,
            "prefilled": n - args.embed_sample,
            "variant": variant,
            "embed_seconds": embed_seconds,
            "papers_per_second": round(rate, 1) if rate else None,
            "all_records_extrapolated_hours": round(n / rate / 3600, 2) if rate else None,
            "prefill": f"normalised char-weighted mean of the real embeddings of the 2-3 "
                       f"sources a record's sentences came from, plus Gaussian noise of norm "
                       f"{args.noise}",
            "prefill_vs_real_on_sample": sample_fidelity(folder, cache_path, variant),
        },
        "disk_bytes": {
            "snapshot_file": generated["snapshot_bytes"],
            "corpus": sum(disk_bytes(p) for p in data_dir.glob("corpus.sqlite*")),
            "keyword_index": disk_bytes(data_dir / "corpus-words"),
            "embedding_cache": sum(disk_bytes(p) for p in data_dir.glob("embeddings.sqlite*")),
            "index_version": disk_bytes(version_dir) if current else 0,
        },
        "generation": {**generated, "sources": sources_count, "prepare_seconds": prepare,
                       "noise": args.noise, "seed": args.seed, "reused": reused},
    }
    bench.record(args, result, part=label)
    if not args.keep:
        shutil.rmtree(data_dir)
    return 0 if ingest["exit"] == 0 and rebuild["exit"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

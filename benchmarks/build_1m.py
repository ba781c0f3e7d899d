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
var/bench/build-1m, not in git); ``--keep`` keeps each size's data dir.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import math
import os
import random
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

from benchmarks import citeulike, harness
from benchmarks.synthetic import parse_size, size_label
from recommender.core.papers import Paper
from recommender.corpus.formats import paper_from_record, read_papers
from recommender.corpus.paperlist import normalise_whitespace
from recommender.embedding.cache import EmbeddingCache
from recommender.evaluation.dataset import paper_vectors
from recommender.index.content_space import normalise
from replay.oai_pmh import DEMO_RECORDS

SOURCE_FILES = [citeulike.PAPERS, *sorted(harness.SHARED.glob("seeds/*.txt")), DEMO_RECORDS]
SNAPSHOT = "arxiv-metadata-oai-snapshot.json"
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\\$])")
CO_SOURCES = 20  # a record's other sources come from its first source's nearest 20
CHUNK = 20_000  # records generated (and vectors written) at a time
FIRST_MONTH, LAST_MONTH = (2007, 4), (2026, 11)
CATEGORIES = ["cs.LG", "cs.LG stat.ML", "cs.CV", "cs.CL", "cs.AI cs.LG", "stat.ML", "cs.IR",
              "q-bio.MN", "q-bio.GN q-bio.QM", "physics.soc-ph cs.SI", "cs.SI", "cs.DS",
              "math.OC cs.LG", "cs.NE", "cs.DL cs.IR", "q-bio.NC", "cs.RO", "cs.CR"]
SYLLABLES = ["ka", "lo", "mi", "ra", "ten", "sun", "vel", "dor", "an", "bel", "cor", "fin", "gar",
             "hal", "jus", "kim", "lin", "mar", "nor", "ost", "pra", "que", "ros", "sta", "tor",
             "ul", "van", "wen", "xu", "yan", "zel", "bri", "cha", "dmi", "eng", "fa", "go", "hu"]
GIVEN = ["Ana", "Ben", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana", "Ivan", "Jun", "Kofi",
         "Lena", "Mateo", "Nia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tomas", "Uma",
         "Viktor", "Wei", "Ximena", "Yusuf", "Zoe", "Aiko", "Bruno", "Carla", "Dmitri", "Elif",
         "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kira", "Luca", "Maya", "Nikolai"]
LICENSES = [None, "http://arxiv.org/licenses/nonexclusive-distrib/1.0/",
            "http://creativecommons.org/licenses/by/4.0/"]


# ---------------------------------------------------------------- sources and their vectors

def load_sources() -> tuple[list[Paper], list[list[str]], np.ndarray, list[str]]:
    """Papers with an abstract of two sentences or more, their sentences, their real
    embeddings (embedded once, kept in the benchmarks' embedding cache), and every
    citeulike-a title."""
    papers: dict[str, Paper] = {}
    for path in SOURCE_FILES:
        for item in read_papers(path):
            if isinstance(item, Paper) and len(item.abstract) > 200:
                papers.setdefault(item.content_hash, item)
    sources, sentences = [], []
    for paper in papers.values():
        parts = [s.strip() for s in SENTENCE_END.split(paper.abstract) if s.strip()]
        if len(parts) >= 2:
            sources.append(paper)
            sentences.append(parts)
    app = harness.workspace()
    try:
        vectors, _ = paper_vectors(sources, app.embedder, app.embedding_cache)
    finally:
        app.close()
    titles = [json.loads(line)["title"] for line in citeulike.PAPERS.open()]
    return sources, sentences, vectors, titles


# ---------------------------------------------------------------- records

def months() -> list[tuple[int, int]]:
    out, (year, month) = [], FIRST_MONTH
    while (year, month) <= LAST_MONTH:
        out.append((year, month))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


def month_of_record(n: int) -> np.ndarray:
    """The month index of each of n records, in order: more papers each year (arXiv's
    submissions grew about 10% a year)."""
    weights = np.array([1.1 ** (y - FIRST_MONTH[0]) for y, _ in months()])
    bounds = np.cumsum(weights / weights.sum() * n).round().astype(np.int64)
    return np.searchsorted(bounds, np.arange(n), side="right")


def surname(rng: random.Random) -> str:
    return "".join(rng.choices(SYLLABLES, k=rng.randint(2, 3))).capitalize()


def content_hash(rec: dict[str, Any]) -> str:
    """``paper_from_record(rec).content_hash`` without cleaning the display fields (10 times
    faster; ``generate`` checks that the two agree on the first records)."""
    text = f"{normalise_whitespace(rec['title'])}\n{normalise_whitespace(rec['abstract'])}"
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


def record(arxiv_id: str, day: dt.date, rng: random.Random,
           sources: list[Paper], sentences: list[list[str]], neighbours: np.ndarray,
           titles: list[str]) -> tuple[dict[str, Any], dict[int, int]]:
    """One arXiv snapshot record, and the characters each source gave its abstract."""
    first = rng.randrange(len(sources))
    others = rng.sample(neighbours[first], rng.randint(1, 2))
    chosen = [first, *others]
    target = min(1900.0, max(250.0, rng.gauss(1000, 350)))
    position = dict.fromkeys(chosen, 0)
    current, given = first, dict.fromkeys(chosen, 0)
    parts: list[str] = []
    length = 0
    while length < target:
        if position[current] >= len(sentences[current]) or (parts and rng.random() < 0.4):
            left = [s for s in chosen if position[s] < len(sentences[s])]
            if not left:
                break
            current = rng.choice(left)
        sentence = sentences[current][position[current]]
        position[current] += 1
        parts.append(sentence)
        given[current] += len(sentence)
        length += len(sentence) + 1
    head = sources[first].title.split()
    tail = rng.choice(titles).split()
    title = " ".join(head[: max(1, len(head) // 2)] + tail[len(tail) // 2:])
    names = [(surname(rng), rng.choice(GIVEN)) for _ in range(rng.randint(1, 8))]
    authors = [f"{g} {s}" for s, g in names]
    author_text = authors[0] if len(authors) == 1 else \
        ", ".join(authors[:-1]) + " and " + authors[-1]
    created = dt.datetime.combine(day, dt.time(rng.randrange(24), rng.randrange(60),
                                               rng.randrange(60)))
    versions = [{"version": "v1", "created": created.strftime("%a, %-d %b %Y %H:%M:%S GMT")}]
    updated = day
    if rng.random() < 0.35:
        later = created + dt.timedelta(days=rng.randint(3, 400))
        versions.append({"version": "v2",
                         "created": later.strftime("%a, %-d %b %Y %H:%M:%S GMT")})
        updated = later.date()
    pages = rng.randint(6, 40)
    return {
        "id": arxiv_id,
        "submitter": authors[0],
        "authors": author_text,
        "title": title,
        "comments": f"{pages} pages, {rng.randint(1, 12)} figures"
        if rng.random() < 0.7 else None,
        "journal-ref": None,
        "doi": f"10.48550/arXiv.{arxiv_id}" if rng.random() < 0.3 else None,
        "report-no": None,
        "categories": rng.choice(CATEGORIES),
        "license": rng.choice(LICENSES),
        "abstract": "  " + " ".join(parts) + "\n",
        "versions": versions,
        "update_date": updated.isoformat(),
        "authors_parsed": [[s, g, ""] for s, g in names],
    }, {s: c for s, c in given.items() if c}


def generate(n: int, folder: Path, cache_path: Path, variant: str, sample: int, noise: float,
             seed: int, sources: list[Paper], sentences: list[list[str]], vectors: np.ndarray,
             titles: list[str]) -> dict[str, Any]:
    """Write the snapshot file and pre-fill the embedding cache; the figures of both."""
    rng = random.Random(seed)
    noise_rng = np.random.default_rng(seed)
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    neighbours = np.argsort(-sims, axis=1)[:, :CO_SOURCES].tolist()
    all_months = months()
    of_record = month_of_record(n)
    sample_rows = set(np.linspace(0, n - 1, sample).astype(np.int64).tolist()) if sample else set()
    sequence = dict.fromkeys(range(len(all_months)), 0)
    cache = EmbeddingCache(cache_path)
    sample_hashes: list[str] = []
    sample_vectors: list[np.ndarray] = []
    sample_means: list[np.ndarray] = []
    hashes_seen = set()
    weights = np.zeros((CHUNK, len(vectors)), np.float32)  # characters from each source
    chars = {"title": 0, "title_words": 0, "abstract": 0}
    started = time.perf_counter()
    with (folder / SNAPSHOT).open("w") as out:
        for start in range(0, n, CHUNK):
            chunk_hashes: list[str] = []
            for number in range(start, min(n, start + CHUNK)):
                m = int(of_record[number])
                year, month = all_months[m]
                sequence[m] += 1
                digits = 5 if year >= 2015 else 4
                arxiv_id = f"{year % 100:02d}{month:02d}.{sequence[m]:0{digits}d}"
                day = dt.date(year, month, rng.randint(1, 28))
                rec, given = record(arxiv_id, day, rng, sources, sentences,
                                    neighbours, titles)
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
                text_hash = content_hash(rec)
                if number < 1000 and text_hash != paper_from_record(rec).content_hash:
                    raise AssertionError("content_hash disagrees with the product's")
                hashes_seen.add(text_hash)
                chars["title"] += len(rec["title"])
                chars["abstract"] += len(rec["abstract"].strip())
                chars["title_words"] += len(rec["title"].split())
                row = number - start
                for source, given_chars in given.items():
                    weights[row, source] = given_chars
                chunk_hashes.append(text_hash)
            rows = number - start + 1
            means = normalise(weights[:rows] @ vectors)
            jitter = noise_rng.standard_normal(means.shape, dtype=np.float32)
            chunk_vectors = normalise(means + jitter * (noise / math.sqrt(vectors.shape[1])))
            weights[:] = 0
            sampled = np.array([start + i in sample_rows for i in range(rows)])
            sample_hashes += [h for h, x in zip(chunk_hashes, sampled, strict=True) if x]
            sample_vectors.append(chunk_vectors[sampled])
            sample_means.append(means[sampled])
            cache.put(variant, [h for h, x in zip(chunk_hashes, sampled, strict=True) if not x],
                      chunk_vectors[~sampled])
            print(f"generated {min(n, start + CHUNK):,} of {n:,} records "
                  f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    cache.close()
    np.save(folder / "sample-prefill.npy", np.concatenate(sample_vectors))
    np.save(folder / "sample-mixture.npy", np.concatenate(sample_means))
    (folder / "sample-hashes.json").write_text(json.dumps(sample_hashes))
    return {"seconds": round(time.perf_counter() - started, 1), "records": n,
            "distinct_texts": len(hashes_seen),
            "mean_title_chars": round(chars["title"] / n, 1),
            "mean_abstract_chars": round(chars["abstract"] / n, 1),
            "mean_title_words": round(chars["title_words"] / n, 1),
            "snapshot_bytes": (folder / SNAPSHOT).stat().st_size}


# ---------------------------------------------------------------- timed steps

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


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    n = parse_size(args.papers)
    label = size_label(n)
    variant = harness.workspace().embedder.variant
    folder = args.workdir / label
    if folder.exists():
        shutil.rmtree(folder)
    data_dir = folder / "data"
    data_dir.mkdir(parents=True)
    cache_path = data_dir / "embeddings.sqlite"

    started = time.perf_counter()
    sources, sentences, vectors, titles = load_sources()
    prepare = round(time.perf_counter() - started, 1)
    generated = generate(n, folder, cache_path, variant, args.embed_sample,
                         args.noise, args.seed, sources, sentences, vectors, titles)
    harness.log(f"generated in {generated['seconds']} s; ingesting")

    env = {**os.environ, "PAPERREC_DATA_DIR": str(data_dir)}
    paperrec = str(Path(sys.executable).with_name("paperrec"))
    ingest = run_measured([paperrec, "ingest", str(folder / SNAPSHOT)], env,
                          folder / "ingest.log")
    harness.log(f"ingest: {ingest['seconds']} s, {ingest['peak_rss_gib']} GiB; rebuilding")
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
        "ingest": ingest,
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
            "embedding_cache": sum(disk_bytes(p) for p in data_dir.glob("embeddings.sqlite*")),
            "index_version": disk_bytes(version_dir) if current else 0,
        },
        "generation": {**generated, "sources": len(sources), "prepare_seconds": prepare,
                       "noise": args.noise, "seed": args.seed},
    }
    bench.record(args, result, part=label)
    if not args.keep:
        shutil.rmtree(data_dir)
    return 0 if ingest["exit"] == 0 and rebuild["exit"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

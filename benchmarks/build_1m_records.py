"""The build benchmark's records: an arXiv metadata snapshot (Kaggle's
``arxiv-metadata-oai-snapshot.json`` format) of any size, each record strung from the
sentences of two or three real abstracts on one topic, and its vector pre-filled in the
embedding cache from those abstracts' real embeddings (``benchmarks.build_1m`` says how)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import random
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import citeulike, harness
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


def ids_and_days(n: int, rng: random.Random) -> Iterator[tuple[str, dt.date]]:
    """The arXiv id and date of each of n records, in order: month by month (``months``,
    ``month_of_record``), numbered within the month, a day of it drawn from ``rng`` as each
    record is taken (so the draws interleave with the record's own)."""
    all_months = months()
    of_record = month_of_record(n)
    sequence = dict.fromkeys(range(len(all_months)), 0)
    for number in range(n):
        m = int(of_record[number])
        year, month = all_months[m]
        sequence[m] += 1
        digits = 5 if year >= 2015 else 4
        yield (f"{year % 100:02d}{month:02d}.{sequence[m]:0{digits}d}",
               dt.date(year, month, rng.randint(1, 28)))


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
    sample_rows = set(np.linspace(0, n - 1, sample).astype(np.int64).tolist()) if sample else set()
    identities = ids_and_days(n, rng)
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
                arxiv_id, day = next(identities)
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

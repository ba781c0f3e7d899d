"""Search: does it find a paper by its exact title, or by an author's surname and a title
word, and how long does a search take (fused words + meaning, the function behind
`/v1/search` and the `/search` page: ``Recommender.search``)?

``--corpus citeulike``: citeulike-a (16,980 papers; titles for all, abstracts for 1,929, no
authors), ingested and indexed with the configured model into ``var/bench/search/citeulike``
(kept between runs; the benchmarks' shared embedding cache spares the embedding). For
``--queries`` (500) papers drawn with ``--seed``, the query is the paper's exact title:
reported is how often the paper comes first and in the top 10, by the hybrid search, by the
meaning alone (``Recommender.meaning``: the nearest papers to the query's embedding) and by
the words alone (``CorpusStore.search_words``: BM25 over the papers that have every word).
A title several papers share counts as found first only when this very paper is first; how
many of the drawn titles are shared is reported.

``--corpus DIR``: a data dir with authors, as ``python -m benchmarks.build_1m --papers 250k
--keep`` leaves it (``var/bench/build-1m/250k/data``: generated arXiv-like records, 1 to 8
authors with generated surnames, the index built). Besides the titles, the query is the
first author's surname and one word of the title (not a stop word), drawn with ``--seed``:
reported is how often the paper is in the top 10, by each of the three. Two words of the
title (a broad query many papers answer) are timed as well, and their quality reported
as the others' (a paper among many with both words is not expected first).

Speed: every query above is timed (wall time of ``Recommender.search(q, 10)``, embedding the
query with the configured model included), after ``--warmup`` searches of other papers'
titles (a text searched before has its embedding kept, so each timed query is the first
search of its text); p50 and p99, the process's CPU time of each search (on a loaded
machine, what a search costs without waiting for a core), and the parts: embedding the
query, the words (``CorpusStore.search_words``, the keyword index, 200 asked as a search
asks), the vector search. (Runs before issue 29 also timed the same words by the corpus's
FTS5 table, ``words_fts5_before`` in the results; the corpus has no FTS5 table now.)

    python -m benchmarks.search --corpus citeulike
    python -m benchmarks.build_1m --papers 1M --embed-sample 0 --keep --workdir /tmp/b1m
    python -m benchmarks.search --corpus /tmp/b1m/1M/data

The figures and what they show: docs/guide/search.md ("How well it finds, how fast").
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from benchmarks import citeulike, harness
from benchmarks.synthetic import size_label
from recommender import wiring
from recommender.core.config import Settings
from recommender.core.matching import words
from recommender.core.search_query import STOPWORDS, parse_query
from recommender.index.content_space import centre_query
from recommender.ranking.search import SEMANTIC_POOL, WORD_POOL

bench = harness.Benchmark("search", __doc__)
bench.option("--corpus", default="citeulike",
             help="`citeulike`, or a data dir with authors (built by benchmarks.build_1m)")
bench.option("--queries", type=int, default=500, quick=50, help="papers queried")
bench.option("--limit", type=int, default=0, quick=2000,
             help="citeulike-a papers ingested; 0: all")
bench.option("--warmup", type=int, default=20, help="searches before timing")
bench.option("--seed", type=int, default=26, help="which papers, which title words")


def citeulike_workspace(limit: int) -> Settings:
    """citeulike-a ingested and indexed (once) in var/bench/search/citeulike."""
    folder = harness.WORK / "search" / (f"citeulike-{limit}" if limit else "citeulike")
    settings = Settings.from_env(data_dir=folder)
    if not (folder / "corpus.sqlite").exists():
        folder.mkdir(parents=True, exist_ok=True)
        harness.seed_embeddings(settings)
        source = folder / "papers.jsonl"
        lines = citeulike.PAPERS.read_text().splitlines(keepends=True)
        source.write_text("".join(lines[:limit] if limit else lines))
        parts = wiring.build(settings)
        parts.ingest([source], on_rejection=lambda r: None)
        parts.rebuild_index(progress=True)
        harness.keep_embeddings(settings)
    return settings


def rank_of(found: list[str], paper_id: str) -> int | None:
    return found.index(paper_id) + 1 if paper_id in found else None


def rates(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {"first": round(sum(r == 1 for r in ranks) / n, 4),
            "top10": round(sum(r is not None and r <= 10 for r in ranks) / n, 4),
            "mrr@10": round(sum(1 / r for r in ranks if r is not None and r <= 10) / n, 4)}


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    if args.corpus == "citeulike":
        settings = citeulike_workspace(args.limit)
    else:
        settings = Settings.from_env(data_dir=Path(args.corpus))
    parts = wiring.build(settings)
    recommender, corpus = parts.recommender, parts.corpus
    ids = [pid for pid, _, _ in corpus.index_rows()]
    rng = random.Random(args.seed)
    chosen = rng.sample(ids, min(args.queries, len(ids)))
    papers = corpus.get_many(chosen)
    folded_titles: dict[str, int] = {}
    for pid in ids if len(ids) <= 50_000 else []:  # shared titles: read them all at 17k
        paper = corpus.get(pid)
        if paper is not None:
            key = " ".join(words(paper.title))
            folded_titles[key] = folded_titles.get(key, 0) + 1

    queries: dict[str, list[tuple[str, str]]] = {
        "title": [], "surname_and_title_word": [], "two_title_words": []}
    for pid in chosen:
        paper = papers[pid]
        queries["title"].append((pid, paper.title))
        title_words = [w for w in words(paper.title) if w not in STOPWORDS and len(w) > 2]
        if paper.authors and title_words:
            surname = paper.authors[0].split()[-1]
            queries["surname_and_title_word"].append((pid, f"{surname} {rng.choice(title_words)}"))
        if len(title_words) >= 2:  # broad queries: many papers have both words
            queries["two_title_words"].append((pid, " ".join(rng.sample(title_words, 2))))

    # Warmed up on other papers' titles: a text searched before has its embedding kept
    # (``Recommender.meaning``), and every timed query is a first search of its text.
    others = [pid for pid in rng.sample(ids, min(len(ids), args.queries + args.warmup))
              if pid not in papers][:args.warmup]
    for paper in corpus.get_many(others).values():
        recommender.search(paper.title, 10)
    quality: dict[str, Any] = {}
    times: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    parts_ms: dict[str, list[float]] = {
        "embed_query": [], "words": [], "vector_search": []}
    embedder, index = parts.embedder, parts.index.get()
    for kind, asked in queries.items():
        if not asked:
            continue
        hybrid, meaning, keyword = [], [], []
        for pid, text in asked:
            started, started_cpu = time.perf_counter(), time.process_time()
            found = [hit.paper_id for hit in recommender.search(text, 10)]
            times.setdefault(kind, []).append(time.perf_counter() - started)
            cpu.setdefault(kind, []).append(time.process_time() - started_cpu)
            hybrid.append(rank_of(found, pid))
            query = parse_query(text)
            started = time.perf_counter()
            vector = centre_query(embedder.encode([query.text]), index.space.mean)
            parts_ms["embed_query"].append(time.perf_counter() - started)
            started = time.perf_counter()
            index.search(vector, SEMANTIC_POOL)
            parts_ms["vector_search"].append(time.perf_counter() - started)
            by_meaning = [p for p, _ in recommender.meaning(query, None)][:10]
            meaning.append(rank_of(by_meaning, pid))
            started = time.perf_counter()
            by_words = [p for p, _ in corpus.search_words(query, WORD_POOL, None)]
            parts_ms["words"].append(time.perf_counter() - started)
            keyword.append(rank_of(by_words[:10], pid))
        quality[kind] = {"queries": len(asked), "hybrid": rates(hybrid),
                         "meaning_only": rates(meaning), "words_only": rates(keyword)}
        if kind == "title" and folded_titles:
            quality[kind]["titles_shared_with_another_paper"] = sum(
                folded_titles.get(" ".join(words(papers[pid].title)), 0) > 1 for pid, _ in asked)
            quality[kind]["hybrid_missed"] = [
                {"paper": pid, "title": text, "rank": r}
                for (pid, text), r in zip(asked, hybrid, strict=True) if r != 1][:20]
    result = {
        "corpus": args.corpus, "papers": len(ids), "seed": args.seed, "quality": quality,
        "search_ms": {"searches": sum(map(len, times.values())),
                      **harness.percentiles(sum(times.values(), []), scale=1000),
                      **{kind: harness.percentiles(t, scale=1000) for kind, t in times.items()}},
        # CPU time of the process over the same searches: what they cost without the waits
        # for a core of a loaded machine (the load average is recorded with the machine).
        "search_cpu_ms": {**harness.percentiles(sum(cpu.values(), []), scale=1000),
                          **{kind: harness.percentiles(t, scale=1000) for kind, t in cpu.items()}},
        "parts_ms": {
            "embed_query": harness.percentiles(parts_ms["embed_query"], scale=1000),
            "words": harness.percentiles(parts_ms["words"], scale=1000),
            "vector_search": harness.percentiles(parts_ms["vector_search"], scale=1000)},
        "index_kind": type(index.faiss_index).__name__,
    }
    label = "citeulike-a" if args.corpus == "citeulike" else size_label(len(ids))
    bench.record(args, result, part=label)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Web page: the list page's cost over the JSON reading list: server time of `GET /list` (the
web page, 10 papers) against `GET /v1/users/<id>/recommendations?k=10`, for a reader with 100
likes spread over ``--collections`` (3) collections, so that both lists interleave each
collection's list with the whole profile's, on citeulike-a (16,980 papers, ``--limit``
fewer; the exact index the service uses below 20,000); with ``--baseline``, for this tree and
another checkout side by side in one run.

The corpus is ingested and indexed once (here, with this tree; or ``--data-dir``, a directory
indexed before). The reader is a real citeulike-a user with at least 100 saved papers. Each
tree's app runs in a process of its own (``benchmarks/web_page_child.py``) over that
directory, in ``--rounds`` that alternate the trees so both see the same machine load: the
reader signs in through the web pages' own flow, likes the 100 papers through the API, and
the JSON list and the page are asked for one at a time, alternating, through the app (Flask's
test client: no network), after 20 of each to warm up. Two figures per request: the time
inside the app (the `Server-Timing` header both answers carry, wall clock) and the CPU time
of the whole WSGI call (which other processes on a shared machine disturb far less).
Reported per tree: p50 and p99 of each, the page's extra time (p50 and p99 differences), and
p50 and p99 of the per-request extra (each page less the JSON list asked just before it);
whether the trees' pages are the same HTML (the per-request token and ids aside).

    python -m benchmarks.web_page --baseline /path/to/other/checkout
                                       # ~5 min with citeulike-a in the benchmarks'
                                       # embedding cache (var/bench), ~8 min without

The figures and what they show: docs/benchmarks/lists.md ("The list page against the JSON list").
"""

from __future__ import annotations

import json
import random
import re
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import citeulike, harness
from recommender import wiring
from recommender.core.config import Settings

NAMESPACE = "bench-web-page"
LIKES = 100
CHILD = Path(__file__).with_name("web_page_child.py")
# What differs between two readers' answers of the same page: the CSRF token, the ids of
# their collections.
PER_REQUEST = re.compile(r'((?:name="csrf_token"|name="collection") value=")[^"]*')

bench = harness.Benchmark("web_page", __doc__)
bench.option("--limit", type=int, default=0, quick=2000,
             help="citeulike-a papers in the corpus (the reader's likes among them); 0: all")
bench.option("--redis-url", default="redis://127.0.0.1:6379/0", help="the service's Redis")
bench.option("--requests", type=int, default=200, quick=20,
             help="of each kind and tree, timed (split over the rounds)")
bench.option("--rounds", type=int, default=4, quick=1, help="runs of each tree")
bench.option("--seed", type=int, default=0, help="which reader")
bench.option("--collections", type=int, default=3, quick=3,
             help="collections the reader's likes are spread over, round robin (0: none); "
                  "with two or more, both lists interleave each collection's list")
bench.option("--baseline", type=Path,
             help="another checkout of paperrec to measure beside this one (e.g. a worktree "
                  "of main)")
bench.option("--data-dir", type=Path,
             help="a data directory with citeulike-a indexed (by an earlier run's "
                  "--keep-data); default: built here in a temporary directory")
bench.option("--keep-data", type=Path, help="build the data directory here and keep it")


def reader_likes(seed: int, papers: set[str]) -> list[str]:
    """100 of these papers that one citeulike-a user saved."""
    saves: dict[str, list[str]] = {}
    for line in citeulike.INTERACTIONS.read_text().splitlines():
        user, paper = line.split("\t")
        if paper in papers:
            saves.setdefault(user, []).append(paper)
    readers = sorted(u for u, saved in saves.items() if len(saved) >= LIKES)
    if not readers:
        raise SystemExit(f"no reader saved {LIKES} of these papers: raise --limit")
    chosen = random.Random(seed).choice(readers)
    return random.Random(seed).sample(saves[chosen], LIKES)


def build(data: Path, limit: int, redis_url: str) -> set[str]:
    """citeulike-a (its first ``limit`` papers) ingested and indexed in ``data``: the ids."""
    settings = Settings(data_dir=data, redis_url=redis_url, redis_namespace=NAMESPACE)
    data.mkdir(parents=True, exist_ok=True)
    harness.seed_embeddings(settings)
    lines = citeulike.PAPERS.read_text().splitlines(keepends=True)
    papers = data / "papers.jsonl"
    papers.write_text("".join(lines[:limit] if limit else lines))
    parts = wiring.build(settings)
    try:
        parts.ingest([papers], on_rejection=lambda r: None)
        parts.rebuild_index(progress=False)
        harness.keep_embeddings(settings)  # the next run embeds nothing
        return {pid for pid, _, _ in parts.corpus.index_rows()}
    finally:
        parts.close()


def indexed(data: Path, redis_url: str) -> set[str]:
    parts = wiring.build(Settings(data_dir=data, redis_url=redis_url,
                                  redis_namespace=NAMESPACE))
    try:
        return {pid for pid, _, _ in parts.corpus.index_rows()}
    finally:
        parts.close()


def same_page(one: str, other: str) -> bool:
    """Whether two readers' pages are the same HTML but for their CSRF tokens and collection
    ids, and the order of papers tied between collections of the same size (whose order
    follows the collections' random ids)."""
    def parts(page: str) -> list[str]:
        text = PER_REQUEST.sub(r"\1", page)
        items = re.findall(r'<li class="paper".*?\n</li>', text, flags=re.S)
        return [re.sub(r'<li class="paper".*?\n</li>', "", text, flags=re.S), *sorted(items)]
    return parts(one) == parts(other)


def figures(times: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    """p50 and p99 of each kind, wall and CPU; the page's extra over the JSON list."""
    out: dict[str, Any] = {}
    for clock, suffix in (("wall", "_ms"), ("cpu", "_cpu_ms")):
        for kind in ("json", "page"):
            out.setdefault(kind, {}).update(harness.percentiles(times[kind][clock],
                                                                suffix=suffix))
        for q in ("p50", "p99"):
            out[f"page_extra_{q}{suffix}"] = round(
                out["page"][f"{q}{suffix}"] - out["json"][f"{q}{suffix}"], 2)
        # Each page less the JSON list asked for just before it: what the page adds, with
        # less of the machine's load between the two.
        paired = [p - j for j, p in zip(times["json"][clock], times["page"][clock],
                                        strict=True)]
        out.setdefault("page_extra_paired", {}).update(
            harness.percentiles(paired, suffix=suffix))
    return out


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    trees = {"this tree": harness.ROOT}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), **trees}
    with tempfile.TemporaryDirectory(prefix="paperrec-web-page-") as scratch:
        data = args.data_dir or args.keep_data or Path(scratch) / "var"
        if args.data_dir:
            ids = indexed(data, args.redis_url)
        else:
            ids = build(data, args.limit, args.redis_url)
        liked = reader_likes(args.seed, ids)
        samples: dict[str, dict[str, dict[str, list[float]]]] = {
            tree: {kind: {"wall": [], "cpu": []} for kind in ("json", "page")} for tree in trees}
        statuses: dict[str, dict[str, int]] = {tree: {} for tree in trees}
        pages: dict[str, str] = {}
        per_round = max(1, args.requests // args.rounds)
        for repeat, tree in harness.interleaved(list(trees), args.rounds):
            setup = {"data_dir": str(data), "redis_url": args.redis_url,
                     "namespace": f"{NAMESPACE}-{repeat}-{len(pages)}", "likes": liked,
                     "collections": args.collections, "requests": per_round, "warm_up": 20}
            harness.log(f"round {repeat + 1}/{args.rounds}: {tree}")
            found = harness.run_in_checkout(trees[tree], CHILD, [json.dumps(setup)])
            for kind, clocks in found["times"].items():
                for clock, values in clocks.items():
                    samples[tree][kind][clock] += values
            for status, count in found["statuses"].items():
                statuses[tree][status] = statuses[tree].get(status, 0) + count
            pages[tree] = found["page"]
    result: dict[str, Any] = {
        "papers": len(ids), "likes": LIKES, "collections": args.collections,
        "requests_each": per_round * args.rounds, "rounds": args.rounds,
        "statuses": statuses["this tree"],
        "list_items_on_page": pages["this tree"].count('<li class="paper'),
        **figures(samples["this tree"]),
    }
    if args.baseline is not None:
        result["baseline"] = {"tree": str(trees["baseline"]),
                              "statuses": statuses["baseline"],
                              **figures(samples["baseline"])}
        result["same_html_as_baseline"] = same_page(pages["baseline"], pages["this tree"])
    bench.record(args, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

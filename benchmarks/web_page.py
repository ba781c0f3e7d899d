"""Web page: the list page's cost over the JSON reading list: server time of `GET /list` (the
web page, 10 papers) against `GET /v1/users/<id>/recommendations?k=10`, for a reader with 100
likes spread over ``--collections`` (3) collections, so that both lists interleave each
collection's list with the whole profile's, on citeulike-a (16,980 papers, ``--limit``
fewer; the exact index the service uses below 20,000).

The reader is a real citeulike-a user with at least 100 saved papers, 100 of them liked
through the API; they sign in through the web pages' own flow (``replay.web_steps``: the
sign-in link read from the development mail directory). Then ``--requests`` (200) of each
are made one at a time, alternating, through the app (Flask's test client: no network, so
the figure is the time inside the app, the `Server-Timing` header both answers carry), after
20 of each to warm up.
Reported: p50 and p99 of each and the page's extra time (p50 and p99 differences).

    python -m benchmarks.web_page      # ~3 min with citeulike-a in the benchmarks'
                                       # embedding cache (var/bench), ~6 min without

The figures and what they show: docs/benchmarks/lists.md ("The list page against the JSON list").
"""

from __future__ import annotations

import random
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import redis

from benchmarks import citeulike, harness
from recommender import wiring
from recommender.core.config import Settings
from replay.web_steps import sign_in
from service.app import create_app

NAMESPACE = "bench-web-page"
EMAIL = "reader@example.org"
TIMING = re.compile(r"app;dur=([0-9.]+)")
LIKES = 100

bench = harness.Benchmark("web_page", __doc__)
bench.option("--limit", type=int, default=0, quick=2000,
             help="citeulike-a papers in the corpus (the reader's likes among them); 0: all")
bench.option("--redis-url", default="redis://127.0.0.1:6379/0", help="the service's Redis")
bench.option("--requests", type=int, default=200, quick=20, help="of each kind, timed")
bench.option("--seed", type=int, default=0, help="which reader")
bench.option("--collections", type=int, default=3, quick=3,
             help="collections the reader's likes are spread over, round robin (0: none); "
                  "with two or more, both lists interleave each collection's list")


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


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    keys = redis.Redis.from_url(args.redis_url)
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        settings = Settings(data_dir=data / "var", redis_url=args.redis_url,
                            redis_namespace=NAMESPACE, mail_dir=str(data / "mail"))
        settings.data_dir.mkdir()
        harness.seed_embeddings(settings)
        lines = citeulike.PAPERS.read_text().splitlines(keepends=True)
        papers = data / "papers.jsonl"
        papers.write_text("".join(lines[:args.limit] if args.limit else lines))
        parts = wiring.build(settings)
        parts.ingest([papers], on_rejection=lambda r: None)
        built = parts.rebuild_index(progress=False)
        harness.keep_embeddings(settings)  # the next run embeds nothing
        liked = reader_likes(args.seed, {pid for pid, _, _ in parts.corpus.index_rows()})
        browser = create_app(parts=parts).test_client()
        sign_in(browser, EMAIL, data / "mail")
        made = [str((browser.post(f"/v1/users/{EMAIL}/collections",
                                  json={"name": f"Topic {n}"}).json or {})["id"])
                for n in range(args.collections)]
        for n, paper in enumerate(liked):
            body: dict[str, Any] = {"signal": "like"}
            if made:
                body["collections"] = [made[n % len(made)]]
            answer = browser.put(f"/v1/users/{EMAIL}/feedback/{paper}", json=body)
            assert answer.status_code in (200, 201), answer.text
        paths = {"json": f"/v1/users/{EMAIL}/recommendations?k=10", "page": "/list"}
        times: dict[str, list[float]] = {"json": [], "page": []}
        statuses: Counter[str] = Counter()
        for attempt in range(20 + args.requests):
            for kind, path in paths.items():
                answer = browser.get(path)
                statuses[f"{kind} {answer.status_code}"] += 1
                timing = TIMING.search(answer.headers["Server-Timing"])
                if attempt >= 20 and timing:
                    times[kind].append(float(timing[1]))
        page_text = browser.get("/list").text
        for key in keys.scan_iter(f"{NAMESPACE}:*"):
            keys.delete(key)
    figures = {kind: harness.percentiles(v, suffix="_ms") for kind, v in times.items()}
    result: dict[str, Any] = {
        "papers": built.papers, "likes": LIKES, "collections": args.collections,
        "requests_each": args.requests,
        "statuses": dict(statuses),
        "list_items_on_page": page_text.count('<li class="paper'),
        **figures,
        "page_extra_p50_ms": round(figures["page"]["p50_ms"] - figures["json"]["p50_ms"], 2),
        "page_extra_p99_ms": round(figures["page"]["p99_ms"] - figures["json"]["p99_ms"], 2),
    }
    bench.record(args, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

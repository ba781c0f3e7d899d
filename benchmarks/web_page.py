"""The list page's cost over the JSON reading list (issue 13): server time of `GET /list` (the
web page, 10 papers) against `GET /v1/users/<id>/recommendations?k=10`, for a reader with 100
likes, on citeulike-a (16,980 papers, the exact index the service uses below 20,000).

The reader is a real citeulike-a user with at least 100 saved papers, 100 of them liked
through the API; they sign in through the web pages' own flow (the sign-in link read from the
development mail directory). Then ``--requests`` (200) of each are made one at a time,
alternating, through the app (Flask's test client: no network, so the figure is the time
inside the app, the `Server-Timing` header both answers carry), after 20 of each to warm up.
Reported: p50 and p99 of each and the page's extra time (p50 and p99 differences).

    .venv/bin/python benchmarks/web_page.py      # ~3 min with the intake benchmark's
                                                 # embedding cache, ~6 min without

Prints one JSON document and writes benchmarks/results/web_page.json.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from index import machine, write_result  # type: ignore[import-not-found]  # noqa: E402

from recommender import jobs, wiring  # noqa: E402
from recommender.core.config import Settings  # noqa: E402
from service.app import create_app  # noqa: E402
from tests.web_steps import sign_in  # noqa: E402

DATA = Path("/work/shared/data/citeulike-a")
NAMESPACE = "bench-web-page"
EMAIL = "reader@example.org"
TIMING = re.compile(r"app;dur=([0-9.]+)")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def reader_likes(seed: int) -> list[str]:
    """100 papers of a citeulike-a user who saved at least 100."""
    saves: dict[str, list[str]] = {}
    for line in (DATA / "interactions.tsv").read_text().splitlines():
        user, paper = line.split("\t")
        saves.setdefault(user, []).append(paper)
    readers = sorted(u for u, papers in saves.items() if len(papers) >= 100)
    chosen = random.Random(seed).choice(readers)
    return random.Random(seed).sample(saves[chosen], 100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=ROOT / "var/bench/intake-embeddings.sqlite",
                        help="an embedding cache to start from (default: the intake "
                             "benchmark's, %(default)s; missing vectors are embedded)")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/web_page.json")
    args = parser.parse_args(argv)

    keys = redis.Redis.from_url(args.redis_url)
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        settings = Settings(data_dir=data / "var", redis_url=args.redis_url,
                            redis_namespace=NAMESPACE, mail_dir=str(data / "mail"))
        settings.data_dir.mkdir()
        if args.cache.exists():
            shutil.copy(args.cache, settings.embedding_cache_path)
        parts = wiring.build(settings)
        jobs.ingest(parts.corpus, [DATA / "papers.jsonl"], on_rejection=lambda r: None)
        built = jobs.rebuild_index(parts.corpus, parts.embedder, settings.embedding_cache_path,
                                   parts.index_store, settings.exact_index_max, settings.model,
                                   progress=False)
        browser = create_app(parts=parts).test_client()
        sign_in(browser, EMAIL, data / "mail")
        for paper in reader_likes(args.seed):
            answer = browser.put(f"/v1/users/{EMAIL}/feedback/{paper}",
                                 json={"signal": "like"})
            assert answer.status_code in (200, 201), answer.text
        paths = {"json": f"/v1/users/{EMAIL}/recommendations?k=10", "page": "/list"}
        times: dict[str, list[float]] = {"json": [], "page": []}
        statuses: Counter[str] = Counter()
        for attempt in range(20 + args.requests):
            for kind, path in paths.items():
                answer = browser.get(path)
                statuses[f"{kind} {answer.status_code}"] += 1
                if attempt >= 20:
                    times[kind].append(float(TIMING.search(answer.headers["Server-Timing"])[1]))
        page_text = browser.get("/list").text
        for key in keys.scan_iter(f"{NAMESPACE}:*"):
            keys.delete(key)
    figures = {kind: {"p50_ms": round(statistics.median(v), 2),
                      "p99_ms": round(percentile(v, 0.99), 2)} for kind, v in times.items()}
    result: dict[str, Any] = {
        "benchmark": "web_page", "machine": machine(), "papers": built.papers,
        "likes": 100, "requests_each": args.requests, "statuses": dict(statuses),
        "list_items_on_page": page_text.count('<li class="paper'),
        **figures,
        "page_extra_p50_ms": round(figures["page"]["p50_ms"] - figures["json"]["p50_ms"], 2),
        "page_extra_p99_ms": round(figures["page"]["p99_ms"] - figures["json"]["p99_ms"], 2),
    }
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

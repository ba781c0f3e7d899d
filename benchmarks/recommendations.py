"""Recommendations: reading-list latency over HTTP, `GET /v1/users/<user_id>/recommendations`
under gunicorn, at 100k and 1M papers, for users with 1, 10 and 100 likes. Each size is a
part of the results file.

For each size it builds (once, cached under --workdir) a data dir the way the service has
one: a corpus of synthetic papers and an index version published by the service's own
``IndexStore.publish`` from synthetic 384-d vectors (``benchmarks.synthetic`` says how they
are shaped). Then it starts `paperrec serve --workers 2`, gives each user its likes through
the API (papers of one to five topics, as a reader has), and for each like count measures for
--seconds one client at a time (latency) and then --clients at once (requests per second).
Latency is taken both at the client and at the server (the `Server-Timing` header: the time
inside the app), and the resident and proportional memory of each worker is read from /proc.

    python -m benchmarks.recommendations --sizes 100k      # about 10 minutes
    python -m benchmarks.recommendations --sizes 100k,1M   # 1M builds for ~1 hour

The figures and what they show: docs/benchmarks/lists.md ("Reading lists over HTTP").
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness
from benchmarks.served import Served
from benchmarks.synthetic import parse_size, synthetic_vectors
from recommender.core.config import Settings
from recommender.core.papers import Paper
from recommender.corpus.store import CorpusStore
from recommender.index.store import IndexStore

bench = harness.Benchmark("recommendations", __doc__)
bench.option("--sizes", default="100k,1M", quick="5k", help="papers: 17k, 100k, 1M, ...")
bench.option("--likes", default="1,10,100", help="likes per user")
bench.option("--users", type=int, default=20, quick=3, help="users per like count")
bench.option("--clients", type=int, default=8, quick=4, help="concurrent clients")
bench.option("--seconds", type=float, default=20, quick=2, help="per like count")
bench.option("--workers", type=int, default=2, help="gunicorn workers")
bench.option("--k", type=int, default=20, help="items per reading list")
bench.option("--redis-url", default=os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0",
             help="Redis ($REDIS_URL)")
bench.option("--workdir", type=Path, default=harness.WORK / "recommendations",
             help="where the data dirs are built and kept")
bench.option("--direct", default="1M",
             help="sizes whose index is built directly from the synthetic vectors "
                  "(see build())")
bench.option("--seed", type=int, default=0, help="of the vectors and the users")


def build(size: str, workdir: Path, seed: int, direct: bool = False) -> Path:
    """A data dir with ``size`` synthetic papers and a published index (kept for next time).

    ``direct``: the synthetic vectors are taken as the content space itself (they are shaped
    like it) and its neighbour graph is read off the service's HNSW index, instead of
    building the space from "raw" vectors (two more kNN passes: about an hour at 1M on two
    busy cores). The served files are the same kind, so request latency is unaffected."""
    data_dir = workdir / f"data-{size}"
    settings = Settings(data_dir=data_dir)
    if IndexStore(settings.index_dir).current_version():
        return data_dir
    n = parse_size(size)
    started = time.perf_counter()
    data_dir.mkdir(parents=True, exist_ok=True)
    corpus = CorpusStore(settings.corpus_path)
    try:
        for start in range(0, n, 50_000):
            corpus.upsert(Paper(id=f"syn-{i:07d}", title=f"Synthetic paper {i}",
                                year=2000 + i % 26) for i in range(start, min(n, start + 50_000)))
    finally:
        corpus.close()
    log(f"{size}: corpus written in {time.perf_counter() - started:.0f} s")
    vectors = synthetic_vectors(n, seed)
    ids = [f"syn-{i:07d}" for i in range(n)]
    days = np.asarray([(2000 + i % 26 - 1970) * 365.25 for i in range(n)], dtype=np.float64)
    started = time.perf_counter()
    if direct:
        publish_direct(IndexStore(settings.index_dir), ids, vectors, days, settings)
    else:
        IndexStore(settings.index_dir).publish(ids, vectors, days, settings.model,
                                               settings.exact_index_max)
    log(f"{size}: index published in {time.perf_counter() - started:.0f} s")
    return data_dir


def publish_direct(store: IndexStore, ids: list[str], vectors: np.ndarray, days: np.ndarray,
                   settings: Settings) -> None:
    import faiss

    from recommender.index.content_space import STORED_NEIGHBOURS
    from recommender.index.store import build_faiss

    faiss.omp_set_num_threads(os.cpu_count() or 1)
    index = build_faiss(vectors, settings.exact_index_max)
    log(f"HNSW built over {len(ids)} papers")
    neighbours = np.empty((len(ids), STORED_NEIGHBOURS), np.int32)
    sims = np.empty((len(ids), STORED_NEIGHBOURS), np.float32)
    for start in range(0, len(ids), 50_000):
        found_sims, found = index.search(vectors[start:start + 50_000], STORED_NEIGHBOURS + 1)
        neighbours[start:start + len(found)] = found[:, 1:]  # the first is the paper itself
        sims[start:start + len(found)] = found_sims[:, 1:]
    meta = {"model": settings.model, "embedding": settings.model, "dim": vectors.shape[1],
            "count": len(ids), "kind": "hnsw", "created_at": time.time(), "build": "full",
            "build_reason": "benchmarks/recommendations.py --direct", "full_build_count": len(ids)}

    def write(folder: Path, version: str) -> None:
        faiss.write_index(index, str(folder / "index.faiss"))
        for name, array in (("vectors", vectors), ("mean", np.zeros(vectors.shape[1], np.float32)),
                            ("neighbours", neighbours), ("neighbour_sims", sims), ("days", days)):
            np.save(folder / f"{name}.npy", array)
        (folder / "ids.json").write_text(json.dumps(ids))
        (folder / "meta.json").write_text(json.dumps({"version": version, **meta}))

    store.dir.publish(write)


def request(port: int, method: str, path: str, body: Any = None,
            connection: http.client.HTTPConnection | None = None
            ) -> tuple[int, dict[str, Any] | None, float | None]:
    own = connection is None
    conn = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        raw = response.read()
        timing = re.search(r"dur=([\d.]+)", response.getheader("Server-Timing") or "")
        return (response.status, json.loads(raw) if raw else None,
                float(timing[1]) if timing else None)
    finally:
        if own:
            conn.close()


def make_users(port: int, n: int, likes: int, count: int, rng: random.Random) -> list[str]:
    """Users with ``likes`` likes each, drawn from one to five topics (neighbouring ids of a
    synthetic corpus are not related; a paper's nearest neighbours are, so a topic is a seed
    paper and the papers /similar returns for it)."""
    users = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for u in range(count):
        user = f"bench-{likes}-{u}"
        chosen: list[str] = []
        for _ in range(rng.randint(1, min(5, likes))):
            seed = f"syn-{rng.randrange(n):07d}"
            _, found, _ = request(port, "GET", f"/v1/papers/{seed}/similar?k=200",
                                  connection=conn)
            assert found is not None
            chosen += [seed] + [item["paper_id"] for item in found["items"]]
        rng.shuffle(chosen)
        picked = list(dict.fromkeys(chosen))[:likes]
        while len(picked) < likes:
            picked.append(f"syn-{rng.randrange(n):07d}")
        for paper_id in picked:
            status, _, _ = request(port, "PUT", f"/v1/users/{user}/feedback/{paper_id}",
                                   {"signal": "like"}, connection=conn)
            assert status == 200, status
        users.append(user)
    conn.close()
    return users


def drive(port: int, users: list[str], clients: int, seconds: float,
          k: int) -> dict[str, Any]:
    client_ms: list[float] = []
    server_ms: list[float] = []
    errors = 0
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(index: int) -> None:
        nonlocal errors
        rng = random.Random(index)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while time.monotonic() < stop:
            user = rng.choice(users)
            started = time.perf_counter()
            try:
                status, body, app_ms = request(port, "GET",
                                               f"/v1/users/{user}/recommendations?k={k}",
                                               connection=conn)
                ok = status == 200 and body is not None and len(body["items"]) == k
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                ok, app_ms = False, None
            took = (time.perf_counter() - started) * 1000
            with lock:
                if ok:
                    client_ms.append(took)
                    if app_ms is not None:
                        server_ms.append(app_ms)
                else:
                    errors += 1
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    return {"requests": len(client_ms), "errors": errors,
            "rps": round(len(client_ms) / wall, 1),
            "client_ms": harness.percentiles(client_ms, (50, 90, 99)),
            "server_ms": harness.percentiles(server_ms, (50, 90, 99))}


def log(message: str) -> None:
    harness.log(f"[recommendations] {message}")


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    for size in [s for s in args.sizes.split(",") if s]:
        data_dir = build(size, args.workdir, args.seed, direct=size in args.direct.split(","))
        server = Served(data_dir, args.redis_url, args.workers)
        try:
            server.start()
            port = int(server.url.rsplit(":", 1)[1])
            rng = random.Random(args.seed)
            result: dict[str, Any] = {"papers": parse_size(size), "workers": args.workers,
                                      "clients": args.clients, "k": args.k, "likes": {}}
            for likes in (int(x) for x in args.likes.split(",")):
                users = make_users(port, parse_size(size), likes, args.users, rng)
                drive(port, users, args.clients, 3, args.k)  # warm up
                result["likes"][str(likes)] = {
                    # one request at a time: the latency of a reading list
                    "latency": drive(port, users, 1, args.seconds, args.k),
                    # --clients at once: how many lists the workers serve per second
                    "throughput": drive(port, users, args.clients, args.seconds, args.k),
                }
                log(f"{size}, {likes} likes: {result['likes'][str(likes)]}")
            result["worker_memory"] = server.worker_memory()
        finally:
            server.stop()
        bench.record(args, result, part=size)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

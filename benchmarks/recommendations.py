"""Reading-list latency over HTTP: `GET /v1/users/<user_id>/recommendations` under gunicorn, at
100k and 1M papers, for users with 1, 10 and 100 likes. Prints one JSON document and merges it
into benchmarks/results/recommendations.json (see docs/benchmarks/lists.md).

For each size it builds (once, cached under --workdir) a data dir the way the service has
one: a corpus of synthetic papers and an index version published by the service's own
``IndexStore.publish`` from synthetic 384-d vectors (benchmarks/index.py says how they are
shaped). Then it starts `paperrec serve --workers 2`, gives each user its likes through the
API (papers of one to five topics, as a reader has), and for each like count measures for
--seconds one client at a time (latency) and then --clients at once (requests per second).
Latency is taken both at the client and at the server (the `Server-Timing` header: the time
inside the app), and the resident and proportional memory of each worker is read from /proc.

    .venv/bin/python benchmarks/recommendations.py --sizes 100k      # about 10 minutes
    .venv/bin/python benchmarks/recommendations.py --sizes 100k,1M   # 1M builds for ~1 hour
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import secrets
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from index import load_average, machine, synthetic_vectors  # noqa: E402

from recommender.core.config import Settings  # noqa: E402
from recommender.core.papers import Paper  # noqa: E402
from recommender.corpus.store import CorpusStore  # noqa: E402
from recommender.index.store import IndexStore  # noqa: E402

SIZES = {"17k": 17_000, "100k": 100_000, "1M": 1_000_000}
RESULTS = ROOT / "benchmarks" / "results" / "recommendations.json"


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
    n = SIZES[size]
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


class Server:
    def __init__(self, data_dir: Path, workers: int, redis_url: str) -> None:
        self.port = _free_port()
        self.namespace = f"paperrec-bench-{secrets.token_hex(4)}"
        env = {**os.environ, "PAPERREC_DATA_DIR": str(data_dir), "REDIS_URL": redis_url,
               "PAPERREC_REDIS_NAMESPACE": self.namespace, "PAPERREC_RATE_LIMIT": "off",
               "HF_HUB_OFFLINE": "1"}
        env.pop("PAPERREC_API_KEYS", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "serve", "--port", str(self.port),
             "--workers", str(workers)], env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                if request(self.port, "GET", "/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise SystemExit("the service did not become ready in 10 minutes")

    def workers(self) -> list[int]:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(pid) for pid in children.read_text().split()]

    def stop(self, redis_url: str) -> None:
        self.process.terminate()
        self.process.wait(60)
        import redis

        client = redis.Redis.from_url(redis_url)
        for key in client.scan_iter(f"{self.namespace}:*", count=1000):
            client.delete(key)


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
            "client_ms": percentiles(client_ms), "server_ms": percentiles(server_ms)}


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 2),
            "p90": round(ordered[int(0.90 * (len(ordered) - 1))], 2),
            "p99": round(ordered[int(0.99 * (len(ordered) - 1))], 2)}


def worker_memory(pids: list[int]) -> list[dict[str, float]]:
    """Resident (RSS) and proportional (PSS: shared pages divided among their users) MiB."""
    found = []
    for pid in pids:
        fields = {}
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            name, value = line.split(":", 1)
            fields[name] = int(value.split()[0]) / 1024
        found.append({"pid": pid, "rss_mib": round(fields["Rss"]),
                      "pss_mib": round(fields["Pss"]),
                      "shared_mib": round(fields.get("Shared_Clean", 0)
                                          + fields.get("Shared_Dirty", 0))})
    return found


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def log(message: str) -> None:
    print(f"[recommendations] {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100k,1M", help="papers: 17k, 100k, 1M (100k,1M)")
    parser.add_argument("--likes", default="1,10,100", help="likes per user (1,10,100)")
    parser.add_argument("--users", type=int, default=20, help="users per like count (20)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (8)")
    parser.add_argument("--seconds", type=float, default=20, help="per like count (20)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (2)")
    parser.add_argument("--k", type=int, default=20, help="items per reading list (20)")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL")
                        or "redis://127.0.0.1:6379/0", help="Redis ($REDIS_URL or local)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/paperrec-bench/recs"),
                        help="where the data dirs are built and kept")
    parser.add_argument("--direct", default="1M",
                        help="sizes whose index is built directly from the synthetic vectors "
                             "(see build(); default 1M)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sizes = [s for s in args.sizes.split(",") if s]
    for size in sizes:
        if size not in SIZES:
            parser.error(f"unknown size {size!r}; choose from {', '.join(SIZES)}")
    report: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    report.update({"machine": machine(), "command": " ".join(
        ["benchmarks/recommendations.py", *(sys.argv[1:] if argv is None else argv)])})
    report.setdefault("sizes", {})
    for size in sizes:
        data_dir = build(size, args.workdir, args.seed, direct=size in args.direct.split(","))
        server = Server(data_dir, args.workers, args.redis_url)
        try:
            rng = random.Random(args.seed)
            result: dict[str, Any] = {"papers": SIZES[size], "workers": args.workers,
                                      "clients": args.clients, "k": args.k, "likes": {}}
            for likes in (int(x) for x in args.likes.split(",")):
                users = make_users(server.port, SIZES[size], likes, args.users, rng)
                drive(server.port, users, args.clients, 3, args.k)  # warm up
                result["likes"][str(likes)] = {
                    # one request at a time: the latency of a reading list
                    "latency": drive(server.port, users, 1, args.seconds, args.k),
                    # --clients at once: how many lists the workers serve per second
                    "throughput": drive(server.port, users, args.clients, args.seconds,
                                        args.k),
                }
                log(f"{size}, {likes} likes: {result['likes'][str(likes)]}")
            result["worker_memory"] = worker_memory(server.workers())
            result["load_avg_end"] = load_average()
            report["sizes"][size] = result
        finally:
            server.stop(args.redis_url)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

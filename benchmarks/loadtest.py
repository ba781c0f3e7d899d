"""Load test: mixed reads and writes against `paperrec serve`, then a check that no write the
service acknowledged was lost. Exits 1 when one was.

By default it builds the sample corpus into a temporary data directory, starts
`paperrec serve --workers 2` on a free loopback port against the Redis at $REDIS_URL (else
redis://127.0.0.1:6379/0) in a Redis namespace of its own, runs --clients concurrent clients
for --seconds, verifies, stops the server and deletes its Redis keys. With --url it drives a
service that is already running instead.

Every client has users of its own and remembers, from the acknowledged (2xx) responses, what
it believes each (user, paper) feedback is. At the end every user's feedback is read back:
a like or dislike that was acknowledged but is missing or different, or an acknowledged
DELETE whose feedback is back, is a lost write. A write that failed without an answer
(timeout, reset connection, 5xx) has an unknown outcome and is not checked.

    python -m benchmarks.loadtest                  # 60 s, 32 clients, 2 workers
    python -m benchmarks.loadtest --data-dir /tmp/cul \\
        --papers /work/shared/data/citeulike-a/papers.jsonl  # citeulike-a (embeds 17k once)
    python -m benchmarks.loadtest --url http://127.0.0.1:8000 --api-key KEY

Environment: REDIS_URL (Redis of the started server), PAPERREC_API_KEY (the key to send, as
--api-key).

The figures and what they show: docs/benchmarks/lists.md ("Load test").
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import shutil
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks import harness
from benchmarks.loadtest_client import KINDS, Client
from benchmarks.served import Served, prepare, wait_ready

DISCOVERY_QUERIES = ["learning", "model", "data", "network", "neural", "method", "graph",
                     "language", "optimization", "recommendation", "training", "theory"]
MAX_SECONDS = 3600  # a load test stops by itself

bench = harness.Benchmark("loadtest", __doc__)
bench.option("--url", help="drive this running service instead of starting one "
             "(e.g. http://127.0.0.1:8000)")
bench.option("--seconds", type=float, default=60.0, quick=10.0, help="duration")
bench.option("--clients", type=int, default=32, quick=8, help="concurrent clients")
bench.option("--users-per-client", type=int, default=4, help="users each client owns")
bench.option("--warmup-seconds", type=float, default=5.0, quick=2.0,
             help="untimed warm-up: every worker loads the model")
bench.option("--api-key", default=os.environ.get("PAPERREC_API_KEY", ""),
             help="send Authorization: Bearer KEY ($PAPERREC_API_KEY); when this script "
                  "starts the server, the server is given this key as its one client key. "
                  "Without a key the started server has none: no auth, so no per-key rate "
                  "limits either")
bench.option("--seed", type=int, default=0, help="random seed")
bench.option("--workers", type=int, default=2, help="gunicorn workers of the started server")
bench.option("--threads", type=int, default=8, help="threads per worker")
bench.option("--data-dir", type=Path, help="data directory with a published index (default: "
             "a temporary one with the sample corpus); one without an index gets --papers "
             "(or the sample) ingested and indexed first")
bench.option("--papers", type=Path, help="papers to ingest into a data dir that has no index "
             "yet, e.g. citeulike-a/papers.jsonl")
bench.option("--redis-url", default=os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0",
             help="Redis for the started server ($REDIS_URL)")
bench.option("--namespace", help="Redis namespace of the server (default: a fresh one, "
             "deleted afterwards)")
bench.option("--rate-limit", default="off", metavar="LIMIT",
             help="PAPERREC_RATE_LIMIT of the server, per API key (off: none; e.g. "
                  "6000/minute)")
bench.option("--keep", action="store_true",
             help="keep the temporary data dir and the Redis keys")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    args = bench.parse(argv)
    if not 0 < args.seconds <= MAX_SECONDS:
        bench.parser.error(f"--seconds must be in (0, {MAX_SECONDS}]")
    if args.clients < 1 or args.users_per_client < 1 or args.workers < 1 or args.threads < 1:
        bench.parser.error("--clients, --users-per-client, --workers and --threads must be "
                           ">= 1")
    return args


# --- measuring ----------------------------------------------------------------------------

def discover_papers(client: Client) -> list[str]:
    found: dict[str, None] = {}
    for query in DISCOVERY_QUERIES:
        status, body = client.call("discover", "GET", "/v1/search?" + urllib.parse.urlencode(
            {"q": query, "k": 200}), timed=False)
        if status != 200:
            raise SystemExit(f"GET /v1/search answered {status}: {body}")
        found.update(dict.fromkeys(item["paper_id"] for item in body["items"]))
    return list(found)


def warm_up(clients: list[Client], seconds: float) -> None:
    """Untimed traffic so that every worker has loaded the model and the index."""
    if seconds <= 0:
        return
    deadline = time.monotonic() + seconds

    def loop(client: Client) -> None:
        rounds = 0
        while time.monotonic() < deadline or rounds < 2:
            rounds += 1
            client.call("warmup", "GET", "/v1/search?q=warm+up&k=5", timed=False)
            client.call("warmup", "GET", client._path("v1", "papers", client.papers[0],
                                                      "similar") + "?k=5", timed=False)

    threads = [threading.Thread(target=loop, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for client in clients:  # the timed run starts on fresh connections
        client.close()


def percentiles(seconds: list[float]) -> dict[str, float | int]:
    if not seconds:
        return {"count": 0}
    return {"count": len(seconds),
            **harness.percentiles(seconds, (50, 90, 99), scale=1000, suffix="_ms"),
            "max_ms": round(max(seconds) * 1000, 2),
            "mean_ms": round(sum(seconds) / len(seconds) * 1000, 2)}


def read_back(client: Client, user: str, patience: float = 120.0) -> Any:
    """GET the user's feedback, waiting out rate limits (429) and brief unavailability (503)."""
    deadline = time.monotonic() + patience
    while True:
        status, body = client.call("verify", "GET", client._path("v1", "users", user,
                                                                 "feedback"), timed=False)
        if status == 200:
            return body
        if status not in (0, 429, 503) or time.monotonic() > deadline:
            raise SystemExit(f"verification: GET feedback of {user} answered {status}")
        time.sleep(1.0)


def redis_info(url: str) -> dict[str, Any]:
    try:
        import redis

        client = redis.Redis.from_url(url, socket_timeout=5, decode_responses=True)
        info = client.info()
        found = {"redis_version": info.get("redis_version"),
                 "redis_aof": bool(info.get("aof_enabled"))}
        if found["redis_aof"]:
            found["redis_appendfsync"] = client.config_get("appendfsync").get("appendfsync")
        return found
    except Exception as exc:  # the figures stand without it
        return {"redis_error": str(exc)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    workdir = Path(tempfile.mkdtemp(prefix="paperrec-loadtest-"))
    server: Served | None = None
    data_dir = args.data_dir or workdir / "data"
    try:
        if args.url:
            url = args.url.rstrip("/")
            ready = wait_ready(url, headers, None, 300)
        else:
            prepare(data_dir, args.papers)
            server = Served(data_dir, args.redis_url, args.workers, args.threads,
                            args.namespace, log_path=workdir / "server.log",
                            env={"PAPERREC_RATE_LIMIT": args.rate_limit,
                                 "PAPERREC_API_KEYS": f"client:{args.api_key}"
                                 if args.api_key else ""})
            ready = server.start(headers, timeout=300)
            url = server.url
        harness.log(f"ready: {ready}")
        return run(args, url, headers, ready, server, data_dir)
    finally:
        if server:
            server.stop(keep=args.keep)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def run(args: argparse.Namespace, url: str, headers: dict[str, str], ready: dict[str, Any],
        server: Served | None, data_dir: Path) -> int:
    base = urllib.parse.urlsplit(url)
    run_id = secrets.token_hex(3)
    probe = Client(base, headers, [], [], random.Random(args.seed))
    papers = discover_papers(probe)
    harness.log(f"{len(papers)} papers found by search; {args.clients} clients for "
                f"{args.seconds} s")
    clients = [
        Client(base, headers,
               [f"lt-{run_id}-c{c}-u{u}" for u in range(args.users_per_client)],
               papers, random.Random(args.seed * 100_003 + c))
        for c in range(args.clients)
    ]
    warm_up(clients, args.warmup_seconds)
    load_before = os.getloadavg()[0]
    server_before = server.usage() if server else None
    client_cpu_before = time.process_time()
    started = time.monotonic()
    deadline = started + args.seconds
    threads = [threading.Thread(target=c.run, args=(deadline,)) for c in clients]
    for thread in threads:
        thread.start()
    peak_rss = 0.0
    while any(t.is_alive() for t in threads):
        if server:
            peak_rss = max(peak_rss, server.usage()[1])
        time.sleep(1.0)
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    client_cpu = time.process_time() - client_cpu_before
    server_after = server.usage() if server else None

    lost: Counter[str] = Counter()
    verified = 0
    for client in clients:
        for user in client.users:
            body = read_back(client, user)
            lost.update(problem for _paper, problem in client.mismatches(user, body))
        verified += sum(1 for pair in client.beliefs if pair not in client.uncertain)

    latencies: dict[str, list[float]] = {}
    for client in clients:
        for kind, values in client.latencies.items():
            latencies.setdefault(kind, []).extend(values)
    everything = [v for values in latencies.values() for v in values]
    errors = sum((c.errors for c in clients), Counter())
    statuses = sum((c.statuses for c in clients), Counter())
    lost_writes = sum(lost.values()) + sum(c.vanished_before_delete for c in clients)
    report: dict[str, Any] = {
        "url": url if not server else "started: " + url,
        "seconds": round(elapsed, 2),
        "clients": args.clients,
        "users": args.clients * args.users_per_client,
        "papers": len(papers),
        "index_version": ready.get("index_version"),
        "requests": len(everything),
        "rps": round(len(everything) / elapsed, 1),
        "errors": sum(errors.values()),
        "error_breakdown": dict(errors.most_common()),
        "expected_404": sum(c.expected_404 for c in clients),
        "acknowledged_writes": sum(c.acknowledged_writes for c in clients),
        "pairs_verified": verified,
        "uncertain_pairs": sum(len(c.uncertain) for c in clients),
        "lost_writes": lost_writes,
        "lost_write_breakdown": dict(lost) | {
            "404 on delete of acknowledged feedback": sum(c.vanished_before_delete
                                                          for c in clients)},
        "stale_reads": sum(c.stale_reads for c in clients),
        "reconnects": sum(c.reconnects for c in clients),
        "latency": {"all": percentiles(everything)}
        | {kind: percentiles(latencies.get(kind, [])) for kind in KINDS},
        "statuses": dict(sorted(statuses.items())),
        "client_cpu_seconds": round(client_cpu, 1),
        "load_average_start": round(load_before, 2),
    }
    if server and server_before and server_after:
        report["server"] = {
            "workers": args.workers, "threads": args.threads, "data_dir": str(data_dir),
            "redis_namespace": server.namespace, "api_keys": bool(args.api_key),
            "rate_limit": args.rate_limit,
            "cpu_seconds": round(server_after[0] - server_before[0], 1),
            "peak_rss_mb": round(peak_rss, 1),
            **redis_info(args.redis_url),
        }
    bench.record(args, report)
    return 1 if lost_writes else 0


if __name__ == "__main__":
    raise SystemExit(main())

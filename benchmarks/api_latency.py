"""What the API layer costs a request: the reading list and a request its validation refuses,
timed through the app (Flask's test client, no network), for this tree and another one side
by side in one run. Prints one JSON document.

Each tree's app runs in a process of its own over the same data directory (the sample corpus,
indexed with the configured model unless --data-dir names one), in rounds that alternate the
trees, so both see the same machine load. Per request kind: p50 and p99 in milliseconds.

    .venv/bin/python benchmarks/api_latency.py --baseline /path/to/other/checkout
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
USER = "bench-reader"
REQUESTS = {  # kind -> (path, status expected)
    "recommendations": (f"/v1/users/{USER}/recommendations?k=20", 200),
    "refused (k=0)": (f"/v1/users/{USER}/recommendations?k=0", 400),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True,
                        help="another checkout of paperrec to compare with (e.g. a worktree "
                             "of main)")
    parser.add_argument("--data-dir", type=Path, help="an indexed data directory (default: "
                        "the sample corpus, built here into a temporary directory)")
    parser.add_argument("--requests", type=int, default=300, help="of each kind, per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_time_requests(args.data_dir, args.requests)))
        return
    with tempfile.TemporaryDirectory(prefix="paperrec-api-latency-") as scratch:
        data_dir = args.data_dir or _sample(Path(scratch) / "var")
        trees = {"baseline": args.baseline.resolve(), "this tree": HERE}
        samples: dict[str, dict[str, list[float]]] = {
            tree: {kind: [] for kind in REQUESTS} for tree in trees}
        for _ in range(args.rounds):
            for tree, root in trees.items():
                for kind, times in _child(root, data_dir, args.requests).items():
                    samples[tree][kind] += times
    print(json.dumps({
        "benchmark": "api_latency",
        "requests_per_kind": args.requests * args.rounds,
        "trees": {tree: str(root) for tree, root in trees.items()},
        "ms": {tree: {kind: _summary(times) for kind, times in kinds.items()}
               for tree, kinds in samples.items()},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "processor": platform.processor() or platform.machine(),
                    "load_average": [round(x, 1) for x in os.getloadavg()]},
    }, indent=1))


def _sample(data_dir: Path) -> Path:
    env = {**os.environ, "PAPERREC_DATA_DIR": str(data_dir)}
    paperrec = Path(sys.executable).parent / "paperrec"
    for command in (["ingest", "--sample"], ["rebuild-index"]):
        subprocess.run([str(paperrec), *command], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return data_dir


def _child(root: Path, data_dir: Path, requests: int) -> dict[str, list[float]]:
    """The timings of one process running ``root``'s app (its code first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", "--baseline", str(root),
         "--data-dir", str(data_dir), "--requests", str(requests)],
        env=env, cwd=root, check=True, capture_output=True, text=True)
    found: dict[str, list[float]] = json.loads(done.stdout.splitlines()[-1])
    return found


def _time_requests(data_dir: Path, requests: int) -> dict[str, list[float]]:
    from recommender.core.config import Settings
    from service import create_app

    settings = Settings.from_env().replace(
        data_dir=data_dir, redis_namespace=f"paperrec-bench-{uuid.uuid4().hex[:8]}")
    client = create_app(settings).test_client()
    broad = client.get("/v1/users/bench-cold-start/recommendations?k=3").json["items"]
    papers = [item["paper_id"] for item in broad]
    for paper in papers:
        client.put(f"/v1/users/{USER}/feedback/{paper}", json={"signal": "like"})
    times: dict[str, list[float]] = {}
    for kind, (path, status) in REQUESTS.items():
        for _ in range(20):  # warm up
            client.get(path)
        times[kind] = []
        for _ in range(requests):
            started = time.perf_counter()
            response = client.get(path)
            times[kind].append((time.perf_counter() - started) * 1000)
            assert response.status_code == status, (path, response.status_code, response.text)
    client.delete(f"/v1/users/{USER}")
    return times


def _summary(times: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(times, n=100)
    return {"p50": round(statistics.median(times), 3), "p99": round(cuts[98], 3)}


if __name__ == "__main__":
    main()

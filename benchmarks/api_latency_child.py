"""The measuring side of ``benchmarks.api_latency``: one checkout's app, timed.

``python -m benchmarks.api_latency_child DATA_DIR REQUESTS`` runs in a fresh process whose
``recommender`` and ``service`` are the checkout's (``harness.run_in_checkout``); it imports
nothing of the benchmarks, so that any checkout can be measured. It likes the papers of a
broad list for one reader, then times ``REQUESTS`` of each kind through the app (Flask's
test client, no network) after 20 to warm up, and prints the milliseconds as one JSON line.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path

USER = "bench-reader"
REQUESTS = {  # kind -> (path, status expected)
    "recommendations": (f"/v1/users/{USER}/recommendations?k=20", 200),
    "refused (k=0)": (f"/v1/users/{USER}/recommendations?k=0", 400),
}


def time_requests(data_dir: Path, requests: int) -> dict[str, list[float]]:
    from recommender.core.config import Settings
    from service.app import create_app

    settings = Settings.from_env().replace(
        data_dir=data_dir, redis_namespace=f"paperrec-bench-{uuid.uuid4().hex[:8]}")
    client = create_app(settings).test_client()
    broad = client.get("/v1/users/bench-cold-start/recommendations?k=3").get_json()["items"]
    for item in broad:
        client.put(f"/v1/users/{USER}/feedback/{item['paper_id']}", json={"signal": "like"})
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


if __name__ == "__main__":
    print(json.dumps(time_requests(Path(sys.argv[1]), int(sys.argv[2]))))

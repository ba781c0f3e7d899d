"""The measuring side of ``benchmarks.web_page``: one checkout's app over an indexed data
directory, its reader signed in, the JSON list and the list page timed.

``python benchmarks/web_page_child.py SETUP_JSON`` runs in a fresh process whose
``recommender``, ``service`` and ``replay`` are the checkout's (``harness.run_in_checkout``),
by path, so that a checkout without this file can be measured too; it imports nothing of the
benchmarks. SETUP_JSON: ``{"data_dir", "redis_url", "namespace", "likes", "collections",
"requests", "warm_up"}``. The reader signs in through the web pages' own flow (the sign-in
link read from the development mail directory), makes the collections and likes the papers
round robin into them through the API; then ``warm_up`` and ``requests`` of each kind are
made one at a time, alternating. For each request two figures: the app's own time (the
``Server-Timing`` header both answers carry, wall clock) and the CPU time of the thread over
the whole WSGI call (``time.thread_time``, the same span plus the session's load and save),
which a busy, shared machine disturbs far less than the wall clock. Prints one JSON line.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import redis

EMAIL = "reader@example.org"
TIMING = re.compile(r"app;dur=([0-9.]+)")


class CpuTimed:
    """A WSGI middleware: the thread's CPU time over each call, the last one kept."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.last_ms = 0.0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        started = time.thread_time()
        body = list(self.app(environ, start_response))  # the whole answer, made here
        self.last_ms = (time.thread_time() - started) * 1000
        return body


def measure(setup: dict[str, Any]) -> dict[str, Any]:
    from recommender import wiring
    from recommender.core.config import Settings
    from replay.web_steps import sign_in
    from service.app import create_app

    namespace = setup["namespace"]
    with tempfile.TemporaryDirectory(prefix="paperrec-web-page-") as mail:
        settings = Settings(data_dir=Path(setup["data_dir"]), redis_url=setup["redis_url"],
                            redis_namespace=namespace, mail_dir=mail)
        app = create_app(parts=wiring.build(settings))
        cpu = CpuTimed(app.wsgi_app)
        app.wsgi_app = cpu  # type: ignore[method-assign]
        browser = app.test_client()
        sign_in(browser, EMAIL, Path(mail))
        made = [str((browser.post(f"/v1/users/{EMAIL}/collections",
                                  json={"name": f"Topic {n}"}).json or {})["id"])
                for n in range(setup["collections"])]
        for n, paper in enumerate(setup["likes"]):
            body: dict[str, Any] = {"signal": "like"}
            if made:
                body["collections"] = [made[n % len(made)]]
            answer = browser.put(f"/v1/users/{EMAIL}/feedback/{paper}", json=body)
            assert answer.status_code in (200, 201), answer.text
        paths = {"json": f"/v1/users/{EMAIL}/recommendations?k=10", "page": "/list"}
        times: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in paths}
        statuses: Counter[str] = Counter()
        for attempt in range(setup["warm_up"] + setup["requests"]):
            for kind, path in paths.items():
                answer = browser.get(path)
                statuses[f"{kind} {answer.status_code}"] += 1
                timing = TIMING.search(answer.headers["Server-Timing"])
                if attempt >= setup["warm_up"] and timing:
                    times[kind]["wall"].append(float(timing[1]))
                    times[kind]["cpu"].append(cpu.last_ms)
        page = browser.get("/list").text
    keys = redis.Redis.from_url(setup["redis_url"])
    for key in keys.scan_iter(f"{namespace}:*"):
        keys.delete(key)
    return {"times": times, "statuses": dict(statuses), "page": page}


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]))))

"""The measuring side of ``benchmarks.online_log``'s report part: one checkout's
``build_report`` over an events folder, in a fresh process.

``python benchmarks/online_log_child.py EVENTS_DIR CORPUS_PAPERS NOW EXPERIMENTS_JSON OUT_JSON``
runs with the checkout's ``recommender`` first on PYTHONPATH (``harness.run_in_checkout``); it
imports nothing of the benchmarks, so a checkout without this benchmark can be measured. It
reads the daily files through the checkout's ``EventLog`` (its Redis stream is a key of a
namespace of its own, empty), times ``build_report`` once, writes the report's JSON to
OUT_JSON (so two checkouts' reports can be compared) and prints one JSON line: seconds, CPU
seconds, the process's peak resident memory before and after (``getrusage``), and what it
counted.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import uuid
from pathlib import Path
from typing import Any


def measure(folder: Path, corpus_papers: int, now: float, experiments: list[dict[str, Any]],
            out: Path) -> dict[str, Any]:
    import redis

    import recommender
    from recommender.online.events import EventLog
    from recommender.online.experiments import Experiment
    from recommender.online.report import build_report
    from recommender.storage.redis_keys import RedisKeys

    client = redis.Redis.from_url("redis://127.0.0.1:6379/0", decode_responses=True)
    log = EventLog(client, RedisKeys(f"bench-report-{uuid.uuid4().hex[:8]}"), folder, 1)
    chosen = [Experiment.from_json(json.dumps(e)) for e in experiments]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu = time.process_time()
    start = time.perf_counter()
    report = build_report(log, corpus_papers, now, experiments=chosen)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    document = report.to_dict()
    out.write_text(json.dumps(document, indent=1, sort_keys=True))
    return {"recommender": str(Path(recommender.__file__).parent),
            "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
            "peak_rss_mib_before": round(before / 1024, 1),
            "peak_rss_mib": round(after / 1024, 1),
            "lists": document["lists"], "outcomes": document["outcomes"],
            "unmatched_outcomes": document["unmatched_outcomes"]}


if __name__ == "__main__":
    folder, corpus, now, experiments, out = sys.argv[1:6]
    print(json.dumps(measure(Path(folder), int(corpus), float(now), json.loads(experiments),
                             Path(out))))

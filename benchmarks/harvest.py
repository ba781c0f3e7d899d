"""Harvest: `paperrec fetch arxiv` throughput, harvest and ingest together.

A local OAI-PMH endpoint (``replay.oai_pmh``, the one the tests use) replays ``--records``
synthetic arXiv records (titles, 80-word abstracts, two or three authors, in arXiv's
documented metadata format) in pages of ``--page-size``, joined by resumption tokens, with no
pause between requests. The application's ``fetch_arxiv`` harvests them into a fresh corpus,
as the command does (first run: every record is added); then it runs again with ``--from``
the first day, so every record is served again (second run: all unchanged), the cost of
records that come back unchanged. Each is repeated ``--repeats`` times on fresh corpora;
medians are reported, in records per second. Against arXiv itself the politeness pause
(3 s a request) and the network dominate: 20 pages take at least 60 s.

    python -m benchmarks.harvest              # about 1 min

The figures and what they show: docs/benchmarks/ingest.md ("A harvest").
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import harness
from recommender import wiring
from recommender.core.config import Settings
from replay.oai_pmh import OaiReplay, Record

WORDS = ["learning", "model", "network", "graph", "attention", "sparse", "dense", "retrieval",
         "diffusion", "bandit", "calibration", "federated", "transformer", "kernel", "gradient",
         "policy", "reward", "embedding", "token", "optimisation", "convex", "bound",
         "estimator", "variance", "prior", "posterior", "sample"]

bench = harness.Benchmark("harvest", __doc__)
bench.option("--records", type=int, default=2000, quick=200, help="synthetic records")
bench.option("--page-size", type=int, default=100, help="records a page")
bench.option("--repeats", type=int, default=5, quick=2, help="harvests of each kind")
bench.option("--seed", type=int, default=0, help="of the synthetic records")


def synthetic_records(count: int, seed: int) -> list[Record]:
    """``count`` cs.LG records of November 2026 (also the intake benchmark's)."""
    rng = random.Random(seed)
    records = []
    for number in range(count):
        day = f"2026-11-{1 + number * 28 // count:02d}"
        records.append(Record(
            f"2611.{number:05d}", day,
            " ".join(rng.choice(WORDS) for _ in range(8)).capitalize(),
            " ".join(rng.choice(WORDS) for _ in range(80)) + ".",
            created=day, categories=rng.choice(["cs.LG", "cs.LG stat.ML", "cs.LG cs.AI"]),
            authors=[(f"Author{rng.randrange(10_000)}", "A. B.")
                     for _ in range(rng.randint(2, 3))]))
    return records


def run_once(replay: OaiReplay, folder: Path) -> dict[str, Any]:
    app = wiring.build(Settings(data_dir=folder, arxiv_oai_url=replay.url,
                                arxiv_delay_seconds=0, arxiv_retries=0))
    figures = {}
    try:
        for run, from_date in (("first", None), ("second", "2026-11-01")):
            replay.requests.clear()
            started = time.perf_counter()
            summary = app.fetch_arxiv(["cs.LG"], print, from_date=from_date, progress=False)
            seconds = time.perf_counter() - started
            figures[run] = {"seconds": seconds, "records": summary.fetched,
                            "requests": len(replay.requests), "summary": str(summary)}
    finally:
        app.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    runs = []
    with OaiReplay(synthetic_records(args.records, args.seed), args.page_size) as replay:
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as folder:
                runs.append(run_once(replay, Path(folder)))
    result: dict[str, Any] = {"records": args.records, "page_size": args.page_size,
                              "repeats": args.repeats, "politeness_delay_s": 0}
    for run in ("first", "second"):
        seconds = harness.median(r[run]["seconds"] for r in runs)
        result[f"{run}_run"] = {
            "median_s": seconds, "records_per_s": round(runs[0][run]["records"] / seconds, 1),
            "requests": runs[0][run]["requests"], "summary": runs[0][run]["summary"]}
    bench.record(args, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

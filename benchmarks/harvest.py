"""Harvest benchmark (issue 12): `paperrec fetch arxiv` throughput, harvest and ingest together.

A local OAI-PMH endpoint (tests/oai_replay.py, the one the tests use) replays ``--records``
synthetic arXiv records (default 2,000: titles, 80-word abstracts, two or three authors, in
arXiv's documented metadata format) in pages of ``--page-size`` (default 100, so 20 pages joined
by resumption tokens), with no pause between requests. ``jobs.fetch_arxiv`` harvests them into
a fresh corpus, as the command does (first run: every record is added); then it runs again
with ``--from`` the first day, so every record is served again (second run: all unchanged),
the cost of records that come back unchanged. Each is repeated ``--repeats`` times on
fresh corpora; medians are reported, in records per second.

    .venv/bin/python benchmarks/harvest.py

Prints one JSON document and writes benchmarks/results/harvest.json. Against arXiv itself
the politeness pause (3 s a request) and the network dominate: 20 pages take at least 60 s.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from index import machine, write_result  # type: ignore[import-not-found]  # noqa: E402

from recommender import jobs  # noqa: E402
from recommender.corpus.oai_pmh import OaiPmhClient  # noqa: E402
from recommender.corpus.store import CorpusStore  # noqa: E402
from tests.oai_replay import OaiReplay, Record  # noqa: E402

WORDS = ("learning model network graph attention sparse dense retrieval diffusion bandit "
         "calibration federated transformer kernel gradient policy reward embedding token "
         "optimisation convex bound estimator variance prior posterior sample").split()


def synthetic_records(count: int, seed: int) -> list[Record]:
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
    corpus = CorpusStore(folder / "corpus.sqlite")
    client = OaiPmhClient(replay.url, delay=0, retries=0)
    figures = {}
    for run, from_date in (("first", None), ("second", "2026-11-01")):
        replay.requests.clear()
        started = time.perf_counter()
        summary = jobs.fetch_arxiv(corpus, client, ["cs.LG"], on_rejection=print,
                                   from_date=from_date, progress=False)
        seconds = time.perf_counter() - started
        figures[run] = {"seconds": seconds, "records": summary.fetched,
                        "requests": len(replay.requests), "summary": str(summary)}
    client.close()
    corpus.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/harvest.json")
    args = parser.parse_args(argv)

    runs = []
    with OaiReplay(synthetic_records(args.records, args.seed), args.page_size) as replay:
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as folder:
                runs.append(run_once(replay, Path(folder)))
    result: dict[str, Any] = {
        "benchmark": "harvest", "machine": machine(),
        "records": args.records, "page_size": args.page_size, "repeats": args.repeats,
        "politeness_delay_s": 0,
    }
    for run in ("first", "second"):
        seconds = statistics.median(r[run]["seconds"] for r in runs)
        result[f"{run}_run"] = {
            "median_s": round(seconds, 3),
            "records_per_s": round(runs[0][run]["records"] / seconds, 1),
            "requests": runs[0][run]["requests"], "summary": runs[0][run]["summary"]}
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

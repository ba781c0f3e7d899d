"""Intake: a day's arXiv harvest end to end, and a researcher's library moving in, on a
deployment that already holds about 21,000 papers.

The base deployment (built once, then copied for every run): citeulike-a's 16,980 papers
(``--limit`` fewer) but ``--held-out`` (300) held out (titles, abstracts where the dataset
has them), plus ``--earlier`` (4,000) arXiv records of earlier days harvested from the replay
endpoint (``replay.oai_pmh``, arXiv's documented metadata format, synthetic 80-word
abstracts), indexed by a full `rebuild-index` with the configured model. The data dir starts
from the benchmarks' embedding cache (var/bench), and the base's vectors go back into it, so
only the first run pays for embedding the base.

- ``daily``: the replay endpoint now also serves ``--daily`` (2,000) new records of the next
  day; the application's ``fetch_arxiv`` continues from the stored harvest position
  (fetching only those), then ``rebuild_index`` embeds them for real and extends the index
  (incremental), as the compose jobs loop and the docs' cron line run them. The model load
  is timed apart (a scheduled `paperrec rebuild-index` process pays it once).
- ``library``: a BibTeX library is POSTed to the running app (``/v1/users/<id>/library``,
  Flask's test client, the real Redis at ``--redis-url``): 1 in 8 of the earlier records
  found by arXiv id (500), 1 in 20 by title and first author (200), and the held-out
  citeulike-a papers, not in the corpus (300, with their titles and abstracts), which are
  added, liked and embedded at once; then ``GET /v1/users/<id>/recommendations`` gives the
  first list. Measured: the import, the first list, and both together (time to the first
  personalized list), with the model already loaded as in a running service.

    python -m benchmarks.intake            # first run about 15 min, later ~5 min

The figures and what they show: docs/benchmarks/ingest.md ("A day's papers, and a library moving
in").
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from benchmarks import citeulike, harness
from benchmarks.harvest import synthetic_records
from recommender import jobs, wiring
from recommender.core.config import Settings
from replay.oai_pmh import OaiReplay, Record
from service.app import create_app

NAMESPACE = "bench-intake"

bench = harness.Benchmark("intake", __doc__)
bench.option("--limit", type=int, default=0, quick=1000,
             help="citeulike-a papers in the base; 0: all")
bench.option("--held-out", type=int, default=300, quick=30,
             help="citeulike-a papers kept out of the base, in the library")
bench.option("--earlier", type=int, default=4000, quick=240,
             help="arXiv records of earlier days in the base")
bench.option("--daily", type=int, default=2000, quick=100, help="new arXiv records of the day")
bench.option("--redis-url", default="redis://127.0.0.1:6379/0", help="the service's Redis")
bench.option("--repeats", type=int, default=3, quick=1, help="runs of each")
bench.option("--seed", type=int, default=0, help="of the records and the library")


def earlier_and_daily(count: int, day: int,
                      seed: int) -> tuple[list[Record], list[Record]]:
    """``count`` records of October and ``day`` of 2 December, with their own arXiv ids."""
    records = synthetic_records(count + day, seed)
    earlier, daily = [], []
    for number, record in enumerate(records):
        if number < count:
            record.arxiv_id = f"2610.{number:05d}"
            record.datestamp = record.created = f"2026-10-{1 + number * 30 // count:02d}"
            earlier.append(record)
        else:
            record.arxiv_id = f"2612.{number - count:05d}"
            record.datestamp = record.created = "2026-12-02"
            daily.append(record)
    return earlier, daily


def settings_for(data_dir: Path, redis_url: str) -> Settings:
    return Settings(data_dir=data_dir, redis_url=redis_url, redis_namespace=NAMESPACE,
                    arxiv_delay_seconds=0, arxiv_retries=0)


def fetch(settings: Settings, replay: OaiReplay) -> jobs.HarvestSummary:
    app = wiring.build(settings.replace(arxiv_oai_url=replay.url))
    try:
        return app.fetch_arxiv(["cs.LG"], print, progress=False)
    finally:
        app.close()


def rebuild(settings: Settings) -> jobs.RebuildSummary:
    app = wiring.build(settings)
    try:
        return app.rebuild_index(progress=False)
    finally:
        app.close()


def build_base(base: Path, args: argparse.Namespace, earlier: list[Record],
               held_out: set[str]) -> dict[str, Any]:
    settings = settings_for(base, args.redis_url)
    kept = base / "citeulike-a.jsonl"
    base.mkdir(parents=True)
    lines = [line for line in citeulike.PAPERS.open() if json.loads(line)["id"] not in held_out]
    kept.write_text("".join(lines[:args.limit] if args.limit else lines))
    harness.seed_embeddings(settings)
    app = wiring.build(settings)
    app.ingest([kept], on_rejection=lambda r: None)
    app.close()
    with OaiReplay(earlier, page_size=500) as replay:
        fetch(settings, replay)
    seconds, summary = harness.timed(lambda: rebuild(settings))
    harness.keep_embeddings(settings)  # the base's vectors, for next time
    return {"papers": summary.papers, "embedded": summary.embedded,
            "seconds": round(seconds, 1)}


def daily_run(base: Path, work: Path, redis_url: str, records: list[Record]) -> dict[str, Any]:
    day = work / "daily"
    shutil.copytree(base, day)
    settings = settings_for(day, redis_url)
    started = time.perf_counter()
    wiring.build(settings).embedder.encode(["load the model"])
    load = time.perf_counter() - started
    with OaiReplay(records, page_size=500) as replay:
        started = time.perf_counter()
        harvest = fetch(settings, replay)
        fetched = time.perf_counter() - started
        asked = [query.get("from") for query in replay.requests]
    started = time.perf_counter()
    built = rebuild(settings)
    rebuilt = time.perf_counter() - started
    shutil.rmtree(day)
    return {"fetch_s": fetched, "rebuild_s": rebuilt, "model_load_s": load,
            "total_s": fetched + rebuilt, "fetch_summary": str(harvest),
            "first_request_from": asked[0] if asked else None,
            "rebuild": {"build": built.build, "embedded": built.embedded,
                        "papers": built.papers, "reason": built.reason}}


def bibtex_library(earlier: list[Record], held_out: list[dict[str, Any]],
                   seed: int) -> str:
    """1 in 8 earlier records by arXiv id, 1 in 20 by title and first author, and the papers
    held out, not in the corpus."""
    rng = random.Random(seed)
    by_id, by_title = len(earlier) // 8, len(earlier) // 20
    chosen = rng.sample(earlier, by_id + by_title)
    entries = []
    for number, record in enumerate(chosen):
        surname, given = record.authors[0]
        ident = (f"  eprint = {{{record.arxiv_id}}},\n  archivePrefix = {{arXiv}},\n"
                 if number < by_id else "")
        entries.append(f"@article{{lib{number},\n  title = {{{record.title}}},\n"
                       f"  author = {{{surname}, {given}}},\n{ident}  year = {{2026}}\n}}\n")
    for number, paper in enumerate(held_out, start=len(chosen)):
        title = paper["title"].replace("{", "").replace("}", "")
        abstract = paper.get("abstract", "").replace("{", "").replace("}", "")
        entries.append(f"@article{{lib{number},\n  title = {{{title}}},\n"
                       f"  author = {{Reader, A.}},\n  abstract = {{{abstract}}},\n"
                       f"  year = {{{paper.get('year') or 2010}}}\n}}\n")
    return "\n".join(entries)


def library_run(base: Path, work: Path, redis_url: str, library: str,
                user: str) -> dict[str, Any]:
    folder = work / "library"
    shutil.copytree(base, folder)
    settings = settings_for(folder, redis_url)
    parts = wiring.build(settings)
    parts.embedder.encode(["load the model"])  # a running service has it loaded
    client = create_app(parts=parts).test_client()  # the running service's app
    started = time.perf_counter()
    imported = client.post(f"/v1/users/{user}/library", data=library.encode(),
                           content_type="application/x-bibtex")
    import_s = time.perf_counter() - started
    listed = client.get(f"/v1/users/{user}/recommendations?k=20")
    total_s = time.perf_counter() - started
    if imported.status_code != 200 or listed.status_code != 200:
        raise SystemExit(f"import answered {imported.status_code}, the list "
                         f"{listed.status_code}: {listed.get_data(as_text=True)[:500]}")
    report, answer = imported.get_json(), listed.get_json()
    items = answer["items"]
    shutil.rmtree(folder)
    return {"import_s": import_s, "first_list_s": total_s - import_s, "total_s": total_s,
            "matched": len(report["matched"]), "added": len(report["added"]),
            "rejected": len(report["rejected"]), "liked": report["liked"],
            "list_items": len(items), "first_reasons": [i["reason"] for i in items[:3]]}


def summarise(runs: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {f"{k}_median": harness.median((r[k] for r in runs), 2) for k in keys}
    out["runs"] = [{k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()}
                   for r in runs]
    return out


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    papers = [json.loads(line) for line in citeulike.PAPERS.open()]
    held = random.Random(args.seed).sample(papers, args.held_out)
    earlier, daily = earlier_and_daily(args.earlier, args.daily, args.seed)
    keys = redis.Redis.from_url(args.redis_url)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        base_figures = build_base(work / "base", args, earlier, {p["id"] for p in held})
        daily_runs, library_runs = [], []
        library = bibtex_library(earlier, held, args.seed)
        for attempt in range(args.repeats):
            daily_runs.append(daily_run(work / "base", work, args.redis_url, earlier + daily))
            for key in keys.scan_iter(f"{NAMESPACE}:*"):
                keys.delete(key)
            library_runs.append(library_run(work / "base", work, args.redis_url, library,
                                            f"reader{attempt}"))
            harness.log(f"run {attempt + 1}: daily {daily_runs[-1]['total_s']:.1f} s, library "
                        f"{library_runs[-1]['total_s']:.1f} s")
    for key in keys.scan_iter(f"{NAMESPACE}:*"):
        keys.delete(key)
    bench.record(args, {
        "repeats": args.repeats, "base": base_figures,
        "daily_harvest": {"records": args.daily, **summarise(
            daily_runs, ("fetch_s", "rebuild_s", "total_s", "model_load_s"))},
        "library_import": {"entries": library.count("@article"), "format": "bibtex",
                           **summarise(library_runs, ("import_s", "first_list_s", "total_s"))},
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

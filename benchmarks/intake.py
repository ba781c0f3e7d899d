"""Intake benchmark (issue 12): a day's arXiv harvest end to end, and a researcher's library
moving in, on a deployment that already holds about 21,000 papers.

The base deployment (built once, then copied for every run): citeulike-a's 16,980 papers but
300 held out (titles, abstracts where the dataset has them), plus 4,000 arXiv records of
earlier days harvested from the replay endpoint (tests/oai_replay.py, arXiv's documented
metadata format, synthetic 80-word abstracts), indexed by a full `rebuild-index` with the
default model. Embeddings are cached in ``--cache`` across runs of this script, so only the
first run pays for embedding the base.

- ``daily``: the replay endpoint now also serves 2,000 new records of the next day;
  ``jobs.fetch_arxiv`` continues from the stored harvest position (fetching only those),
  then ``jobs.rebuild_index`` embeds the 2,000 for real and extends the index (incremental),
  as the compose jobs loop and the cron lines of docs/deployment/without-docker.md run them.
  The model load is timed apart (a scheduled `paperrec rebuild-index` process pays it once).
- ``library``: a 1,000-entry BibTeX library is POSTed to the running app
  (``/v1/users/<id>/library``, Flask's test client, the real Redis at ``--redis-url``):
  500 entries found by arXiv id, 200 by title and first author, 300 not in the corpus (the
  held-out citeulike-a papers, with their titles and abstracts) which are added, liked and
  embedded at once; then ``GET /v1/users/<id>/recommendations`` gives the first list.
  Measured: the import, the first list, and both together (time to the first personalized
  list), with the model already loaded as in a running service.

    .venv/bin/python benchmarks/intake.py            # first run about 15 min, later ~5 min

Prints one JSON document and writes benchmarks/results/intake.json.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from harvest import synthetic_records  # type: ignore[import-not-found]  # noqa: E402
from index import machine, write_result  # type: ignore[import-not-found]  # noqa: E402

from recommender import jobs, wiring  # noqa: E402
from recommender.core.config import Settings  # noqa: E402
from recommender.corpus.oai_pmh import OaiPmhClient  # noqa: E402
from service.app import create_app  # noqa: E402
from tests.oai_replay import OaiReplay, Record  # noqa: E402

PAPERS = Path("/work/shared/data/citeulike-a/papers.jsonl")
HELD_OUT = 300
EARLIER = 4000
DAILY = 2000
NAMESPACE = "bench-intake"


def earlier_and_daily(seed: int) -> tuple[list[Record], list[Record]]:
    """4,000 records of October and 2,000 of 2 December, with their own arXiv ids."""
    records = synthetic_records(EARLIER + DAILY, seed)
    earlier, daily = [], []
    for number, record in enumerate(records):
        if number < EARLIER:
            record.arxiv_id = f"2610.{number:05d}"
            record.datestamp = record.created = f"2026-10-{1 + number * 30 // EARLIER:02d}"
            earlier.append(record)
        else:
            record.arxiv_id = f"2612.{number - EARLIER:05d}"
            record.datestamp = record.created = "2026-12-02"
            daily.append(record)
    return earlier, daily


def settings_for(data_dir: Path, redis_url: str) -> Settings:
    return Settings(data_dir=data_dir, redis_url=redis_url, redis_namespace=NAMESPACE)


def fetch(settings: Settings, url: str) -> jobs.HarvestSummary:
    parts = wiring.build(settings)
    client = OaiPmhClient(url, delay=0, retries=0)
    try:
        return jobs.fetch_arxiv(parts.corpus, client, ["cs.LG"], on_rejection=print,
                                progress=False)
    finally:
        client.close()


def rebuild(settings: Settings) -> jobs.RebuildSummary:
    parts = wiring.build(settings)
    return jobs.rebuild_index(parts.corpus, parts.embedder, settings.embedding_cache_path,
                              parts.index_store, settings.exact_index_max, settings.model,
                              progress=False)


def build_base(base: Path, cache: Path, redis_url: str, earlier: list[Record],
               held_out: set[str]) -> dict[str, Any]:
    settings = settings_for(base, redis_url)
    kept = base / "citeulike-a.jsonl"
    base.mkdir(parents=True)
    kept.write_text("".join(line for line in PAPERS.open()
                            if json.loads(line)["id"] not in held_out))
    if cache.exists():
        shutil.copy(cache, settings.embedding_cache_path)
    jobs.ingest(wiring.build(settings).corpus, [kept], on_rejection=lambda r: None)
    with OaiReplay(earlier, page_size=500) as replay:
        fetch(settings, replay.url)
    started = time.perf_counter()
    summary = rebuild(settings)
    cache.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(settings.embedding_cache_path, cache)
    return {"papers": summary.papers, "embedded": summary.embedded,
            "seconds": round(time.perf_counter() - started, 1)}


def daily_run(base: Path, work: Path, redis_url: str, records: list[Record]) -> dict[str, Any]:
    day = work / "daily"
    shutil.copytree(base, day)
    settings = settings_for(day, redis_url)
    started = time.perf_counter()
    wiring.build(settings).embedder.encode(["load the model"])
    load = time.perf_counter() - started
    with OaiReplay(records, page_size=500) as replay:
        started = time.perf_counter()
        harvest = fetch(settings, replay.url)
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
    """500 entries by arXiv id, 200 by title and first author, 300 not in the corpus."""
    rng = random.Random(seed)
    chosen = rng.sample(earlier, 700)
    entries = []
    for number, record in enumerate(chosen):
        surname, given = record.authors[0]
        ident = (f"  eprint = {{{record.arxiv_id}}},\n  archivePrefix = {{arXiv}},\n"
                 if number < 500 else "")
        entries.append(f"@article{{lib{number},\n  title = {{{record.title}}},\n"
                       f"  author = {{{surname}, {given}}},\n{ident}  year = {{2026}}\n}}\n")
    for number, paper in enumerate(held_out, start=700):
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
    client = create_app(parts=parts).test_client()
    started = time.perf_counter()
    imported = client.post(f"/v1/users/{user}/library", data=library.encode(),
                           content_type="application/x-bibtex")
    import_s = time.perf_counter() - started
    listed = client.get(f"/v1/users/{user}/recommendations?k=20")
    total_s = time.perf_counter() - started
    if imported.status_code != 200 or listed.status_code != 200:
        raise SystemExit(f"import answered {imported.status_code}, the list "
                         f"{listed.status_code}: {listed.get_data(as_text=True)[:500]}")
    report, items = imported.json, listed.json["items"]
    shutil.rmtree(folder)
    return {"import_s": import_s, "first_list_s": total_s - import_s, "total_s": total_s,
            "matched": len(report["matched"]), "added": len(report["added"]),
            "rejected": len(report["rejected"]), "liked": report["liked"],
            "list_items": len(items), "first_reasons": [i["reason"] for i in items[:3]]}


def summarise(runs: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {f"{k}_median": round(statistics.median(r[k] for r in runs), 2)
                           for k in keys}
    out["runs"] = [{k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()}
                   for r in runs]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=ROOT / "var/bench/intake-embeddings.sqlite",
                        help="embedding cache kept between runs (default: %(default)s)")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/intake.json")
    args = parser.parse_args(argv)

    papers = [json.loads(line) for line in PAPERS.open()]
    held = random.Random(args.seed).sample(papers, HELD_OUT)
    earlier, daily = earlier_and_daily(args.seed)
    keys = redis.Redis.from_url(args.redis_url)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        base_figures = build_base(work / "base", args.cache, args.redis_url, earlier,
                                  {p["id"] for p in held})
        daily_runs, library_runs = [], []
        library = bibtex_library(earlier, held, args.seed)
        for attempt in range(args.repeats):
            daily_runs.append(daily_run(work / "base", work, args.redis_url, earlier + daily))
            for key in keys.scan_iter(f"{NAMESPACE}:*"):
                keys.delete(key)
            library_runs.append(library_run(work / "base", work, args.redis_url, library,
                                            f"reader{attempt}"))
            print(f"run {attempt + 1}: daily {daily_runs[-1]['total_s']:.1f} s, library "
                  f"{library_runs[-1]['total_s']:.1f} s", file=sys.stderr)
    for key in keys.scan_iter(f"{NAMESPACE}:*"):
        keys.delete(key)
    result = {
        "benchmark": "intake", "machine": machine(), "repeats": args.repeats,
        "base": base_figures,
        "daily_harvest": {"records": DAILY, **summarise(
            daily_runs, ("fetch_s", "rebuild_s", "total_s", "model_load_s"))},
        "library_import": {"entries": 1000, "format": "bibtex", **summarise(
            library_runs, ("import_s", "first_list_s", "total_s"))},
    }
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

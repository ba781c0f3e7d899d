"""Zotero sync: a 1,000-item library's first sync to a personalised list, an incremental
sync of 10 changes, and the job over 1,000 connected readers whose libraries did not change.

The deployment: the bundled sample corpus (38 ICML 2026 papers) indexed by the configured
model; Zotero is ``replay.zotero`` on loopback (the Web API v3 in its documented shapes,
over HTTP), Redis the server at ``--redis-url``.

- ``first_sync``: a library of ``--items`` (1,000) regular items (30 of them sample papers by
  title, the rest citeulike-a papers with their titles and abstracts, new to the corpus),
  plus 20 notes and attachments, in 5 collections. Timed: connecting (the key checked),
  the first sync (10 pages, matching, the new papers added and embedded, one apply), and the
  first reading list (``GET /v1/users/<u>/recommendations?k=20`` through the app), with the
  model already loaded as in a running service.
- ``incremental``: 10 changes (4 items retitled, 3 added, 2 deleted, 1 trashed), then a sync:
  its requests and seconds.
- ``job``: ``--readers`` (1,000) readers connected to libraries of 5 items, all synced; then
  ``sync_all`` over them with nothing changed: requests (one conditional request each,
  answered 304) and total seconds.

    python -m benchmarks.zotero_sync            # a few minutes
    python -m benchmarks.zotero_sync --quick

The figures and what they show: docs/benchmarks/ingest.md ("A Zotero library").
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from benchmarks import citeulike, harness
from recommender import jobs, wiring
from recommender.core.config import Settings
from replay.zotero import API_KEY, USER_ID, ZoteroReplay
from service.app import create_app

NAMESPACE = "bench-zotero"

bench = harness.Benchmark("zotero_sync", __doc__)
bench.option("--items", type=int, default=1000, quick=100, help="regular items of the library")
bench.option("--readers", type=int, default=1000, quick=50,
             help="connected readers of the job run")
bench.option("--redis-url", default="redis://127.0.0.1:6379/0", help="the service's Redis")
bench.option("--repeats", type=int, default=3, quick=1, help="runs of each")
bench.option("--seed", type=int, default=0, help="of the library")


def base(folder: Path, redis_url: str) -> Settings:
    settings = Settings(data_dir=folder, redis_url=redis_url, redis_namespace=NAMESPACE)
    harness.seed_embeddings(settings)
    app = wiring.build(settings)
    app.ingest(jobs.sample_files(), on_rejection=lambda r: None)
    app.rebuild_index(progress=False)
    app.close()
    return settings


def library(zotero: ZoteroReplay, sample: list[str], others: list[dict[str, Any]],
            rng: random.Random) -> None:
    collections = [zotero.add_collection(name) for name in
                   ("Reading", "Methods", "Biology", "Networks")]
    collections.append(zotero.add_collection("Later", parent=collections[0]))
    for title in sample:
        zotero.add_item(title, collections=[rng.choice(collections)])
    for paper in others:
        zotero.add_item(paper["title"], abstractNote=paper.get("abstract") or "",
                        collections=rng.sample(collections, rng.randint(0, 2)),
                        creators=[{"creatorType": "author", "firstName": "A.",
                                   "lastName": f"Author{paper['id']}"}])
    for _ in range(10):
        zotero.add_item(item_type="note", note="<p>to read</p>")
        zotero.add_item("Full Text PDF", item_type="attachment")


def clear(keys: redis.Redis) -> None:
    for key in keys.scan_iter(f"{NAMESPACE}:*", count=1000):
        keys.delete(key)


def first_and_incremental(settings: Settings, args: Any, papers: list[dict[str, Any]],
                          run: int) -> dict[str, Any]:
    rng = random.Random(args.seed + run)
    chosen = rng.sample(papers, args.items - 30 + 10)
    others, spare = chosen[:args.items - 30], chosen[args.items - 30:]
    user = f"reader{run}"
    with ZoteroReplay() as zotero:
        app = wiring.build(settings.replace(uploads_per_day=10 * args.items,
                                            zotero_api_url=zotero.url))
        app.embedder.encode(["load the model"])  # a running service has it loaded
        client = create_app(parts=app).test_client()
        sample = sorted(app.corpus.titles(sorted(p for p, *_ in app.corpus.index_rows()))
                        .values())
        library(zotero, sample[:30], others, rng)
        started = time.perf_counter()
        app.zotero.connect(user, "user", USER_ID, API_KEY, time.time())
        connected = time.perf_counter()
        summary = app.zotero.sync(user, time.time())
        synced = time.perf_counter()
        listed = client.get(f"/v1/users/{user}/recommendations?k=20")
        done = time.perf_counter()
        if listed.status_code != 200 or not summary.finished:
            raise SystemExit(f"list {listed.status_code}, sync {summary}")
        keys = list(zotero.libraries[f"user:{USER_ID}"].items)
        regular = [k for k in keys if zotero.libraries[f"user:{USER_ID}"].items[k][
            "itemType"] not in ("note", "attachment")]
        for key, paper in zip(rng.sample(regular, 4), spare[:4], strict=True):
            zotero.modify_item(key, title=paper["title"])
        for paper in spare[4:7]:
            zotero.add_item(paper["title"], abstractNote=paper.get("abstract") or "")
        for key in rng.sample(regular, 3)[:2]:
            zotero.delete_item(key)
        zotero.trash_item(next(k for k in regular if k in zotero.libraries[
            f"user:{USER_ID}"].items))
        before = time.perf_counter()
        incremental = app.zotero.sync(user, time.time())
        after = time.perf_counter()
        app.close()
    return {
        "connect_s": connected - started, "first_sync_s": synced - connected,
        "first_list_s": done - synced, "to_first_list_s": done - started,
        "first_sync": {"added": summary.added, "matched": summary.matched,
                       "skipped": summary.skipped, "requests": summary.requests,
                       "collections_created": summary.collections_created},
        "list_items": len(listed.get_json()["items"]),
        "incremental_s": after - before, "incremental_requests": incremental.requests,
        "incremental": {"added": incremental.added, "matched": incremental.matched,
                        "updated": incremental.updated, "removed": incremental.removed},
    }


def job(settings: Settings, readers: int, sample: list[str]) -> list[dict[str, Any]]:
    runs = []
    with ZoteroReplay() as zotero:
        app = wiring.build(settings.replace(zotero_api_url=zotero.url))
        for title in sample[:5]:
            zotero.add_item(title)
        for number in range(readers):
            app.zotero.connect(f"job{number}", "user", USER_ID, API_KEY, time.time())
            app.zotero.sync(f"job{number}", time.time())
        for _ in range(3):
            asked = len(zotero.requests)
            started = time.perf_counter()
            results = list(app.zotero.sync_all(time.time()))
            seconds = time.perf_counter() - started
            if len(results) != readers or any(s.error for _, s in results):
                raise SystemExit(f"the job synced {len(results)} of {readers}")
            runs.append({"readers": len(results), "requests": len(zotero.requests) - asked,
                         "seconds": seconds, "per_reader_ms": 1000 * seconds / readers})
        app.close()
    return runs


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    papers = [json.loads(line) for line in citeulike.PAPERS.open()]
    keys = redis.Redis.from_url(args.redis_url)
    clear(keys)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        settings = base(work / "base", args.redis_url)
        runs = []
        for run in range(args.repeats):
            copy = work / f"run{run}"
            shutil.copytree(work / "base", copy)
            runs.append(first_and_incremental(settings.replace(data_dir=copy), args, papers,
                                              run))
            harness.log(f"run {run + 1}: first sync {runs[-1]['first_sync_s']:.1f} s, to the "
                        f"first list {runs[-1]['to_first_list_s']:.1f} s, incremental "
                        f"{runs[-1]['incremental_s']:.2f} s")
            shutil.rmtree(copy)
            clear(keys)
        app = wiring.build(settings)
        sample = sorted(app.corpus.titles(sorted(p for p, *_ in app.corpus.index_rows()))
                        .values())
        app.close()
        job_runs = job(settings, args.readers, sample)
        harness.keep_embeddings(settings)
    clear(keys)
    bench.record(args, {
        "repeats": args.repeats, "items": args.items,
        "first_sync": {key: harness.median((r[key] for r in runs), 2) for key in
                       ("connect_s", "first_sync_s", "first_list_s", "to_first_list_s")},
        "incremental_10_changes": {
            "seconds_median": harness.median((r["incremental_s"] for r in runs), 3),
            "requests": [r["incremental_requests"] for r in runs]},
        "job_no_changes": {
            "readers": args.readers,
            "seconds_median": harness.median((r["seconds"] for r in job_runs), 2),
            "requests": [r["requests"] for r in job_runs],
            "per_reader_ms_median": harness.median((r["per_reader_ms"] for r in job_runs), 2)},
        "runs": [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
                 for r in runs],
        "job_runs": [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
                     for r in job_runs],
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

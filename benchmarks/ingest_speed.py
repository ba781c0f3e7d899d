"""Ingest speed and corpus size: `paperrec ingest` of arXiv-snapshot records (the format and
text of ``benchmarks.build_1m_records``, without its embeddings), side by side with
today's code (``--baseline DIR``: a checkout of an older paperrec, run in its own process)
and with a bare SQLite insert of the same records (one INSERT of id and JSON line per
record, in one transaction). Each run ingests into a fresh data directory; the corpus's
bytes on disk are set against the bytes of the records' title and abstract text.

    python -m benchmarks.ingest_speed --records 100000 --runs 3 --baseline /tmp/base29

Prints JSON and writes it to ``benchmarks/results/ingest_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any, cast

from benchmarks import build_1m_records as records_of
from benchmarks import harness
from recommender.core.papers import Paper
from recommender.corpus.formats import read_papers

ROOT = harness.ROOT


def make_records(n: int, path: Path, seed: int = 29) -> dict[str, int]:
    """n arXiv snapshot records at ``path`` (``build_1m_records.record``: sentences of real
    abstracts, a source's neighbours drawn at random rather than by embedding); the bytes
    of their title and abstract text (UTF-8, as stored: whitespace normalised)."""
    papers: dict[str, Paper] = {}
    for source in records_of.SOURCE_FILES:
        for item in read_papers(source):
            if isinstance(item, Paper) and len(item.abstract) > 200:
                papers.setdefault(item.content_hash, item)
    sources, sentences = [], []
    for paper in papers.values():
        parts = [s.strip() for s in records_of.SENTENCE_END.split(paper.abstract) if s.strip()]
        if len(parts) >= 2:
            sources.append(paper)
            sentences.append(parts)
    titles = [json.loads(line)["title"] for line in records_of.citeulike.PAPERS.open()]
    rng = random.Random(seed)
    neighbours = [rng.sample(range(len(sources)), records_of.CO_SOURCES) for _ in sources]
    text_bytes = 0
    with path.open("w") as out:
        for arxiv_id, day in records_of.ids_and_days(n, rng):
            rec, _ = records_of.record(arxiv_id, day, rng, sources, sentences,
                                       cast(Any, neighbours), titles)
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
            text_bytes += len(" ".join(rec["title"].split()).encode()) + len(
                " ".join(rec["abstract"].split()).encode())
    return {"records": n, "text_bytes": text_bytes, "file_bytes": path.stat().st_size}


bench = harness.Benchmark("ingest_speed", __doc__)
bench.option("--records", type=int, nargs="+", default=[100_000], quick=[2000],
             help="sizes of the snapshots ingested")
bench.option("--runs", type=int, default=3, quick=1, help="runs of each contestant")
bench.option("--daily", type=int, default=2000, quick=200,
             help="new records of the daily ingest that follows (with as many again unchanged)")
bench.option("--baseline", type=Path, metavar="DIR",
             help="a checkout of the paperrec to compare with (git worktree add DIR COMMIT)")
bench.option("--work", type=Path, default=Path(tempfile.gettempdir()) / "paperrec-ingest",
             help="where the records and the corpora go (bytes: 3 times the snapshot)")
CHILD = Path(__file__).with_name("ingest_speed_child.py")


def measure(args: argparse.Namespace, n: int) -> dict[str, Any]:
    """Every contestant ``args.runs`` times on the same n records, interleaved."""
    folder = args.work / f"{n}"
    folder.mkdir(parents=True, exist_ok=True)
    records, daily = folder / "records.jsonl", folder / "daily.jsonl"
    made = folder / "made.json"
    if not made.exists():
        harness.log(f"making {n + args.daily:,} records in {folder}")
        everything = folder / "all.jsonl"
        figures = make_records(n + args.daily, everything)
        with everything.open() as source, records.open("w") as main, daily.open("w") as day:
            lines = iter(source)
            for number, line in enumerate(lines):
                main.write(line) if number < n else day.write(line)
                if n - args.daily <= number < n:  # sent again by the daily run: unchanged
                    day.write(line)
        everything.unlink()
        text_bytes = sum(len(" ".join(rec["title"].split()).encode())
                         + len(" ".join(rec["abstract"].split()).encode())
                         for rec in map(json.loads, records.open()))
        made.write_text(json.dumps({**figures, "records": n, "text_bytes": text_bytes,
                                    "file_bytes": records.stat().st_size}))
    figures = json.loads(made.read_text())
    contestants = {"bare": (ROOT, ["bare"]), "new": (ROOT, ["ingest"])}
    if args.baseline:
        contestants["baseline"] = (args.baseline, ["ingest"])
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in contestants}
    for repeat, name in harness.interleaved(list(contestants), args.runs):
        checkout, mode = contestants[name]
        argv = [*mode, str(folder / f"corpus-{name}"), str(records)]
        if mode == ["ingest"]:
            argv.append(str(daily))
        result = harness.run_in_checkout(checkout, CHILD, argv)
        harness.log(f"{n:,} records, run {repeat + 1}, {name}: {result['seconds']:.1f} s")
        runs[name].append(result)
    out: dict[str, Any] = {"records": figures}
    text = figures["text_bytes"]
    for name, done in runs.items():
        seconds = [run["seconds"] for run in done]
        row: dict[str, Any] = {
            "seconds": seconds, "median_seconds": harness.median(seconds),
            "records_per_second": round(n / statistics.median(seconds)),
            "bytes": done[0]["bytes"]}
        if name != "bare":
            size = done[0]["bytes"]
            row["bytes_per_text_byte"] = {
                "records": round((size["sqlite"] - size["fts5"]) / text, 3),
                "with_full_text": round((size["sqlite"] + size["keyword_index"]) / text, 3),
                "full_text_share": round((size["fts5"] + size["keyword_index"]) / text, 3)}
            row["phases"] = done[statistics.median_low(range(len(done)))]["phases"] if (
                done[0]["phases"]) else None
            row["daily_seconds"] = [run["daily"]["seconds"] for run in done]
            row["daily"] = {key: value for key, value in done[0]["daily"].items()
                            if key != "seconds"}
            row["rule_lookups"] = done[-1].get("rule_lookups")
            row["times_bare"] = harness.paired_ratio(
                [run["seconds"] for run in runs["bare"]], seconds, 2)
        out[name] = row
    if "baseline" in runs:
        out["speedup_over_baseline"] = harness.paired_ratio(
            [run["seconds"] for run in runs["new"]],
            [run["seconds"] for run in runs["baseline"]], 2)
        out["daily_speedup_over_baseline"] = harness.paired_ratio(
            out["new"]["daily_seconds"], out["baseline"]["daily_seconds"], 2)
    return out


def main() -> None:
    args = bench.parse()
    result: dict[str, Any] = {"baseline": str(args.baseline) if args.baseline else None}
    if args.baseline:
        result["baseline_commit"] = subprocess.run(
            ["git", "-C", str(args.baseline), "rev-parse", "HEAD"], capture_output=True,
            text=True, check=False).stdout.strip()
    for n in args.records:
        result[f"{n}"] = measure(args, n)
    bench.record(args, result)


if __name__ == "__main__":
    main()

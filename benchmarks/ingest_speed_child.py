"""One measured run of ``benchmarks.ingest_speed``, in its own process, with whichever
checkout's ``recommender`` comes first on the path (``harness.run_in_checkout``).

    python benchmarks/ingest_speed_child.py ingest DATA_DIR RECORDS.jsonl [DAILY.jsonl]
    python benchmarks/ingest_speed_child.py bare DATA_DIR RECORDS.jsonl

``ingest``: ``jobs.ingest`` of the records into a fresh corpus (what ``paperrec ingest``
runs), then of the daily file into it, then the reader rules' phrase lookups
(``papers_with_words``, ``RULE_PHRASES``: the median of 5 calls each, in milliseconds, as the
checkout answers them); ``bare``: one INSERT of id and JSON line per record into a table of
two columns, in one transaction. Prints one line of JSON: seconds, counts, phases (when the
checkout's ingest has them) and the bytes on disk.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# Phrases a reader follows or mutes: common words (a tenth of the records and more), a
# common pair, rare ones; two also since 2026-10-01 (day 20,727: a follow rule's
# window). (phrase, since_day or None)
RULE_PHRASES = [("learning", None), ("neural networks", None), ("the", None),
                ("graph neural", None), ("protein", None), ("reinforcement learning", None),
                ("learning", 20_727.0), ("neural networks", 20_727.0)]


def _bytes(data_dir: Path) -> dict[str, int]:
    """Bytes on disk: the SQLite file (and its WAL, if left), its FTS5 tables' pages, and
    the keyword index's folder."""
    database = data_dir / "corpus.sqlite"
    with sqlite3.connect(database) as db:
        pages = dict(db.execute("SELECT name LIKE 'paper_words%', SUM(pgsize) FROM dbstat"
                                " GROUP BY name LIKE 'paper_words%'").fetchall())
    sqlite_bytes = sum(path.stat().st_size for path in data_dir.glob("corpus.sqlite*"))
    words = data_dir / "corpus-words"
    return {"sqlite": sqlite_bytes, "fts5": int(pages.get(1, 0)),
            "keyword_index": sum(path.stat().st_size for path in words.rglob("*")
                                 if path.is_file()) if words.exists() else 0}


def ingest(data_dir: Path, records: Path, daily: Path | None) -> dict[str, Any]:
    from recommender import jobs
    from recommender.corpus.store import CorpusStore

    started = time.perf_counter()
    corpus = CorpusStore(data_dir / "corpus.sqlite")
    summary = jobs.ingest(corpus, [records], lambda rejection: None)
    corpus.close()
    seconds = time.perf_counter() - started
    result: dict[str, Any] = {
        "seconds": round(seconds, 3), "added": summary.added, "rejected": summary.rejected,
        "phases": getattr(summary, "phases", None), "bytes": _bytes(data_dir)}
    if daily is not None:
        started = time.perf_counter()
        corpus = CorpusStore(data_dir / "corpus.sqlite")
        summary = jobs.ingest(corpus, [daily], lambda rejection: None)
        corpus.close()
        result["daily"] = {"seconds": round(time.perf_counter() - started, 3),
                           "added": summary.added, "unchanged": summary.unchanged}
    result["rule_lookups"] = rule_lookups(CorpusStore(data_dir / "corpus.sqlite"))
    return result


def rule_lookups(corpus: Any) -> dict[str, dict[str, float]]:
    """Per phrase (and day): the papers it finds and the median of 5 lookups in ms."""
    figures = {}
    for phrase, since in RULE_PHRASES:
        times, found = [], 0
        for _ in range(5):
            started = time.perf_counter()
            found = len(corpus.papers_with_words(phrase.split(), since))
            times.append((time.perf_counter() - started) * 1000)
        label = phrase if since is None else f"{phrase} since {since:g}"
        figures[label] = {"papers": found, "ms": round(statistics.median(times), 2)}
    corpus.close()
    return figures


def bare(data_dir: Path, records: Path) -> dict[str, Any]:
    database = data_dir / "bare.sqlite"
    started = time.perf_counter()
    db = sqlite3.connect(database)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE records (id TEXT PRIMARY KEY, record TEXT NOT NULL)")
    count = 0
    with db, records.open("rb") as handle:
        for line in handle:
            db.execute("INSERT INTO records VALUES (?, ?)",
                       (json.loads(line)["id"], line.decode()))
            count += 1
    db.close()
    return {"seconds": round(time.perf_counter() - started, 3), "added": count,
            "bytes": {"sqlite": sum(path.stat().st_size
                                    for path in data_dir.glob("bare.sqlite*"))}}


def main(argv: list[str]) -> None:
    mode, data_dir, records = argv[0], Path(argv[1]), Path(argv[2])
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    if mode == "bare":
        result = bare(data_dir, records)
    else:
        result = ingest(data_dir, records, Path(argv[3]) if len(argv) > 3 else None)
    shutil.rmtree(data_dir, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])

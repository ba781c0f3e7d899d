"""CorpusStore: the papers, in one SQLite file in the data directory.

Readers (the service) and a writer (ingest) can work at once: the database runs in WAL mode.
Beside each record the store keeps what a reader's rules look up (``recommender.core.matching``):
each author's normalised name in a B-tree index (``papers_by_author``: exact, one lookup)
and the folded words of title and abstract in an SQLite FTS5 table (``papers_with_words``:
a phrase query), so following or muting costs an index lookup, not a scan of the corpus.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from recommender.core.matching import author_key, words
from recommender.core.papers import Paper
from recommender.corpus import identity

_SCHEMA = """
CREATE TABLE IF NOT EXISTS papers (
    id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    record TEXT NOT NULL,
    added_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    day REAL
);
CREATE TABLE IF NOT EXISTS paper_authors (name TEXT NOT NULL, paper TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS paper_authors_name ON paper_authors (name);
CREATE INDEX IF NOT EXISTS paper_authors_paper ON paper_authors (paper);
-- rowid = papers.rowid; the text is already folded (recommender.core.matching.words)
CREATE VIRTUAL TABLE IF NOT EXISTS paper_words USING fts5(title, abstract);
-- Every identifier a paper arrived with (corpus.identity.keys, and "id": the ids of its
-- duplicates), so that a record arriving again is stored once.
CREATE TABLE IF NOT EXISTS identities (
    scheme TEXT NOT NULL, value TEXT NOT NULL, paper TEXT NOT NULL,
    PRIMARY KEY (scheme, value)
);
CREATE INDEX IF NOT EXISTS identities_paper ON identities (paper);
"""


@dataclass
class UpsertCounts:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    merged: int = 0  # duplicates of a stored paper by DOI or title (``identity``), stored once


class CorpusStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=30, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        """Bring a corpus written by an older paperrec up to the current schema."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(papers)")}
        if "day" not in columns:  # added with `since` filtering: backfill from the records
            with self._db:
                self._db.execute("ALTER TABLE papers ADD COLUMN day REAL")
                rows = self._db.execute("SELECT id, record FROM papers").fetchall()
                self._db.executemany("UPDATE papers SET day = ? WHERE id = ?", [
                    (_day(Paper.from_dict(json.loads(record))), pid) for pid, record in rows])
        if (self._db.execute("SELECT 1 FROM identities LIMIT 1").fetchone() is None
                and self._db.execute("SELECT 1 FROM papers LIMIT 1").fetchone()):
            with self._db:  # added with duplicate detection: the keys of every stored paper
                for record, in self._db.execute("SELECT record FROM papers ORDER BY rowid"):
                    self._remember(Paper.from_dict(json.loads(record)))
        words_missing = self._db.execute("SELECT 1 FROM paper_words LIMIT 1").fetchone() is None
        if words_missing and self._db.execute("SELECT 1 FROM papers LIMIT 1").fetchone():
            with self._db:  # added with reader rules: index the authors and words of every paper
                for rowid, record in self._db.execute("SELECT rowid, record FROM papers"):
                    self._index_for_rules(rowid, Paper.from_dict(json.loads(record)))

    def close(self) -> None:
        self._db.close()

    def upsert(self, papers: Iterable[Paper], counts: UpsertCounts | None = None) -> UpsertCounts:
        """Add new papers, update changed ones, leave identical ones alone (one transaction).

        A record with another id that ``identity.keys`` finds stored already (an arXiv id, a
        DOI, or title and first author) is a duplicate: it is stored once, under the id the
        paper first came with; its id and identifiers are kept (``resolve`` finds the paper by
        any of them). A duplicate by arXiv id is a version of the same preprint and updates
        the record; one by DOI or title (a conference version, another source) only adds its
        identifiers, so the stored text does not flip with the order of the sources."""
        counts = counts or UpsertCounts()
        now = time.time()
        with self._db:
            for paper in papers:
                stored, how = self._duplicate_of(paper)
                if stored is not None:
                    self._db.execute("INSERT OR IGNORE INTO identities VALUES ('id', ?, ?)",
                                     (paper.id, stored.id))
                    self._remember(paper, stored.id)
                    if how != "arxiv":
                        counts.merged += 1
                        continue
                    paper = replace(paper, id=stored.id, doi=paper.doi or stored.doi)
                record = json.dumps(paper.to_dict(), ensure_ascii=False, sort_keys=True)
                row = self._db.execute(
                    "SELECT record, rowid FROM papers WHERE id = ?", (paper.id,)
                ).fetchone()
                if row is None:
                    inserted = self._db.execute(
                        "INSERT INTO papers VALUES (?, ?, ?, ?, ?, ?)",
                        (paper.id, paper.content_hash, record, now, now, _day(paper)),
                    )
                    self._index_for_rules(inserted.lastrowid, paper)
                    self._remember(paper)
                    counts.added += 1
                elif row[0] != record:
                    self._db.execute(
                        "UPDATE papers SET content_hash = ?, record = ?, updated_at = ?, day = ?"
                        " WHERE id = ?",
                        (paper.content_hash, record, now, _day(paper), paper.id),
                    )
                    self._index_for_rules(row[1], paper)
                    self._remember(paper)
                    counts.updated += 1
                else:
                    counts.unchanged += 1
        return counts

    def _duplicate_of(self, paper: Paper) -> tuple[Paper | None, str]:
        """The stored paper this record with another id is a duplicate of, and by which key
        scheme; (None, "") for a new paper or one stored under this very id."""
        if self._db.execute("SELECT 1 FROM papers WHERE id = ?", (paper.id,)).fetchone():
            return None, ""
        for scheme, value in identity.keys(paper):
            row = self._db.execute("SELECT paper FROM identities WHERE scheme = ? AND value = ?",
                                   (scheme, value)).fetchone()
            if row and row[0] != paper.id:
                stored = self.get(row[0])
                if stored is not None:
                    return stored, scheme
        return None, ""

    def _remember(self, paper: Paper, under: str | None = None) -> None:
        """Store the record's keys for the paper ``under`` (default: its own id); a key
        already taken keeps its paper."""
        self._db.executemany("INSERT OR IGNORE INTO identities VALUES (?, ?, ?)",
                             [(scheme, value, under or paper.id)
                              for scheme, value in identity.keys(paper)])

    def resolve(self, paper_id: str) -> str | None:
        """The id a paper is stored under, given it or the id of one of its duplicates."""
        if self._db.execute("SELECT 1 FROM papers WHERE id = ?", (paper_id,)).fetchone():
            return paper_id
        row = self._db.execute("SELECT paper FROM identities WHERE scheme = 'id' AND value = ?",
                               (paper_id,)).fetchone()
        return str(row[0]) if row else None

    def _index_for_rules(self, rowid: int | None, paper: Paper) -> None:
        """(Re)write the paper's author names and words (inside the caller's transaction)."""
        self._db.execute("DELETE FROM paper_authors WHERE paper = ?", (paper.id,))
        self._db.executemany("INSERT INTO paper_authors VALUES (?, ?)",
                             [(key, paper.id) for key in {author_key(a) for a in paper.authors}
                              if key])
        self._db.execute("DELETE FROM paper_words WHERE rowid = ?", (rowid,))
        self._db.execute("INSERT INTO paper_words (rowid, title, abstract) VALUES (?, ?, ?)",
                         (rowid, " ".join(words(paper.title)), " ".join(words(paper.abstract))))

    def papers_by_author(self, key: str, since_day: float | None = None) -> list[tuple[str, float]]:
        """(id, day or NaN) of the papers with the author ``key`` (``matching.author_key``),
        only those dated on or after ``since_day`` when it is given."""
        return self._ids_and_days(
            "SELECT p.id, p.day FROM paper_authors a JOIN papers p ON p.id = a.paper"
            " WHERE a.name = ?", key, since_day)

    def papers_with_words(self, phrase: list[str],
                          since_day: float | None = None) -> list[tuple[str, float]]:
        """(id, day or NaN) of the papers whose title or abstract has the consecutive words
        ``phrase`` (``matching.words``), only those dated on or after ``since_day`` when given."""
        if not phrase:
            return []
        # Words are runs of letters and digits: quoted, they are one FTS5 phrase, never syntax.
        return self._ids_and_days(
            "SELECT p.id, p.day FROM paper_words w JOIN papers p ON p.rowid = w.rowid"
            " WHERE paper_words MATCH ?", '"' + " ".join(phrase) + '"', since_day)

    def _ids_and_days(self, sql: str, value: str,
                      since_day: float | None) -> list[tuple[str, float]]:
        args: list[object] = [value]
        if since_day is not None:
            sql += " AND p.day >= ?"  # an unknown day (NULL) is never on or after it
            args.append(since_day)
        return [(pid, math.nan if day is None else float(day))
                for pid, day in self._db.execute(sql, args)]

    def get(self, paper_id: str) -> Paper | None:
        """The paper stored under this id, or under the id of a duplicate of it (``resolve``);
        its ``id`` is the stored one."""
        canonical = self.resolve(paper_id)
        if canonical is None:
            return None
        row = self._db.execute("SELECT record FROM papers WHERE id = ?", (canonical,)).fetchone()
        return Paper.from_dict(json.loads(row[0])) if row else None

    def get_many(self, paper_ids: list[str]) -> dict[str, Paper]:
        found: dict[str, Paper] = {}
        for start in range(0, len(paper_ids), 500):
            chunk = paper_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT id, record FROM papers WHERE id IN ({marks})", chunk
            ).fetchall()
            found.update({pid: Paper.from_dict(json.loads(rec)) for pid, rec in rows})
        return found

    def index_rows(self) -> Iterator[tuple[str, str, float]]:
        """(paper id, content hash, publication day or NaN) for every paper, in insertion
        order."""
        for pid, content_hash, day in self._db.execute(
            "SELECT id, content_hash, day FROM papers ORDER BY rowid"
        ):
            yield pid, content_hash, math.nan if day is None else float(day)

    def texts(self, paper_ids: list[str]) -> dict[str, str]:
        return {pid: paper.text for pid, paper in self.get_many(paper_ids).items()}

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM papers").fetchone()[0])


def _day(paper: Paper) -> float | None:
    day = paper.day
    return None if math.isnan(day) else day

"""CorpusStore: the papers, in one SQLite file in the data directory.

Readers (the service) and a writer (ingest) can work at once: the database runs in WAL mode.
Beside each record the store keeps what a reader's rules look up (``recommender.core.matching``):
each author's normalised name and each category in a B-tree index (``papers_by_author``,
``papers_in_category``: exact, one lookup), and the folded words of title, abstract and
authors' names in a tantivy index (``keyword_index.KeywordIndex``, in ``corpus-words/``
beside the file: ``papers_with_words``, a phrase in title or abstract), so following or
muting costs an index lookup, not a scan of the corpus. Search finds words in the same index
(``search_words``, ``search_author``: BM25 weighted by field, the best k without scoring
every match) and exact titles in a B-tree (``search_title``). Every change of a paper's words
is recorded in ``keyword_changes`` in the same transaction, and written into the tantivy
index after it.

A paper its source withdrew (arXiv) is kept but marked ``withdrawn``: the next index build
leaves it out.

A paper that only a reader's upload brought (``upload``) is *pending*: it is the uploaders'
(``uploads`` names them) and nobody else's. The index, the reader rules and so every other
reader's list and search leave it out, and ``hidden_from`` tells the pages and the API to
answer as if it were not there. It becomes a paper like any other when a trusted source
(``upsert``: arXiv, OpenReview, an operator's ingest) brings the same paper, whose record
then replaces the uploaded one, or when an operator approves it (``approve``; ``reject``
deletes it). So one reader cannot put words into another reader's list.

``harvest_positions`` holds where each harvest (source and set) stands, so the position
travels with the corpus and is written in the same transaction as the papers.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import orjson
import zstandard

from recommender.core.matching import author_key, category_key, words
from recommender.core.papers import EPOCH, Paper
from recommender.core.phases import PhaseClock
from recommender.core.search_query import SearchQuery
from recommender.corpus import identity
from recommender.corpus.keyword_index import KeywordIndex, Term

_SCHEMA = """
-- record: the paper's JSON (``Paper.to_dict``), zstd-compressed (a BLOB, ``_encode``), its
-- ``text`` left out when it is title and abstract as they are; a corpus of an older paperrec
-- holds the JSON as TEXT, which reads the same (``_paper``).
CREATE TABLE IF NOT EXISTS papers (
    id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    record TEXT NOT NULL,
    added_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    day REAL,
    withdrawn INTEGER NOT NULL DEFAULT 0,
    verified INTEGER NOT NULL DEFAULT 1  -- 0: pending, only a reader's upload brought it
);
-- Who uploaded each pending paper (a paper two readers uploaded is pending for both).
CREATE TABLE IF NOT EXISTS uploads (
    paper TEXT NOT NULL, user TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (paper, user)
);
CREATE INDEX IF NOT EXISTS uploads_user ON uploads (user);
CREATE TABLE IF NOT EXISTS paper_authors (name TEXT NOT NULL, paper TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS paper_authors_name ON paper_authors (name);
CREATE INDEX IF NOT EXISTS paper_authors_paper ON paper_authors (paper);
-- name: ``matching.category_key`` of each of a paper's categories (arXiv's cs.LG, a venue)
CREATE TABLE IF NOT EXISTS paper_categories (name TEXT NOT NULL, paper TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS paper_categories_name ON paper_categories (name);
CREATE INDEX IF NOT EXISTS paper_categories_paper ON paper_categories (paper);
-- Each paper's title as its folded words, for search's exact-title lookup (a B-tree: an
-- FTS5 phrase of common words reads their whole position lists, 23 ms at 250k papers).
CREATE TABLE IF NOT EXISTS paper_titles (key TEXT NOT NULL, paper TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS paper_titles_key ON paper_titles (key);
CREATE INDEX IF NOT EXISTS paper_titles_paper ON paper_titles (paper);
-- Rows (papers.rowid) whose words changed and are not yet written into the keyword index
-- (keyword_index.KeywordIndex.apply).
CREATE TABLE IF NOT EXISTS keyword_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, row INTEGER NOT NULL
);
-- Every identifier a paper arrived with (corpus.identity.keys, and "id": the ids of its
-- duplicates), so that a record arriving again is stored once.
CREATE TABLE IF NOT EXISTS identities (
    scheme TEXT NOT NULL, value TEXT NOT NULL, paper TEXT NOT NULL,
    PRIMARY KEY (scheme, value)
);
CREATE INDEX IF NOT EXISTS identities_paper ON identities (paper);
CREATE TABLE IF NOT EXISTS harvest_positions (
    source TEXT NOT NULL,
    set_spec TEXT NOT NULL,
    datestamp TEXT,      -- newest datestamp of the last harvest that finished
    token TEXT,          -- resumption token of the harvest in progress, NULL when none is
    started_from TEXT,   -- the `from` date that harvest asked (NULL: from the beginning)
    newest TEXT,         -- newest datestamp that harvest has stored so far
    updated_at REAL NOT NULL,
    PRIMARY KEY (source, set_spec)
);
"""


@dataclass
class UpsertCounts:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    merged: int = 0  # duplicates of a stored paper by DOI or title (``identity``), stored once


@dataclass(frozen=True, slots=True)
class Prepared:
    """What storing a paper derives from it (``prepare``), worked out where the paper is
    read, so that a large ingest does it in its reading processes
    (``recommender.corpus.reading``) while this one writes. The paper itself travels as
    its record (``paper``), which is smaller to send and seldom needed again."""

    id: str
    content_hash: str
    day: float | None
    record: bytes  # ``papers.record`` (``_encode``)
    keys: list[tuple[str, str]]  # ``identity.keys``
    words: tuple[str, str, str]  # ``_word_fields``
    authors: list[str]  # distinct ``author_key`` of its authors
    categories: list[str]  # distinct ``category_key`` of its categories

    @property
    def paper(self) -> Paper:
        return _paper(self.record)


def prepare(paper: Paper) -> Prepared:
    return Prepared(paper.id, paper.content_hash, _day(paper), _encode(paper),
                    identity.keys(paper), _word_fields(paper),
                    list({key for key in map(author_key, paper.authors) if key}),
                    _category_keys(paper))


@dataclass(frozen=True)
class PendingPaper:
    """A paper only readers' uploads brought, as an operator reviews it."""

    id: str
    title: str
    url: str | None
    added_at: float
    uploaders: list[str]


@dataclass
class HarvestPosition:
    """Where the harvest of one set stands (see ``harvest_positions`` in the schema)."""

    datestamp: str | None = None
    token: str | None = None
    started_from: str | None = None
    newest: str | None = None


class CorpusStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=30, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        # The record and words of each row this store last wrote (``_documents``), by rowid.
        self._words_written: dict[int, tuple[bytes, tuple[str, str, str]]] = {}
        had_categories = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'paper_categories'").fetchone() is not None
        self._db.executescript(_SCHEMA)
        self._migrate(had_categories)
        self.keywords = KeywordIndex(path.with_name(f"{path.stem}-words"), self._documents)
        self.keywords.open(self._db)  # built once for a corpus of an older paperrec

    def _migrate(self, had_categories: bool = True) -> None:
        """Bring a corpus written by an older paperrec up to the current schema."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(papers)")}
        if "day" not in columns:  # added with `since` filtering: backfill from the records
            with self._db:
                self._db.execute("ALTER TABLE papers ADD COLUMN day REAL")
                rows = self._db.execute("SELECT id, record FROM papers").fetchall()
                self._db.executemany("UPDATE papers SET day = ? WHERE id = ?", [
                    (_day(_paper(record)), pid) for pid, record in rows])
        if "withdrawn" not in columns:  # added with the arXiv harvest: nothing withdrawn yet
            with self._db:
                self._db.execute(
                    "ALTER TABLE papers ADD COLUMN withdrawn INTEGER NOT NULL DEFAULT 0")
        if "verified" not in columns:
            # Added with private uploads. Which stored papers an upload brought was not
            # recorded before, so every one stored counts as verified: `paperrec
            # review-imports` cannot list those (docs/security.md says so).
            with self._db:
                self._db.execute(
                    "ALTER TABLE papers ADD COLUMN verified INTEGER NOT NULL DEFAULT 1")
        if (self._db.execute("SELECT 1 FROM identities LIMIT 1").fetchone() is None
                and self._db.execute("SELECT 1 FROM papers LIMIT 1").fetchone()):
            with self._db:  # added with duplicate detection: the keys of every stored paper
                for record, in self._db.execute("SELECT record FROM papers ORDER BY rowid"):
                    paper = _paper(record)
                    self._remember(paper.id, identity.keys(paper))
        if self._db.execute("SELECT 1 FROM sqlite_master WHERE name = 'paper_words'"
                            ).fetchone():
            with self._db:  # the rules' FTS5 table, until they read the keyword index
                self._db.execute("DROP TABLE paper_words")
        titles_missing = self._db.execute("SELECT 1 FROM paper_titles LIMIT 1").fetchone() is None
        if titles_missing and self._db.execute("SELECT 1 FROM papers LIMIT 1").fetchone():
            # added with reader rules and search: every paper's authors, title, categories
            # and words (into the keyword index)
            with self._db:
                for rowid, record in self._db.execute(
                        "SELECT rowid, record FROM papers").fetchall():
                    self._index_for_rules(rowid, prepare(_paper(record)), fresh=False,
                                          written=False)
        elif not had_categories:
            with self._db:  # added with category rules: index the categories of every paper
                for record, in self._db.execute("SELECT record FROM papers"):
                    paper = _paper(record)
                    self._add_categories(paper.id, _category_keys(paper))

    def close(self) -> None:
        self._db.close()

    def upsert(self, papers: Iterable[Paper | Prepared], counts: UpsertCounts | None = None,
               clock: PhaseClock | None = None) -> UpsertCounts:
        """Add new papers, update changed ones, leave identical ones alone (one transaction):
        papers from a trusted source. A changed paper that was withdrawn counts again (a new
        version replaced it).

        A record with another id that ``identity.keys`` finds stored already (an arXiv id, a
        DOI, or title and first author) is a duplicate: it is stored once, under the id the
        paper first came with; its id and identifiers are kept (``resolve`` finds the paper by
        any of them). A duplicate by arXiv id is a version of the same preprint and updates
        the record; one by DOI or title (a conference version, another source) only adds its
        identifiers, so the stored text does not flip with the order of the sources. A
        pending paper (a reader's upload) is the exception: the trusted record replaces what
        the reader wrote, and the paper is verified."""
        counts = counts or UpsertCounts()
        with self._db:
            self._upsert(papers, counts)
        if clock:
            clock.lap("store")
        self.keywords.apply(self._db)
        if clock:
            clock.lap("keyword index")
        return counts

    @contextlib.contextmanager
    def bulk_load(self, clock: PhaseClock | None = None) -> Iterator[None]:
        """Around a large load: when the corpus is empty, its lookup indexes (``_LOOKUPS``:
        a B-tree each, written in random order when filled row by row) are dropped first and
        built at the end, in one sorted pass. Dedup and updates keep every index they read.
        A load that stops half-way leaves them to the next open (``_SCHEMA``). Meanwhile
        SQLite keeps ``BULK_CACHE_KIB`` of pages in memory instead of 2 MiB: deduplication
        looks every record's id and keys up in B-trees of millions of rows."""
        self._db.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
        empty = self._db.execute("SELECT 1 FROM papers LIMIT 1").fetchone() is None
        if empty:
            with self._db:
                for name in _LOOKUPS:
                    self._db.execute(f"DROP INDEX IF EXISTS {name}")
        try:
            yield
        finally:
            self._db.execute("PRAGMA cache_size = -2000")  # SQLite's default
            if empty:
                if clock:
                    clock.lap("read")
                self._db.executescript(_SCHEMA)
                if clock:
                    clock.lap("lookup indexes")

    def _upsert(self, papers: Iterable[Paper | Prepared], counts: UpsertCounts) -> None:
        now = time.time()
        for item in papers:
            ready = item if isinstance(item, Prepared) else prepare(item)
            row = self._db.execute(
                "SELECT record, rowid, verified FROM papers WHERE id = ?", (ready.id,)
            ).fetchone()
            if row is None:
                stored, how = self._stored_by_keys(ready.id, ready.keys)
                if stored is not None:
                    self._db.execute("INSERT OR IGNORE INTO identities VALUES ('id', ?, ?)",
                                     (ready.id, stored.id))
                    self._remember(stored.id, ready.keys)
                    if how != "arxiv" and not self._pending(stored.id):
                        counts.merged += 1
                        continue
                    paper = ready.paper
                    ready = prepare(replace(paper, id=stored.id, doi=paper.doi or stored.doi))
                    row = self._db.execute(
                        "SELECT record, rowid, verified FROM papers WHERE id = ?", (ready.id,)
                    ).fetchone()
            if row is None:
                self._insert(ready, now, verified=True)
                counts.added += 1
            elif not row[2] or (row[0] != ready.record and _paper(row[0]) != ready.paper):
                # (the same bytes are the same paper: ``_encode`` is deterministic)
                self._db.execute(
                    "UPDATE papers SET content_hash = ?, record = ?, updated_at = ?, day = ?,"
                    " withdrawn = 0, verified = 1 WHERE id = ?",
                    (ready.content_hash, ready.record, now, ready.day, ready.id),
                )
                self._db.execute("DELETE FROM uploads WHERE paper = ?", (ready.id,))
                self._index_for_rules(row[1], ready, fresh=False)
                self._remember(ready.id, ready.keys)
                counts.updated += 1
            else:
                counts.unchanged += 1

    def _insert(self, ready: Prepared, now: float, *, verified: bool) -> None:
        inserted = self._db.execute(
            "INSERT INTO papers VALUES (?, ?, ?, ?, ?, ?, 0, ?)",
            (ready.id, ready.content_hash, ready.record, now, now, ready.day, int(verified)))
        self._index_for_rules(inserted.lastrowid, ready)
        self._remember(ready.id, ready.keys)

    def upload(self, papers: Iterable[Paper], user: str, now: float) -> list[str]:
        """Store a reader's uploaded papers as pending and theirs (one transaction); the id
        each is stored under. A paper the corpus holds already (``find``) is left as it is:
        when it is pending (another reader uploaded it too), this reader becomes one of its
        uploaders, and sees the text stored first."""
        stored_ids = []
        with self._db:
            for paper in papers:
                found = self.find(paper)
                if found is None:
                    self._insert(prepare(paper), now, verified=False)
                    found = paper.id
                stored_ids.append(found)
            self._claim(stored_ids, user, now)
        self.keywords.apply(self._db)
        return stored_ids

    def claim(self, paper_ids: list[str], user: str, now: float) -> None:
        """Name the reader among the uploaders of those of these papers that are pending
        (they hold the paper in their library: it must stay visible to them)."""
        with self._db:
            self._claim(paper_ids, user, now)

    def _claim(self, paper_ids: list[str], user: str, now: float) -> None:
        self._db.executemany(
            "INSERT OR IGNORE INTO uploads SELECT id, ?, ? FROM papers WHERE id = ? AND"
            " verified = 0", [(user, now, pid) for pid in paper_ids])

    def _pending(self, paper_id: str) -> bool:
        row = self._db.execute("SELECT verified FROM papers WHERE id = ?",
                               (paper_id,)).fetchone()
        return row is not None and not row[0]

    def hidden_from(self, paper_id: str, viewer: str | None) -> bool:
        """Whether the stored paper is pending and ``viewer`` (None: anyone, e.g. a client
        asking without a user) is not one of its uploaders: to them it is not there."""
        if not self._pending(paper_id):
            return False
        return viewer is None or self._db.execute(
            "SELECT 1 FROM uploads WHERE paper = ? AND user = ?", (paper_id, viewer)
        ).fetchone() is None

    def pending_of(self, user: str) -> list[str]:
        """The pending papers the reader uploaded, oldest upload first."""
        return [pid for pid, in self._db.execute(
            "SELECT u.paper FROM uploads u JOIN papers p ON p.id = u.paper"
            " WHERE u.user = ? AND p.verified = 0 ORDER BY u.at, u.paper", (user,))]

    def export_user(self, user: str) -> dict[str, Any]:
        """A reader's part of their data export: the pending papers they uploaded."""
        return {"uploads": self.pending_of(user)}

    def pending(self, limit: int = 100, offset: int = 0) -> list[PendingPaper]:
        """Pending papers for an operator to review, oldest first."""
        rows = self._db.execute(
            "SELECT p.id, p.record, p.added_at, group_concat(u.user, ' ') FROM papers p"
            " LEFT JOIN uploads u ON u.paper = p.id WHERE p.verified = 0"
            " GROUP BY p.id ORDER BY p.added_at, p.id LIMIT ? OFFSET ?", (limit, offset))
        return [PendingPaper(pid, paper.title, paper.url, added, sorted((users or "").split()))
                for pid, paper, added, users in ((pid, _paper(record), added, users)
                                                 for pid, record, added, users in rows)]

    def pending_count(self) -> int:
        return int(self._db.execute(
            "SELECT COUNT(*) FROM papers WHERE verified = 0").fetchone()[0])

    def approve(self, paper_ids: Iterable[str]) -> int:
        """Verify these pending papers (an operator read them): the next index build counts
        them for every reader. How many were pending."""
        with self._db:
            approved = 0
            for pid in paper_ids:
                approved += self._db.execute(
                    "UPDATE papers SET verified = 1, updated_at = ? WHERE id = ? AND"
                    " verified = 0", (time.time(), pid)).rowcount
                self._db.execute("DELETE FROM uploads WHERE paper = ?", (pid,))
            return approved

    def reject(self, paper_ids: Iterable[str]) -> int:
        """Delete these pending papers (verified ones are left alone); how many went. The
        uploaders' likes of them stay in Redis and are left out wherever papers are read."""
        with self._db:
            deleted = sum(self._delete(pid) for pid in paper_ids if self._pending(pid))
        self.keywords.apply(self._db)
        return deleted

    def forget_uploader(self, user: str) -> int:
        """A reader is erased: they are no longer an uploader, and the pending papers only
        they uploaded are deleted. How many papers were deleted."""
        with self._db:
            mine = self.pending_of(user)
            self._db.execute("DELETE FROM uploads WHERE user = ?", (user,))
            deleted = sum(self._delete(pid) for pid in mine if self._db.execute(
                "SELECT 1 FROM uploads WHERE paper = ?", (pid,)).fetchone() is None)
        self.keywords.apply(self._db)
        return deleted

    def _delete(self, paper_id: str) -> int:
        row = self._db.execute("SELECT rowid, record FROM papers WHERE id = ?",
                               (paper_id,)).fetchone()
        if row is None:
            return 0
        self._db.execute("INSERT INTO keyword_changes (row) VALUES (?)", (row[0],))
        for table in ("paper_authors", "paper_categories", "paper_titles", "identities",
                      "uploads"):
            self._db.execute(f"DELETE FROM {table} WHERE paper = ?", (paper_id,))
        return self._db.execute("DELETE FROM papers WHERE id = ?", (paper_id,)).rowcount

    def mark_withdrawn(self, paper_ids: Iterable[str]) -> int:
        """Mark papers withdrawn (left out of the next index build); how many were newly
        marked (unknown ids and papers already withdrawn are not counted)."""
        with self._db:
            return self._mark_withdrawn(paper_ids)

    def _mark_withdrawn(self, paper_ids: Iterable[str]) -> int:
        return sum(self._db.execute(
            "UPDATE papers SET withdrawn = 1, updated_at = ? WHERE id = ? AND withdrawn = 0",
            (time.time(), pid)).rowcount for pid in paper_ids)

    def is_withdrawn(self, paper_id: str) -> bool:
        row = self._db.execute("SELECT withdrawn FROM papers WHERE id = ?",
                               (paper_id,)).fetchone()
        return bool(row and row[0])

    def harvest_position(self, source: str, set_spec: str) -> HarvestPosition:
        row = self._db.execute(
            "SELECT datestamp, token, started_from, newest FROM harvest_positions"
            " WHERE source = ? AND set_spec = ?", (source, set_spec)).fetchone()
        return HarvestPosition(*row) if row else HarvestPosition()

    def store_harvested(self, source: str, set_spec: str, papers: Iterable[Paper],
                        withdrawn: Iterable[str], position: HarvestPosition,
                        counts: UpsertCounts) -> int:
        """One harvested page in one transaction: its papers upserted, its withdrawn papers
        marked, and the harvest's new ``position``, so a crash keeps all of it or none.
        Returns how many papers were newly marked withdrawn."""
        with self._db:
            self._upsert(papers, counts)
            marked = self._mark_withdrawn(withdrawn)
            self._db.execute(
                "INSERT OR REPLACE INTO harvest_positions VALUES (?, ?, ?, ?, ?, ?, ?)",
                (source, set_spec, position.datestamp, position.token, position.started_from,
                 position.newest, time.time()))
        self.keywords.apply(self._db)
        return marked

    def _stored_by_keys(self, paper_id: str,
                        paper_keys: list[tuple[str, str]]) -> tuple[Paper | None, str]:
        """The stored paper this record (whose id is not stored) is a duplicate of, by its
        identifiers, and by which key scheme; (None, "") for a new paper."""
        for scheme, value in paper_keys:
            row = self._db.execute("SELECT paper FROM identities WHERE scheme = ? AND value = ?",
                                   (scheme, value)).fetchone()
            if row and row[0] != paper_id:
                stored = self.get(row[0])
                if stored is not None:
                    return stored, scheme
        return None, ""

    def _remember(self, paper_id: str, keys: list[tuple[str, str]]) -> None:
        """Store a record's keys (``identity.keys``) for the paper ``paper_id``; a key
        already taken keeps its paper."""
        self._db.executemany("INSERT OR IGNORE INTO identities VALUES (?, ?, ?)",
                             [(scheme, value, paper_id) for scheme, value in keys])

    def resolve(self, paper_id: str) -> str | None:
        """The id a paper is stored under, given it or the id of one of its duplicates."""
        if self._db.execute("SELECT 1 FROM papers WHERE id = ?", (paper_id,)).fetchone():
            return paper_id
        row = self._db.execute("SELECT paper FROM identities WHERE scheme = 'id' AND value = ?",
                               (paper_id,)).fetchone()
        return str(row[0]) if row else None

    def find(self, paper: Paper) -> str | None:
        """The id a paper is stored under, found by the record's id or any of its
        identifiers (``identity.keys``: arXiv id, DOI, title and first author); None when
        the corpus does not hold it."""
        found = self.resolve(paper.id)
        if found is not None:
            return found
        for scheme, value in identity.keys(paper):
            row = self._db.execute("SELECT paper FROM identities WHERE scheme = ? AND value = ?",
                                   (scheme, value)).fetchone()
            if row:
                return str(row[0])
        return None

    def _index_for_rules(self, rowid: int | None, ready: Prepared, fresh: bool = True,
                         written: bool = True) -> None:
        """(Re)write the paper's author names, title key and categories, and record its row
        for the keyword index (inside the caller's transaction). ``fresh``: the row was just
        inserted, so it has nothing to delete; ``written``: the row holds ``ready.record``
        (its words are kept for ``_documents``)."""
        paper_id = ready.id
        if not fresh:
            for table in ("paper_authors", "paper_titles", "paper_categories"):
                self._db.execute(f"DELETE FROM {table} WHERE paper = ?", (paper_id,))
        self._db.executemany("INSERT INTO paper_authors VALUES (?, ?)",
                             [(key, paper_id) for key in ready.authors])
        self._db.execute("INSERT INTO paper_titles VALUES (?, ?)", (ready.words[0], paper_id))
        self._db.execute("INSERT INTO keyword_changes (row) VALUES (?)", (rowid,))
        self._add_categories(paper_id, ready.categories)
        if rowid is not None and written:
            self._words_written[rowid] = (ready.record, ready.words)

    def _documents(self, db: sqlite3.Connection, rows: list[int] | None,
                   ) -> Iterator[tuple[int, str, str, str, float | None]]:
        """(row, title, abstract and authors' words, day) of these rows of ``papers`` (None:
        every row) that are there, for the keyword index. The words this store has just
        written are taken as they are (when the row still holds that paper), not worked out
        again from the record."""
        if rows is None:
            cursor = db.execute("SELECT rowid, record, day FROM papers")
        else:
            marks = ",".join("?" * len(rows))
            cursor = db.execute(
                f"SELECT rowid, record, day FROM papers WHERE rowid IN ({marks})", rows)
        for rowid, record, day in cursor if rows is None else cursor.fetchall():
            written = self._words_written.pop(rowid, None)
            fields = written[1] if written and written[0] == record else _word_fields(
                _paper(record))
            yield rowid, *fields, day

    def _add_categories(self, paper_id: str, keys: list[str]) -> None:
        self._db.executemany("INSERT INTO paper_categories VALUES (?, ?)",
                             [(key, paper_id) for key in keys])

    def papers_by_author(self, key: str, since_day: float | None = None) -> list[tuple[str, float]]:
        """(id, day or NaN) of the papers with the author ``key`` (``matching.author_key``),
        only those dated on or after ``since_day`` when it is given."""
        return self._ids_and_days(
            "SELECT p.id, p.day FROM paper_authors a JOIN papers p ON p.id = a.paper"
            " WHERE a.name = ? AND p.verified = 1", key, since_day)

    def papers_in_category(self, key: str,
                           since_day: float | None = None) -> list[tuple[str, float]]:
        """(id, day or NaN) of the papers in the category ``key`` (``matching.category_key``),
        only those dated on or after ``since_day`` when it is given."""
        return self._ids_and_days(
            "SELECT p.id, p.day FROM paper_categories c JOIN papers p ON p.id = c.paper"
            " WHERE c.name = ? AND p.verified = 1", key, since_day)

    def papers_with_words(self, phrase: list[str],
                          since_day: float | None = None) -> list[tuple[str, float]]:
        """(id, day or NaN) of the papers whose title or abstract has the consecutive words
        ``phrase`` (``matching.words``), only those dated on or after ``since_day`` when given."""
        rows = self.keywords.rows_with(phrase, ("title", "abstract"), since_day)
        if not rows:
            return []
        # One statement whatever the number of rows: a JSON array of them (json_each).
        return [(pid, math.nan if day is None else float(day)) for pid, day in self._db.execute(
            "SELECT id, day FROM papers WHERE rowid IN (SELECT value FROM json_each(?))"
            " AND verified = 1", (orjson.dumps(rows),))]

    def search_words(self, query: SearchQuery, limit: int, viewer: str | None,
                     ) -> list[tuple[str, float]]:
        """(id, BM25 score, higher better) of the papers ``viewer`` may see (``hidden_from``;
        not withdrawn) that have every required word, phrase and field term of ``query``,
        best first: title words weigh ``keyword_index.TITLE_WEIGHT``, authors'
        ``AUTHORS_WEIGHT``, the abstract's 1. Nothing when the query has no such term."""
        terms = [Term((w,)) for w in query.required_words]
        terms += [Term(p) for p in query.phrases]
        terms += [Term(p, "title") for p in query.title]
        terms += [Term(p, "authors") for p in query.authors]
        return self._matching(terms, limit, viewer, query.years)

    def search_title(self, title_words: tuple[str, ...], viewer: str | None,
                     years: tuple[int, int] | None = None) -> list[str]:
        """The papers ``viewer`` may see whose title is exactly these words (folded)."""
        if not title_words:
            return []
        sql = ("SELECT p.id FROM paper_titles t JOIN papers p ON p.id = t.paper WHERE"
               " t.key = ? AND p.withdrawn = 0 AND (p.verified = 1 OR EXISTS (SELECT 1 FROM"
               " uploads u WHERE u.paper = p.id AND u.user = ?))")
        values: list[object] = [" ".join(title_words), viewer or ""]
        if years is not None:
            sql += " AND p.day >= ? AND p.day < ?"
            values += list(_days_of(years))
        return [pid for pid, in self._db.execute(sql + " ORDER BY p.rowid LIMIT 20", values)]

    def search_author(self, name_words: tuple[str, ...], limit: int, viewer: str | None,
                      years: tuple[int, int] | None = None, also: tuple[str, ...] = (),
                      ) -> list[tuple[str, float]]:
        """The papers ``viewer`` may see with an author whose name has these consecutive
        words (folded: "hinton", "geoffrey hinton"), and each word of ``also`` anywhere,
        best first."""
        if not name_words:
            return []
        return self._matching([Term(name_words, "authors"), *(Term((w,)) for w in also)],
                              limit, viewer, years)

    def _matching(self, terms: list[Term], limit: int, viewer: str | None,
                  years: tuple[int, int] | None) -> list[tuple[str, float]]:
        """(id, BM25 score) of the best ``limit`` papers ``viewer`` may see that have every
        term: the keyword index's best, then the papers table says which may be seen.
        Hidden papers (pending, withdrawn) are few: a quarter more rows than asked leave
        room for them (each row read costs: at a million papers, 400 rows 8 ms, 250 rows 3)."""
        found = self.keywords.search(terms, limit + limit // 4 + 1,
                                     None if years is None else _days_of(years))
        if not found:
            return []
        marks = ",".join("?" * len(found))
        visible = dict(self._db.execute(
            f"SELECT p.rowid, p.id FROM papers p WHERE p.rowid IN ({marks}) AND"
            " p.withdrawn = 0 AND (p.verified = 1 OR EXISTS (SELECT 1 FROM uploads u"
            " WHERE u.paper = p.id AND u.user = ?))", [row for row, _ in found] + [viewer or ""]))
        return [(visible[row], score) for row, score in found if row in visible][:limit]

    def papers_of_years(self, years: tuple[int, int], limit: int,
                        viewer: str | None) -> list[str]:
        """The newest papers ``viewer`` may see published in these years (a search for a
        year alone)."""
        return [pid for pid, in self._db.execute(
            "SELECT p.id FROM papers p WHERE p.day >= ? AND p.day < ? AND p.withdrawn = 0"
            " AND (p.verified = 1 OR EXISTS (SELECT 1 FROM uploads u WHERE u.paper = p.id AND"
            " u.user = ?)) ORDER BY p.day DESC, p.rowid DESC LIMIT ?",
            (*_days_of(years), viewer or "", limit))]

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
        return _paper(row[0]) if row else None

    def get_many(self, paper_ids: list[str]) -> dict[str, Paper]:
        return {pid: _paper(record)
                for pid, record in self._by_id("record", paper_ids)}

    def titles(self, paper_ids: list[str]) -> dict[str, str]:
        """The title of each of these papers that is stored, read out of the records by
        SQLite: what a reading list shows of its papers and the likes behind them (for 40
        records of 1M arXiv-like papers 0.46 ms, against 0.82 ms for ``get_many``)."""
        return {pid: _paper(record).title for pid, record in self._by_id("record", paper_ids)}

    def _by_id(self, column: str, paper_ids: list[str]) -> Iterator[tuple[str, Any]]:
        """(id, ``column``) of each of these papers that is stored, 500 ids a query (well
        under SQLite's limit on the parameters of one)."""
        for start in range(0, len(paper_ids), 500):
            chunk = paper_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            yield from self._db.execute(
                f"SELECT id, {column} FROM papers WHERE id IN ({marks})", chunk).fetchall()

    def index_rows(self) -> Iterator[tuple[str, str, float]]:
        """(paper id, content hash, publication day or NaN) for every paper that is neither
        withdrawn nor pending, in insertion order."""
        for pid, content_hash, day in self._db.execute(
            "SELECT id, content_hash, day FROM papers WHERE withdrawn = 0 AND verified = 1"
            " ORDER BY rowid"
        ):
            yield pid, content_hash, math.nan if day is None else float(day)

    def texts(self, paper_ids: list[str]) -> dict[str, str]:
        return {pid: paper.text for pid, paper in self.get_many(paper_ids).items()}

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM papers").fetchone()[0])

    def withdrawn_count(self) -> int:
        return int(self._db.execute(
            "SELECT COUNT(*) FROM papers WHERE withdrawn = 1").fetchone()[0])

    def harvests(self) -> list[tuple[str, str, str | None]]:
        """(source, set, newest datestamp stored) of every harvest that has run."""
        return [(source, set_spec, newest or datestamp) for source, set_spec, datestamp, newest
                in self._db.execute("SELECT source, set_spec, datestamp, newest FROM "
                                    "harvest_positions ORDER BY source, set_spec")]


def _days_of(years: tuple[int, int]) -> tuple[float, float]:
    """[first day, day after the last) of these years, as ``papers.day`` counts days."""
    return (float(dt.date(years[0], 1, 1).toordinal() - EPOCH),
            float(dt.date(years[1] + 1, 1, 1).toordinal() - EPOCH))


BULK_CACHE_KIB = 256 * 1024

# Indexes for readers' lookups only (rules, exact titles), built after a load into an
# empty corpus (``bulk_load``).
_LOOKUPS = ("paper_authors_name", "paper_categories_name", "paper_titles_key")
_FIELDS = tuple(field.name for field in fields(Paper))


# zstd at level 3: a record of 1.3 kB in 14 µs to 0.70 bytes per byte of its text; zlib
# takes 60 µs (a new compressor's state each time) for 0.68. Both objects are reusable.
_COMPRESS = zstandard.ZstdCompressor(level=3)
_DECOMPRESS = zstandard.ZstdDecompressor()


def _encode(paper: Paper) -> bytes:
    """The paper as ``papers.record`` holds it: its JSON (orjson), without ``text`` when
    that is title and abstract as they are (``Paper`` makes it again), zstd-compressed."""
    data = {name: getattr(paper, name) for name in _FIELDS}
    if paper.text == f"{paper.title}\n{paper.abstract}".strip():
        del data["text"]
    return bytes(_COMPRESS.compress(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)))


def _paper(record: str | bytes) -> Paper:
    """The paper of a ``papers.record``: compressed JSON, or (an older paperrec's) JSON."""
    data = orjson.loads(_DECOMPRESS.decompress(record) if isinstance(record, bytes) else record)
    return Paper.from_dict(data)


def _word_fields(paper: Paper) -> tuple[str, str, str]:
    """The folded words of the paper's title, abstract and authors' names, as the keyword
    index holds them."""
    return (" ".join(words(paper.title)), " ".join(words(paper.abstract)),
            " ".join(words(" ".join(paper.authors))))  # (no word spans two names)


def _category_keys(paper: Paper) -> list[str]:
    """The distinct ``category_key`` of the paper's categories."""
    return list({key for key in map(category_key, paper.categories) if key})


def _day(paper: Paper) -> float | None:
    day = paper.day
    return None if math.isnan(day) else day

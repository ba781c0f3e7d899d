"""KeywordIndex: the corpus's words in a tantivy index, for search's best-k by BM25.

Why not the corpus's FTS5 table alone: SQLite computes ``bm25()`` for *every* paper that
matches before ``ORDER BY rank LIMIT k`` keeps the best, each one a look-up of the row's
column sizes (about 6 µs a match), so a query of two common words that tens of thousands of
papers share cost tens to hundreds of milliseconds at 250k papers, and more with the corpus.
tantivy (a Lucene-like engine in Rust, MIT licence, wheels on PyPI) keeps each document's
field lengths in a byte a document and collects the top k as it goes: block-max WAND skips
whole blocks of a disjunction's postings that cannot enter the top k, and a conjunction is
scored in compiled code (``benchmarks/search.py`` and docs/guide/search.md have the figures).
The reader rules' phrases are looked up here too (``rows_with``: every match, unscored), so
the corpus keeps no FTS5 table beside it (it cost 0.65 bytes per byte of text and a third of
the ingest's time; docs/benchmarks/ingest.md).

One document per row of ``papers`` (its ``rowid``): ``title``, ``abstract``, ``authors``
(the folded words of ``matching.words``, split at spaces; the store's ``documents`` gives
them), ``row`` and
``day`` (publication day, for ``year:``). Scores are BM25 per field (each with its own
average length), weighted ``TITLE_WEIGHT`` / 1 / ``AUTHORS_WEIGHT`` as the FTS5 ranking was.

Kept in step with the corpus, crash-safely: each change of a paper's words records its row in
``keyword_changes`` in the same SQLite transaction (``CorpusStore``), and ``apply`` replays
the recorded rows into the index (delete the row's document, add it again if the row is
still there; so replaying twice is harmless) and then forgets them. A crash between the two
leaves rows recorded, and the next ``apply`` (any write, or opening the corpus) writes them.
One writer at a time, across processes: a lock file beside the index (``flock``), held while
writing. Readers see a commit at their next search (``_searcher`` reloads when the index's
``meta.json`` changed).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import math
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import tantivy

TITLE_WEIGHT = 5.0
AUTHORS_WEIGHT = 3.0
FIELDS = {"title": TITLE_WEIGHT, "abstract": 1.0, "authors": AUTHORS_WEIGHT}
FORMAT = "1"  # of the documents: an index of another format is built again
LONGEST_WORD = 100  # bytes (UTF-8); a word this long or longer is left out of the index
WRITER_HEAP = 64_000_000  # bytes tantivy buffers before it writes a segment
CHUNK = 5000  # rows read from SQLite at a time

Field = Literal["title", "abstract", "authors"]
_TOKENIZER = "paperrec_words"
# (row, title words, abstract words, authors' words, day) of these rows (None: every row)
Documents = Callable[[sqlite3.Connection, "list[int] | None"],
                     Iterable[tuple[int, str, str, str, "float | None"]]]


@dataclass(frozen=True)
class Term:
    """What a hit must have: these consecutive words (one word: that word) in ``field``, or
    in any field when ``field`` is None."""

    words: tuple[str, ...]
    field: Field | None = None


def _schema() -> Any:
    builder = tantivy.SchemaBuilder()
    for name in FIELDS:
        builder.add_text_field(name, tokenizer_name=_TOKENIZER, index_option="position")
    builder.add_unsigned_field("row", indexed=True, fast=True)
    builder.add_float_field("day", indexed=True, fast=True)
    return builder.build()


class KeywordIndex:
    """The tantivy index in ``folder`` (module docstring)."""

    def __init__(self, folder: Path, documents: Documents) -> None:
        self.folder = folder
        self._documents = documents
        self._schema = _schema()
        self._lock = threading.Lock()
        self._index: Any = None
        self._seen: tuple[int, int] | None = None  # meta.json (inode, mtime) last loaded
        self._searcher: Any = None

    @property
    def ready(self) -> bool:
        """Whether the index is there, in this format."""
        marker = self.folder / "paperrec-format"
        return marker.exists() and marker.read_text() == FORMAT

    # ---------------------------------------------------------------------- writing

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """This thread, then this process, is the one writer (a lock file beside the index)."""
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, (self.folder.parent / f".{self.folder.name}.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def open(self, db: sqlite3.Connection) -> None:
        """Bring the index up to the corpus as a store opens: write what a writer left
        recorded, or build it when it is missing or of another format (a new corpus, or
        one of an older paperrec). Under the lock, so of several processes opening an old
        corpus at once one builds and the others find it built."""
        with self._writing():
            if self.ready:
                self._apply(db)
            else:
                self._rebuild(db)

    def _rebuild(self, db: sqlite3.Connection) -> int:
        last = db.execute("SELECT COALESCE(MAX(seq), 0) FROM keyword_changes").fetchone()[0]
        building = self.folder.with_name(f"{self.folder.name}.building-{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        index = self._open(building)
        writer = index.writer(WRITER_HEAP, 1)
        count = 0
        for rows in _chunks(self._documents(db, None)):
            for row in rows:
                writer.add_document(self._document(*row))
            count += len(rows)
        writer.commit()
        writer.wait_merging_threads()
        del writer
        (building / "paperrec-format").write_text(FORMAT)
        old = self.folder.with_name(f"{self.folder.name}.old-{os.getpid()}")
        if self.folder.exists():
            os.replace(self.folder, old)
        os.replace(building, self.folder)
        shutil.rmtree(old, ignore_errors=True)
        self._index, self._seen, self._searcher = None, None, None
        with db:
            db.execute("DELETE FROM keyword_changes WHERE seq <= ?", (last,))
        return count

    def apply(self, db: sqlite3.Connection) -> int:
        """Write the rows recorded in ``keyword_changes`` into the index (module docstring);
        how many rows."""
        if db.execute("SELECT 1 FROM keyword_changes LIMIT 1").fetchone() is None:
            return 0
        with self._writing():
            return self._apply(db)

    def _apply(self, db: sqlite3.Connection) -> int:
        last = db.execute("SELECT COALESCE(MAX(seq), 0) FROM keyword_changes").fetchone()[0]
        rows = [row for row, in db.execute(
            "SELECT DISTINCT row FROM keyword_changes WHERE seq <= ?", (last,))]
        if rows:
            writer = self._opened().writer(WRITER_HEAP, 1)
            for start in range(0, len(rows), CHUNK):
                chunk = rows[start : start + CHUNK]
                # A query, not delete_documents_by_term: that reads a Python int as an
                # i64 term, which never equals the u64 field's.
                writer.delete_documents_by_query(
                    tantivy.Query.term_set_query(self._schema, "row", chunk))
                for found in self._documents(db, chunk):
                    writer.add_document(self._document(*found))
            writer.commit()
            # Let the merges the commit started finish (dropped, the writer would cancel
            # them): else each write leaves a segment, an ingest of a million papers 1,000.
            writer.wait_merging_threads()
            del writer
        with db:
            db.execute("DELETE FROM keyword_changes WHERE seq <= ?", (last,))
        return len(rows)

    def _document(self, row: int, title: str, abstract: str, authors: str,
                  day: float | None) -> Any:
        document = tantivy.Document(title=title, abstract=abstract, authors=authors)
        document.add_unsigned("row", int(row))
        if day is not None:
            document.add_float("day", float(day))
        return document

    # ---------------------------------------------------------------------- reading

    def _open(self, folder: Path) -> Any:
        index = tantivy.Index(self._schema, path=str(folder), reuse=True)
        index.register_tokenizer(_TOKENIZER, tantivy.TextAnalyzerBuilder(
            tantivy.Tokenizer.whitespace()).filter(
            tantivy.Filter.remove_long(LONGEST_WORD)).build())
        index.config_reader("manual")
        return index

    def _opened(self) -> Any:
        if self._index is None:
            self._index = self._open(self.folder)
        return self._index

    def _current(self) -> Any:
        """A searcher over the last commit (reloaded when another writer committed)."""
        try:
            meta = os.stat(self.folder / "meta.json")
            stamp = (meta.st_ino, meta.st_mtime_ns)
        except FileNotFoundError:
            stamp = None
        with self._lock:
            if self._searcher is None or stamp != self._seen:
                index = self._opened()
                index.reload()
                self._searcher, self._seen = index.searcher(), stamp
            return self._searcher

    def search(self, terms: Sequence[Term], limit: int,
               days: tuple[float, float] | None = None) -> list[tuple[int, float]]:
        """(row, BM25 score) of the best ``limit`` documents that have every term, best
        first; ``days``: published on a day in [low, high). Nothing when no term is given."""
        if not terms or limit <= 0:
            return []
        clauses = [(tantivy.Occur.Must, self._term(term)) for term in terms]
        if days is not None:
            clauses.append((tantivy.Occur.Must, tantivy.Query.range_query(
                self._schema, "day", tantivy.FieldType.Float, float(days[0]), float(days[1]),
                include_upper=False)))
        searcher = self._current()
        hits = searcher.search(tantivy.Query.boolean_query(clauses), limit, count=False).hits
        if not hits:
            return []
        rows = searcher.fast_field_values("row", [address for _, address in hits])
        return [(int(row), float(score))
                for (score, _), row in zip(hits, rows, strict=True) if row is not None]

    def rows_with(self, words: Sequence[str], fields: Sequence[Field],
                  since_day: float | None = None) -> list[int]:
        """Every row (in row order, unscored) whose ``fields`` hold these consecutive words
        in one of them; ``since_day``: only those published on or after it (a row without a
        day never is). Two passes over the postings, a count and then the rows: a collector
        of every document would hold the whole corpus's worth of slots."""
        if not words or any(len(w.encode()) >= LONGEST_WORD for w in words):
            return []  # not in the index (``remove_long``)
        query = tantivy.Query.boolean_query([
            (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, name, words[0])
             if len(words) == 1 else tantivy.Query.phrase_query(self._schema, name, list(words)))
            for name in fields])
        if since_day is not None:
            query = tantivy.Query.boolean_query([
                (tantivy.Occur.Must, query),
                (tantivy.Occur.Must, tantivy.Query.range_query(
                    self._schema, "day", tantivy.FieldType.Float, float(since_day),
                    math.inf))])
        searcher = self._current()
        count = searcher.search(query, 1, count=True, order_by_field="row").count or 0
        if not count:
            return []
        hits = searcher.search(query, count, count=False, order_by_field="row",
                               order=tantivy.Order.Asc).hits
        return [int(row) for row, _ in hits]

    def _term(self, term: Term) -> Any:
        fields = [term.field] if term.field else list(FIELDS)
        words = list(term.words)
        if not words or any(len(w.encode()) >= LONGEST_WORD for w in words):
            return tantivy.Query.empty_query()  # not in the index (``remove_long``)
        queries = []
        for name in fields:
            query = (tantivy.Query.term_query(self._schema, name, words[0]) if len(words) == 1
                     else tantivy.Query.phrase_query(self._schema, name, list(words)))
            queries.append((tantivy.Occur.Should, tantivy.Query.boost_query(
                query, FIELDS[name])))
        return queries[0][1] if len(queries) == 1 else tantivy.Query.boolean_query(queries)


def _chunks(found: Iterable[Any]) -> Iterator[list[Any]]:
    found = iter(found)
    while rows := list(itertools.islice(found, CHUNK)):
        yield rows

"""How the corpus stores its papers (issue 29): each record once, compressed, beside a
full-text index of a known size; a corpus an older paperrec wrote still opens and reads
the same."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from recommender import jobs
from recommender.core.papers import Paper
from recommender.corpus.keyword_index import Term
from recommender.corpus.store import CorpusStore

CITEULIKE = Path("/work/shared/data/citeulike-a/papers.jsonl")
GRAPHS = Paper("p-graphs", "Graph neural networks", "Message passing on $G=(V,E)$ graphs.",
               ["Jürgen Müller"], date="2024-03-01", categories=["stat.ML"])
TREES = Paper("p-trees", "Random forests", "Bagged trees for tabular data.", ["Ada Lovelace"],
              year=2001)


def write_older_corpus(path: Path) -> None:
    """Make ``path`` a corpus as paperrec wrote it before issue 29: each record its JSON as
    TEXT (``text`` included), and an FTS5 table for the rules, keeping its own copy of the
    words."""
    corpus = CorpusStore(path)
    corpus.upsert([GRAPHS, TREES])
    corpus.close()
    with sqlite3.connect(path) as db:
        for paper in (GRAPHS, TREES):
            db.execute("UPDATE papers SET record = ? WHERE id = ?", (json.dumps(
                paper.to_dict(), ensure_ascii=False, sort_keys=True), paper.id))
        db.execute("CREATE VIRTUAL TABLE paper_words USING fts5(title, abstract, authors)")
        db.execute("INSERT INTO paper_words (rowid, title, abstract, authors) SELECT rowid,"
                   " 'x', 'x', 'x' FROM papers")


def test_a_corpus_of_an_older_paperrec_opens_reads_and_updates_the_same(tmp_path: Path) -> None:
    path = tmp_path / "corpus.sqlite"
    write_older_corpus(path)
    corpus = CorpusStore(path)
    assert corpus.get("p-graphs") == GRAPHS
    assert corpus.titles(["p-graphs", "p-trees"]) == {
        "p-graphs": "Graph neural networks", "p-trees": "Random forests"}
    # the old FTS5 table is gone: the rules read the keyword index, not its words
    assert corpus._db.execute("SELECT 1 FROM sqlite_master WHERE name = 'paper_words'"
                              ).fetchone() is None
    assert [pid for pid, _ in corpus.papers_with_words(["message", "passing"])] == ["p-graphs"]
    assert corpus.papers_with_words(["x"]) == []
    # the same records again change nothing; a changed one replaces its words
    assert corpus.upsert([GRAPHS, TREES]).unchanged == 2
    corpus.upsert([Paper("p-trees", "Boosted stumps", "Additive models.", ["Ada Lovelace"])])
    assert corpus.papers_with_words(["tabular"]) == []
    assert [pid for pid, _ in corpus.papers_with_words(["additive"])] == ["p-trees"]
    assert [pid for pid, _ in corpus.search_author(("lovelace",), 10, None)] == ["p-trees"]
    assert corpus.keywords.search([Term(("forests",))], 10) == []


def test_a_paper_updated_twice_in_one_load_keeps_only_its_last_words(tmp_path: Path) -> None:
    corpus = CorpusStore(tmp_path / "corpus.sqlite")
    corpus.upsert([GRAPHS, Paper("p-graphs", "Sheaf networks", "Cellular sheaves."),
                   Paper("p-graphs", "Hypergraph networks", "Hyperedges.")])
    assert corpus.papers_with_words(["sheaves"]) == []
    assert corpus.papers_with_words(["message"]) == []
    assert [pid for pid, _ in corpus.papers_with_words(["hyperedges"])] == ["p-graphs"]
    assert corpus.get("p-graphs") == Paper("p-graphs", "Hypergraph networks", "Hyperedges.")


def test_the_corpus_takes_at_most_three_bytes_per_byte_of_text(tmp_path: Path) -> None:
    """citeulike-a's papers with an abstract: the records (and their lookup tables) take at
    most 2 bytes on disk per byte of title and abstract, 3 with the keyword index."""
    records = [line for line in CITEULIKE.read_text(encoding="utf-8").split("\n") if line
               and json.loads(line).get("abstract")]
    source = tmp_path / "papers.jsonl"
    source.write_text("\n".join(records) + "\n", encoding="utf-8")
    corpus = CorpusStore(tmp_path / "data" / "corpus.sqlite")
    summary = jobs.ingest(corpus, [source], lambda rejection: None)
    assert summary.added == len(records) > 1500
    papers = corpus.get_many([json.loads(line)["id"] for line in records])
    text = sum(len(p.title.encode()) + len(p.abstract.encode()) for p in papers.values())
    corpus.close()
    stored = sum(p.stat().st_size for p in (tmp_path / "data").glob("corpus.sqlite*"))
    keyword_index = sum(p.stat().st_size for p in (tmp_path / "data" / "corpus-words").rglob("*")
                        if p.is_file())
    assert stored / text <= 2.0
    assert (stored + keyword_index) / text <= 3.0


def _corpus_after(tmp_path: Path, name: str, files: list[Path], readers: bool,
                  ) -> tuple[jobs.IngestSummary, list[str], list[tuple[str, bytes]]]:
    """Ingest the files into a fresh corpus: the summary, the rejections, and every row's
    id and record in the order stored."""
    corpus = CorpusStore(tmp_path / name / "corpus.sqlite")
    rejections: list[str] = []
    summary = jobs.ingest(corpus, files, lambda r: rejections.append(str(r)),
                          readers=readers)
    rows = corpus._db.execute("SELECT id, record FROM papers ORDER BY rowid").fetchall()
    corpus.close()
    return summary, rejections, rows


def test_files_read_in_child_processes_are_stored_as_read_in_this_one(tmp_path: Path) -> None:
    """Two JSON Lines files, cut in blocks between two readers (``reading.CHUNK`` lines
    each), with bad, blank and duplicate lines across the blocks: the same papers, the same
    rows in the same order, the same rejections at the same lines. With a CSV file among
    them one reader reads all, in order too."""
    lines = CITEULIKE.read_text(encoding="utf-8").split("\n")[:2600]
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    lines[999] = "{not json"  # the last line of the first block
    lines[1000] = ""  # the first of the second
    first.write_text("\n".join(lines[:2100]) + "\n", encoding="utf-8")
    again = json.loads(lines[5])  # the same id with another title: an update, stored once
    again["title"] = "A title changed since"
    second.write_text("\n".join([*lines[2100:], json.dumps(again), "[1, 2]"]) + "\n",
                      encoding="utf-8")
    csv_file = tmp_path / "more.csv"
    csv_file.write_text("id,title,abstract\ncsv-1,From a table,Rows of it.\n", encoding="utf-8")

    for files in ([first, second], [first, csv_file, second]):
        there = _corpus_after(tmp_path, f"child-{len(files)}", files, readers=True)
        here = _corpus_after(tmp_path, f"here-{len(files)}", files, readers=False)
        summary, rejections, rows = there
        assert (str(summary), rejections, rows) == (str(here[0]), here[1], here[2])
        assert rejections == [f"{first}:1000: not valid JSON: Expecting property name enclosed"
                              " in double quotes (column 2)",
                              f"{second}:502: expected a JSON object, got an array"]
        assert summary.updated == 1 and summary.added == len(rows) > 2500
        assert ("csv-1" in [pid for pid, _ in rows]) == (csv_file in files)

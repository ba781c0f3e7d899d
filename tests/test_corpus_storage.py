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
    TEXT (``text`` included), the FTS5 table keeping its own copy of the words."""
    corpus = CorpusStore(path)
    corpus.upsert([GRAPHS, TREES])
    corpus.close()
    with sqlite3.connect(path) as db:
        for paper in (GRAPHS, TREES):
            db.execute("UPDATE papers SET record = ? WHERE id = ?", (json.dumps(
                paper.to_dict(), ensure_ascii=False, sort_keys=True), paper.id))
        db.execute("DROP TABLE paper_words")
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
    # its words indexed again from the records (the old table's were not theirs)
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
    most 2 bytes on disk per byte of title and abstract, 3 with both full-text indexes."""
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
    with sqlite3.connect(tmp_path / "data" / "corpus.sqlite") as db:
        fts5 = db.execute("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 'paper_words%'"
                          ).fetchone()[0]
    stored = sum(p.stat().st_size for p in (tmp_path / "data").glob("corpus.sqlite*"))
    keyword_index = sum(p.stat().st_size for p in (tmp_path / "data" / "corpus-words").rglob("*")
                        if p.is_file())
    assert (stored - fts5) / text <= 2.0
    assert (stored + keyword_index) / text <= 3.0

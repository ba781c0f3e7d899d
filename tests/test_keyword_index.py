"""The keyword index (tantivy) beside the corpus: search's words are found in it, and it
follows every change of the corpus (added, updated, deleted papers; another store's
writes; a writer that stopped between the corpus's commit and the index's), and is built
again when missing or of another format."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from recommender.core.papers import Paper
from recommender.core.search_query import parse_query
from recommender.corpus.keyword_index import LONGEST_WORD, Term
from recommender.corpus.store import CorpusStore, UpsertCounts


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[CorpusStore]:
    store = CorpusStore(tmp_path / "corpus.sqlite")
    yield store
    store.close()


def found(corpus: CorpusStore, text: str, limit: int = 10, viewer: str | None = None,
          ) -> list[str]:
    return [pid for pid, _ in corpus.search_words(parse_query(text), limit, viewer)]


def test_the_index_is_kept_beside_the_corpus_and_finds_every_word(corpus: CorpusStore,
                                                                 tmp_path: Path) -> None:
    corpus.upsert([Paper("a", "Graph neural networks", "Message passing.", ["Ada Lovelace"],
                         year=2019),
                   Paper("b", "Federated learning", "Clients and graph data.", ["Alan Turing"],
                         year=2021)])
    assert corpus.keywords.folder == tmp_path / "corpus-words"
    assert found(corpus, "graph") == ["a", "b"]  # the title weighs more than the abstract
    assert found(corpus, "graph clients") == ["b"]  # every word
    assert found(corpus, "au:lovelace") == ["a"] and found(corpus, "ti:clients") == []
    assert found(corpus, '"message passing"') == ["a"] and found(corpus, '"passing message"') == []
    assert found(corpus, "graph year:2020-2022") == ["b"]
    assert corpus.search_author(("alan", "turing"), 10, None)[0][0] == "b"


def test_an_updated_paper_is_found_by_its_new_words_only(corpus: CorpusStore) -> None:
    corpus.upsert([Paper("a", "Alpha beta", "One.", year=2001)])
    corpus.upsert([Paper("a", "Gamma delta", "Two.", year=2005)])
    assert found(corpus, "alpha") == []
    assert found(corpus, "gamma") == ["a"]
    assert found(corpus, "gamma year:2001") == [] and found(corpus, "gamma year:2005") == ["a"]


def test_a_rejected_upload_leaves_the_index(corpus: CorpusStore) -> None:
    corpus.upload([Paper("u1", "Zebrafish ontogeny", "Fins.")], "ada", now=1.0)
    assert found(corpus, "zebrafish", viewer="ada") == ["u1"]
    assert found(corpus, "zebrafish", viewer="bob") == []  # pending: its uploader's only
    assert corpus.reject(["u1"]) == 1
    assert found(corpus, "zebrafish", viewer="ada") == []
    assert corpus.keywords.search([Term(("zebrafish",))], 10) == []  # gone, not just hidden


def test_what_a_writer_left_unwritten_is_written_when_the_corpus_is_opened(
        tmp_path: Path) -> None:
    """A writer that stops after the corpus's transaction, before writing the index (as
    ``_upsert`` alone does), leaves the rows recorded: the next store opened writes them."""
    path = tmp_path / "corpus.sqlite"
    first = CorpusStore(path)
    with first._db:
        first._upsert([Paper("a", "Capsule routing", "Dynamic.")], UpsertCounts())
    assert found(first, "capsule") == []  # in the corpus, not yet in the index
    first.close()
    second = CorpusStore(path)
    try:
        assert found(second, "capsule") == ["a"]
        assert second._db.execute("SELECT COUNT(*) FROM keyword_changes").fetchone()[0] == 0
    finally:
        second.close()


def test_another_stores_writes_are_seen_without_reopening(tmp_path: Path) -> None:
    path = tmp_path / "corpus.sqlite"
    reader, writer = CorpusStore(path), CorpusStore(path)
    try:
        assert found(reader, "capsule") == []
        writer.upsert([Paper("a", "Capsule routing", "Dynamic.")])
        assert found(reader, "capsule") == ["a"]
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize("damage", ["missing", "another format"])
def test_the_index_is_built_again_when_missing_or_of_another_format(
        tmp_path: Path, damage: str) -> None:
    path = tmp_path / "corpus.sqlite"
    corpus = CorpusStore(path)
    corpus.upsert([Paper("a", "Capsule routing", "Dynamic.")])
    corpus.close()
    folder = tmp_path / "corpus-words"
    if damage == "missing":
        shutil.rmtree(folder)
    else:
        (folder / "paperrec-format").write_text("0")
    corpus = CorpusStore(path)
    try:
        assert corpus.keywords.ready
        assert found(corpus, "capsule") == ["a"]
    finally:
        corpus.close()


def test_the_best_k_are_the_first_k_of_the_whole_ranking(corpus: CorpusStore) -> None:
    """The index keeps the best k as it goes (block-max WAND skips what cannot enter): the
    first k of a short list are those of the long one, and every hit has every word."""
    corpus.upsert([Paper(f"p{i}", " ".join(["graph"] * (1 + i % 4) + [f"topic{i % 7}"]),
                         " ".join(["graph", "learning"] * (i % 5) + ["filler"] * (i % 11)))
                   for i in range(300)])
    everything = found(corpus, "graph learning", limit=300)
    assert len(everything) == 240  # i % 5 == 0: no "learning"
    assert found(corpus, "graph learning", limit=7) == everything[:7]
    both = found(corpus, "topic3 graph", limit=300)
    assert sorted(both) == sorted(f"p{i}" for i in range(300) if i % 7 == 3)


def test_a_word_too_long_for_the_index_is_found_nowhere_and_breaks_nothing(
        corpus: CorpusStore) -> None:
    long = "x" * LONGEST_WORD
    corpus.upsert([Paper("a", f"Short title {long}", "Words.")])
    assert found(corpus, "short") == ["a"]
    assert found(corpus, long) == [] and found(corpus, f'"title {long}"') == []


def test_many_small_writes_are_merged_into_few_segments(corpus: CorpusStore) -> None:
    """Each write commits a segment; the merges it starts are let finish, so the index does
    not grow a segment a write (an ingest writes a thousand times at a million papers)."""
    for i in range(30):
        corpus.upsert([Paper(f"p{i}", f"Paper number {i}", "Words.")])
    assert corpus.keywords._current().num_segments < 10
    assert len(found(corpus, "paper number", limit=50)) == 30


def test_an_author_with_other_words_anywhere(corpus: CorpusStore) -> None:
    """``search_author(also=...)``: the author's papers with the other words, not the papers
    that only mention the name (search's "surname and a title word")."""
    corpus.upsert([Paper("by", "Graph kernels", "Kernels.", ["Alan Turing"]),
                   Paper("about", "Graph graph graph", "Turing machines on graphs.",
                         ["Ada Lovelace"]),
                   Paper("other", "Tape machines", "Tapes.", ["Alan Turing"])])
    assert found(corpus, "turing graph")[0] == "about"  # by words alone, the mention wins
    assert [p for p, _ in corpus.search_author(("turing",), 10, None, also=("graph",))] == [
        "by"]

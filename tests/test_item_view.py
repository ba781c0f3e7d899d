"""One paper as every surface shows it (recommender/ranking/item_view.py): known answers."""

from __future__ import annotations

import pytest

from recommender.core.papers import Paper
from recommender.ranking.item_view import (
    LEAD_CHARS,
    item_view,
    links,
    short_authors,
    split_abstract,
    standing,
)


@pytest.mark.parametrize(("names", "shown"), [
    ([], ""),
    (["Ada Lovelace"], "A. Lovelace"),
    (["Lovelace, Ada", "Grace Brewster Hopper"], "A. Lovelace, G. B. Hopper"),
    (["Ludwig van Beethoven", "Plato"], "L. van Beethoven, Plato"),
    (["A B", "C D", "E F", "G H"], "A. B, C. D, E. F et al."),
])
def test_authors_are_shortened_to_three_with_initials(names: list[str], shown: str) -> None:
    assert short_authors(names) == shown


def test_the_abstract_shows_two_sentences_then_more() -> None:
    text = ("We study lists. They are short. " * 3) + "The end."
    lead, rest = split_abstract(text)
    assert (lead, rest) == (text, "")  # short enough: all of it
    one = "A sentence about federated learning and its many clients " * 3 + "ends here."
    long = f"{one} {one} {one} {one}"
    lead, rest = split_abstract(long)
    assert lead == one and rest == f"{one} {one} {one}"  # two would pass LEAD_CHARS
    assert len(lead) <= LEAD_CHARS
    endless = "word " * 200
    lead, rest = split_abstract(endless)
    assert lead.endswith("word…") and len(lead) <= LEAD_CHARS and rest.startswith("…word")
    assert split_abstract("See e.g. Smith et al. for details. Then more.")[1] == ""


def test_abbreviations_do_not_end_a_sentence_but_a_word_ending_like_one_does() -> None:
    first = "Our bound, as in Smith et al. Jones, holds for graphs, e.g. Trees of any size."
    second = "We call it the TREq."  # "Eq." inside a word: a sentence does end there
    rest = "More words follow here " * 20 + "and end."
    assert split_abstract(f"{first} {second} {rest}") == (f"{first} {second}", rest)


def test_links_are_http_only_and_each_once() -> None:
    paper = Paper("arxiv:2401.01234", "T", url="https://arxiv.org/abs/2401.01234v2",
                  doi="10.1000/x y", code_urls=["https://github.com/a/b", "javascript:alert(1)"])
    assert links(paper) == [("arXiv", "https://arxiv.org/abs/2401.01234"),
                            ("PDF", "https://arxiv.org/pdf/2401.01234"),
                            ("DOI", "https://doi.org/10.1000/x%20y"),
                            ("Code", "https://github.com/a/b")]
    page = Paper("p1", "T", url="https://example.org/p.pdf", code_urls=["https://example.org/p.pdf"])
    assert links(page) == [("PDF", "https://example.org/p.pdf")]
    assert links(Paper("p2", "T", url="javascript:alert(1)")) == []


def test_the_view_has_year_category_and_state() -> None:
    paper = Paper("p", "Title", "One. Two.", ["Ada Lovelace"], date="2026-11-02",
                  categories=["cs.LG", "stat.ML"])
    view = item_view(paper, reason="liked by 2 readers", standing="among your top 5",
                     state="like")
    assert view.when == "2026 · Machine Learning (cs.LG)"
    assert (view.authors, view.lead, view.rest, view.state) == ("A. Lovelace", "One. Two.", "",
                                                               "like")
    assert item_view(Paper("q", "T", categories=["cs.XX"])).when == "cs.XX"  # no name: code


@pytest.mark.parametrize(("rank", "close", "personal", "words"), [
    (1, 0, True, "top match of your list"),
    (3, 3, True, "among your top 5 · close to 3 of your likes"),
    (7, 1, True, "among your top 10 · close to one of your likes"),
    (42, 0, True, "number 42 on your list"),
    (1, 0, False, "top of the broad picks"),
])
def test_standing_is_by_rank_and_close_likes(rank: int, close: int, personal: bool,
                                             words: str) -> None:
    assert standing(rank, close, personal) == words


def test_the_whole_abstract_is_the_abstract_however_its_lead_was_cut() -> None:
    for text in ("word " * 200, "One sentence. " * 40, "Short and whole."):
        view = item_view(Paper("pl-0000000000000001", "A title", text))
        assert view.abstract == " ".join(text.split()), view.abstract[:200]

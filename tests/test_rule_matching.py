"""Reader rules in the library: how values match papers, the corpus's lookups, and the
RuleStore against a real Redis."""

from __future__ import annotations

import sqlite3
import unicodedata
from pathlib import Path

import pytest
import redis

from recommender.core.errors import InvalidInput
from recommender.core.matching import (
    author_key,
    author_matches,
    category_key,
    category_matches,
    fold,
    keyword_matches,
    words,
)
from recommender.core.papers import Paper
from recommender.corpus.store import CorpusStore
from recommender.feedback.rules import MAX_RULES, RuleStore
from recommender.storage.redis_keys import RedisKeys

GRAPHS = Paper("p-graphs", "Graph-Neural Networks for Straße maps",
               "We study message passing on graphs.", ["Bengio, Yoshua", "Jürgen  Müller"],
               date="2026-11-01", categories=["cs.LG", "stat.ML"])


@pytest.mark.parametrize(("name", "key"), [
    ("Yoshua Bengio", "yoshua bengio"),
    ("Bengio, Yoshua", "yoshua bengio"),
    ("  yoshua   BENGIO ", "yoshua bengio"),
    ("Jürgen Müller", "jurgen muller"),
    ("Y. Bengio", "y bengio"),  # initials are not expanded
])
def test_author_names_are_compared_without_case_accents_or_order(name: str, key: str) -> None:
    assert author_key(name) == key


def test_authors_match_whole_names_only() -> None:
    assert author_matches(GRAPHS, author_key("Yoshua Bengio"))
    assert author_matches(GRAPHS, author_key("jurgen muller"))
    assert not author_matches(GRAPHS, author_key("Bengio"))
    assert not author_matches(GRAPHS, author_key("Samy Bengio"))


@pytest.mark.parametrize(("keyword", "matches"), [
    ("graph neural", True),  # punctuation between words does not matter
    ("NETWORKS", True),
    ("strasse", True),  # casefolded: ß is ss
    ("message passing", True),  # in the abstract
    ("graph", True),
    ("graphs", True),
    ("network", False),  # part of a word never matches
    ("passing on graphs we", False),
    ("maps we", False),  # a phrase does not run from the title into the abstract
])
def test_keywords_match_whole_words_in_title_or_abstract(keyword: str, matches: bool) -> None:
    assert keyword_matches(GRAPHS, words(keyword)) is matches


@pytest.mark.parametrize(("category", "matches"), [
    ("cs.LG", True),
    ("CS.lg", True),  # case aside
    (" stat.ML ", True),
    ("cs", False),  # an archive is not its categories
    ("cs.L", False),
    ("LG", False),
])
def test_categories_match_one_of_the_papers_categories_whole(category: str,
                                                             matches: bool) -> None:
    assert category_matches(GRAPHS, category_key(category)) is matches


def test_the_corpus_finds_papers_by_category_and_follows_updates(tmp_path: Path) -> None:
    corpus = CorpusStore(tmp_path / "corpus.sqlite")
    other = Paper("p-other", "Protein folding", "Kinetics.", categories=["q-bio.BM"], year=2020)
    corpus.upsert([GRAPHS, other])
    assert corpus.papers_in_category("cs.lg") == [("p-graphs", GRAPHS.day)]
    assert corpus.papers_in_category("cs.lg", since_day=GRAPHS.day + 1) == []
    assert [pid for pid, _ in corpus.papers_in_category("q-bio.bm")] == ["p-other"]
    corpus.upsert([Paper("p-graphs", "Trees", "On forests.", categories=["cs.DS"],
                         date="2026-11-01")])
    assert corpus.papers_in_category("cs.lg") == []
    assert [pid for pid, _ in corpus.papers_in_category("cs.ds")] == ["p-graphs"]


def test_a_corpus_written_before_category_rules_is_indexed_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "corpus.sqlite"
    CorpusStore(path).upsert([GRAPHS])
    with sqlite3.connect(path) as db:  # as an older paperrec left it: no category index
        db.execute("DROP TABLE paper_categories")
    reopened = CorpusStore(path)
    assert [pid for pid, _ in reopened.papers_in_category("stat.ml")] == ["p-graphs"]


def test_the_corpus_finds_papers_by_author_and_by_words_and_follows_updates(
    tmp_path: Path
) -> None:
    corpus = CorpusStore(tmp_path / "corpus.sqlite")
    other = Paper("p-other", "Protein folding", "Kinetics.", ["Samy Bengio"], year=2020)
    corpus.upsert([GRAPHS, other])
    assert corpus.papers_by_author("yoshua bengio") == [("p-graphs", GRAPHS.day)]
    assert corpus.papers_by_author("yoshua bengio", since_day=GRAPHS.day + 1) == []
    assert [pid for pid, _ in corpus.papers_with_words(["graph", "neural"])] == ["p-graphs"]
    assert corpus.papers_with_words(["network"]) == []
    assert [pid for pid, _ in corpus.papers_with_words(["protein"], since_day=0.0)] == ["p-other"]

    changed = Paper("p-graphs", "Trees", "On forests.", ["Ada Lovelace"], date="2026-11-01")
    corpus.upsert([changed])
    assert corpus.papers_by_author("yoshua bengio") == []
    assert corpus.papers_with_words(["graph"]) == []
    assert [pid for pid, _ in corpus.papers_by_author("ada lovelace")] == ["p-graphs"]
    assert [pid for pid, _ in corpus.papers_with_words(["forests"])] == ["p-graphs"]


def test_a_corpus_written_before_rules_is_indexed_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "corpus.sqlite"
    CorpusStore(path).upsert([GRAPHS])
    with sqlite3.connect(path) as db:  # as an older paperrec left it: no rule indexes
        db.execute("DROP TABLE paper_authors")
        db.execute("DROP TABLE paper_titles")
    reopened = CorpusStore(path)
    assert [pid for pid, _ in reopened.papers_by_author("jurgen muller")] == ["p-graphs"]
    assert [pid for pid, _ in reopened.papers_with_words(["message", "passing"])] == ["p-graphs"]


@pytest.fixture
def rules(redis_url: str, namespace: str) -> RuleStore:
    return RuleStore(redis.Redis.from_url(redis_url, decode_responses=True),
                     RedisKeys(namespace))


def test_a_rule_is_kept_once_and_the_other_action_replaces_it(rules: RuleStore) -> None:
    first = rules.put("ada", "follow", "author", "  Yoshua   Bengio ", now=100.0)
    assert (first.created, first.replaced, first.rule.value) == (True, False, "Yoshua Bengio")
    again = rules.put("ada", "follow", "author", "bengio, yoshua", now=200.0)
    assert (again.created, again.replaced) == (False, False)
    assert again.rule == first.rule  # unchanged, created_at included
    muted = rules.put("ada", "mute", "author", "Yoshua Bengio", now=300.0)
    assert (muted.created, muted.replaced) == (False, True)
    assert [(r.action, r.value) for r in rules.get("ada")] == [("mute", "Yoshua Bengio")]
    assert rules.remove("ada", "follow", "author", "Yoshua Bengio") is False
    assert rules.remove("ada", "mute", "author", "YOSHUA BENGIO") is True
    assert rules.get("ada") == []


def test_muting_and_following_name_the_rule_that_matches(rules: RuleStore) -> None:
    rules.put("ada", "follow", "keyword", "message passing", now=1.0)
    rules.put("ada", "mute", "keyword", "protein", now=2.0)
    rules.put("ada", "mute", "author", "Jürgen Müller", now=3.0)
    assert rules.following("ada", GRAPHS).label == "keyword: message passing"  # type: ignore[union-attr]
    assert rules.muting("ada", GRAPHS).label == "author: Jürgen Müller"  # type: ignore[union-attr]
    assert rules.muting("bob", GRAPHS) is None
    rules.put("bob", "mute", "category", "STAT.ml", now=4.0)
    assert rules.muting("bob", GRAPHS).label == "category: STAT.ml"  # type: ignore[union-attr]
    assert rules.remove("bob", "mute", "category", "stat.ML")


def test_values_and_the_number_of_rules_are_limited(rules: RuleStore) -> None:
    for value, words_ in (("", "letter or digit"), ("  -- ", "letter or digit"),
                          ("x" * 201, "at most 200")):
        with pytest.raises(InvalidInput, match=words_):
            rules.put("ada", "mute", "keyword", value, now=1.0)
    for n in range(MAX_RULES):
        rules.put("ada", "mute", "keyword", f"word{n}", now=float(n))
    with pytest.raises(InvalidInput, match=f"already has {MAX_RULES} rules"):
        rules.put("ada", "follow", "author", "Ada Lovelace", now=1000.0)
    assert rules.put("ada", "follow", "keyword", "word7", now=1000.0).replaced  # not a new one
    assert len(rules.get("ada")) == MAX_RULES


def test_ascii_text_folds_as_the_unicode_rule_says() -> None:
    text = "".join(map(chr, range(128))) + " Graph-Neural Networks, Bengio Y."
    slow = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    assert fold(text) == slow.casefold()

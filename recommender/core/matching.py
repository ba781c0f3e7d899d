"""How a reader's rules match papers: one normalisation of author names and of words.

Both sides of a comparison go through the same functions: the corpus indexes papers with
them (``CorpusStore.papers_by_author``, ``papers_with_words``) and the rule store checks
one paper with them (``RuleStore.muting``), so a lookup and a check cannot disagree.

- ``fold``: Unicode NFKD with the accents dropped, then casefold ("Müller" -> "muller",
  "Straße" -> "strasse").
- An **author** matches when one of ``paper.authors`` equals the rule's name after
  ``author_key``: folded, "." and "," read as spaces, whitespace collapsed, and
  "Last, First" read as "First Last" (one comma only). Initials are not expanded:
  "Y. Bengio" and "Yoshua Bengio" are different names.
- A **keyword** (one word or a phrase) matches when its words occur consecutively, as whole
  words, in the title or in the abstract: ``words`` splits a folded text into runs of
  letters and digits, so case, accents and the punctuation between words do not matter
  ("graph neural" matches "Graph-Neural"), but a part of a word never matches ("graph" does
  not match "graphs").
- A **category** (arXiv's ``cs.LG``, ``astro-ph.CO``; a venue where a source gives one)
  matches when one of ``paper.categories`` equals it after ``category_key``: folded,
  whitespace collapsed ("CS.lg" is "cs.LG").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from recommender.core.papers import Paper

_WORD = re.compile(r"[^\W_]+")  # a run of letters and digits (Unicode), after folding
_NAME_SEPARATORS = re.compile(r"[\s.,]+")
# Every ASCII character that is not a letter or a digit (what ``_WORD`` leaves out) to a space.
_ASCII_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})


def fold(text: str) -> str:
    """``text`` without accents and case: NFKD, combining marks dropped, casefolded."""
    if text.isascii():  # NFKD leaves ASCII as it is: the same answer, without a loop per
        return text.lower()  # character (a third of an ingest's time went there)
    return unicodedata.normalize("NFKD", text).translate(_COMBINING_MARKS).casefold()


class _CombiningMarks(dict[int, "int | None"]):
    """For ``str.translate``: a combining character (``unicodedata.combining``) to nothing,
    any other to itself, each worked out the first time it is met."""

    def __missing__(self, code: int) -> int | None:
        self[code] = None if unicodedata.combining(chr(code)) else code
        return self[code]


_COMBINING_MARKS = _CombiningMarks()


def display_form(value: str) -> str:
    """A value as the reader wrote it, with its ends stripped and its spaces collapsed."""
    return " ".join(value.split())


def words(text: str) -> list[str]:
    """The folded words of ``text``, in order."""
    folded = fold(text)
    if folded.isascii():  # the same words, a third of the time (most abstracts are ASCII)
        return folded.translate(_ASCII_SEPARATORS).split()
    return _WORD.findall(folded)


def author_key(name: str) -> str:
    """The form author names are compared in ("Bengio, Yoshua" -> "yoshua bengio")."""
    folded = fold(name)
    last, comma, first = folded.partition(",")
    if comma and "," not in first and first.strip():
        folded = f"{first} {last}"
    return " ".join(part for part in _NAME_SEPARATORS.split(folded) if part)


def category_key(category: str) -> str:
    """The form categories are compared in ("cs.LG" -> "cs.lg")."""
    return " ".join(fold(category).split())


def category_matches(paper: Paper, key: str) -> bool:
    """Whether one of the paper's categories is the category ``key`` (``category_key``)."""
    return any(category_key(c) == key for c in paper.categories)


def has_phrase(text_words: Sequence[str], phrase: Sequence[str]) -> bool:
    """Whether ``phrase`` occurs as consecutive words of ``text_words``."""
    n = len(phrase)
    if not n:
        return False
    return any(list(text_words[i : i + n]) == list(phrase)
               for i in range(len(text_words) - n + 1) if text_words[i] == phrase[0])


def author_matches(paper: Paper, key: str) -> bool:
    """Whether one of the paper's authors is the author ``key`` (made by ``author_key``)."""
    return any(author_key(name) == key for name in paper.authors)


def keyword_matches(paper: Paper, phrase: Sequence[str]) -> bool:
    """Whether the words ``phrase`` (made by ``words``) occur in the title or the abstract."""
    return has_phrase(words(paper.title), phrase) or has_phrase(words(paper.abstract), phrase)

"""A search text as a researcher writes it, read into words, phrases and fields.

    federated learning "noisy labels" au:hinton ti:graph year:2019-2021

- free words (``federated``, ``learning``): the paper must have each of them, in its title,
  abstract or authors, and they are what the meaning of the query is read from;
- ``"quoted words"``: consecutive words (a phrase), anywhere;
- ``au:name`` / ``author:name``, ``ti:word`` / ``title:word``: a word, or a quoted phrase
  (``au:"geoffrey hinton"``), in that field only;
- ``year:2020``, ``year:2019-2021`` (also ``2019..2021``, ``-2015``, ``2020-``): the
  publication year.

Words are ``matching.words`` of the text: folded runs of letters and digits, the same form
the corpus indexes, so punctuation and a query language's syntax characters (FTS5's,
tantivy's) never reach the index as syntax: it is asked with built queries, never parsed.
The parser never raises: a text is cut to ``MAX_QUERY_CHARS``, terms past
``MAX_TERMS`` are dropped, an unclosed quote runs to the end, an unknown ``field:`` and a
year that is not one are read as words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from recommender.core.matching import words

MAX_QUERY_CHARS = 1000
MAX_TERMS = 32  # words, phrases and field terms together; a phrase counts once
MAX_PHRASE_WORDS = 16
MIN_YEAR, MAX_YEAR = 1000, 2999
FIELDS = {"au": "author", "author": "author", "ti": "title", "title": "title", "year": "year"}

# One token: an optional ``field:``, then a quoted run (closed or not) or a bare run.
_TOKEN = re.compile(r'(?:([A-Za-z]+):)?(?:"([^"]*)"?|(\S+))')
_YEAR_RANGE = re.compile(r"^(\d{4})?\s*(?:-|\.\.|–)\s*(\d{4})?$|^(\d{4})$")

# Words that say nothing about a paper: left out of the words every hit must have (a title
# still matches them exactly, and the meaning is read from the whole text).
STOPWORDS = frozenset((
    "a", "about", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have",
    "how", "in", "into", "is", "it", "its", "of", "on", "or", "our", "that", "the", "their",
    "these", "this", "to", "via", "we", "what", "when", "which", "with", "without"))

Phrase = tuple[str, ...]


@dataclass(frozen=True)
class SearchQuery:
    """A parsed search text (``parse_query``)."""

    text: str  # the free text (words and phrases, as written): what the meaning is read from
    words: tuple[str, ...] = ()  # every free word, in order (stop words too)
    phrases: tuple[Phrase, ...] = ()
    title: tuple[Phrase, ...] = ()
    authors: tuple[Phrase, ...] = ()
    years: tuple[int, int] | None = None
    truncated: bool = False  # the text was cut, or terms were dropped
    free_words: tuple[str, ...] = field(default=())  # free words and phrase words, in order

    @property
    def required_words(self) -> tuple[str, ...]:
        """The free words a keyword hit must have: without the stop words, unless only stop
        words were written."""
        kept = tuple(w for w in self.words if w not in STOPWORDS)
        return kept or self.words

    @property
    def fielded(self) -> bool:
        """Whether the query names an author or a title term (they filter the hits)."""
        return bool(self.title or self.authors)

    @property
    def empty(self) -> bool:
        return not (self.words or self.phrases or self.title or self.authors)

    def highlight_words(self, where: str) -> frozenset[str]:
        """The words to mark in a field ("title", "abstract", "authors")."""
        found = {w for w in self.words if w not in STOPWORDS or w in self.required_words}
        found.update(w for phrase in self.phrases for w in phrase)
        if where == "title":
            found.update(w for phrase in self.title for w in phrase)
        if where == "authors":
            found.update(w for phrase in self.authors for w in phrase)
        return frozenset(found)


def parse_query(raw: object) -> SearchQuery:
    """Read a search text; never raises (anything not a string reads as an empty query)."""
    text = raw if isinstance(raw, str) else ""
    truncated = len(text) > MAX_QUERY_CHARS
    text = text[:MAX_QUERY_CHARS]
    free: list[str] = []
    free_text: list[str] = []
    phrases: list[Phrase] = []
    title: list[Phrase] = []
    authors: list[Phrase] = []
    years: tuple[int, int] | None = None
    terms = 0
    for match in _TOKEN.finditer(text):
        name, quoted, bare = match.group(1), match.group(2), match.group(3)
        kind = FIELDS.get((name or "").lower())
        value = quoted if quoted is not None else (bare or "")
        if kind is None and name:  # an unknown field: its name is a word as well
            value = f"{name} {value}"
        if kind == "year":
            found = _years(value)
            if found is not None:
                years = found
                continue
            kind = None  # "year:soon" is two words
            value = f"{name} {value}"
        found_words = tuple(words(value))[:MAX_PHRASE_WORDS]
        if not found_words:
            continue
        if terms >= MAX_TERMS:
            truncated = True
            break
        if kind == "title":
            title.append(found_words)
        elif kind == "author":
            authors.append(found_words)
        elif quoted is not None and len(found_words) > 1:
            phrases.append(found_words)
            free_text.append(" ".join(value.split()))
        else:
            room = MAX_TERMS - terms
            if len(found_words) > room:
                truncated = True
            free.extend(found_words[:room])
            free_text.append(" ".join(value.split()) if len(found_words) <= room
                             else " ".join(found_words[:room]))
            terms += min(len(found_words), room) - 1
        terms += 1
    free_words = tuple(free) + tuple(w for phrase in phrases for w in phrase)
    return SearchQuery(" ".join(free_text), tuple(free), tuple(phrases), tuple(title),
                       tuple(authors), years, truncated, free_words)


def _years(value: str) -> tuple[int, int] | None:
    found = _YEAR_RANGE.match(value.strip())
    if found is None:
        return None
    first, last, single = found.groups()
    if single:
        low = high = int(single)
    elif first is None and last is None:
        return None
    else:
        low = int(first) if first else MIN_YEAR
        high = int(last) if last else MAX_YEAR
    if not (MIN_YEAR <= low <= MAX_YEAR and MIN_YEAR <= high <= MAX_YEAR):
        return None
    return (min(low, high), max(low, high))

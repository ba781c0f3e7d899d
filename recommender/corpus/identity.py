"""When two records are the same paper: the keys the corpus stores each paper under.

A paper arrives more than once: as arXiv versions, from two sources with the same DOI, or as
a conference version of an arXiv preprint. ``keys`` gives the identifiers a record carries,
strongest first, each normalised so that spelling differences do not matter:

- ``arxiv``: the arXiv id without its version ("2401.01234v2" -> "2401.01234"; old-style
  "hep-th/9901001" too), from the paper id (with or without an "arxiv:" prefix) or its URL
  (arxiv.org/abs/..., /pdf/...);
- ``doi``: the DOI, lower-cased, without "doi:" or a doi.org URL around it, from the record's
  ``doi`` or its URL;
- ``title``: failing those, the title's words (``core.matching.words``: case, accents and
  punctuation do not matter) with the first author's surname. Only records with authors get
  one: two different papers may share a title ("Introduction"), rarely a title and a first
  author.

``CorpusStore.upsert`` looks a record's arxiv and doi keys up first, then its title key;
a match makes the record a duplicate of the stored paper (see there for what it changes).
"""

from __future__ import annotations

import re

from recommender.core.matching import author_key, words
from recommender.core.papers import Paper

ARXIV_ID = re.compile(r"(\d{4}\.\d{4,5}|[a-z][a-z-]*(?:\.[a-z]{2})?/\d{7})(v\d+)?")
_ARXIV_URL = re.compile(r"arxiv\.org/(?:abs|pdf)/([^?#\s]+?)(?:\.pdf)?(?:[?#].*)?$", re.I)
_DOI = re.compile(r"10\.\d{4,9}/\S+")
_DOI_URL = re.compile(r"(?:dx\.)?doi\.org/(10\.\d{4,9}/\S+)$", re.I)


def arxiv_id(value: str) -> str | None:
    """The arXiv id in an id or URL, without its version; None when there is none."""
    value = value.strip()
    found = _ARXIV_URL.search(value)
    if found:
        value = found.group(1)
    elif value.lower().startswith("arxiv:"):
        value = value[len("arxiv:"):]
    match = ARXIV_ID.fullmatch(value.lower())
    return match.group(1) if match else None


def doi(value: str) -> str | None:
    """The DOI in a DOI, "doi:..." or doi.org URL, lower-cased; None when there is none."""
    value = value.strip()
    found = _DOI_URL.search(value)
    if found:
        value = found.group(1)
    elif value.lower().startswith("doi:"):
        value = value[len("doi:"):].strip()
    return value.lower() if _DOI.fullmatch(value) else None


def keys(paper: Paper) -> list[tuple[str, str]]:
    """(scheme, value) of every identifier the record carries, strongest first."""
    found: list[tuple[str, str]] = []
    for candidate in (paper.id, paper.url or ""):
        arxiv = arxiv_id(candidate)
        if arxiv and ("arxiv", arxiv) not in found:
            found.append(("arxiv", arxiv))
    for candidate in (paper.doi or "", paper.url or ""):
        value = doi(candidate)
        if value and ("doi", value) not in found:
            found.append(("doi", value))
    title = " ".join(words(paper.title))
    surname = author_key(paper.authors[0]).split(" ")[-1] if paper.authors else ""
    if title and surname:
        found.append(("title", f"{title}|{surname}"))
    return found

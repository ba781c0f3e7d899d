"""Search: words through the corpus's full-text index, meaning through the vector index, one
list out of both.

``Recommender.search`` finds the candidates (``CorpusStore.search_title``, ``search_author``,
``search_words``; the index's nearest papers to the query's embedding) and ``fuse`` orders
them:

1. a paper whose title is the query's words, exactly, comes first;
2. then the papers of an author the query names (``hinton``, ``geoffrey hinton``);
3. then the rest by reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009) of the word
   ranking (BM25) and the meaning ranking (cosine): ``sum 1 / (RRF_K + rank)`` over the two
   lists. RRF needs no calibration between BM25 scores and cosines, which live on unrelated
   scales; ``RRF_K = 60`` is the paper's constant: large enough that the first few ranks of
   one list do not swamp the other (rank 1 is worth 1/61, rank 10 1/70), so a paper both
   lists find beats one found by a single list near its top.

The relevance cut: a word hit has every word of the query (stop words aside) and every field
term, so it is kept; a paper only the meaning found must come within ``SEMANTIC_BAR`` of the
best similarity of the query (relative: cosines of a short query run lower than a long
one's) and above the collection's noise floor (``ContentStatistics.noise_floor``: how similar
two unrelated papers look, so a query about nothing in the corpus finds nothing), and a query
with ``au:`` or ``ti:`` terms keeps only papers that have them. A
narrow query therefore returns few papers, and a query nothing matches returns none.

``matches`` gives where the query's words are in a paper (character spans of the title,
abstract and authors), for the API and for the pages to highlight.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import Field

from recommender.core.ids import PaperId
from recommender.core.matching import fold
from recommender.core.papers import Paper
from recommender.core.search_query import SearchQuery

RRF_K = 60
SEMANTIC_BAR = 0.8  # a meaning-only hit's similarity, relative to the query's best
SEMANTIC_POOL = 100  # nearest papers asked of the vector index
WORD_POOL = 200  # best BM25 hits asked of the full-text index
AUTHOR_POOL = 50
MAX_NAME_WORDS = 4  # a query of more words is not read as an author's name
QUERY_VECTORS = 2048  # search texts whose embedding is kept (``Recommender.meaning``)

Found = Literal["title", "author", "words", "meaning"]
_TOKEN = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Match:
    """Where the query's words are in one field of a paper."""

    field: Literal["title", "abstract", "authors"]
    spans: Annotated[list[tuple[int, int]], Field(description=(
        "[start, end) character offsets (Unicode code points) of each matched word in the "
        "field's text (for authors, in the name `item`)."))]
    item: Annotated[int | None, Field(description=(
        "For authors: which name of the paper's `authors` list."))] = None


@dataclass(frozen=True)
class SearchHit:
    """One search result, as the API serves it."""

    paper_id: PaperId
    title: str
    score: Annotated[float, Field(description=(
        "The fused score (reciprocal rank fusion of the word and meaning rankings); exact "
        "title and author matches come first whatever their score."))]
    reason: Annotated[str, Field(description="Why it was found, in words.")]
    found_by: Annotated[list[Found], Field(description=(
        "How it was found: its title is the query, an author the query names, the query's "
        "words (full-text index), its meaning (vector index)."))] = field(default_factory=list)
    matches: Annotated[list[Match], Field(description=(
        "Where the query's words are in the paper, to highlight."))] = field(
        default_factory=list)
    similarity: Annotated[float | None, Field(description=(
        "Cosine of the query and the paper in the content space, when the meaning search "
        "reached it."))] = None


@dataclass(frozen=True)
class Candidates:
    """What each index found for a query, best first."""

    title: list[str] = field(default_factory=list)
    author: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    meaning: list[tuple[str, float]] = field(default_factory=list)  # (id, cosine)


def fuse(found: Candidates, k: int, *, meaning_only: bool = True, noise_floor: float = 0.0,
         ) -> list[tuple[str, float, list[Found], float | None]]:
    """(paper id, fused score, how it was found, cosine) of the first ``k`` results (module
    docstring); ``meaning_only``: whether papers only the meaning search found may be kept
    (not when the query names fields), and then only above ``noise_floor`` as well."""
    scores: dict[str, float] = {}
    how: dict[str, list[Found]] = {}
    for rank, pid in enumerate(found.words, 1):
        scores[pid] = scores.get(pid, 0.0) + 1.0 / (RRF_K + rank)
        how.setdefault(pid, []).append("words")
    best = found.meaning[0][1] if found.meaning else 0.0
    bar = max(SEMANTIC_BAR * best, noise_floor)
    cosine: dict[str, float] = {}
    for rank, (pid, similarity) in enumerate(found.meaning, 1):
        cosine[pid] = similarity
        if pid not in scores and not (meaning_only and similarity > 0 and similarity >= bar):
            continue
        scores[pid] = scores.get(pid, 0.0) + 1.0 / (RRF_K + rank)
        how.setdefault(pid, []).append("meaning")
    tier: dict[str, int] = {}
    for level, ids in ((1, found.author), (2, found.title)):
        for pid in ids:
            tier[pid] = level
            scores.setdefault(pid, 0.0)
            how.setdefault(pid, []).insert(0, "title" if level == 2 else "author")
    ranked = sorted(scores, key=lambda pid: (-tier.get(pid, 0), -scores[pid], pid))[:k]
    return [(pid, round(scores[pid], 6), how[pid], cosine.get(pid)) for pid in ranked]


def spans(text: str, wanted: frozenset[str]) -> list[tuple[int, int]]:
    """[start, end) of each word of ``text`` whose folded form is in ``wanted``."""
    if not wanted:
        return []
    # An ASCII run of letters and digits folds to its lower case, one word: a set look-up,
    # without ``fold`` and a regex per word (ten abstracts a search: milliseconds otherwise).
    return [(m.start(), m.end()) for m in _TOKEN.finditer(text)
            if (m.group().lower() in wanted if m.group().isascii()
                else _folded_in(m.group(), wanted))]


def _folded_in(token: str, wanted: frozenset[str]) -> bool:
    folded = _TOKEN.findall(fold(token))
    return bool(folded) and all(part in wanted for part in folded)


def matches(paper: Paper, query: SearchQuery) -> list[Match]:
    """Where the query's words are in the paper's title, abstract and authors."""
    found = []
    title = spans(paper.title, query.highlight_words("title"))
    if title:
        found.append(Match("title", title))
    abstract = spans(paper.abstract, query.highlight_words("abstract"))
    if abstract:
        found.append(Match("abstract", abstract))
    names = query.highlight_words("authors")
    for i, name in enumerate(paper.authors):
        marked = spans(name, names)
        if marked:
            found.append(Match("authors", marked, i))
    return found


def reason(how: list[Found], paper: Paper | None, query: SearchQuery) -> str:
    """Why a paper was found, in words."""
    if "title" in how:
        return "its title is your search"
    if ("author" in how or query.authors) and paper is not None:
        wanted = query.highlight_words("authors") if query.authors else frozenset(query.words)
        names = [a for a in paper.authors if spans(a, wanted)]
        if names:
            return f"by {names[0]}"
    parts = []
    if "words" in how:
        parts.append("has your words")
    if "meaning" in how:
        parts.append("close in meaning")
    return " and ".join(parts) or "matches your search"


def snippet(text: str, marked: list[tuple[int, int]], width: int = 240,
            ) -> tuple[str, list[tuple[int, int]]]:
    """A window of about ``width`` characters of ``text`` around its first marked word (its
    start when none is), cut at spaces, with the spans moved into it; "…" where it is cut."""
    if len(text) <= width:
        return text, marked
    centre = marked[0][0] if marked else 0
    start = max(0, centre - width // 3)
    if start:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < centre else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start else end
    prefix = "…" if start else ""
    window = prefix + text[start:end] + ("…" if end < len(text) else "")
    shift = len(prefix) - start
    return window, [(s + shift, e + shift) for s, e in marked if s >= start and e <= end]

"""One paper as every surface shows it: the list, search and paper pages, the digest email
(HTML and text), the Atom and JSON feeds, and the API's items.

A reader judges a paper without opening it: its title, its authors shortened (three, then
"et al."), the year and the arXiv category by name, the first sentences of the abstract (the
rest behind "more"), its links (arXiv, PDF, DOI, its page, code; only http(s) addresses, by
``web_url``), why it is on the list, where it stands there in words that mean the same for 38
papers and for a million (``standing``), and what the reader did with it before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import quote

from recommender.core.papers import Paper, web_url
from recommender.corpus.arxiv_categories import category_name
from recommender.corpus.identity import arxiv_id

AUTHORS_SHOWN = 3  # then "et al."
LEAD_CHARS = 300  # the abstract's first sentences, up to about this many characters
LEAD_SENTENCES = 2
# The reader's own past action: liked, disliked, set aside ("Not now", or shown before and
# so set aside from the list), or none.
State = Literal["like", "dislike", "set-aside", "none"]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|et al|vs|cf|etc|Fig|Eq|Sec|resp)\.$")
ABBREVIATION_CHARS = 8  # the longest above ("et al.") and more
_TRAILING = ",;:-–—([{'\""
_PARTICLES = {"van", "von", "de", "der", "den", "da", "di", "du", "le", "la"}


@dataclass(frozen=True)
class ItemView:
    """One paper, ready to show (plain text: each surface escapes it its own way)."""

    id: str
    title: str
    authors: str = ""  # shortened: "A. Turing, G. Hopper, E. Noether et al."
    when: str = ""  # "2026 · Machine Learning (cs.LG)"
    lead: str = ""  # the abstract's first sentences
    rest: str = ""  # the rest of it (behind "more")
    links: list[tuple[str, str]] = field(default_factory=list)  # (label, http(s) address)
    url: str | None = None  # the paper's own page elsewhere (arXiv, DOI, its URL), if any
    reason: str = ""
    standing: str = ""  # e.g. "among your top 5 · close to 3 of your likes"
    state: State = "none"
    # For "more from this author" and "mute this category" (service/templates/_rules.html).
    first_author: str = ""
    categories: tuple[str, ...] = ()

    @property
    def abstract(self) -> str:
        """The whole abstract again (a lead cut inside a sentence and its rest join without
        the "…" each carries)."""
        if self.lead.endswith("…") and self.rest.startswith("…"):
            return f"{self.lead[:-1]} {self.rest[1:]}"
        return f"{self.lead} {self.rest}".strip()


def item_view(paper: Paper, *, reason: str = "", standing: str = "",
              state: State = "none", title: str | None = None) -> ItemView:
    """``paper`` as every surface shows it, with why it is listed and the reader's past
    action on it."""
    lead, rest = split_abstract(paper.abstract)
    found = links(paper)
    return ItemView(paper.id, title or paper.title, short_authors(paper.authors),
                    when_line(paper), lead, rest, found, found[0][1] if found else None,
                    reason, standing, state, paper.authors[0] if paper.authors else "",
                    tuple(paper.categories))


def short_authors(names: list[str], most: int = AUTHORS_SHOWN) -> str:
    """Up to ``most`` names with first initials ("Ada Lovelace" -> "A. Lovelace", "Lovelace,
    Ada" too), then "et al."."""
    shown = [_initialled(name) for name in names[:most] if name.strip()]
    return ", ".join(shown) + (" et al." if len(names) > most else "")


def _initialled(name: str) -> str:
    name = " ".join(name.split())
    if "," in name:  # "Family, Given"
        last, _, first = name.partition(",")
        name = f"{first.strip()} {last.strip()}".strip()
    *given, family = name.split(" ")
    # "Ludwig van Beethoven" -> "L. van Beethoven": particles stay with the family name.
    while given and given[-1].lower() in _PARTICLES:
        family = f"{given.pop()} {family}"
    initials = [f"{word[0]}." for word in given if word[:1].isalpha()]
    return " ".join([*initials, family])


def when_line(paper: Paper) -> str:
    """The year and the arXiv category by name (the first one, the primary), as known."""
    year = year_of(paper)
    parts = [str(year)] if year else []
    if paper.categories:
        parts.append(category_name(paper.categories[0]))
    return " · ".join(parts)


def year_of(paper: Paper) -> int | None:
    """Its year, or its date's."""
    if paper.year:
        return paper.year
    return int(paper.date[:4]) if paper.date and paper.date[:4].isdigit() else None


def venue(paper: Paper) -> str | None:
    """The arXiv category by name (papers carry no venue field otherwise)."""
    return category_name(paper.categories[0]) if paper.categories else None


def split_abstract(text: str, limit: int = LEAD_CHARS,
                   sentences: int = LEAD_SENTENCES) -> tuple[str, str]:
    """(the first ``sentences`` sentences up to about ``limit`` characters, cut at a word
    when one sentence is longer; the rest)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text, ""
    cut = count = 0
    for end in _SENTENCE_END.finditer(text):  # up to the limit only: a page shows ten
        at = end.start()
        if at > limit:
            break
        # An abbreviation ends just before: look at those few characters, not the text so
        # far (what ``\b`` sees before them is still the text's).
        if _ABBREVIATION.search(text, max(0, at - ABBREVIATION_CHARS), at):
            continue
        count += 1
        if count > sentences:
            break
        cut = at
    if cut:
        return text[:cut], text[cut:].strip()
    head = text[: limit - 1]
    if text[limit - 1] != " " and " " in head:  # do not end in the middle of a word
        head = head.rsplit(" ", 1)[0]
    head = head.rstrip().rstrip(_TRAILING).rstrip()
    return head + "…", "…" + text[len(head):].strip()


def links(paper: Paper) -> list[tuple[str, str]]:
    """(label, address) of the paper's links: arXiv and its PDF, DOI, its own URL, code.
    Only http(s) addresses (``web_url``: a ``javascript:`` URL in an ingested file never
    becomes a link), each once."""
    found: list[tuple[str, str]] = []
    arxiv = arxiv_id(paper.id) or (arxiv_id(paper.url) if paper.url else None)
    if arxiv:
        found += [("arXiv", f"https://arxiv.org/abs/{arxiv}"),
                  ("PDF", f"https://arxiv.org/pdf/{arxiv}")]
    if paper.doi:
        found.append(("DOI", f"https://doi.org/{quote(paper.doi, safe='/')}"))
    if paper.url and not arxiv:
        found.append(("PDF" if paper.url.lower().endswith(".pdf") else "Page", paper.url))
    found += [("Code", url) for url in paper.code_urls]
    seen: set[str] = set()
    safe = []
    for label, url in found:
        checked = web_url(url)
        if checked and checked not in seen:
            seen.add(checked)
            safe.append((label, checked))
    return safe


def standing(rank: int, close_likes: int, personalized: bool) -> str:
    """Where the paper stands on the reader's list, by rank, not by a probability that reads
    as failure in a small collection: "top match of your list", "among your top 5", and how
    many of the reader's likes it is close to."""
    if personalized:
        place = ("top match of your list" if rank == 1 else
                 "among your top 5" if rank <= 5 else
                 "among your top 10" if rank <= 10 else f"number {rank} on your list")
    else:
        place = ("top of the broad picks" if rank == 1 else
                 "among the top 5 broad picks" if rank <= 5 else
                 "among the top 10 broad picks" if rank <= 10 else f"broad pick number {rank}")
    if close_likes <= 0:
        return place
    likes = "one of your likes" if close_likes == 1 else f"{close_likes} of your likes"
    return f"{place} · close to {likes}"

"""A user's papers as a file a reference manager imports: BibTeX, RIS or CSL-JSON (the other
way from ``library``). Each entry carries the title, authors, year (and date), DOI, the arXiv
eprint fields, the URL and the abstract, and is keyed by the paper's stored id (BibTeX key,
RIS ``ID``, CSL ``id``), so importing the file into paperrec finds the very same papers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import bibtexparser
from bibtexparser.model import Entry, Field
from bibtexparser.writer import BibtexFormat
from pylatexenc.latexencode import unicode_to_latex

from recommender.core.papers import Paper
from recommender.corpus import identity
from recommender.corpus.library import CONTENT_TYPES, LibraryFormat

FILE_EXTENSIONS: dict[LibraryFormat, str] = {"bibtex": "bib", "ris": "ris", "csl-json": "json",
                                             "ids": "txt"}


def write_library(papers: Sequence[Paper], fmt: LibraryFormat) -> str:
    """The papers as a file of this format (``ids``: one arXiv id, DOI or paper id a line)."""
    if fmt == "bibtex":
        return _bibtex(papers)
    if fmt == "ris":
        return "\n".join(_ris(paper) for paper in papers)
    if fmt == "csl-json":
        return json.dumps([_csl(paper) for paper in papers], ensure_ascii=False, indent=2) + "\n"
    return "".join(f"{_arxiv(p) or p.doi or p.id}\n" for p in papers)


def content_type(fmt: LibraryFormat) -> str:
    return CONTENT_TYPES[fmt] + "; charset=utf-8"


def _arxiv(paper: Paper) -> str | None:
    return next((value for scheme, value in identity.keys(paper) if scheme == "arxiv"), None)


# --- BibTeX -------------------------------------------------------------------------------
def _bibtex(papers: Sequence[Paper]) -> str:
    library = bibtexparser.Library()
    for paper in papers:
        arxiv = _arxiv(paper)
        fields = [Field("title", "{" + _latex(paper.title) + "}")]
        if paper.authors:
            fields.append(Field("author", " and ".join(_latex(a) for a in paper.authors)))
        if paper.year:
            fields.append(Field("year", str(paper.year)))
        if paper.date:
            fields.append(Field("date", paper.date))
        if paper.doi:
            fields.append(Field("doi", paper.doi))
        if arxiv:
            fields += [Field("eprint", arxiv), Field("archivePrefix", "arXiv")]
        if paper.categories and arxiv:
            fields.append(Field("primaryClass", paper.categories[0]))
        if paper.url:
            fields.append(Field("url", paper.url))
        if paper.abstract:
            fields.append(Field("abstract", _latex(paper.abstract)))
        library.add(Entry("article" if paper.doi and not arxiv else "misc",
                          _bibtex_key(paper.id), fields))
    layout = BibtexFormat()
    layout.indent = "  "
    layout.block_separator = "\n"
    return bibtexparser.write_string(library, bibtex_format=layout)


def _bibtex_key(paper_id: str) -> str:
    """The stored id, with what BibTeX keys may not hold (none of our ids have it) replaced."""
    return re.sub(r"[\s,{}()=\"#%'\\]", "_", paper_id)


def _latex(text: str) -> str:
    """Unicode as LaTeX (ü as {\\"u}), and the characters BibTeX treats as markup escaped."""
    return unicode_to_latex(text, non_ascii_only=False, unknown_char_warning=False,
                            replacement_latex_protection="braces-all")


# --- RIS ----------------------------------------------------------------------------------
def _ris(paper: Paper) -> str:
    arxiv = _arxiv(paper)
    lines = [("TY", "JOUR" if paper.doi and not arxiv else "GEN"), ("ID", paper.id),
             ("TI", paper.title)]
    lines += [("AU", author) for author in paper.authors]
    if paper.year:
        lines.append(("PY", str(paper.year)))
    if paper.date:
        lines.append(("DA", paper.date.replace("-", "/")))
    if paper.doi:
        lines.append(("DO", paper.doi))
    if arxiv:
        lines.append(("T2", f"arXiv:{arxiv}"))
    if paper.url:
        lines.append(("UR", paper.url))
    if paper.abstract:
        lines.append(("AB", " ".join(paper.abstract.split())))
    lines.append(("ER", ""))
    return "".join(f"{tag}  - {' '.join(value.split())}".rstrip() + "\n" for tag, value in lines)


# --- CSL-JSON -------------------------------------------------------------------------------
def _csl(paper: Paper) -> dict[str, object]:
    arxiv = _arxiv(paper)
    item: dict[str, object] = {"id": paper.id, "type": "article" if arxiv else
                               "article-journal", "title": paper.title}
    if paper.authors:
        item["author"] = [_csl_name(a) for a in paper.authors]
    if paper.date:
        item["issued"] = {"date-parts": [[int(part) for part in paper.date[:10].split("-")]]}
    elif paper.year:
        item["issued"] = {"date-parts": [[paper.year]]}
    if paper.doi:
        item["DOI"] = paper.doi
    if arxiv:
        item["number"] = f"arXiv:{arxiv}"
        item["publisher"] = "arXiv"
    if paper.url:
        item["URL"] = paper.url
    if paper.abstract:
        item["abstract"] = paper.abstract
    return item


def _csl_name(name: str) -> dict[str, str]:
    parts = name.split()
    if len(parts) < 2:
        return {"literal": name}
    return {"family": parts[-1], "given": " ".join(parts[:-1])}

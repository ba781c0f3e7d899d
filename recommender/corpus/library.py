"""A researcher's library, as reference managers export it: BibTeX, RIS, CSL-JSON, or a plain
list of arXiv ids and DOIs. Pure parsing (no corpus, no feedback): ``parse_library`` turns a
file into ``LibraryEntry`` records, each a ``Paper`` with a deterministic id, and the entries
it cannot read into ``LibraryRejection``s with the reason; one bad entry never stops the rest.

What is read from each entry: the title (LaTeX decoded: ``{\\"u}`` is ü, braces go), the
abstract, the authors ("Last, First" and "First Last" alike, given as "First Last"), the year
and date, the DOI, the arXiv id (BibTeX ``eprint`` with ``archivePrefix = {arXiv}``, a
``journal = {arXiv preprint arXiv:...}``, an arxiv.org URL, a 10.48550/arXiv DOI) and the URL.
The id of a paper new to the corpus: its arXiv id (as ``paperrec fetch arxiv`` stores
it), else ``doi:<doi>`` (when that is a valid paper id), else ``lib-`` and a hash of the
title and first author. ``source_id`` is the entry's own key (BibTeX key, RIS ``ID``, CSL
``id``): an export of paperrec writes the stored paper id there, so a paper without arXiv
id, DOI or authors is found again.

What reading a file may cost is bounded: its entries are counted (at most MAX_ENTRIES)
before any is read, each field has its limit, checked before its LaTeX is decoded, and a
BibTeX file has a budget of LaTeX to decode and of text to read once its @string macros are
expanded (``latex_text``); past it, the entries from there on are rejected with the reason.
The service reads an upload in a process of its own, within a deadline and a memory cap
(``bounded_parse``).

The writers (the other way) are in ``library_writers``.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import bibtexparser
import rispy
from bibtexparser.middlewares.names import split_multiple_persons_names
from bibtexparser.model import DuplicateBlockKeyBlock, Entry

from recommender.core.errors import InvalidInput, TooLarge, UnsupportedFormat
from recommender.core.ids import PAPER_ID_PATTERN
from recommender.core.matching import words
from recommender.core.papers import Paper
from recommender.corpus import identity
from recommender.corpus.latex_text import Budget, BudgetSpent, plain_text

LibraryFormat = Literal["bibtex", "ris", "csl-json", "ids"]
FORMATS: tuple[LibraryFormat, ...] = ("bibtex", "ris", "csl-json", "ids")
MAX_ENTRIES = 20_000
# What one entry may hold: a real title, abstract or author list is well within these; past
# them an entry is rejected with the reason (reported, not stored), and in BibTeX before its
# LaTeX is decoded, so one field cannot cost a worker seconds.
MAX_TITLE = 1_000
MAX_ABSTRACT = 20_000
MAX_AUTHORS = 500
MAX_AUTHOR = 300
CONTENT_TYPES: dict[LibraryFormat, str] = {
    "bibtex": "application/x-bibtex",
    "ris": "application/x-research-info-systems",
    "csl-json": "application/vnd.citationstyles.csl+json",
    "ids": "text/plain",
}
EXTENSIONS: dict[str, LibraryFormat] = {".bib": "bibtex", ".bibtex": "bibtex", ".ris": "ris",
                                        ".json": "csl-json", ".txt": "ids"}
# Also accepted as the content type of a file (what browsers and curl guess).
_ALSO: dict[str, LibraryFormat] = {"text/x-bibtex": "bibtex", "application/x-bibtex-text-file":
                                   "bibtex", "text/x-research-info-systems": "ris",
                                   "application/json": "csl-json",
                                   "application/citeproc+json": "csl-json"}
_ARXIV_IN_TEXT = re.compile(r"arxiv[:\s]*(\d{4}\.\d{4,5}(?:v\d+)?|[a-z-]+(?:\.[a-z]{2})?/\d{7})",
                            re.I)
ARXIV_IN_TEXT = _ARXIV_IN_TEXT  # "arXiv:2101.00001" in a note or an "extra" field
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.I)
_YEAR = re.compile(r"\b(1[5-9]\d\d|2\d\d\d)\b")
# Where bibtexparser may start a block (an entry, @string, @comment, @preamble): counted before
# it reads the file, which costs it 1.5 GB and 14 s for 10 MB of short blocks.
_BLOCK_START = re.compile(r"@\w*[ \t]*[{(]")
_ENCLOSING_MARK = re.compile(r'(?<!\\)[{}"]')


@dataclass
class LibraryEntry:
    """One readable entry: where it is in the file and the paper it describes."""

    label: str  # the entry's key, else its title, for the answer
    index: int  # 1-based position among the file's entries
    line: int | None  # 1-based line it starts on (BibTeX, RIS, id lists)
    paper: Paper
    source_id: str | None = None  # the entry's own key (see the module docstring)


@dataclass(frozen=True)
class LibraryRejection:
    label: str
    index: int
    line: int | None
    reason: str


@dataclass
class ParsedLibrary:
    entries: list[LibraryEntry] = field(default_factory=list)
    rejected: list[LibraryRejection] = field(default_factory=list)


def format_for(content_type: str | None = None, filename: str | None = None) -> LibraryFormat:
    """The format a content type names, else the file name's extension; UnsupportedFormat
    (415) otherwise."""
    media = (content_type or "").split(";")[0].strip().lower()
    suffix = "." + filename.rsplit(".", 1)[-1].lower() if filename and "." in filename else ""
    if suffix in EXTENSIONS and media in ("", "application/octet-stream", "text/plain"):
        return EXTENSIONS[suffix]  # a file's generic type: its extension says more
    for fmt, known in CONTENT_TYPES.items():
        if media == known:
            return fmt
    if media in _ALSO:
        return _ALSO[media]
    named = media or (f"a {suffix} file" if suffix else "no content type")
    raise UnsupportedFormat(
        f"cannot read {named}: send BibTeX ({CONTENT_TYPES['bibtex']}, .bib), RIS "
        f"({CONTENT_TYPES['ris']}, .ris), CSL-JSON ({CONTENT_TYPES['csl-json']}, .json) or "
        f"a list of arXiv ids and DOIs, one a line (text/plain, .txt)")


def parse_library(text: str, fmt: LibraryFormat) -> ParsedLibrary:
    """Every entry of the file; TooLarge beyond MAX_ENTRIES, InvalidInput when nothing in it
    can be read as the format."""
    if not text.strip():
        raise InvalidInput("the file is empty: send a BibTeX, RIS or CSL-JSON file, or arXiv "
                           "ids and DOIs one a line")
    return {"bibtex": _bibtex, "ris": _ris, "csl-json": _csl_json, "ids": _ids}[fmt](text)


def _at_most_max_entries(total: int) -> None:
    """TooLarge past MAX_ENTRIES; each format counts its entries before it reads any."""
    if total > MAX_ENTRIES:
        raise TooLarge(f"the file has {total} entries; import at most {MAX_ENTRIES} at once "
                       "(split the file)")


def paper_from(label: str, index: int, line: int | None, *, title: str = "", abstract: str = "",
               authors: list[str] | None = None, year: int | None = None,
               date: str | None = None, doi: str | None = None, arxiv: str | None = None,
               url: str | None = None, source_id: str | None = None,
               ) -> LibraryEntry | LibraryRejection:
    """An entry from its fields (already plain text), or why it cannot be one."""
    title, abstract = _plain(title), _plain(abstract)
    too_long = overflow(title, abstract, authors or [])
    if too_long:
        return LibraryRejection(label[:MAX_AUTHOR], index, line, too_long)
    found_doi = identity.doi(doi) if doi else None
    arxiv_doi = _ARXIV_DOI.match(found_doi or "")
    found_arxiv = next((a for a in (identity.arxiv_id(v) for v in (
        arxiv or "", arxiv_doi.group(1) if arxiv_doi else "", url or "")) if a), None)
    if not title and not found_arxiv and not found_doi:
        return LibraryRejection(label, index, line, "no title, arXiv id or DOI to find the "
                                "paper by")
    names = [n for n in (_person(a) for a in authors or []) if n]
    if found_arxiv:
        paper_id = found_arxiv  # as the arXiv harvest stores it: its update is this paper
    elif found_doi and PAPER_ID_PATTERN.fullmatch(f"doi:{found_doi}"):
        paper_id = f"doi:{found_doi}"
    else:
        basis = "|".join([" ".join(words(title)), *(names[:1]), found_doi or ""])
        paper_id = "lib-" + hashlib.sha256(basis.encode("utf-8")).hexdigest()[:16]
    if year is None and date:
        year = _year(date)
    if found_arxiv and not url:
        url = f"https://arxiv.org/abs/{found_arxiv}"
    paper = Paper(id=paper_id, title=title, abstract=abstract, authors=names, year=year,
                  date=date if date and re.fullmatch(r"\d{4}-\d\d-\d\d", date) else None,
                  url=url or None, doi=found_doi)
    return LibraryEntry(label or title[:80], index, line, paper, source_id)


def overflow(title: str, abstract: str, authors: list[str]) -> str | None:
    """Why an entry's fields are more than an entry may hold (the limits above), or None."""
    if len(title) > MAX_TITLE:
        return f"the title is longer than {MAX_TITLE:,} characters"
    if len(abstract) > MAX_ABSTRACT:
        return f"the abstract is longer than {MAX_ABSTRACT:,} characters"
    if len(authors) > MAX_AUTHORS:
        return f"more than {MAX_AUTHORS} authors"
    if any(len(name) > MAX_AUTHOR for name in authors):
        return f"an author's name is longer than {MAX_AUTHOR} characters"
    return None


def _add(parsed: ParsedLibrary, result: LibraryEntry | LibraryRejection) -> None:
    if isinstance(result, LibraryEntry):
        parsed.entries.append(result)
    else:
        parsed.rejected.append(result)


# --- BibTeX -----------------------------------------------------------------------------
def _bibtex(text: str) -> ParsedLibrary:
    # Every block bibtexparser gives up on comes back as a rejection in our words, with its
    # line; its own warning (other line numbers) would only repeat it.
    logging.getLogger("bibtexparser").setLevel(logging.ERROR)
    starts = sum(1 for _ in _BLOCK_START.finditer(text))
    if starts > 2 * MAX_ENTRIES:  # room for as many @string and @comment blocks as entries
        raise TooLarge(f"the file has {starts} BibTeX blocks (@entries, @string, @comment); "
                       f"import at most {MAX_ENTRIES} entries at once (split the file)")
    # Without bibtexparser's middlewares: they would expand every @string macro and copy every
    # value up front (a 150,000-character macro named in 20,000 entries: 3 GB, 7 minutes);
    # _Fields does it for the fields read, within the budget.
    library = bibtexparser.parse_string(text, parse_stack=[])
    strings = {string.key.lower(): string.value for string in library.strings}
    blocks: list[tuple[int, Entry | None, str, str]] = []  # line, entry, key, problem
    for found in library.entries:
        blocks.append((found.start_line or 0, found, found.key, ""))
    for block in library.failed_blocks:
        kept = getattr(block, "ignore_error_block", None)
        if isinstance(block, DuplicateBlockKeyBlock) and isinstance(kept, Entry):
            blocks.append((block.start_line or 0, kept, kept.key, ""))  # read it all the same
        else:
            named = re.match(r"\s*@\w+\s*[{(]\s*([^,\s]*)", block.raw or "")
            blocks.append((block.start_line or 0, None, named.group(1) if named else "",
                           _bibtex_problem(block)))
    if not blocks and text.strip() and "@" in text:
        raise InvalidInput("no BibTeX entry could be read from the file")
    _at_most_max_entries(len(blocks))
    parsed = ParsedLibrary()
    budget = Budget()
    for index, (start, entry, key, problem) in enumerate(sorted(blocks, key=lambda b: b[0]), 1):
        line = start + 1
        if entry is None:
            parsed.rejected.append(LibraryRejection(key, index, line, problem))
            continue
        try:
            _add(parsed, _bibtex_entry(_Fields(entry, strings, budget), key, index, line,
                                       budget))
        except BudgetSpent as spent:
            parsed.rejected.append(LibraryRejection(key[:MAX_AUTHOR], index, line,
                                                    spent.reason))
    return parsed


class _Fields:
    """An entry's fields as read: a @string macro's value for its name, without the braces or
    quotes around the whole value, each one's characters taken from the budget."""

    def __init__(self, entry: Entry, strings: dict[str, str], budget: Budget) -> None:
        self.raw = {f.key.lower(): f.value.strip() for f in entry.fields}
        self.strings = strings
        self.budget = budget

    def __getitem__(self, name: str) -> str:
        value = self.raw.get(name, "")
        if value and value[0] not in '{"' and not value.isdigit():
            value = self.strings.get(value.lower(), value).strip()
        self.budget.take_read(len(value))
        return _unenclosed(value)


def _unenclosed(value: str) -> str:
    """The value inside the braces or quotes that enclose all of it; not those of a
    concatenation, ``{a} # {b}`` or ``"a" # "b"``."""
    if len(value) < 2 or value[0] + value[-1] not in ('{}', '""'):
        return value
    braces, depth = value[0] == "{", 0
    for mark in _ENCLOSING_MARK.finditer(value, 1, len(value) - 1):
        if mark.group() == "{":
            depth += 1
        elif mark.group() == "}":
            if braces and not depth:  # the opening brace closes before the end
                return value
            depth = max(depth - 1, 0)
        elif not braces and not depth:  # a quote ends the opening one before the end
            return value
    return value[1:-1]


def _bibtex_entry(fields: _Fields, key: str, index: int, line: int,
                  budget: Budget) -> LibraryEntry | LibraryRejection:
    """One entry, its fields' limits checked before their LaTeX is decoded (``latex_text``:
    BudgetSpent when the file has had all it may)."""
    budget.check()
    title, abstract = fields["title"], fields["abstract"]
    authors = split_multiple_persons_names(fields["author"])
    too_long = overflow(title, abstract, authors)
    if too_long:
        return LibraryRejection(key[:MAX_AUTHOR], index, line, too_long)
    eprint = fields["eprint"]
    prefix = (fields["archiveprefix"] or fields["eprinttype"]).lower()
    arxiv = eprint if eprint and (prefix == "arxiv" or not prefix) else ""
    # Only searched for an arXiv id: the braces go, no LaTeX is decoded.
    journal, note = (fields[name].replace("{", "").replace("}", "").strip()
                     for name in ("journal", "note"))
    in_text = _ARXIV_IN_TEXT.search(journal or note)
    return paper_from(
        key, index, line, title=plain_text(title, budget),
        abstract=plain_text(abstract, budget), authors=[plain_text(a, budget) for a in authors],
        year=_year(fields["year"]), date=fields["date"] or None, doi=fields["doi"],
        arxiv=arxiv or (in_text.group(1) if in_text else ""), url=fields["url"] or None,
        source_id=key)


def _bibtex_problem(block: Any) -> str:
    error = getattr(block, "error", None)
    reason = str(getattr(error, "abort_reason", "") or error or "").strip()
    return "malformed BibTeX entry: " + (reason.splitlines()[0] if reason else "unreadable")


# --- RIS ----------------------------------------------------------------------------------
_RIS_TAG = re.compile(r"^([A-Z][A-Z0-9])  -( (.*))?$")


def _ris_records(text: str) -> Iterator[tuple[int, list[str]]]:
    """(first line, lines) of each record, from its TY line to its ER line, one record at a
    time (10 MB of short lines, as a list of records, would take a gigabyte)."""
    start, lines = 0, list[str]()
    for number, raw in enumerate(io.StringIO(text, newline=None), 1):
        line = raw.rstrip("\n").lstrip("\ufeff")
        if line.startswith("TY  -"):
            if lines:
                yield start, lines
            start, lines = number, [line]
        elif lines:
            lines.append(line)
            if line.startswith("ER  -"):
                yield start, lines
                lines = []
        elif line.strip():
            yield number, [line]  # outside a record: reported as one
    if lines:
        yield start, lines


def _ris(text: str) -> ParsedLibrary:
    parsed = ParsedLibrary()
    if text.strip() and not any(lines[0].startswith("TY  -") for _, lines in
                                _ris_records(text)):
        raise InvalidInput("no RIS record (a TY line to an ER line) could be read from the file")
    _at_most_max_entries(sum(1 for _ in _ris_records(text)))
    for index, (line, lines) in enumerate(_ris_records(text), 1):
        label = next((m.group(3) or "" for m in map(_RIS_TAG.match, lines)
                      if m and m.group(1) in ("ID", "TI", "T1")), "")
        if not lines[0].startswith("TY  -") or not lines[-1].startswith("ER  -"):
            why = "outside a record (before TY)" if not lines[0].startswith("TY  -") else \
                "a record without its closing ER line"
            parsed.rejected.append(LibraryRejection(label, index, line,
                                                    f"malformed RIS: {why}"))
            continue
        try:
            record = rispy.loads("\n".join(lines) + "\n")[0]
        except Exception as exc:  # rispy's errors are plain exceptions
            parsed.rejected.append(LibraryRejection(label, index, line,
                                                    f"malformed RIS record: {exc}"))
            continue
        date = str(record.get("date") or record.get("publication_year") or "")
        urls = record.get("urls") or []
        _add(parsed, paper_from(
            str(record.get("id") or label), index, line,
            title=str(record.get("title") or record.get("primary_title") or ""),
            abstract=str(record.get("abstract") or record.get("notes_abstract") or ""),
            authors=list(record.get("authors") or record.get("first_authors") or []),
            year=_year(str(record.get("year") or date)), date=_iso(date),
            doi=str(record.get("doi") or ""), url=urls[0] if urls else None,
            arxiv=next((m.group(1) for m in (_ARXIV_IN_TEXT.search(str(v)) for v in (
                record.get("secondary_title"), record.get("journal_name"),
                record.get("notes"))) if m), ""),
            source_id=str(record.get("id") or "") or None))
    return parsed


# --- CSL-JSON -------------------------------------------------------------------------------
# CSL-JSON's fields read as text: strings (a number too, as some exports write an id or number).
_CSL_TEXT_FIELDS = ("id", "title", "abstract", "DOI", "URL", "number", "container-title",
                    "archive_location", "note")


def _csl_json(text: str) -> ParsedLibrary:
    try:
        items = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"the file is not valid JSON (CSL-JSON is a JSON array of items): "
                           f"{exc}") from None
    except RecursionError:  # arrays in arrays, thousands deep: no CSL item is
        raise InvalidInput("the file's JSON is nested too deep to be CSL-JSON (a JSON array "
                           "of items)") from None
    if not isinstance(items, list):
        raise InvalidInput("CSL-JSON is a JSON array of items; the file holds "
                           f"a {type(items).__name__}")
    _at_most_max_entries(len(items))
    parsed = ParsedLibrary()
    for index, item in enumerate(items, 1):
        if not isinstance(item, dict):
            parsed.rejected.append(LibraryRejection("", index, None,
                                                    "not a CSL-JSON item (a JSON object)"))
            continue
        wrong = [name for name in _CSL_TEXT_FIELDS
                 if item.get(name) is not None and not isinstance(item[name], str | int)]
        if wrong:  # a title that is an object would be stored as its Python repr
            parsed.rejected.append(LibraryRejection(
                str(item.get("id") or "") if isinstance(item.get("id"), str | int) else "",
                index, None, f"{', '.join(wrong)} must be text, as CSL-JSON has it"))
            continue
        people = item.get("author")
        authors = [str(person.get("literal") or " ".join(
            str(person[part]) for part in ("given", "family") if person.get(part)))
            for person in (people if isinstance(people, list) else [])
            if isinstance(person, dict)]
        issued = item.get("issued")
        parts = issued.get("date-parts") if isinstance(issued, dict) else None
        first = parts[0] if isinstance(parts, list) and parts else None
        numbers = [int(p) for p in (first if isinstance(first, list) else [])
                   if isinstance(p, int | str) and str(p).isdigit() and len(str(p)) <= 4]
        if numbers and not 1 <= numbers[0] <= 9999:
            numbers = []
        date = (f"{numbers[0]:04d}-{numbers[1]:02d}-{numbers[2]:02d}" if len(numbers) == 3
                and 1 <= numbers[1] <= 12 and 1 <= numbers[2] <= 31 else None)
        texts = " ".join(str(item.get(k) or "") for k in ("number", "container-title",
                                                          "archive_location", "note"))
        in_text = _ARXIV_IN_TEXT.search(texts)
        source = item.get("id")
        _add(parsed, paper_from(
            str(source or item.get("title") or ""), index, None,
            title=str(item.get("title") or ""), abstract=str(item.get("abstract") or ""),
            authors=authors, year=numbers[0] if numbers else None, date=date,
            doi=str(item.get("DOI") or ""), url=str(item.get("URL") or "") or None,
            arxiv=in_text.group(1) if in_text else "",
            source_id=str(source) if source is not None else None))
    return parsed


# --- a plain list of ids ------------------------------------------------------------------
def _ids(text: str) -> ParsedLibrary:
    """One arXiv id, DOI or URL of either a line; blank lines and lines from # are skipped."""
    _at_most_max_entries(sum(1 for _ in _id_lines(text)))
    parsed = ParsedLibrary()
    for index, (number, value) in enumerate(_id_lines(text), 1):
        arxiv, found_doi = identity.arxiv_id(value), identity.doi(value)
        if not arxiv and not found_doi:
            parsed.rejected.append(LibraryRejection(value[:80], index, number,
                                                    "not an arXiv id or a DOI"))
            continue
        _add(parsed, paper_from(value, index, number, arxiv=arxiv, doi=found_doi))
    return parsed


def _id_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, value) of each line with a value, one line at a time: 10 MB of short
    lines as a list of strings would take 500 MB."""
    for number, raw in enumerate(io.StringIO(text, newline=None), 1):
        value = raw.split("#", 1)[0].strip().lstrip("\ufeff")
        if value:
            yield number, value


# --- fields -------------------------------------------------------------------------------
def _person(name: str) -> str:
    """"Last, First" (or "Last, Jr, First") as "First Last"; other forms as given."""
    name = " ".join(name.replace("{", "").replace("}", "").split())
    parts = [p.strip() for p in name.split(",")]
    if len(parts) == 2 and all(parts):
        return f"{parts[1]} {parts[0]}"
    if len(parts) == 3 and all(parts):
        return f"{parts[2]} {parts[0]} {parts[1]}"
    return name


def _year(value: str) -> int | None:
    found = _YEAR.search(value or "")
    return int(found.group(1)) if found else None


def _iso(value: str) -> str | None:
    """A RIS date (2024/03/05/, 2024-03-05) as ISO, when it names a day."""
    found = re.match(r"^(\d{4})[/-](\d{1,2})[/-](\d{1,2})", value or "")
    return (f"{found.group(1)}-{int(found.group(2)):02d}-{int(found.group(3)):02d}"
            if found else None)


def _plain(value: str) -> str:
    return " ".join((value or "").split())

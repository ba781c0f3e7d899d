"""Reading paper files: paper lists, JSONL (arXiv metadata snapshots included) and CSV.

``read_papers`` yields a ``Paper`` for each good record and a ``Rejection`` for each bad one, so one
broken line never stops a file. A problem with the whole file (missing, a directory, empty,
binary) is a single rejection at line 0 and nothing else. JSONL and CSV are streamed line by line;
a paper list is read whole.
"""

from __future__ import annotations

import codecs
import csv
import datetime as dt
import itertools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from recommender.core.errors import InvalidInput
from recommender.core.ids import validate_paper_id
from recommender.core.papers import Paper, Rejection
from recommender.corpus.paperlist import (
    clean_display_text,
    content_id,
    derive_title,
    find_urls,
    normalise_whitespace,
    parse_paper_list,
)

SNIFF_BYTES = 8192
JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson", ".json"})
NOT_TEXT = "file is not text (binary content; expected paper list, JSONL or CSV)"

_ARXIV_ID = re.compile(r"(?:\d{4}\.\d{4,5}|[a-z][a-z-]*(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_AUTHOR_SEPARATOR = re.compile(r"\s*(?:[,;]|\band\b)\s*")
_CATEGORY_SEPARATOR = re.compile(r"[\s,;]+")
_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "true/false", type(None): "null", dict: "an object"}


def read_papers(path: str | Path) -> Iterator[Paper | Rejection]:
    """Papers and rejections from a paper list, JSONL or CSV file (format sniffed if unclear)."""
    path = Path(path)
    source = str(path)
    problem = _file_problem(path)
    if problem:
        yield Rejection(source, 0, problem)
        return
    file_format = _detect_format(path)
    if file_format == "json-array":
        yield Rejection(source, 0, "file is one JSON array; expected JSON Lines (an object a line)")
    elif file_format == "jsonl":
        yield from _read_jsonl(path, source)
    elif file_format == "csv":
        yield from _read_csv(path, source)
    else:
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError:
            yield Rejection(source, 0, NOT_TEXT)
            return
        yield from parse_paper_list(text, source)


def paper_from_record(record: Mapping[str, Any]) -> Paper:
    """A ``Paper`` from JSONL/CSV fields (arXiv snapshot names accepted); ``InvalidInput`` if bad.

    ``text`` keeps title and abstract as given (whitespace normalised); the display title,
    abstract and author names have markdown/LaTeX markup removed. An abstract without a title
    gets a derived title; a record without an id gets a content-derived "pl-..." id.
    """
    title = _text_field(record, "title")
    abstract = _text_field(record, "abstract")
    if not title and not abstract:
        raise InvalidInput("paper has no title or abstract")
    text = f"{title}\n{abstract}".strip()
    paper_id = _paper_id(record.get("id"), text)
    date = _date(record)
    year = _year(record.get("year"))
    url = _text_field(record, "url")
    if not url and _ARXIV_ID.fullmatch(paper_id):
        url = f"https://arxiv.org/abs/{paper_id}"
    return Paper(
        id=paper_id,
        title=clean_display_text(title) if title else derive_title(abstract),
        abstract=clean_display_text(abstract),
        authors=_authors(record.get("authors")),
        year=year if year is not None or date is None else int(date[:4]),
        date=date,
        url=url or None,
        doi=_text_field(record, "doi") or None,
        code_urls=find_urls(abstract),
        categories=_categories(record.get("categories")),
        text=text,
    )


def _file_problem(path: Path) -> str | None:
    """Why the file cannot be read as papers at all, or None."""
    if not path.exists():
        return "no such file"
    if path.is_dir():
        return "is a directory, not a file"
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
            if b"\0" in head:
                return NOT_TEXT
            try:
                codecs.getincrementaldecoder("utf-8")().decode(head, final=len(head) < SNIFF_BYTES)
            except UnicodeDecodeError:
                return NOT_TEXT
            chunk = head.removeprefix(codecs.BOM_UTF8)
            while chunk and not chunk.strip():
                chunk = handle.read(1 << 20)
            return None if chunk else "file is empty"
    except OSError as exc:
        return f"cannot read file: {exc.strerror or exc}"


def _detect_format(path: Path) -> str:
    """"jsonl", "json-array", "csv" or "paperlist": by extension, else by the first line."""
    with path.open("rb") as handle:
        head = handle.read(SNIFF_BYTES).decode("utf-8-sig", errors="replace").lstrip()
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return "json-array" if head.startswith("[") else "jsonl"
    if suffix == ".csv":
        return "csv"
    if head.startswith("{"):
        return "jsonl"
    first_line = head.split("\n", 1)[0]
    columns = {name.strip().lower() for name in next(csv.reader([first_line]), [])}
    return "csv" if "," in first_line and columns & {"title", "abstract"} else "paperlist"


def _read_jsonl(path: Path, source: str) -> Iterator[Paper | Rejection]:
    with path.open("rb") as handle:
        for number, raw_line in enumerate(handle, start=1):
            item = jsonl_item(raw_line, source, number)
            if item is not None:
                yield item


def is_jsonl(path: Path) -> bool:
    """Whether ``read_papers`` reads the file as JSON Lines (a readable file, one object a
    line): the format ``jsonl_blocks`` splits."""
    return not _file_problem(path) and _detect_format(path) == "jsonl"


def jsonl_blocks(path: Path, size: int) -> Iterator[tuple[int, list[bytes]]]:
    """The lines of a JSON Lines file in blocks of ``size``: (number of the block's first
    line, its lines), for readers that each take a share of the blocks (``jsonl_item``)."""
    with path.open("rb") as handle:
        first = 1
        while lines := list(itertools.islice(handle, size)):
            yield first, lines
            first += len(lines)


def jsonl_item(raw_line: bytes, source: str, number: int) -> Paper | Rejection | None:
    """The paper (or rejection) of one line of a JSON Lines file; None for a blank line."""
    try:
        line = raw_line.decode("utf-8-sig")
    except UnicodeDecodeError:
        return Rejection(source, number, "line is not valid UTF-8 text")
    if not line.strip():
        return None
    try:
        record = json.loads(line.rstrip())
    except json.JSONDecodeError as exc:
        return Rejection(source, number, f"not valid JSON: {exc.msg} (column {exc.colno})")
    if not isinstance(record, dict):
        return Rejection(source, number, f"expected a JSON object, got {_json_type(record)}")
    return _paper_or_rejection(record, source, number)


def _read_csv(path: Path, source: str) -> Iterator[Paper | Rejection]:
    """CSV with a header row; a record's line is where it starts, even with quoted newlines."""
    with path.open("rb") as handle:
        reader = csv.reader((raw_line.decode("utf-8-sig") for raw_line in handle), strict=True)
        last_line = 0
        try:
            header = next((row for row in reader if any(cell.strip() for cell in row)), [])
            columns = [name.strip().lower() for name in header]
            if not {"title", "abstract"} & set(columns):
                found = ", ".join(repr(name) for name in columns)
                yield Rejection(source, reader.line_num,
                                f"CSV header has no 'title' or 'abstract' column (found {found})")
                return
            last_line = reader.line_num
            for row in reader:
                start, last_line = last_line + 1, reader.line_num
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) > len(columns):
                    reason = f"row has {len(row)} fields but the header has {len(columns)}"
                    yield Rejection(source, start, reason)
                    continue
                yield _paper_or_rejection(dict(zip(columns, row, strict=False)), source, start)
        except UnicodeDecodeError:
            reason = "not valid UTF-8 text; stopped reading here"
            yield Rejection(source, reader.line_num + 1, reason)
        except csv.Error as exc:
            yield Rejection(source, last_line + 1, f"not valid CSV ({exc}); stopped reading here")


def _paper_or_rejection(record: Mapping[str, Any], source: str, line: int) -> Paper | Rejection:
    try:
        return paper_from_record(record)
    except InvalidInput as exc:
        return Rejection(source, line, exc.message)


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _text_field(record: Mapping[str, Any], key: str) -> str:
    value = record.get(key)
    if _is_missing(value):
        return ""
    if not isinstance(value, str):
        raise InvalidInput(f"field '{key}' must be a string, got {_json_type(value)}")
    return normalise_whitespace(value)


def _paper_id(value: Any, text: str) -> str:
    if _is_missing(value):
        return content_id(text)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidInput(f"field 'id' must be a string or an integer, got {_json_type(value)}")
    return validate_paper_id(str(value).strip())


def _year(value: Any) -> int | None:
    """A whole number (or numeric string); 0 or negative (e.g. -1) is a common "unknown"."""
    if _is_missing(value):
        return None
    number = value.strip() if isinstance(value, str) else value
    if isinstance(number, str) and re.fullmatch(r"-?[0-9]+", number) or (
            isinstance(number, float) and number.is_integer()):
        number = int(number)
    if isinstance(number, int) and not isinstance(number, bool):
        if number <= 0:
            return None
        if 1000 <= number <= 9999:
            return number
    raise InvalidInput(f"field 'year' must be a four-digit year, got {value!r}")


def _date(record: Mapping[str, Any]) -> str | None:
    """ISO date from "date" or (arXiv snapshots) "update_date"."""
    for key in ("date", "update_date"):
        value = record.get(key)
        if _is_missing(value):
            continue
        if isinstance(value, str) and _ISO_DATE.fullmatch(value.strip()):
            try:
                return dt.date.fromisoformat(value.strip()).isoformat()
            except ValueError:
                pass
        raise InvalidInput(f"field '{key}' must be a date written YYYY-MM-DD, got {value!r}")
    return None


def _authors(value: Any) -> list[str]:
    """A list of names, or one string "A. Smith, B. Jones and C. Wu" split into names."""
    if _is_missing(value):
        return []
    if isinstance(value, str):
        names = _AUTHOR_SEPARATOR.split(normalise_whitespace(value))
    elif isinstance(value, list) and all(isinstance(name, str) for name in value):
        names = value
    else:
        raise InvalidInput("field 'authors' must be a string or a list of strings")
    return [clean_display_text(name) for name in names if name.strip()]


def _categories(value: Any) -> list[str]:
    """A list, or one string of categories separated by spaces ("cs.LG stat.ML")."""
    if _is_missing(value):
        return []
    if isinstance(value, str):
        return [category for category in _CATEGORY_SEPARATOR.split(value) if category]
    if isinstance(value, list) and all(isinstance(category, str) for category in value):
        return [category.strip() for category in value if category.strip()]
    raise InvalidInput("field 'categories' must be a string or a list of strings")

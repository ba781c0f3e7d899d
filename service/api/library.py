"""A researcher's library in and out: import a reference manager's export as likes, export
the liked papers as a file a reference manager imports (recommender.corpus.library,
recommender.feedback.library)."""

from __future__ import annotations

import time
from typing import Any, Literal

from flask import Response, g, request
from pydantic import Field
from werkzeug.exceptions import RequestEntityTooLarge

from recommender.core.errors import InvalidInput, TooLarge
from recommender.core.ids import UserId
from recommender.corpus.bounded_parse import parse_upload
from recommender.corpus.library import (
    CONTENT_TYPES,
    MAX_ENTRIES,
    LibraryFormat,
    format_for,
)
from recommender.corpus.library_writers import FILE_EXTENSIONS, content_type, write_library
from recommender.feedback.library import ImportedEntry, ImportReport, liked_papers

from ..state import components
from .area import Reply, answers, area, reply
from .shapes import Answer, CollectionId, Strict, UserPath

api = area(__name__, tag="feedback")

MAX_LIBRARY_BYTES = 10 * 1024 * 1024
_FILE = {"schema": {"type": "string"}}
# CSL-JSON is a JSON array of items; an item that is not one is reported as rejected.
_CSL = {"schema": {"type": "array", "items": {"description": "a CSL item (an object)"}}}
_IMPORT_BODY: dict[str, Any] = {
    **{media: _FILE for media in CONTENT_TYPES.values()},
    CONTENT_TYPES["csl-json"]: _CSL,
    "multipart/form-data": {
        "schema": {"type": "object", "required": ["file"], "properties": {"file": {
            "type": "string", "format": "binary", "description":
                "the file; its format from the part's content type or its extension (.bib, "
                ".ris, .json, .txt)"}}},
        # The part's media types: a file of another kind is refused (415).
        "encoding": {"file": {"contentType": ", ".join(CONTENT_TYPES.values())}}},
}


class LibraryQuery(Strict):
    format: Literal["bibtex", "ris", "csl-json"] = Field(
        "bibtex", description="bibtex (default), ris or csl-json")
    collection: CollectionId | None = Field(None, description=(
        "Only the papers of this collection of the reader's (404 for one they do not have)."))


class ImportQuery(Strict):
    collection: CollectionId | None = Field(None, description=(
        "Put the file's papers (those liked already too) in this collection of the "
        "reader's (404, and nothing imported, for one they do not have)."))


class ImportOut(Answer):
    user_id: UserId
    format: Literal["bibtex", "ris", "csl-json", "ids"]
    matched: list[ImportedEntry] = Field(description="In the corpus already; now liked.")
    added: list[ImportedEntry] = Field(description="Added to the corpus, for this user alone "
                                                   "until verified, and liked.")
    already_liked: list[ImportedEntry]
    rejected: list[ImportedEntry]
    liked: int = Field(description="The user's likes after the import.")


_EXPORT_RESPONSE: dict[str, Any] = {
    "content": {CONTENT_TYPES["bibtex"]: _FILE, CONTENT_TYPES["ris"]: _FILE,
                CONTENT_TYPES["csl-json"]: _CSL},
    "headers": {"Content-Disposition": {
        "description": "attachment; filename=\"paperrec-<user_id>.<bib|ris|json>\"",
        "schema": {"type": "string"}}},
}


@api.post("/v1/users/<user_id>/library",
          summary="Import a library (BibTeX, RIS, CSL-JSON, or arXiv ids and DOIs) as likes.",
          responses=answers(ImportOut, 404, 413, 415, 503),
          openapi_extensions={"requestBody": {"required": True, "content": _IMPORT_BODY}},
          description="The file as the body, with its content type (`application/x-bibtex`, "
                       "`application/x-research-info-systems`, "
                       "`application/vnd.citationstyles.csl+json`, or `text/plain` for arXiv "
                       "ids and DOIs one a line), or as the multipart field `file`. Entries "
                       "the corpus holds (by arXiv id, DOI, or title and first author) are "
                       "liked (`matched`); the others are added to the corpus and liked "
                       "(`added`), as this user's alone: no other user's list, search or feed "
                       "shows them until the same paper comes from a trusted source (arXiv, "
                       "OpenReview, an operator's ingest) or an operator approves it "
                       "(`/v1/imports/review`). Each liked paper counts in the next reading "
                       "list at once. At most PAPERREC_UPLOADS_PER_DAY papers a day are added "
                       "for one user; entries past it are `rejected` with the reason. "
                       "Entries with neither title nor id, or with only an id the corpus does "
                       "not hold, are `rejected` with the reason, and the rest imported. "
                       "Importing the same file again changes nothing (`already_liked`). "
                       f"413 beyond {MAX_LIBRARY_BYTES // 2**20} MB or {MAX_ENTRIES} entries; "
                       "415 for another content type; 400 for a file that cannot be read.")
def import_user_library(path: UserPath, query: ImportQuery) -> Reply:
    text, fmt = uploaded_library()
    report = import_for(path.user_id, text, fmt, query.collection)
    return reply(ImportOut(user_id=path.user_id, format=fmt, **vars(report)))


def import_for(user_id: str, text: str, fmt: LibraryFormat,
               collection: str | None = None) -> ImportReport:
    """Import a library file's text as the user's likes (into ``collection``), counted by
    service.metrics (the API and the web Library page)."""
    parts = components()
    if collection is not None:
        parts.collections.get(user_id, collection)  # 404 before the file is read
    report = parts.import_library(parse_upload(text, fmt), user_id, now=time.time(),
                                  collection=collection)
    if report.matched or report.added:
        g.feedback_written = "like"
    return report


@api.get("/v1/users/<user_id>/library",
         summary="The user's liked papers (or a collection's) as a BibTeX, RIS or CSL-JSON file.",
         responses=answers(_EXPORT_RESPONSE, 404, 503),
         description="Each liked paper with its title, authors, year, DOI, arXiv eprint, "
                       "URL and abstract, keyed by its paperrec id, as an attachment a "
                       "reference manager imports (and `POST` of the same file finds the "
                       "same papers).")
def export_user_library(path: UserPath, query: LibraryQuery) -> Response:
    parts = components()
    fmt: LibraryFormat = query.format
    only, name = None, path.user_id
    if query.collection is not None:
        found = parts.collections.papers(path.user_id, query.collection)
        only, name = set(found.paper_ids), f"{path.user_id}-{query.collection}"
    papers = liked_papers(path.user_id, corpus=parts.corpus, feedback=parts.feedback,
                          only=only)
    response = Response(write_library(papers, fmt), content_type=content_type(fmt))
    response.headers["Content-Disposition"] = (
        f'attachment; filename="paperrec-{name}.{FILE_EXTENSIONS[fmt]}"')
    return response


MISSING_FILE = "send the file in the multipart field `file` (e.g. curl -F file=@library.bib)"


def uploaded_library(missing_file: str = MISSING_FILE) -> tuple[str, LibraryFormat]:
    """The uploaded file's text and format (the body, or the multipart field ``file``; a part
    without a file name, as a browser sends for an empty file input, is ``missing_file``).
    Shared by the API and the web Library page."""
    too_large = TooLarge(f"the file is larger than {MAX_LIBRARY_BYTES // 2**20} MB; "
                         "split it and import the parts")
    if (request.content_length or 0) > MAX_LIBRARY_BYTES + 64 * 1024:  # room for multipart
        raise too_large
    request.max_content_length = MAX_LIBRARY_BYTES + 64 * 1024
    try:
        if request.mimetype == "multipart/form-data":
            upload = request.files.get("file")
            if upload is None or not upload.filename:
                raise InvalidInput(missing_file)
            fmt = format_for(upload.mimetype, upload.filename)
            data = upload.stream.read(MAX_LIBRARY_BYTES + 1)
        else:
            fmt = format_for(request.mimetype)
            data = request.stream.read(MAX_LIBRARY_BYTES + 1)
    except RequestEntityTooLarge:
        raise too_large from None
    if len(data) > MAX_LIBRARY_BYTES:
        raise too_large
    try:
        return data.decode("utf-8-sig"), fmt
    except UnicodeDecodeError:
        return data.decode("latin-1"), fmt  # older BibTeX files; every byte is a character

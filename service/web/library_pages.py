"""Your library: the papers you liked and disliked (each with undo), a reference manager's
export imported as likes, your likes exported as BibTeX, RIS or CSL-JSON, and a connected
Zotero library (its forms are ``zotero_pages``).

Import and export are the API's (``recommender.feedback.library``, the files of
``recommender.corpus.library``): the same file gives the same likes either way.
"""

from __future__ import annotations

import datetime as dt
from typing import get_args

from flask import Response, abort, flash, url_for

from recommender.corpus.library import LibraryFormat
from recommender.corpus.library_writers import FILE_EXTENSIONS, content_type, write_library
from recommender.feedback.library import ImportReport, liked_papers

from ..api.library import MAX_LIBRARY_BYTES, import_for, uploaded_library
from ..state import components
from .blueprint import back, current_user, page, signed_in, web
from .reading import views
from .zotero_pages import sync_sentence

SHOWN_REJECTIONS = 10
FORMATS: tuple[LibraryFormat, ...] = tuple(
    fmt for fmt in get_args(LibraryFormat) if fmt in FILE_EXTENSIONS)


@web.get("/library")
@signed_in
def library() -> Response:
    user = current_user()
    assert user is not None
    rated = list(reversed(components().feedback.get(user)))  # newest first
    papers = components().corpus.get_many([f.paper_id for f in rated])
    items = views([(f.paper_id, papers[f.paper_id].title if f.paper_id in papers
                    else f.paper_id, "", "") for f in rated], user)
    exports = [(fmt, url_for("web.export_library", fmt=FILE_EXTENSIONS[fmt]))
               for fmt in FORMATS]
    zotero = components().zotero
    state = zotero.state(user)
    return page("library.html", active="library",
                likes=[i for i in items if i.state == "like"],
                dislikes=[i for i in items if i.state == "dislike"],
                exports=exports, here=url_for("web.library"),
                limit_mb=MAX_LIBRARY_BYTES // 2**20, zotero=state,
                zotero_collections=zotero.collections(user) if state.connected else [],
                zotero_sync=sync_sentence(state.last_sync) if state.last_sync else None,
                zotero_synced=_iso(state.last_sync.at) if state.last_sync else "",
                zotero_synced_text=_when(state.last_sync.at) if state.last_sync else "")


@web.post("/library/import")
@signed_in
def import_file() -> Response:
    user = current_user()
    assert user is not None
    text, fmt = uploaded_library("choose a file to import (.bib, .ris, .json or .txt)")
    report = import_for(user, text, fmt)
    for message in summary(report):
        flash(message)
    return back("web.library")


@web.get("/library/export.<fmt>")
@signed_in
def export_library(fmt: str) -> Response:
    user = current_user()
    assert user is not None
    by_extension = {FILE_EXTENSIONS[f]: f for f in FORMATS}
    if fmt not in by_extension:
        abort(404)
    chosen = by_extension[fmt]
    papers = liked_papers(user, corpus=components().corpus, feedback=components().feedback)
    response = Response(write_library(papers, chosen), content_type=content_type(chosen))
    response.headers["Content-Disposition"] = f'attachment; filename="paperrec-likes.{fmt}"'
    return response


def _iso(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).isoformat(timespec="seconds")


def _when(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def summary(report: ImportReport) -> list[str]:
    """What an import did, in sentences (the first few rejections with their reasons)."""
    liked = len(report.matched) + len(report.added)
    lines = [f"Imported: {liked} paper{'s' if liked != 1 else ''} liked "
             f"({len(report.matched)} found in the collection, {len(report.added)} added for "
             f"you alone until the paper comes from arXiv or OpenReview or an operator "
             f"approves it), {len(report.already_liked)} already liked, "
             f"{len(report.rejected)} not imported. You like {report.liked} papers now."]
    for entry in report.rejected[:SHOWN_REJECTIONS]:
        where = f" (line {entry.line})" if entry.line else ""
        lines.append(f"Not imported: {entry.entry}{where}: {entry.reason}")
    if len(report.rejected) > SHOWN_REJECTIONS:
        lines.append(f"… and {len(report.rejected) - SHOWN_REJECTIONS} more not imported.")
    return lines

"""Your collections: create, rename and delete them (``/collections``), each one's own list
(``/collections/<id>``) with its papers, its import and export, and "like into a collection"
on every list item (``/papers/<id>/collect``): plain forms that work without the script.

The collection's list is ``Recommender.recommend(collection=...)``, the function behind
``GET /v1/users/<u>/recommendations?collection=<id>``: ranked from that collection's papers
and the reader's dislikes. Looking at it records nothing as served; each page of it is logged
as a list (surface "page"), whose id its links and forms carry, as the list page's
(``service/web/reading.py``). "Like into a collection" from a list logs a like of that list.
"""

from __future__ import annotations

import time
from typing import cast

from flask import Response, abort, flash, g, redirect, request, url_for

from recommender.core.errors import InvalidInput
from recommender.corpus.library_writers import FILE_EXTENSIONS, content_type, write_library
from recommender.feedback.collections import MAX_COLLECTIONS, validate_collection_id
from recommender.feedback.library import liked_papers
from recommender.online.events import check_list_id

from ..api.library import MAX_LIBRARY_BYTES, import_for, uploaded_library
from ..state import components
from .blueprint import back, integer, page, signed_in, signed_in_user, web
from .collect_form import collect_context
from .library_pages import FORMATS, summary
from .reading import MAX_PAGE, PAGE_SIZE, views

MAX_CHOSEN = 10  # collections one "like into" form may name


@web.get("/collections")
@signed_in
def collections() -> Response:
    user = signed_in_user()
    found = components().collections.all(user)
    feed = components().feed_tokens.current(user)  # each collection's feed, when issued
    return page("collections.html", active="collections", collections=found, feed=feed,
                most=MAX_COLLECTIONS, here=url_for("web.collections"))


@web.post("/collections")
@signed_in
def create_collection() -> Response:
    user = signed_in_user()
    made = components().collections.create(user, request.form.get("name", ""), time.time())
    flash(f"Created the collection \u201c{made.name}\u201d.")
    return back("web.collections")


@web.post("/collections/<collection_id>/rename")
@signed_in
def rename_collection(collection_id: str) -> Response:
    user = signed_in_user()
    renamed = components().collections.rename(user, collection_id,
                                              request.form.get("name", ""))
    flash(f"Renamed the collection to \u201c{renamed.name}\u201d.")
    return back("web.collections")


@web.post("/collections/<collection_id>/delete")
@signed_in
def delete_collection(collection_id: str) -> Response:
    user = signed_in_user()
    parts = components()
    name = parts.collections.get(user, collection_id).name
    parts.collections.delete(user, collection_id)
    flash(f"Deleted the collection \u201c{name}\u201d; its papers stay liked.")
    return cast(Response, redirect(url_for("web.collections"), code=303))


@web.get("/collections/<collection_id>")
@signed_in
def collection_list(collection_id: str) -> Response:
    user = signed_in_user()
    parts = components()
    number = integer(request.args, "page", 1, MAX_PAGE, 1, "page")
    held = parts.collections.papers(user, validate_collection_id(collection_id))
    # The same list all day, as the overall list (what it shows moves down from tomorrow).
    found = parts.recommender.recommend(user, PAGE_SIZE, now=time.time(),
                                        offset=(number - 1) * PAGE_SIZE, collection=collection_id,
                                        surface="page")
    items = views([(i.paper_id, i.title, i.reason, i.standing) for i in found.items], user,
                  found.marks)
    titles = parts.corpus.titles(held.paper_ids)
    papers = views([(pid, titles.get(pid, pid), "", "") for pid in held.paper_ids], user)
    here = request.full_path.rstrip("?")
    return page("collection.html", active="collections", collection=held.collection,
                items=items, papers=papers, number=number, here=here, list_id=found.list_id,
                exports=[(fmt, url_for("web.export_collection", collection_id=collection_id,
                                       fmt=FILE_EXTENSIONS[fmt])) for fmt in FORMATS],
                limit_mb=MAX_LIBRARY_BYTES // 2**20,
                previous=url_for("web.collection_list", collection_id=collection_id,
                                 page=number - 1) if number > 1 else None,
                following=url_for("web.collection_list", collection_id=collection_id,
                                  page=number + 1)
                if len(found.items) == PAGE_SIZE and number < MAX_PAGE else None,
                **collect_context(user, [item.id for item in items + papers]))


@web.post("/collections/<collection_id>/import")
@signed_in
def import_collection(collection_id: str) -> Response:
    user = signed_in_user()
    text, fmt = uploaded_library("choose a file to import (.bib, .ris, .json or .txt)")
    for message in summary(import_for(user, text, fmt, validate_collection_id(collection_id))):
        flash(message)
    return cast(Response, redirect(url_for("web.collection_list", collection_id=collection_id),
                                   code=303))


@web.get("/collections/<collection_id>/export.<fmt>")
@signed_in
def export_collection(collection_id: str, fmt: str) -> Response:
    user = signed_in_user()
    by_extension = {FILE_EXTENSIONS[f]: f for f in FORMATS}
    if fmt not in by_extension:
        abort(404)
    chosen = by_extension[fmt]
    parts = components()
    held = parts.collections.papers(user, validate_collection_id(collection_id))
    papers = liked_papers(user, corpus=parts.corpus, feedback=parts.feedback,
                          only=set(held.paper_ids))
    response = Response(write_library(papers, chosen), content_type=content_type(chosen))
    response.headers["Content-Disposition"] = (
        f'attachment; filename="paperrec-collection-{collection_id}.{fmt}"')
    return response


@web.post("/papers/<path:paper_id>/collect")
@signed_in
def collect(paper_id: str) -> Response:
    """Like the paper into the collections ticked in the form (exactly those: a box
    unticked takes it out of that collection; it stays liked)."""
    user = signed_in_user()
    parts = components()
    chosen = list(dict.fromkeys(request.form.getlist("collection")))
    if len(chosen) > MAX_CHOSEN:
        raise InvalidInput(f"choose at most {MAX_CHOSEN} collections at once")
    for collection_id in chosen:
        validate_collection_id(collection_id)
    found = parts.recommender.paper(paper_id, viewer=user)
    now = time.time()
    parts.feedback.set(user, found.id, "like", now, chosen, "set")
    g.feedback_written = "like"  # service.metrics
    list_id = check_list_id(request.form.get("list"))
    if list_id is not None:  # from a list: its like
        parts.events.outcome("like", user, list_id, found.id, now)
    names = {c.id: c.name for c in parts.collections.all(user)}
    where = ", ".join(f"\u201c{names.get(c, c)}\u201d" for c in chosen)
    flash(f"Liked \u201c{found.title}\u201d" + (f" into {where}." if where else
                                                 " (in no collection)."))
    return back()


@web.post("/collections/<collection_id>/papers/<path:paper_id>/remove")
@signed_in
def remove_from_collection(collection_id: str, paper_id: str) -> Response:
    user = signed_in_user()
    parts = components()
    stored = parts.corpus.resolve(paper_id) or paper_id
    parts.collections.remove(user, validate_collection_id(collection_id), stored)
    flash("Took the paper out of the collection; it stays liked.")
    return back("web.collections")


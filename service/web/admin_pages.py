"""The operators' page: review the papers readers' imports added (/admin/imports); the
online figures and experiments are on /admin/online (``online_pages``).

An operator is a reader signed in with an address PAPERREC_ADMIN_EMAILS names; to anyone
else the page is not there (404, as for a page that does not exist). It does what `paperrec
review-imports` does (recommender.corpus.store: ``pending``, ``approve``, ``reject``).
"""

from __future__ import annotations

from flask import Response, abort, flash, request, url_for

from ..state import components
from .blueprint import back, is_operator, page, signed_in, web

SHOWN = 100


def operator_only() -> None:
    """Not found (404) unless the reader signed in is an operator."""
    if not is_operator():
        abort(404)


@web.get("/admin/imports")
@signed_in
def review_imports() -> Response:
    operator_only()
    corpus = components().corpus
    return page("admin_imports.html", pending=corpus.pending(SHOWN),
                total=corpus.pending_count(), here=url_for("web.review_imports"))


@web.post("/admin/imports")
@signed_in
def decide_imports() -> Response:
    operator_only()
    corpus = components().corpus
    chosen = request.form.getlist("paper")[:SHOWN]
    if request.form.get("action") == "approve":
        flash(f"Approved {corpus.approve(chosen)}: every reader's lists count them from the "
              f"next index rebuild.")
    elif request.form.get("action") == "reject":
        flash(f"Rejected and deleted {corpus.reject(chosen)}.")
    else:
        flash("Choose approve or reject.")
    return back("web.review_imports")

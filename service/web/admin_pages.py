"""The operators' page: review the papers readers' imports added (/admin/imports).

An operator is a reader signed in with an address PAPERREC_ADMIN_EMAILS names; to anyone
else the page is not there (404, as for a page that does not exist). It does what `paperrec
review-imports` does (recommender.corpus.store: ``pending``, ``approve``, ``reject``).
"""

from __future__ import annotations

from flask import Response, abort, flash, request, url_for

from ..state import components
from .blueprint import back, current_email, page, signed_in, web

SHOWN = 100


def _operator() -> None:
    admins = {address.strip().lower()
              for address in components().settings.admin_emails.split(",") if address.strip()}
    if current_email().lower() not in admins:
        abort(404)


@web.get("/admin/imports")
@signed_in
def review_imports() -> Response:
    _operator()
    corpus = components().corpus
    return page("admin_imports.html", pending=corpus.pending(SHOWN),
                total=corpus.pending_count(), here=url_for("web.review_imports"))


@web.post("/admin/imports")
@signed_in
def decide_imports() -> Response:
    _operator()
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

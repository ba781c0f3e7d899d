"""Your Zotero library, connected on the Library page: connect with a key, see the last sync,
sync now, choose which Zotero collections come in, disconnect.

Everything is ``ZoteroConnections`` (``recommender.feedback.zotero``), as behind
``/v1/users/<u>/zotero``: the page only reads the form and says what happened. A key Zotero
refuses, or a library it cannot reach, is said on the Library page, not as an error page:
the reader is in the middle of setting it up.
"""

from __future__ import annotations

import time
from typing import Literal, cast

from flask import Response, flash, request

from recommender.core.errors import PaperrecError
from recommender.feedback.zotero import ZoteroSummary

from ..state import components
from .blueprint import back, flag, signed_in, signed_in_user, web


@web.post("/library/zotero")
@signed_in
def connect_zotero() -> Response:
    user = signed_in_user()
    form = request.form
    kind = cast(Literal["user", "group"], form.get("library_type", "user"))  # connect checks
    try:
        components().zotero.connect(user, kind, form.get("library_id", "").strip(),
                                    form.get("api_key", "").strip(), time.time())
    except PaperrecError as exc:
        flash(f"Zotero is not connected: {exc}")
        return back("web.library")
    flash("Zotero is connected. Its items come in as likes now and on every sync.")
    return _sync(user)


@web.post("/library/zotero/sync")
@signed_in
def sync_zotero() -> Response:
    return _sync(signed_in_user())


@web.post("/library/zotero/collections")
@signed_in
def include_zotero_collections() -> Response:
    user = signed_in_user()
    chosen = None if flag(request.form, "all") else request.form.getlist("key")
    components().zotero.include_collections(user, chosen)
    flash("Saved which Zotero collections come in; the next sync follows it.")
    return back("web.library")


@web.post("/library/zotero/disconnect")
@signed_in
def disconnect_zotero() -> Response:
    components().zotero.disconnect(signed_in_user())
    flash("Zotero is disconnected and its key forgotten. The papers it brought stay liked.")
    return back("web.library")


def sync_sentence(summary: ZoteroSummary) -> str:
    """What one sync did, in a sentence (the Library page and its flash); counts of 0 are
    left out."""
    if summary.error:
        return f"The sync failed: {summary.error}"
    counted = [(summary.added, "added to the collection and liked"),
               (summary.matched, "found in the collection and liked"),
               (summary.updated, "updated"),
               (summary.removed, "no longer liked (removed in Zotero)")]
    parts = [f"{count} {what}" for count, what in counted if count]
    skipped = sum(summary.skipped.values())
    if skipped:
        why = ", ".join(f"{count} {reason}" for reason, count in sorted(summary.skipped.items()))
        parts.append(f"{skipped} skipped ({why})")
    for count, what in ((summary.collections_created, "created"),
                        (summary.collections_renamed, "renamed")):
        if count:
            parts.append(f"{count} collection{'s' if count != 1 else ''} {what}")
    done = "" if summary.finished else " Not finished: the rest comes in with the next sync."
    return (f"Synced Zotero to library version {summary.library_version}: "
            f"{', '.join(parts) or 'nothing changed'}.{done}")


def _sync(user: str) -> Response:
    flash(sync_sentence(components().zotero.sync(user, time.time())))
    return back("web.library")


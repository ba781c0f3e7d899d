"""Your rules, and why a paper is not on your list.

Follow or mute an author, a word or a category from a paper page or the list (``add_rule``:
the form of ``templates/_rules.html``), see every rule on ``/rules`` and remove one there.
The rules are the API's (``recommender.feedback.rules.RuleStore``): the same checks, the same
400 for a value with no word to match. ``/papers/<id>/why-not`` is the API's why-not
(``Recommender.why_not``) about the list page with the same options (page, diversity, new
since, papers set aside), in words.
"""

from __future__ import annotations

import time
from typing import Any

from flask import Response, flash, request, url_for

from recommender.feedback.rules import parse_action, parse_kind

from ..state import components
from .blueprint import (
    back,
    current_user,
    page,
    signed_in,
    web,
)
from .reading import PAGE_SIZE, ListOptions

KIND_WORDS = {"author": "the author", "keyword": "the word", "category": "the category"}


@web.get("/rules")
@signed_in
def rules() -> Response:
    user = current_user()
    assert user is not None
    found = components().rules.get(user)
    return page("rules.html", active="list", page_name="rules", here=url_for("web.rules"),
                follows=[r for r in found if r.action == "follow"],
                mutes=[r for r in found if r.action == "mute"], kinds=KIND_WORDS)


@web.post("/rules")
@signed_in
def add_rule() -> Response:
    """Follow or mute an author, a word or a category; back to the page the form was on."""
    user = current_user()
    assert user is not None
    form = request.form
    action, kind = parse_action(form.get("action", "")), parse_kind(form.get("kind", ""))
    change = components().rules.put(user, action, kind, form.get("value", ""), time.time())
    what = f"{KIND_WORDS[kind]} \u201c{change.rule.value}\u201d"
    if not change.created and not change.replaced:
        flash(f"You already {action} {what}.")
    elif action == "follow":
        flash(f"Following {what}: its new papers come first on your list.")
    else:
        flash(f"Muted {what}: its papers leave your list.")
    return back("web.rules")


@web.post("/rules/remove")
@signed_in
def remove_rule() -> Response:
    user = current_user()
    assert user is not None
    form = request.form
    action, kind = parse_action(form.get("action", "")), parse_kind(form.get("kind", ""))
    value = form.get("value", "")
    if components().rules.remove(user, action, kind, value):
        flash(f"Removed your rule to {action} {KIND_WORDS[kind]} \u201c{value.strip()}\u201d.")
    else:
        flash(f"You had no rule to {action} {KIND_WORDS[kind]} \u201c{value.strip()}\u201d.")
    return back("web.rules")


@web.get("/papers/<path:paper_id>/why-not")
@signed_in
def why_not(paper_id: str) -> Response:
    """Where the paper stands on your list page with these options, and what keeps it off."""
    user = current_user()
    assert user is not None
    asked = ListOptions.of(request.args)
    number = asked.number
    parts = components()
    paper = parts.recommender.paper(paper_id, viewer=user)
    answer = parts.recommender.why_not(
        user, paper.id, now=time.time(), k=PAGE_SIZE, offset=asked.offset,
        diversity=asked.diversity, since=asked.since, include_set_aside=asked.set_aside)
    controls = {"page": str(number), **asked.controls}
    query: dict[str, Any] = {k: v for k, v in controls.items()
                             if v and not (k == "page" and v == "1")}
    return page("why_not.html", active="list", paper=paper, answer=answer, number=number,
                controls=controls, list_url=url_for("web.reading_list", **query))

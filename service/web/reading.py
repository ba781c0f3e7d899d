"""Your list, a paper, search (its words marked); and the like / dislike / not-now buttons
on each paper.

The list is ``Recommender.recommend``, the function behind ``GET /v1/users/<id>/
recommendations``, for the signed-in reader: the same ranking, reasons and probabilities, and
the same list all day (what it shows is recorded as served, and pushed down from the next UTC
day on); "More papers" is its next page. "Not now" sets the paper aside (its own mark, not the
served one): the list leaves it out unless asked to show papers set aside, until "Undo" puts
it back. Like and dislike are the API's feedback: a rated paper leaves the list for good.

Each page of the list is logged as served (surface "page", ``recommender.online.events``)
under its list id, which its links and forms carry: a paper's title links to its page with
``?list=<id>`` (opening it logs an "open"), and its buttons send it (``list``), so a like,
dislike or "not now" is logged as an outcome of that list, at that place. An id that is not
of a list of ours is ignored.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from flask import Response, flash, g, get_template_attribute, jsonify, request, url_for
from markupsafe import Markup, escape

from recommender.core.errors import InvalidInput, PaperrecError
from recommender.core.papers import Paper
from recommender.core.search_query import MAX_QUERY_CHARS
from recommender.feedback.store import Mark
from recommender.online.events import Outcome, check_list_id
from recommender.ranking.item_view import ItemView, item_view
from recommender.ranking.search import SearchHit, snippet

from ..state import components
from .blueprint import (
    back,
    current_user,
    flag,
    integer,
    optional_date,
    optional_float,
    page,
    signed_in,
    web,
)
from .collect_form import collect_context

PAGE_SIZE = 10
MAX_PAGE = 50
SIMILAR = 5
SEARCH_RESULTS = 20
# The buttons' actions logged as an outcome of the list they were on (undo is not).
RATED: dict[str, Outcome] = {"like": "like", "dislike": "dislike", "not-now": "not-now"}


def views(items: list[tuple[str, str, str, str]], user: str,
          marks: Mapping[str, Mark] | None = None) -> list[ItemView]:
    """(paper id, title, reason, standing) as the pages show them (``item_view``): with the
    paper's authors, year, category, abstract and links from the corpus, and what the reader
    did with it (liked, disliked, set aside): ``marks`` when known (a ``ReadingList``'s),
    else read."""
    parts = components()
    ids = [pid for pid, _, _, _ in items]
    papers = parts.corpus.get_many(ids)
    if marks is None:
        marks = parts.feedback.marks(user, ids)
    return [item_view(papers.get(pid) or Paper(pid, title), title=title, reason=reason,
                      standing=standing, state=marks.get(pid, "none"))
            for pid, title, reason, standing in items]


@dataclass(frozen=True)
class ListOptions:
    """The options of the list page a reader is looking at (page, diversity, new since,
    papers set aside), read once from the query string: the list page and why-not, which
    must describe that very list, both take them from here."""

    number: int  # the page, from 1
    diversity: float | None
    since: dt.date | None
    set_aside: bool
    controls: dict[str, str]  # the option fields as given (the forms show them again)

    @property
    def offset(self) -> int:
        return (self.number - 1) * PAGE_SIZE

    @classmethod
    def of(cls, args: Mapping[str, str]) -> ListOptions:
        set_aside = flag(args, "set_aside")
        return cls(integer(args, "page", 1, MAX_PAGE, 1, "page"),
                   optional_float(args, "diversity", 0.0, 1.0, "diversity"),
                   optional_date(args, "since", "since"), set_aside,
                   {"diversity": args.get("diversity", ""), "since": args.get("since", ""),
                    "set_aside": "1" if set_aside else ""})


@web.get("/")
def home() -> Response:
    if current_user() is None:
        return page("sign_in.html", next=url_for("web.reading_list"), error=None, address="")
    return reading_list()


@web.get("/list")
@signed_in
def reading_list() -> Response:
    user = current_user()
    assert user is not None
    asked = ListOptions.of(request.args)
    number = asked.number
    found = components().recommender.recommend(
        user, PAGE_SIZE, now=time.time(), offset=asked.offset, diversity=asked.diversity,
        since=asked.since, include_set_aside=asked.set_aside, surface="page")
    items = views([(i.paper_id, i.title, i.reason, i.standing) for i in found.items], user,
                  found.marks)
    controls = asked.controls
    query: dict[str, Any] = {k: v for k, v in controls.items() if v}
    return page("list.html", active="list", page_name="list", items=items,
                **collect_context(user, [item.id for item in items]),
                personalized=found.personalized, number=number, controls=controls,
                list_id=found.list_id,
                previous=url_for("web.reading_list", page=number - 1, **query)
                if number > 1 else None,
                following=url_for("web.reading_list", page=number + 1, **query)
                if len(found.items) == PAGE_SIZE and number < MAX_PAGE else None,
                here=request.full_path.rstrip("?"))


@web.get("/papers/<path:paper_id>")
@signed_in
def paper(paper_id: str) -> Response:
    user = current_user()
    assert user is not None
    parts = components()
    found = parts.recommender.paper(paper_id, viewer=user)
    list_id = check_list_id(request.args.get("list"))  # opened from a list: an "open"
    if list_id is not None:
        parts.events.outcome("open", user, list_id, found.id, time.time())
    try:
        similar = parts.recommender.similar(found.id, SIMILAR, viewer=user)
    except PaperrecError:  # not indexed yet (an imported paper): no neighbours to show
        similar = []
    item = views([(found.id, found.title, "", "")], user)[0]
    return page("paper.html", active="list", paper=found,
                item=replace(item, authors=", ".join(found.authors)),  # all of them here
                similar=views([(i.paper_id, i.title, i.reason, "") for i in similar], user),
                here=request.full_path.rstrip("?"), list_id=list_id or "")


@dataclass(frozen=True)
class FoundView:
    """One search result as the page shows it: the paper, and its title and a part of its
    abstract with the query's words marked."""

    item: ItemView
    title: Markup
    snippet: Markup


def marked(text: str, spans: list[tuple[int, int]]) -> Markup:
    """``text`` HTML-escaped, each span in ``<mark>``."""
    out = Markup("")
    at = 0
    for start, end in spans:
        out += escape(text[at:start]) + Markup("<mark>%s</mark>") % text[start:end]
        at = end
    return out + escape(text[at:])


def found_views(hits: list[SearchHit], user: str) -> list[FoundView]:
    papers = components().corpus.get_many([hit.paper_id for hit in hits])
    items = views([(hit.paper_id, hit.title, hit.reason, "") for hit in hits], user)
    shown = []
    for hit, item in zip(hits, items, strict=True):
        where = {m.field: m.spans for m in hit.matches if m.field != "authors"}
        abstract = papers[hit.paper_id].abstract if hit.paper_id in papers else ""
        text, spans = snippet(abstract, where.get("abstract", []))
        shown.append(FoundView(item, marked(hit.title, where.get("title", [])),
                               marked(text, spans)))
    return shown


@web.get("/search")
@signed_in
def search() -> Response:
    user = current_user()
    assert user is not None
    query = request.args.get("q", "").strip()
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"the search text is longer than {MAX_QUERY_CHARS} characters")
    results: list[FoundView] = []
    if query:
        found = components().recommender.search(query, SEARCH_RESULTS, viewer=user)
        results = found_views(found, user)
    return page("search.html", active="search", query=query, results=results,
                here=request.full_path.rstrip("?"))


@web.post("/papers/<path:paper_id>/rate")
@signed_in
def rate(paper_id: str) -> Response:
    """Like, dislike, not now, or undo; then back to the place on the page it came from (the
    form's ``next``, with the paper's anchor), or, asked by the page's script, a JSON answer
    with the paper's new state and its buttons for it, which the script puts in place. A like,
    dislike or "not now" from a list (the form's ``list``) is logged as its outcome."""
    user = current_user()
    assert user is not None
    parts = components()
    action = request.form.get("action", "")
    found = parts.recommender.paper(paper_id, viewer=user)
    now = time.time()
    if action in ("like", "dislike"):
        parts.feedback.set(user, found.id, "like" if action == "like" else "dislike", now)
        message = (f"Liked \u201c{found.title}\u201d: more like it." if action == "like" else
                   f"Disliked \u201c{found.title}\u201d: papers like it sink.")
    elif action == "not-now":
        parts.feedback.set_aside(user, found.id, now)
        message = f"Set \u201c{found.title}\u201d aside."
    elif action == "undo":
        # A like or dislike is taken back; without one, "Not now" is: back on the list.
        if parts.feedback.remove(user, found.id):
            g.feedback_written = "remove"  # service.metrics
            message = f"Took your rating of \u201c{found.title}\u201d back."
        elif parts.feedback.put_back(user, found.id):
            message = f"Put \u201c{found.title}\u201d back on your list."
        else:
            message = f"\u201c{found.title}\u201d has nothing to undo."
    else:
        raise InvalidInput("the action must be like, dislike, not-now or undo")
    list_id = check_list_id(request.form.get("list"))
    if action in RATED and list_id is not None:
        parts.events.outcome(RATED[action], user, list_id, found.id, now)
    if action in ("like", "dislike"):
        g.feedback_written = action  # service.metrics
    if request.accept_mimetypes.best == "application/json":
        item = views([(found.id, found.title, "", "")], user)[0]
        here = request.form.get("next", "").partition("#")[0]  # the buttons add the anchor
        buttons = get_template_attribute("_papers.html", "actions")
        return jsonify({"paper_id": found.id, "action": action, "message": message,
                        "state": item.state,
                        "html": str(buttons(item, here, request.form.get("set_aside") != "0",
                                            list_id or ""))})
    flash(message)
    return back()

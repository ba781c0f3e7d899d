"""Your list, a paper, search; and the like / dislike / not-now buttons on each paper.

The list is ``Recommender.recommend``, the function behind ``GET /v1/users/<id>/
recommendations``, for the signed-in reader: the same ranking, reasons and probabilities.
Looking at it records nothing (``record=False``); "Not now" records the paper as served, the
API's mark for "shown already", and the list leaves served papers out unless asked to show
them. Like and dislike are the API's feedback: a rated paper leaves the list for good.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

from flask import Response, flash, g, jsonify, request, url_for

from recommender.core.errors import InvalidInput, PaperrecError
from recommender.core.papers import Paper, web_url

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
State = Literal["like", "dislike", "none"]


@dataclass(frozen=True)
class PaperView:
    """One paper as a page shows it."""

    id: str
    title: str
    authors: str
    date: str
    reason: str = ""
    probability: str = ""
    state: State = "none"


def authors_line(authors: list[str], most: int = 6) -> str:
    if len(authors) <= most:
        return ", ".join(authors)
    return ", ".join(authors[:most]) + " et al."


def views(items: list[tuple[str, str, str, float | None]], user: str) -> list[PaperView]:
    """(paper id, title, reason, probability) as the pages show them, with the paper's
    authors and date from the corpus and the reader's like or dislike."""
    parts = components()
    papers = parts.corpus.get_many([pid for pid, _, _, _ in items])
    signals = parts.feedback.signals(user, [pid for pid, _, _, _ in items])
    shown = []
    for pid, title, reason, probability in items:
        paper = papers.get(pid)
        shown.append(PaperView(
            pid, title, authors_line(paper.authors) if paper else "", _date(paper), reason,
            f"{probability:.0%}" if probability is not None else "",
            signals.get(pid, "none")))
    return shown


def _date(paper: Paper | None) -> str:
    if paper is None:
        return ""
    return paper.date or (str(paper.year) if paper.year else "")


def links(paper: Paper) -> list[tuple[str, str]]:
    """(text, address) of the paper's links; only http(s) addresses (a ``javascript:`` URL
    in an ingested file must not become a link)."""
    found = [(paper.url, paper.url)] if paper.url else []
    if paper.doi:
        found.append((f"doi:{paper.doi}", f"https://doi.org/{quote(paper.doi, safe='/')}"))
    found += [(f"Code: {url}", url) for url in paper.code_urls]
    return [(text, url) for text, url in found if web_url(url)]


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
    args = request.args
    number = integer(args, "page", 1, MAX_PAGE, 1, "page")
    diversity = optional_float(args, "diversity", 0.0, 1.0, "diversity")
    since = optional_date(args, "since", "since")
    show_set_aside = flag(args, "set_aside")
    found = components().recommender.recommend(
        user, PAGE_SIZE, now=time.time(), offset=(number - 1) * PAGE_SIZE, diversity=diversity,
        since=since, exclude_served=not show_set_aside, record=False)
    items = views([(i.paper_id, i.title, i.reason, i.probability) for i in found.items], user)
    controls = {"diversity": args.get("diversity", ""), "since": args.get("since", ""),
                "set_aside": "1" if show_set_aside else ""}
    query: dict[str, Any] = {k: v for k, v in controls.items() if v}
    return page("list.html", active="list", page_name="list", items=items,
                **collect_context(user, [item.id for item in items]),
                personalized=found.personalized, number=number, controls=controls,
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
    try:
        similar = parts.recommender.similar(found.id, SIMILAR, viewer=user)
    except PaperrecError:  # not indexed yet (an imported paper): no neighbours to show
        similar = []
    state = views([(found.id, found.title, "", None)], user)[0]
    return page("paper.html", active="list", paper=found, state=state, links=links(found),
                authors=", ".join(found.authors), date=_date(found),
                similar=views([(i.paper_id, i.title, i.reason, None) for i in similar], user),
                here=request.full_path.rstrip("?"))


@web.get("/search")
@signed_in
def search() -> Response:
    user = current_user()
    assert user is not None
    query = request.args.get("q", "").strip()
    if len(query) > 1000:
        raise InvalidInput("the search text is longer than 1000 characters")
    results: list[PaperView] = []
    if query:
        found = components().recommender.search(query, SEARCH_RESULTS, viewer=user)
        results = views([(i.paper_id, i.title, "", None) for i in found], user)
    return page("search.html", active="search", query=query, results=results,
                here=request.full_path.rstrip("?"))


@web.post("/papers/<path:paper_id>/rate")
@signed_in
def rate(paper_id: str) -> Response:
    """Like, dislike, not now, or undo a like or dislike; then back to the page it came from
    (or, from the page's script, a JSON answer with the paper's new state)."""
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
        parts.feedback.record_served(user, [found.id], now)
        message = f"Set \u201c{found.title}\u201d aside."
    elif action == "undo":
        parts.feedback.remove(user, found.id)
        message = f"Took your rating of \u201c{found.title}\u201d back."
    else:
        raise InvalidInput("the action must be like, dislike, not-now or undo")
    if action != "not-now":
        g.feedback_written = "remove" if action == "undo" else action  # service.metrics
    if request.accept_mimetypes.best == "application/json":
        return jsonify({"paper_id": found.id, "action": action, "message": message})
    flash(message)
    return back()

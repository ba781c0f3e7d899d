"""The welcome page: a first list in one minute, three ways.

- find your own papers: the corpus's search (``Recommender.search``, the search page's) and
  "Mine" on each paper found (a like);
- answer a few papers picked to learn the most from few answers (``Recommender.questions``:
  one paper per topic of the collection first, then the papers the model is least sure about),
  each "Like" or "Not for me" (a dislike); answered papers are not asked again, and once
  ``SHOW_LIST_AFTER`` are answered the page offers the list;
- import a library (the library page's import).

A reader signing in for the first time (no likes, no dislikes) lands here (``sign_in``); later
it is in the menu. Answers are plain POST forms (CSRF-protected like every form): one paper and
one of two answers each, the paper checked to exist for this reader.
"""

from __future__ import annotations

import time
from typing import Literal

from flask import Response, flash, g, request, url_for

from recommender.core.errors import InvalidInput

from ..state import components
from .blueprint import back, current_user, page, signed_in, web
from .reading import views

QUESTIONS = 8  # papers asked at a time
SHOW_LIST_AFTER = 3  # answers before "Show my list" is offered
SEARCH_RESULTS = 10
MAX_QUERY = 200  # characters of a name search
SIGNALS: dict[str, Literal["like", "dislike"]] = {"like": "like", "not-for-me": "dislike"}


@web.get("/welcome")
@signed_in
def welcome() -> Response:
    user = current_user()
    assert user is not None
    parts = components()
    query = request.args.get("q", "").strip()
    if len(query) > MAX_QUERY:
        raise InvalidInput(f"the search text is longer than {MAX_QUERY} characters")
    found = []
    if query:
        hits = parts.recommender.search(query, SEARCH_RESULTS, viewer=user)
        found = views([(i.paper_id, i.title, "", "") for i in hits], user)
    asked = parts.recommender.questions(user, QUESTIONS, now=time.time())
    reasons = {"explore": "A topic of the collection you have not answered about yet.",
               "unsure": "Close to what you liked, and the list is unsure about it."}
    questions = views([(pid, title, reasons[q.kind], "") for pid, title, q in asked], user)
    signals = parts.feedback.get(user)
    likes = sum(1 for f in signals if f.signal == "like")
    here = url_for("web.welcome", q=query) if query else url_for("web.welcome")
    return page("welcome.html", active="welcome", page_name="welcome", query=query,
                found=found, questions=questions, answered=len(signals), likes=likes,
                show_list=len(signals) >= SHOW_LIST_AFTER, here=here)


@web.post("/welcome/answer")
@signed_in
def answer() -> Response:
    """Record one answer (a like, or "not for me": a dislike), then back to the page."""
    user = current_user()
    assert user is not None
    given = request.form.get("answer", "")
    if given not in SIGNALS:
        raise InvalidInput("the answer must be like or not-for-me")
    parts = components()
    found = parts.recommender.paper(request.form.get("paper", ""), viewer=user)
    parts.feedback.set(user, found.id, SIGNALS[given], time.time())
    g.feedback_written = SIGNALS[given]  # service.metrics
    flash(f"Liked \u201c{found.title}\u201d." if given == "like" else
          f"\u201c{found.title}\u201d: not for you, noted.")
    return back("web.welcome")


def first_page(user: str, target: str) -> str:
    """Where a reader goes after signing in: the welcome page for a reader who has not liked
    or disliked anything and was going to the list, else ``target``."""
    default = {url_for("web.reading_list"), url_for("web.home")}
    if target in default and not components().feedback.get(user):
        return url_for("web.welcome")
    return target

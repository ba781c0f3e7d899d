"""The operators' online page (/admin/online): the figures of the lists served, the charts,
and the ranking experiment, started and stopped here as with `paperrec experiment`.

Operators only (PAPERREC_ADMIN_EMAILS); anyone else gets a 404, as on /admin/imports. The
figures are the latest ones the export step wrote (``recommender.online.snapshot``: the last
7 days), so opening the page costs a file read; "Recompute now" reads the log again. The
charts are SVG images of their own (``online_charts``) at operator-only URLs.
"""

from __future__ import annotations

import time

from flask import Response, abort, flash, request, url_for

from recommender.core.errors import InvalidInput, PaperrecError
from recommender.online.experiments import MODES
from recommender.ranking.calibration import Calibration
from recommender.ranking.variants import PRODUCTION

from ..state import components
from . import online_charts
from .admin_pages import operator_only
from .blueprint import back, optional_float, page, signed_in, web

COLUMNS = (("lists", "Lists", False), ("impressions", "Papers", False),
           ("like_rate@1", "Like rate @1", True), ("like_rate@5", "@5", True),
           ("like_rate@10", "@10", True), ("dislike_rate", "Dislike rate", True),
           ("coverage", "Coverage", True), ("new_served", "New served", True),
           ("new_liked", "New liked", True))


@web.get("/admin/online")
@signed_in
def online() -> Response:
    operator_only()
    app = components()
    figures = app.online_figures(time.time())
    return page("admin_online.html", active="online", page_name="admin-online",
                figures=figures, columns=COLUMNS, running=app.experiments.current(),
                candidates=[name for name in app.variants if name != PRODUCTION],
                production=PRODUCTION, modes=MODES, charts=online_charts.CHARTS,
                stamp=int(figures.get("written_at") or 0), when=_when,
                here=url_for("web.online"))


@web.post("/admin/online/experiment")
@signed_in
def decide_experiment() -> Response:
    operator_only()
    app = components()
    now = time.time()
    action = request.form.get("action")
    if action == "start":
        try:
            share = optional_float(request.form, "share", 0.01, 0.99, "share") or 0.5
            started = app.start_experiment(request.form.get("candidate", ""), now,
                                           mode=request.form.get("mode", "interleave"),
                                           share=share)
        except InvalidInput as exc:
            flash(f"Not started: {exc.message}")
        else:
            flash(f"Started {started.id}: {started.candidate} against {started.production} "
                  f"({started.mode}), from the next list on.")
    elif action == "stop":
        stopped = app.stop_experiment(now)
        flash(f"Stopped {stopped.id}; its verdict stays below." if stopped
              else "No experiment was running.")
    else:
        flash("Choose start or stop.")
    return back("web.online")


@web.post("/admin/online/refresh")
@signed_in
def refresh_figures() -> Response:
    operator_only()
    components().export_events(time.time())
    flash("Exported the impression log and computed the figures again.")
    return back("web.online")


@web.get("/admin/online/charts/<name>.svg")
@signed_in
def chart(name: str) -> Response:
    operator_only()
    if name not in online_charts.CHARTS:
        abort(404)
    app = components()
    now = time.time()
    figures = app.online_figures(now)
    if name == "daily":
        svg = online_charts.daily(figures)
    elif name == "places":
        svg = online_charts.places(figures)
    else:
        served: Calibration | None
        try:
            served = app.recommender.calibration(now)
        except PaperrecError:  # no index yet
            served = None
        svg = online_charts.calibration(figures, served)
    return Response(svg, content_type="image/svg+xml")


def _when(at: float | None) -> str:
    return "-" if at is None else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))

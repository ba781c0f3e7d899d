"""Prometheus metrics: requests by route, feedback writes, Redis errors, what is served, and
the online figures (like rate, lists served, coverage, the running experiment).

``instrument(app)`` counts every request (refused ones too) and adds ``GET /metrics``.
Under gunicorn each worker writes its figures into ``$PROMETHEUS_MULTIPROC_DIR`` (set up by
``service.server``) and a scrape of any worker sums them all; without the variable, as in
tests and ``flask run``, the process's own registry is served.

The metrics are made on first use, not at import: prometheus_client picks its value store
(in-process or the shared directory) from the environment, and the server sets the variable
only just before the workers fork.

The online figures are not gauges of a worker: they are the deployment's, read from the file
the export step writes (``recommender.online.snapshot``: the report of the last 7 days, made
by every `paperrec jobs` round), so a scrape costs one small file read however large the
impression log is. They are exposed by a collector made for each scrape (``_OnlineFigures``)
beside the workers' registry, not stored in the multiprocess files: every worker reads the
same file, and a variant or experiment gone from the window disappears at once instead of
lingering in a worker's file as a stale gauge series would.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from flask import Blueprint, Flask, Response, g, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    values,
)
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from recommender.core.errors import PaperrecError, StoreUnavailable
from recommender.index.store import LiveIndex
from recommender.ranking.collaborative import CollaborativeModel
from recommender.storage.versions import LiveVersion
from recommender.wiring import Paperrec

from .access import access
from .state import components

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# From a cached lookup (a few ms) to a reading list over a large index (seconds).
BUCKETS = (0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}  # others: "other"
# Gauges show the figure of the worker that answered the latest scrape (each sets them just
# before it answers), so a scrape tells what is served now, whichever worker took it.
GAUGE_MODE: Final = "livemostrecent"

blueprint = Blueprint("metrics", __name__)


@dataclass(frozen=True)
class _Metrics:
    requests: Counter
    duration: Histogram
    feedback_writes: Counter
    redis_errors: Counter
    index_version: Gauge
    index_papers: Gauge
    model_version: Gauge


_made: _Metrics | None = None
_lock = threading.Lock()


def _metrics() -> _Metrics:
    """The process's metrics, made once (every app of a test session shares them)."""
    global _made
    with _lock:
        if _made is None:
            if os.environ.get(MULTIPROC_ENV) and not getattr(values.ValueClass, "_multiprocess",
                                                             False):
                # prometheus_client was imported before the variable was set and chose the
                # in-process store; choose again so these metrics reach the shared directory.
                values.ValueClass = values.get_value_class()
            _made = _Metrics(
                Counter("paperrec_http_requests", "HTTP requests answered, by route template, "
                        "method and status", ["route", "method", "status"]),
                Histogram("paperrec_http_request_duration_seconds", "Time to answer an HTTP "
                          "request, by route template and method", ["route", "method"],
                          buckets=BUCKETS),
                Counter("paperrec_feedback_writes", "Feedback written (API, web page or email "
                        "link), by action: like, dislike, remove", ["action"]),
                Counter("paperrec_redis_errors", "Requests that failed because the feedback "
                        "store (Redis) could not be used"),
                Gauge("paperrec_index_version", "Index version served (the number of its "
                      "directory, 000003 -> 3); 0 while there is none",
                      multiprocess_mode=GAUGE_MODE),
                Gauge("paperrec_index_papers", "Papers in the index served",
                      multiprocess_mode=GAUGE_MODE),
                Gauge("paperrec_collaborative_model_version", "Collaborative model version "
                      "served; 0 while none is trained", multiprocess_mode=GAUGE_MODE),
            )
        return _made


def instrument(app: Flask) -> None:
    """Count and time every request of ``app`` and serve ``/metrics``.

    Call it before other ``before_request`` hooks (API keys), so refused requests count too.
    """
    metrics = _metrics()

    @app.before_request
    def start_clock() -> None:
        g.metrics_started = time.perf_counter()

    @app.after_request
    def count(response: Response) -> Response:
        # The rule template, never the raw path: one series per route, not per user or paper.
        route = request.url_rule.rule if request.url_rule else "unmatched"
        method = request.method if request.method in METHODS else "other"
        status = response.status_code
        metrics.requests.labels(route, method, str(status)).inc()
        started = g.get("metrics_started")
        if started is not None:
            metrics.duration.labels(route, method).observe(time.perf_counter() - started)
        # Set by the views that write; a web page's form answers with a redirect (303).
        if 200 <= status < 400 and "feedback_written" in g:
            metrics.feedback_writes.labels(g.feedback_written).inc()
        elif status == StoreUnavailable.status and _error_code(response) == StoreUnavailable.code:
            metrics.redis_errors.inc()
        return response

    app.register_blueprint(blueprint)


@blueprint.get("/metrics")
@access("admin")
def metrics() -> Response:
    parts = components()
    _refresh_served(parts.index, parts.collaborative)
    registry = REGISTRY
    shared = os.environ.get(MULTIPROC_ENV)
    if shared:
        registry = CollectorRegistry()  # a fresh one each scrape, summing every worker's file
        registry.register(_WorkerFiles(Path(shared)))
    return Response(generate_latest(registry) + _online_figures(parts),
                    mimetype=CONTENT_TYPE_LATEST)


class _WorkerFiles(Collector):
    """Every worker's metric file, summed as ``MultiProcessCollector`` does, passing over the
    files still empty: a starting worker creates its file and only then sizes it, and reading
    it in between fails the whole scrape (prometheus/client_python#1199)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def collect(self) -> Iterable[Metric]:
        files = [str(file) for file in self.path.glob("*.db") if _size(file) > 0]
        return MultiProcessCollector.merge(files, accumulate=True)


def _size(file: Path) -> int:
    try:
        return file.stat().st_size
    except FileNotFoundError:  # a dead worker's gauges, removed since the listing
        return 0


def _refresh_served(live_index: LiveIndex,
                    collaborative: LiveVersion[CollaborativeModel]) -> None:
    """Set the gauges from the index and model this worker serves (loading newer ones)."""
    metrics = _metrics()
    try:
        index = live_index.get()
        metrics.index_version.set(_number(index.version))
        metrics.index_papers.set(len(index))
    except PaperrecError:  # no index yet
        metrics.index_version.set(0)
        metrics.index_papers.set(0)
    collaborative.get()
    metrics.model_version.set(_number(collaborative.version))


def _number(version: str | None) -> int:
    return int(version) if version and version.isdigit() else 0


def _error_code(response: Response) -> str | None:
    """The ``error.code`` of one of our JSON error bodies (service.errors), else None."""
    body = response.get_json(silent=True) if response.is_json else None
    error = body.get("error") if isinstance(body, dict) else None
    return error.get("code") if isinstance(error, dict) else None


def _online_figures(parts: Paperrec) -> bytes:
    """The online figures' samples (nothing when they cannot be had: Redis down while the
    first figures would be computed)."""
    try:
        figures = parts.online_figures(time.time())
    except PaperrecError:
        return b""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_OnlineFigures(figures))
    return generate_latest(registry)


class _OnlineFigures(Collector):
    """The latest figures (``Paperrec.online_figures``) as gauges."""

    def __init__(self, figures: dict[str, Any]) -> None:
        self.figures = figures

    def collect(self) -> Iterable[Metric]:
        found = self.figures
        days = found.get("window_days", 7)
        window = (f" over the last {days:g} days of the impression log, as of "
                  f"paperrec_online_figures_timestamp_seconds (written by `paperrec "
                  f"export-events`, a step of every `paperrec jobs` round)")
        per = ["variant", "surface"]
        written = GaugeMetricFamily(
            "paperrec_online_figures_timestamp_seconds", "When the online figures were "
            "computed (unix time): the end of their window; old when `paperrec jobs` stopped")
        written.add_metric([], float(found.get("written_at") or found.get("until") or 0.0))
        yield written
        span = GaugeMetricFamily("paperrec_online_window_days", "Days of impression log the "
                                 "online figures cover")
        span.add_metric([], float(days))
        yield span
        like = GaugeMetricFamily(
            "paperrec_like_rate", "Likes of the papers served at places 1 to `at` over the "
            "papers served there, per ranking variant and surface (all: every surface)"
            + window, labels=[*per, "at"])
        families = {key: GaugeMetricFamily(name, text + window, labels=per)
                    for key, name, text in (
                        ("lists", "paperrec_lists_served", "Lists served with at least one "
                         "paper of the variant, per ranking variant and surface"),
                        ("impressions", "paperrec_papers_served", "Papers served, per ranking "
                         "variant and surface"),
                        ("dislike_rate", "paperrec_dislike_rate", "Dislikes over papers "
                         "served, per ranking variant and surface"),
                        ("coverage", "paperrec_coverage", "Distinct papers served over the "
                         "papers in the corpus, per ranking variant and surface"))}
        for variant, surfaces in found.get("variants", {}).items():
            for surface, figures in surfaces.items():
                for at in ("1", "5", "10"):
                    _add(like, [variant, surface, at], figures.get(f"like_rate@{at}"))
                for key, family in families.items():
                    _add(family, [variant, surface], figures.get(key))
        yield like
        yield from families.values()
        labels = ["experiment", "production", "candidate", "mode"]
        p_value = GaugeMetricFamily(
            "paperrec_experiment_p_value", "The running experiment's p-value (interleave: "
            "sign test over the lists won; ab: Welch's test of the readers' like rates), over "
            "the whole experiment up to paperrec_online_figures_timestamp_seconds",
            labels=labels)
        win_rate = GaugeMetricFamily(
            "paperrec_experiment_candidate_win_rate", "The running experiment's candidate: "
            "its share of the lists won (interleave) or its readers' like rate@10 (ab), with "
            "the 95% interval's bounds (bound=low, high), over the whole experiment up to "
            "paperrec_online_figures_timestamp_seconds", labels=[*labels, "bound"])
        for result in found.get("experiments", []):
            if result.get("stopped_at") is not None:
                continue
            verdict = result["verdict"]
            named = [result["id"], result["production"], result["candidate"], result["mode"]]
            _add(p_value, named, verdict["p_value"])
            for bound, key in (("estimate", "candidate_win_rate"), ("low", "low"),
                               ("high", "high")):
                _add(win_rate, [*named, bound], verdict[key])
        yield p_value
        yield win_rate
        ece = GaugeMetricFamily(
            "paperrec_calibration_ece", "Expected calibration error of the probabilities "
            "shown (10 bins; 0: each was the share liked)" + window)
        _add(ece, [], found.get("calibration", {}).get("ece"))
        yield ece


def _add(family: GaugeMetricFamily, labels: list[str], value: object) -> None:
    """A sample, unless the figure is undefined (a rate over nothing served)."""
    if isinstance(value, int | float) and math.isfinite(value):
        family.add_metric(labels, float(value))

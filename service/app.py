"""Application factory: wires the engine, the routes, error handling and request logging."""

from __future__ import annotations

import json
import logging
import time
import uuid

from flask import Flask, Response, g, request
from flask_openapi3 import Info, OpenAPI
from werkzeug.middleware.proxy_fix import ProxyFix

from recommender import wiring
from recommender.core.config import Settings
from recommender.wiring import Paperrec

from . import confirmation_mail, metrics, page_security, request_limits, web
from .api import (
    account,
    collections,
    digests,
    feedback,
    feeds,
    health,
    library,
    links,
    lists,
    papers,
    review,
    rules,
    zotero,
)
from .api.document import docs, document
from .api.validation import refuse
from .auth import ApiKeys, require_keys
from .errors import ErrorOut, register_error_handlers
from .rate_limit import Limit, RateLimiter, limits_storage
from .state import EXTENSION

log = logging.getLogger("paperrec.requests")
INFO = Info(title="paperrec", version="1", description="Personalized research-paper reading lists.")


def create_app(settings: Settings | None = None, parts: Paperrec | None = None) -> Flask:
    """The app over ``parts`` (default: ``recommender.wiring.build(settings)``)."""
    parts = parts or wiring.build(settings or Settings.from_env())
    settings = parts.settings
    # flask-openapi3's app: a Flask app that validates each API call with its models (a
    # failure: ``refuse``, a 400 in our words) and writes the document from them.
    app = OpenAPI(__name__, info=INFO, doc_ui=False, validation_error_status=400,
                  validation_error_model=ErrorOut, validation_error_callback=refuse)
    app.extensions[EXTENSION] = parts
    parts.index.refresh()  # a missing or damaged index is logged at start, not on first use
    _log_requests(app)  # first: every request is timed and logged, refused ones too
    metrics.instrument(app)  # counted too, before the API keys are checked
    request_limits.install(app)  # before any hook that reads a body (the CSRF check)
    app.after_request(page_security.protect_html)  # every HTML answer, whoever made it
    if settings.trusted_proxies:  # the client's address, as the proxies in front saw it
        n = settings.trusted_proxies
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n)  # type: ignore[method-assign]
    # The API, one blueprint per area (service/api); each area's line here.
    api = [health.api, papers.api, feedback.api, library.api, rules.api, lists.api,
           collections.api, zotero.api, digests.api, links.api, feeds.api, account.api,
           review.api]
    for area in api:
        app.register_api(area)
    app.register_blueprint(docs)
    rate_limits = limits_storage(parts.redis, parts.keys, settings.redis_url)
    web.install(app, parts, rate_limits, exempt=[*api, docs])  # with session, CSRF, limits
    confirmation_mail.install(app, rate_limits)
    keys = ApiKeys.parse(settings.api_keys, settings.api_keys_file)
    limit = Limit.parse(settings.rate_limit)
    limiter = RateLimiter(rate_limits, limit) if limit else None
    require_keys(app, keys, limiter)
    app.config["PAPERREC_OPENAPI"] = document(app, secured=bool(keys))
    register_error_handlers(app)
    return app


def _log_requests(app: Flask) -> None:
    @app.before_request
    def start_timer() -> None:
        g.started = time.perf_counter()
        g.request_id = request.headers.get("X-Request-Id") or uuid.uuid4().hex[:16]

    @app.after_request
    def log_line(response: Response) -> Response:
        ms = round((time.perf_counter() - g.started) * 1000, 2)
        response.headers["X-Request-Id"] = g.request_id
        response.headers["Server-Timing"] = f"app;dur={ms}"  # time spent in the app
        log.info(json.dumps({
            "request_id": g.request_id,
            "method": request.method,
            "path": request.path,
            "status": response.status_code,
            "ms": ms,
        }))
        return response

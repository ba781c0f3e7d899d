"""Application factory: wires the engine, the routes, error handling and request logging."""

from __future__ import annotations

import json
import logging
import time
import uuid

from flask import Flask, Response, g, request

from recommender.config import Settings
from recommender.engine import Recommender

from .auth import ApiKeys, require_keys
from .errors import register_error_handlers
from .routes import api
from .state import EXTENSION

log = logging.getLogger("paperrec.requests")


def create_app(settings: Settings | None = None, engine: Recommender | None = None) -> Flask:
    settings = settings or Settings.from_env()
    app = Flask(__name__)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.json.ensure_ascii = False  # type: ignore[attr-defined]
    app.extensions[EXTENSION] = engine or Recommender.from_settings(settings)
    _log_requests(app)  # first: every request is timed and logged, refused ones too
    app.register_blueprint(api)
    require_keys(app, ApiKeys.parse(settings.api_keys, settings.api_keys_file))
    register_error_handlers(app)
    return app


def _log_requests(app: Flask) -> None:
    @app.before_request
    def start_timer() -> None:
        g.started = time.perf_counter()
        g.request_id = request.headers.get("X-Request-Id") or uuid.uuid4().hex[:16]

    @app.after_request
    def log_line(response: Response) -> Response:
        response.headers["X-Request-Id"] = g.request_id
        log.info(json.dumps({
            "request_id": g.request_id,
            "method": request.method,
            "path": request.path,
            "status": response.status_code,
            "ms": round((time.perf_counter() - g.started) * 1000, 2),
        }))
        return response

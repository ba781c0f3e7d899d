"""Every error leaves the service as JSON ``{"error": {"code", "message"}}``; no tracebacks."""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from recommender.core.errors import PaperrecError

log = logging.getLogger(__name__)


def error_response(status: int, code: str, message: str) -> tuple[Response, int]:
    return jsonify({"error": {"code": code, "message": message}}), status


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(PaperrecError)
    def paperrec_error(exc: PaperrecError) -> tuple[Response, int]:
        response, status = error_response(exc.status, exc.code, exc.message)
        if exc.retry_after is not None:
            response.headers["Retry-After"] = str(exc.retry_after)
        return response, status

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> tuple[Response, int]:
        code = (exc.name or "error").lower().replace(" ", "_")
        response, status = error_response(exc.code or 500, code, exc.description or exc.name)
        for name, value in exc.get_headers():  # e.g. the Allow header of a 405
            if name != "Content-Type":
                response.headers[name] = value
        return response, status

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> tuple[Response, int]:
        log.exception("unhandled error")
        return error_response(500, "internal", "internal error; it has been logged")

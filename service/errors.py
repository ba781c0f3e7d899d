"""Every error leaves the service as JSON ``{"error": {"code", "message"}}``; no tracebacks.

The one place errors become HTTP answers: the library's exceptions (each with its status and
code, recommender.core.errors), Werkzeug's, and anything unexpected (a 500). ``ErrorOut`` is
that body's shape and ``ERROR_STATUSES`` what each status means, as /openapi.json shows them.
"""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify
from pydantic import BaseModel
from werkzeug.exceptions import HTTPException

from recommender.core.errors import PaperrecError

log = logging.getLogger(__name__)

ERROR_STATUSES = {
    400: "Bad input; the message says what is wrong.",
    401: "No API key, or not a valid one.",
    403: "This needs an admin API key (for an email link: the link is not valid; for a Zotero "
         "key, `zotero_refused`: Zotero refused it, the message says why).",
    404: "Not found; the message says what.",
    409: "It clashes with what is stored (a name already taken); the message says what.",
    410: "The link has expired.",
    413: "Too large, or too costly to read; the message says the limit.",
    414: "The URL is too long (ids are at most 128 characters).",
    415: "A content type this call does not read; the message lists those it does.",
    429: "Too many requests for this API key (setting a subscription: too many confirmation "
         "emails); retry after `Retry-After` seconds.",
    502: "An outside service (Zotero) could not be reached, or did not answer as it should; "
         "the message says what. Try again later.",
    503: "The index or Redis is unavailable, or the service is busy; retry after "
         "`Retry-After` seconds.",
}


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorDetail


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

"""Errors on the web pages are pages: a heading, what happened in words, where to go next.
Never a traceback. The API keeps its JSON errors (service/errors.py); an address no view
answers gets a page when a browser asks for it (it accepts HTML and is not under /v1/)."""

from __future__ import annotations

import logging

from flask import Flask, Response, request
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException

from recommender.core.errors import PaperrecError

from ..errors import error_response
from .blueprint import add_headers, page, web

log = logging.getLogger(__name__)
HEADINGS = {
    400: "That did not work",
    403: "Not allowed",
    404: "Not found",
    405: "Not found",
    410: "This link has expired",
    413: "That file is too large",
    415: "That file cannot be read",
    429: "Too many requests",
    500: "Something went wrong",
    503: "Not available right now",
}
MESSAGES = {
    404: "There is no page at this address.",
    405: "There is no page at this address.",
    500: "Something went wrong on our side; it has been logged. Try again, or go back to "
         "your list.",
    503: "A part of the service cannot be reached just now. Try again in a minute.",
}


def error_page(status: int, message: str, retry_after: int | None = None) -> Response:
    response = page("error.html", status=status, status_code=status,
                    heading=HEADINGS.get(status, "That did not work"), message=message)
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return add_headers(response)


def _sentence(message: str) -> str:
    message = message.strip()
    message = message[:1].upper() + message[1:]
    return message if message.endswith((".", "!", "?")) else message + "."


@web.errorhandler(CSRFError)
def csrf_error(exc: CSRFError) -> Response:
    return error_page(400, "This form has expired or did not come from this site. Go back, "
                           "reload the page and send it again.")


@web.errorhandler(PaperrecError)
def paperrec_error(exc: PaperrecError) -> Response:
    status = exc.status if exc.status in HEADINGS else 500
    if status >= 500:
        log.warning("web page unavailable: %s", exc.message)
        return error_page(status, MESSAGES[503], exc.retry_after)
    return error_page(status, _sentence(exc.message), exc.retry_after)


@web.errorhandler(HTTPException)
def http_error(exc: HTTPException) -> Response:
    status = exc.code or 500
    message = MESSAGES.get(status) or _sentence(exc.description or exc.name)
    return error_page(status, message)


@web.errorhandler(Exception)
def unexpected(exc: Exception) -> Response:
    log.exception("unhandled error on a web page")
    return error_page(500, MESSAGES[500])


def wants_page() -> bool:
    """A browser asking for an address no view answers (not the API's)."""
    if request.path.startswith(("/v1/", "/openapi", "/docs", "/metrics")):
        return False
    return request.accept_mimetypes.best == "text/html"


def install_not_found_pages(app: Flask) -> None:
    """404 and 405 of addresses outside every blueprint: a page for a browser, JSON for the
    rest (as before)."""

    def not_found(exc: HTTPException) -> tuple[Response, int] | Response:
        if request.blueprint is None and wants_page():
            return error_page(exc.code or 404, MESSAGES[404])
        response, status = error_response(exc.code or 404,
                                          (exc.name or "error").lower().replace(" ", "_"),
                                          exc.description or exc.name)
        for name, value in exc.get_headers():
            if name != "Content-Type":
                response.headers[name] = value
        return response, status

    app.register_error_handler(404, not_found)
    app.register_error_handler(405, not_found)

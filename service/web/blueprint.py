"""The web pages' blueprint, and what every web view shares: who is signed in, the answer
headers, the page renderer, the redirect back after a form, and the values of a query string
or form checked as the API checks them (a value out of range is an InvalidInput: a 400 page
saying which field, never a crash).

The pages are for people with a browser: a signed-in reader is known by the server-side
session (service/web/sessions.py), never by an API key, so every endpoint of this blueprint
is open to the API-key check (``service.access``) and checks the session itself.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from flask import Blueprint, Response, redirect, render_template, request, session, url_for

from recommender.core.errors import InvalidInput

from ..state import components

web = Blueprint("web", __name__)
View = TypeVar("View", bound=Callable[..., Any])

# Beside the headers of every HTML answer (service.page_security).
HEADERS = {
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",  # the pages show a reader's own data
}


def add_headers(response: Response) -> Response:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    response.vary.add("Cookie")
    return response


web.after_request(add_headers)


def current_user() -> str | None:
    """The user id of the signed-in reader, or None."""
    user = session.get("uid")
    return user if isinstance(user, str) else None


def signed_in_user() -> str:
    """The signed-in reader's user id, in a view behind ``signed_in``."""
    user = current_user()
    assert user is not None
    return user


def current_email() -> str:
    return str(session.get("email", ""))


def is_operator() -> bool:
    """Whether the signed-in reader is an operator (an address PAPERREC_ADMIN_EMAILS names)."""
    email = current_email().lower()
    return bool(email) and email in {
        address.strip().lower()
        for address in components().settings.admin_emails.split(",") if address.strip()}


def signed_in(view: View) -> View:
    """The view needs a signed-in reader; anyone else is sent to the sign-in page (and back
    here afterwards)."""

    @wraps(view)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if current_user() is None:
            return redirect(url_for("web.sign_in", next=request.full_path.rstrip("?")))
        return view(*args, **kwargs)

    return cast(View, checked)


def page(template: str, status: int = 200, **context: Any) -> Response:
    """A page of ``service/templates``, autoescaped, with the signed-in reader's address."""
    html = render_template(template, user=current_user(), email=current_email(),
                           operator=current_user() is not None and is_operator(), **context)
    return Response(html, status=status, content_type="text/html; charset=utf-8")


def local_path(target: str | None, default: str) -> str:
    """``target`` when it is a path on this site (``/list?page=2``), else ``default``: a form's
    ``next`` never sends the reader elsewhere."""
    if not target:
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//") \
            or "\\" in target:
        return default
    return target


def back(default_endpoint: str = "web.reading_list") -> Response:
    """Redirect after a form to where it came from (its ``next`` field), 303 See Other."""
    target = local_path(request.form.get("next"), url_for(default_endpoint))
    return cast(Response, redirect(target, code=303))


# --- values of a query string or a form -------------------------------------------------

def optional_float(values: Mapping[str, str], name: str, low: float, high: float,
                   label: str) -> float | None:
    text = values.get(name, "").strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        raise InvalidInput(f"{label} must be a number from {low:g} to {high:g}") from None
    if not low <= number <= high:  # also NaN
        raise InvalidInput(f"{label} must be a number from {low:g} to {high:g}")
    return number


def integer(values: Mapping[str, str], name: str, low: int, high: int, default: int,
            label: str) -> int:
    text = values.get(name, "").strip()
    if not text:
        return default
    try:
        number = int(text)
    except ValueError:
        raise InvalidInput(f"{label} must be a whole number from {low} to {high}") from None
    if not low <= number <= high:
        raise InvalidInput(f"{label} must be a whole number from {low} to {high}")
    return number


def optional_date(values: Mapping[str, str], name: str, label: str) -> dt.date | None:
    text = values.get(name, "").strip()
    if not text:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"{label} must be a date like 2026-11-01") from None


def flag(values: Mapping[str, str], name: str) -> bool:
    return values.get(name, "") in ("1", "on", "true", "yes")

"""Who may call each endpoint, declared on its view:

    @api.get("/healthz", ...)
    @access("open")
    def healthz() -> Reply: ...

``open``: no key; ``client``: a client or admin key; ``admin``: an admin key. A view that
declares nothing needs a client key. ``service.auth`` checks the declaration on every request
and the document's security section is made from it (service.api.document). Below an API
route decorator: flask-openapi3 registers a copy of the view made when it decorates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeVar

from flask import current_app

Access = Literal["open", "client", "admin"]
View = TypeVar("View", bound=Callable[..., object])
_ATTRIBUTE = "paperrec_access"


def access(level: Access) -> Callable[[View], View]:
    """Declare who may call the view."""

    def declare(view: View) -> View:
        setattr(view, _ATTRIBUTE, level)
        return view

    return declare


def access_of(endpoint: str | None) -> Access:
    """What the app's ``endpoint`` declares (a request that matched no endpoint: client)."""
    if endpoint is None:
        return "client"
    if endpoint == "static" or endpoint.endswith(".static"):
        return "open"  # the stylesheets and scripts every page loads
    return declared(current_app.view_functions.get(endpoint))


def declared(view: Callable[..., object] | None) -> Access:
    level: Access = getattr(view, _ATTRIBUTE, "client")
    return level

"""Who may call each endpoint, declared once where the endpoint is declared.

An API operation says it in ``openapi.operation(..., access=...)``; other views (the docs,
/metrics) with the ``access`` decorator. ``service.auth`` checks the declaration on every
request, and the OpenAPI document's security section is made from it. An endpoint that
declares nothing needs a client key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeVar

from flask import Blueprint

Access = Literal["open", "client", "admin"]  # open: no key; admin: an admin key
_DECLARED: dict[str, Access] = {}
View = TypeVar("View", bound=Callable[..., object])


def declare_access(endpoint: str, level: Access) -> None:
    """``endpoint`` as Flask names it: ``<blueprint>.<view function>``."""
    _DECLARED[endpoint] = level


def access(blueprint: Blueprint, level: Access) -> Callable[[View], View]:
    """Declare the access of one of ``blueprint``'s views."""

    def decorate(view: View) -> View:
        declare_access(f"{blueprint.name}.{view.__name__}", level)
        return view

    return decorate


def access_of(endpoint: str | None) -> Access:
    return _DECLARED.get(endpoint or "", "client")


"""How an area of the API is declared: its blueprint, what each view answers, and the answer
as JSON. Validation and the document are flask-openapi3's, from the models each view names:

    api = area(__name__, tag="papers")

    @api.get("/v1/papers/<path:paper_id>", summary="One paper.", responses=answers(PaperOut, 404))
    def paper(path: PaperPath) -> Reply:
        return reply(PaperOut.model_validate(...))

A view's ``path``, ``query`` and ``body`` parameters name its models; ``access`` (below the
route decorator) says who may call it. service/app.py registers each area's blueprint.
"""

from __future__ import annotations

import functools
from dataclasses import is_dataclass
from typing import Any

from flask import Response, jsonify
from flask_openapi3 import APIBlueprint, Tag
from flask_openapi3.types import ResponseDict
from pydantic import BaseModel, RootModel, TypeAdapter

from ..errors import ERROR_STATUSES
from .shapes import Answer
from .validation import no_unknown_query, one_value_each

Reply = tuple[Response, int]
ERROR_BODY = {"$ref": "#/components/schemas/ErrorOut"}
RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}}}
HTML = {"text/html": {"schema": {"type": "string"}}}


def area(import_name: str, *, tag: str, query_strings: bool = True) -> APIBlueprint:
    """The blueprint of one module's views (named after the module), under one tag.

    ``query_strings=False``: its views ignore a query string they do not read (the pages of
    email links, which mail clients and scanners decorate); otherwise it is a 400.
    """
    blueprint = APIBlueprint(import_name.rsplit(".", 1)[-1], import_name,
                             abp_tags=[Tag(name=tag)], operation_id_callback=_operation_id)
    blueprint.before_request(one_value_each)
    if query_strings:
        blueprint.before_request(no_unknown_query)
    return blueprint


def _operation_id(*, name: str, path: str, method: str, bp_name: str = "") -> str:
    return name  # the view's name: unique across the API


def answers(ok: type | dict[str, Any] | None, *errors: int, status: int = 200,
            html: bool = False) -> ResponseDict:
    """A view's answers for the document: ``ok`` (a model or result type answered as JSON, an
    OpenAPI response object for anything else, or None for no body; ``html``: a page) with
    ``status``, then each error of ``errors``. The document adds those every call of a kind
    may give (service.api.document)."""
    found: ResponseDict = {status: success(ok, html)}
    for code in errors:
        found[code] = error_answer(code, html)
    return found


def success(ok: type | dict[str, Any] | None, html: bool = False) -> Any:
    if html:
        return {"description": "An HTML page for a person to read.", "content": HTML}
    if ok is None:
        return {"description": "Done."}
    if isinstance(ok, dict):
        return {"description": "OK.", **ok}
    return response_model(ok)


def error_answer(code: int, html: bool = False) -> dict[str, Any]:
    """An error status as the document shows it: the JSON error body (an HTML page for the
    pages of email links), with Retry-After where the client should wait."""
    answer: dict[str, Any] = {"description": ERROR_STATUSES[code],
                              "content": HTML if html else {
                                  "application/json": {"schema": ERROR_BODY}}}
    if code in (429, 503):
        answer["headers"] = RETRY_AFTER
    return answer


@functools.cache
def response_model(kind: type) -> type[BaseModel]:
    """``kind`` as flask-openapi3 documents an answer: a pydantic model as it is, one of the
    library's result types (a dataclass) wrapped under its own name."""
    if issubclass(kind, BaseModel):
        return kind
    if not is_dataclass(kind):
        raise TypeError(f"{kind!r} is neither a pydantic model nor a dataclass")
    return type(kind.__name__, (RootModel[kind],),  # type: ignore[valid-type]
                {"__module__": kind.__module__, "model_config": Answer.model_config})


def reply(value: object, status: int = 200) -> Reply:
    """A model or one of the library's result types as the JSON answer."""
    kind: Any = type(value)
    return jsonify(_adapter(kind).dump_python(value, mode="json")), status


@functools.cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)

"""One source of truth for the API: each view is declared with its models, which validate the
call and make up the OpenAPI 3.1 document served at /openapi.json (browsable at /docs).

    @operation(api, "GET", "/v1/search", query=SearchQuery, response=SearchOut, ...)
    def search(query: SearchQuery) -> SearchOut: ...

Path parameters are checked against ``api_models.PATH_PARAMETERS``, the query string against
the ``query`` model and the JSON body against the ``body`` model; any failure is a 400 whose
message names the fields. A view returns an instance of its response model (or a Flask
response for anything else, e.g. an empty 204).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import swagger_ui
from flask import Blueprint, Flask, Response, current_app, jsonify, request
from pydantic import BaseModel, TypeAdapter, ValidationError

from recommender.core.errors import InvalidInput

from . import api_models
from .access import Access, access, declare_access

ERROR_STATUSES = {
    400: "Bad input; the message says what is wrong.",
    401: "No API key, or not a valid one.",
    403: "This needs an admin API key (for an email link: the link is not valid).",
    404: "Not found; the message says what.",
    410: "The link has expired.",
    413: "Too large; the message says the limit.",
    414: "The URL is too long (ids are at most 128 characters).",
    415: "A content type this call does not read; the message lists those it does.",
    429: "Too many requests for this API key; retry after `Retry-After` seconds.",
    503: "The index or Redis is unavailable; retry after `Retry-After` seconds.",
}
_PATH_ADAPTERS = {name: TypeAdapter(kind) for name, kind in api_models.PATH_PARAMETERS.items()}
_RULE_PARAMETER = re.compile(r"<(?:[a-z]+:)?([a-z_]+)>")


@dataclass(frozen=True)
class Operation:
    method: str
    rule: str
    endpoint: str
    summary: str
    tag: str
    response: type[BaseModel] | None
    status: int
    query: type[BaseModel] | None
    body: type[BaseModel] | None
    errors: tuple[int, ...]
    access: Access  # who may call it (service.auth)
    html: bool = False  # the response is an HTML page (the email links)
    description: str = ""  # more than the summary says, when there is more to say
    # A body that is not a JSON object (a file): its OpenAPI "content" map; the view reads it.
    raw_body: dict[str, Any] | None = None
    # A response that is not JSON (a file): its OpenAPI response ("content", "headers").
    raw_response: dict[str, Any] | None = None
    # Answers other than the success and the errors (e.g. a 304): status -> OpenAPI response.
    other_responses: dict[str, Any] | None = None


OPERATIONS: list[Operation] = []  # every declared operation, in declaration order


def operation(
    blueprint: Blueprint, method: str | tuple[str, ...], rule: str, *, summary: str, tag: str,
    response: type[BaseModel] | None = None, status: int = 200,
    query: type[BaseModel] | None = None, body: type[BaseModel] | None = None,
    errors: tuple[int, ...] = (), html: bool = False, access: Access = "client",
    description: str = "", raw_body: dict[str, Any] | None = None,
    raw_response: dict[str, Any] | None = None, other_responses: dict[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare, validate and register one API operation; ``access`` says who may call it
    (``open``, ``client`` or ``admin``: service.auth checks it, the document shows it)."""

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(view)
        def validated(**path: str) -> Any:
            for name, value in path.items():
                adapter = _PATH_ADAPTERS[name]
                _parse(adapter.validate_python, value, f"path parameter {name}",
                       adapter.json_schema)
            extra: dict[str, Any] = {}
            repeated = [name for name, values in request.args.lists() if len(values) > 1]
            if repeated:
                raise InvalidInput(f"query parameter(s) given more than once: "
                                   f"{', '.join(repeated)}; give each once")
            if query is not None:
                extra["query"] = _parse(query.model_validate, request.args.to_dict(),
                                        "query parameter", query.model_json_schema)
            elif request.args and not html:
                raise InvalidInput(f"unknown query parameter(s): {', '.join(request.args)}")
            if body is not None:
                data = request.get_json(silent=True)
                if not isinstance(data, dict):
                    raise InvalidInput(f"the body must be a JSON object with the field(s) "
                                       f"{', '.join(body.model_fields)}, sent with "
                                       "Content-Type: application/json")
                extra["body"] = _parse(body.model_validate, data, "field",
                                       body.model_json_schema)
            result = view(**path, **extra)
            if isinstance(result, BaseModel):
                return jsonify(result.model_dump(mode="json")), status
            return result

        methods = (method,) if isinstance(method, str) else method
        endpoint = f"{blueprint.name}.{view.__name__}"
        declare_access(endpoint, access)
        OPERATIONS.extend([Operation(
            each, rule, endpoint, summary, tag, response, status, query, body, errors, access,
            html, description, raw_body, raw_response, other_responses) for each in methods])
        blueprint.add_url_rule(rule, view_func=validated, methods=list(methods))
        return validated

    return decorate


def _parse(validate: Callable[[Any], Any], value: Any, what: str,
           schema: Callable[[], dict[str, Any]]) -> Any:
    try:
        return validate(value)
    except ValidationError as exc:
        raise InvalidInput(_describe(exc, what, schema())) from None


def _describe(exc: ValidationError, what: str, schema: dict[str, Any]) -> str:
    """A validation failure in words a client can act on, naming every field concerned.

    ``schema`` is the JSON schema of what was validated: its limits and descriptions make
    the messages ("k must be between 1 and 200, got 0"), so they cannot drift from the docs.
    """
    errors = exc.errors()
    unknown = [str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden"]
    problems = [f"unknown {what}(s): {', '.join(unknown)}; allowed: "
                f"{', '.join(schema.get('properties', {}))}"] if unknown else []
    for error in errors:
        if error["type"] == "extra_forbidden":
            continue
        name = str(error["loc"][0]) if error["loc"] else what.split()[-1]
        field_schema = schema.get("properties", {}).get(name, schema)
        options = [o for o in field_schema.get("anyOf", []) if o.get("type") != "null"]
        if options:  # an optional value: the limits are on its non-null form
            field_schema = {**options[0], **field_schema}
        given = error.get("input")
        got = "" if error["type"] == "missing" else f", got {_short(given)}"
        low, high = field_schema.get("minimum"), field_schema.get("maximum")
        if error["type"] == "missing":
            problems.append(f"{name} is required")
        elif error["type"] in _RANGE_ERRORS and low is not None and high is not None:
            problems.append(f"{name} must be between {low} and {high}{got}")
        elif error["type"] in _SHAPE_ERRORS and "description" in field_schema:
            problems.append(f"{name} must be {field_schema['description']}{got}")
        else:
            message = error["msg"].removeprefix("Value error, ")
            message = message[0].lower() + message[1:]
            problems.append(f"{name}: {message}{got}")
    return "; ".join(problems)


_RANGE_ERRORS = {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}
_SHAPE_ERRORS = {"string_pattern_mismatch", "string_too_long", "string_too_short"}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:50]}… ({len(str(value))} characters)"


# --- the document -------------------------------------------------------------------------
def document(app: Flask, *, secured: bool) -> dict[str, Any]:
    """The OpenAPI 3.1 document of this app (its security as configured)."""
    schemas: dict[str, Any] = {}
    paths: dict[str, dict[str, Any]] = {}
    shared = Counter(op.endpoint for op in OPERATIONS)  # one view, several methods
    for op in OPERATIONS:
        if op.endpoint not in app.view_functions:
            continue
        path = _RULE_PARAMETER.sub(r"{\1}", op.rule)
        spec: dict[str, Any] = {
            "operationId": op.endpoint.split(".")[-1] + (
                f"_{op.method.lower()}" if shared[op.endpoint] > 1 else ""),
            "summary": op.summary,
            **({"description": op.description} if op.description else {}),
            "tags": [op.tag],
            "parameters": [_path_parameter(name) for name in _RULE_PARAMETER.findall(op.rule)],
            "responses": {},
        }
        if op.query is not None:
            spec["parameters"] += _query_parameters(op.query, schemas)
        if op.body is not None:
            spec["requestBody"] = {"required": True, "content": {
                "application/json": {"schema": _schema(op.body, schemas)}}}
        if op.raw_body is not None:
            spec["requestBody"] = {"required": True, "content": op.raw_body}
        if op.raw_response is not None:
            spec["responses"][str(op.status)] = {"description": "OK.", **op.raw_response}
        elif op.html:
            spec["responses"][str(op.status)] = {"description": "An HTML page for a person "
                                                 "to read.", "content": {"text/html": {
                                                     "schema": {"type": "string"}}}}
        elif op.response is None:
            spec["responses"][str(op.status)] = {"description": "Done."}
        else:
            spec["responses"][str(op.status)] = {
                "description": "OK.",
                "content": {"application/json": {"schema": _schema(op.response, schemas)}}}
        spec["responses"].update(op.other_responses or {})
        statuses = set(op.errors)
        if (op.query is not None or op.body is not None or op.raw_body is not None
                or spec["parameters"]):
            statuses.add(400)
        if spec["parameters"]:
            statuses.add(414)  # the server refuses a request line over 4094 bytes
        if secured and op.access != "open":
            spec["security"] = [{"bearer": []}]
            statuses |= {401, 403, 429}
        for code in sorted(statuses):
            spec["responses"][str(code)] = _error_response(code, op.html, schemas)
        paths.setdefault(path, {})[op.method.lower()] = spec
    components: dict[str, Any] = {"schemas": schemas}
    if secured:
        components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "paperrec", "version": "1",
                 "description": "Personalized research-paper reading lists."},
        "paths": paths,
        "components": components,
    }


def _schema(model: type[BaseModel], schemas: dict[str, Any]) -> dict[str, Any]:
    found = model.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(found.pop("$defs", {}))
    schemas[model.__name__] = found
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _path_parameter(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True,
            "schema": _PATH_ADAPTERS[name].json_schema()}


def _query_parameters(model: type[BaseModel], schemas: dict[str, Any]) -> list[dict[str, Any]]:
    found = model.model_json_schema()
    parameters = []
    for name, schema in found["properties"].items():
        description = schema.pop("description", None)
        parameter = {"name": name, "in": "query", "required": name in found.get("required", ()),
                     "schema": schema}
        if description:
            parameter["description"] = description
        parameters.append(parameter)
    return parameters


def _error_response(code: int, html: bool, schemas: dict[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = {"description": ERROR_STATUSES[code]}
    if html:
        response["content"] = {"text/html": {"schema": {"type": "string"}}}
    else:
        response["content"] = {"application/json": {"schema": _schema(api_models.ErrorOut,
                                                                        schemas)}}
    if code in (429, 503):
        response["headers"] = {"Retry-After": {"description": "Seconds to wait.",
                                               "schema": {"type": "integer"}}}
    return response


# --- /openapi.json and /docs --------------------------------------------------------------
docs = Blueprint("docs", __name__, static_folder=str(Path(swagger_ui.__file__).parent / "static"),
                 static_url_path="/docs/static")
DOCS_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>paperrec API</title>
<link rel="stylesheet" href="/docs/static/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/docs/static/swagger-ui-bundle.js"></script>
<script>SwaggerUIBundle({url: "/openapi.json", dom_id: "#ui"});</script>
</body></html>"""


declare_access("docs.static", "open")


@docs.get("/openapi.json")
@access(docs, "open")
def openapi_json() -> Response:
    return jsonify(current_app.config["PAPERREC_OPENAPI"])


@docs.get("/docs")
@access(docs, "open")
def docs_page() -> tuple[str, int, dict[str, str]]:
    return DOCS_PAGE, 200, {"Content-Type": "text/html; charset=utf-8"}

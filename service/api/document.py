"""The OpenAPI 3.1 document served at /openapi.json, and Swagger UI at /docs (served from the
swagger-ui-py package, nothing from a CDN).

flask-openapi3 writes the document from the views' models and declared answers. ``document``
adds what depends on the app as configured: the statuses every call of a kind may give (400
for a call with input; 414 for one with parameters: gunicorn refuses a request line over
4,094 bytes before the app sees it), and, with API keys, the security each view declares
(service.access) with its 401, 403 and 429.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import swagger_ui
from flask import Blueprint, Response, current_app, jsonify
from flask_openapi3 import OpenAPI

from ..access import access, declared
from .area import error_answer

_RULE_PARAMETER = re.compile(r"<(?:[a-z]+:)?([a-z_]+)>")


def document(app: OpenAPI, *, secured: bool) -> dict[str, Any]:
    """The app's document, its security as configured (``secured``: API keys are required)."""
    spec = copy.deepcopy(app.api_doc)
    endpoints = {(_RULE_PARAMETER.sub(r"{\1}", rule.rule), method.lower()): rule.endpoint
                 for rule in app.url_map.iter_rules() for method in rule.methods or ()}
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            level = declared(app.view_functions[endpoints[path, method]])
            _add_statuses(operation, secured=secured and level != "open")
    if secured:
        spec["components"]["securitySchemes"] = {"bearer": {"type": "http",
                                                            "scheme": "bearer"}}
    return spec


def _add_statuses(operation: dict[str, Any], *, secured: bool) -> None:
    responses = operation["responses"]
    responses.pop("400", None)  # flask-openapi3's, for every call: only those with input
    html = any("text/html" in answer.get("content", {}) for answer in responses.values())
    parameters = operation.get("parameters", [])
    statuses = set()
    if parameters or "requestBody" in operation:
        statuses.add(400)
    if parameters:
        statuses.add(414)  # gunicorn's, for a request line over 4,094 bytes
    if secured:
        operation["security"] = [{"bearer": []}]
        statuses |= {401, 403, 429}
    for code in statuses:
        responses.setdefault(str(code), error_answer(code, html))
    operation["responses"] = dict(sorted(responses.items()))


# --- /openapi.json and /docs ---------------------------------------------------------------
docs = Blueprint("docs", __name__, static_folder=str(Path(swagger_ui.__file__).parent / "static"),
                 static_url_path="/docs/static")
DOCS_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>paperrec API</title>
<link rel="stylesheet" href="/docs/static/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/docs/static/swagger-ui-bundle.js"></script>
<script src="/docs/static/paperrec-docs.js"></script>
</body></html>"""
# In a file of its own: the page's policy runs no inline script.
DOCS_SCRIPT = 'SwaggerUIBundle({url: "/openapi.json", dom_id: "#ui"});\n'
DOCS_HEADERS = {"Content-Type": "text/html; charset=utf-8"}  # and service.page_security's


@docs.get("/openapi.json")
@access("open")
def openapi_json() -> Response:
    return jsonify(current_app.config["PAPERREC_OPENAPI"])


@docs.get("/docs")
@access("open")
def docs_page() -> tuple[str, int, dict[str, str]]:
    return DOCS_PAGE, 200, DOCS_HEADERS


@docs.get("/docs/static/paperrec-docs.js")
@access("open")
def docs_script() -> Response:
    return Response(DOCS_SCRIPT, content_type="text/javascript; charset=utf-8")

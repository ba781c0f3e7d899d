"""The OpenAPI document: it covers every route, its models validate every call, and
schemathesis fuzzing against the app finds no 5xx and no response that breaks it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.serving import make_server

from recommender.core.config import Settings
from replay.server import free_port
from replay.zotero import ZoteroReplay

ADMIN_KEY = "admin-key-for-the-fuzzer-0123"
UNDOCUMENTED = {"static", "docs.static", "docs.openapi_json", "docs.docs_page", "docs.docs_script",
                "metrics.metrics"}
WEB_PAGES = "web."  # the pages for a browser (service/web), not operations of the API


def test_every_route_is_documented_and_nothing_else(app: Flask, client: FlaskClient) -> None:
    spec = client.get("/openapi.json").json
    assert spec["openapi"].startswith("3.")
    documented = {(method.upper(), path) for path, ops in spec["paths"].items()
                  for method in ops}
    routed = {(method, re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule))
              for rule in app.url_map.iter_rules() if rule.endpoint not in UNDOCUMENTED
              and not rule.endpoint.startswith(WEB_PAGES)
              for method in rule.methods or () if method not in ("HEAD", "OPTIONS")}
    assert documented == routed


def test_limits_are_documented_as_they_are_enforced(client: FlaskClient) -> None:
    spec = client.get("/openapi.json").json
    recs = spec["paths"]["/v1/users/{user_id}/recommendations"]["get"]
    params = {p["name"]: p for p in recs["parameters"]}
    assert params["k"]["schema"]["maximum"] == 200 and params["k"]["schema"]["minimum"] == 1
    assert params["user_id"]["schema"]["maxLength"] == 128
    user_pattern = params["user_id"]["schema"]["pattern"]
    assert re.fullmatch(user_pattern, "ada.lovelace@example") and not re.fullmatch(
        user_pattern, "ada lovelace")
    response = client.get("/v1/users/ada/recommendations?k=201")
    assert response.status_code == 400
    assert response.json["error"]["message"] == "k must be between 1 and 200, got '201'"
    assert client.get("/v1/users/" + "a" * 129 + "/feedback").status_code == 400
    assert client.get("/v1/users/" + "a" * 128 + "/feedback").status_code == 200


def test_unknown_fields_and_parameters_are_named(client: FlaskClient) -> None:
    response = client.get("/v1/users/ada/recommendations?k=5&kk=5&sort=new")
    assert response.status_code == 400
    assert response.json["error"]["message"].startswith(
        "unknown query parameter(s): kk, sort; allowed: k, offset")
    response = client.put("/v1/users/ada/subscription",
                          json={"email": "ada@example.org", "colour": "blue"})
    assert response.status_code == 400
    assert "unknown field(s): colour" in response.json["error"]["message"]
    assert client.get("/v1/users/ada/feedback?x=1").status_code == 400
    twice = client.get("/v1/users/ada/recommendations?k=5&k=7")
    assert twice.status_code == 400
    assert twice.json["error"]["message"] == (
        "query parameter(s) given more than once: k; give each once")


def test_docs_are_served_from_the_package_not_a_cdn(client: FlaskClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert assets and all(asset.startswith("/docs/static/") for asset in assets)
    loaded = {asset: client.get(asset) for asset in assets}
    assert all(response.status_code == 200 for response in loaded.values()), loaded
    # Swagger UI started by a script of its own: the page's policy runs no inline script.
    assert "<script>" not in page.text
    assert any("SwaggerUIBundle({" in response.text for response in loaded.values())
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]


@pytest.fixture
def keyed_app_url(sample_settings: Settings, make_app: Callable[[Settings], Flask]
                  ) -> Iterator[str]:
    """The app with an admin key, served over WSGI by Werkzeug's server on a loopback port:
    what is fuzzed is the app itself. (gunicorn, under `paperrec serve`, refuses a request
    line over 4,094 bytes with its own 414 before the app sees it; the document declares it.)"""
    # Zotero is the local replay (never api.zotero.org): a fuzzed key is refused (400), the
    # documented example connects.
    with ZoteroReplay() as zotero:
        app = make_app(sample_settings.replace(api_keys=f"admin:{ADMIN_KEY}", rate_limit="off",
                                               zotero_api_url=zotero.url))
        server = make_server("127.0.0.1", free_port(), app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.server_port}"
        server.shutdown()
        thread.join(10)


def test_schemathesis_finds_no_server_error_and_no_nonconforming_response(
    keyed_app_url: str, tmp_path: Path
) -> None:
    """Every check schemathesis has (no 5xx, status codes, content types, headers and bodies
    as documented, invalid input rejected, valid input accepted, auth enforced), on every
    operation, through the coverage, fuzzing and stateful phases, with none relaxed.

    The document states what each call takes; a library file's grammar (BibTeX, RIS, ...)
    is beyond JSON Schema, so tests/schemathesis_files.py tells the fuzzer what a file of
    each media type the document names looks like."""
    schemathesis = Path(sys.executable).parent / "schemathesis"
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.schemathesis_files",
           "PYTHONPATH": str(Path(__file__).parent.parent)}
    result = subprocess.run(
        [str(schemathesis), "--no-color", "run", f"{keyed_app_url}/openapi.json",
         "--checks", "all", "-H", f"Authorization: Bearer {ADMIN_KEY}",
         # One worker: Python 3.11.7's parser is not thread-safe ("AST constructor recursion
         # depth mismatch", fixed in 3.11.8), and hypothesis parses source in each thread.
         "--max-examples", "25", "--request-timeout", "30", "--workers", "1"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report[-6000:]
    assert re.search(r"Tested: 44", report), report[-3000:]


def test_the_document_says_which_calls_need_a_key(
    sample_settings: Settings, make_app: Callable[[Settings], Flask]
) -> None:
    keyed = sample_settings.replace(api_keys=f"admin:{ADMIN_KEY}")
    spec = make_app(keyed).test_client().get("/openapi.json").json
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert "security" not in spec["paths"]["/healthz"]["get"]
    recs = spec["paths"]["/v1/users/{user_id}/recommendations"]["get"]
    assert recs["security"] == [{"bearer": []}]
    assert {"401", "403", "429"} <= set(recs["responses"])
    assert recs["responses"]["429"]["headers"]["Retry-After"]


def _patterns(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            yield node["pattern"]
        for value in node.values():
            yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


def test_every_pattern_means_the_same_to_the_server_and_to_json_schema(
        client: FlaskClient) -> None:
    """The server checks a declared pattern with pydantic (Rust's regex) or, for a rule's value,
    in the library with Python's ``re``; clients and schemathesis with JSON Schema's ECMA-262
    dialect (jsonschema_rs), where ``\\w`` is ASCII only: the two must agree on every text."""
    from recommender.feedback.rules import VALUE_PATTERN

    patterns = sorted(set(_patterns(client.get("/openapi.json").json)))
    assert VALUE_PATTERN.pattern in patterns and len(patterns) >= 4
    for pattern in patterns:
        _server_and_schema_agree(pattern)


def _server_and_schema_agree(pattern: str) -> None:
    """On hand-picked texts, and on what hypothesis makes of the pattern and of any text."""
    from typing import Annotated

    import jsonschema_rs
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from pydantic import StringConstraints, TypeAdapter, ValidationError

    from recommender.feedback.rules import VALUE_PATTERN

    checker = jsonschema_rs.validator_for({"type": "string", "pattern": pattern})
    pydantic = TypeAdapter(Annotated[str, StringConstraints(pattern=pattern)])

    def server(text: str) -> bool:
        if pattern == VALUE_PATTERN.pattern:  # the library's own check
            return VALUE_PATTERN.search(text) is not None
        try:
            pydantic.validate_python(text)
        except ValidationError:
            return False
        return True

    def agree(text: str) -> None:
        assert server(text) == checker.is_valid(text), (pattern, text)

    for text in ["a", "á", "_", "日本", "×", "\U0001F600", "\U000c1038áóú", "\ue000", " ",
                 "\u00a0", "\ufeff", "ada@example.org", "ada@example.org\n", "Yoshua Bengio", ""]:
        agree(text)
    given(st.from_regex(pattern) | st.text(max_size=20))(settings(
        max_examples=200, deadline=None, database=None,
        suppress_health_check=list(HealthCheck))(agree))()

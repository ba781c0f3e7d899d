"""Threat: another site frames a page to steal a click, or a page runs a script it did not
ship. Every HTML answer, whichever part of the service makes it (the web pages, the email
links' pages, the API docs, the error pages), carries the one Content-Security-Policy, a
frame header and nosniff (service/page_security.py). The tests of the pages themselves
(CSRF on every form, escaping, GET-safe links) are listed by threat in docs/security.md."""

from __future__ import annotations

import re

from flask import Flask
from flask.testing import FlaskClient

from service.page_security import CONTENT_SECURITY_POLICY


def test_every_html_answer_carries_the_policy_and_cannot_be_framed(
    web_app: Flask, ada: FlaskClient,
) -> None:
    anonymous = web_app.test_client()
    paths = set()
    for rule in web_app.url_map.iter_rules():
        if "GET" in (rule.methods or ()) and "static" not in rule.endpoint:
            # Every parameter filled with a value no route knows: the page, or its error page.
            paths.add(re.sub(r"<(?:[^:>]+:)?([^>]+)>", "unknown-value", rule.rule))
    paths |= {"/no-such-page", "/docs"}
    html = 0
    for path in sorted(paths):
        for browser in (anonymous, ada):
            answer = browser.get(path)
            if answer.mimetype != "text/html":
                continue
            html += 1
            assert answer.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY, path
            assert answer.headers["X-Frame-Options"] == "DENY", path
            assert answer.headers["X-Content-Type-Options"] == "nosniff", path
            assert "<script>" not in answer.text, path  # no inline script to allow
    assert html >= 20  # the pages, the link pages, /docs and the error pages were reached

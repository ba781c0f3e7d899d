"""Threat: a link that runs code in another reader's browser, mail or feed reader.

A reader's upload (or any ingested file) may carry ``javascript:`` or ``data:`` URLs. Only
http(s) links may leave the service, on the pages, in the emails, in the Atom and JSON feeds
and in the API: ``Paper`` keeps no other (``recommender.core.papers.web_url``, the one check).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient

from recommender.core.config import Settings
from recommender.core.papers import Paper
from recommender.corpus.store import CorpusStore
from recommender.embedding.encoders import TextEncoder

HOSTILE = ["javascript:alert(1)", "JavaScript:alert(1)", " javascript:alert(1)",
           "data:text/html;base64,PHNjcmlwdD4=", "vbscript:msgbox(1)", "http:alert(1)",
           "https://", "https://x.org/\"onmouseover=alert(1)", "file:///etc/passwd"]


@pytest.mark.parametrize("url", HOSTILE)
def test_a_paper_keeps_no_link_but_a_web_address(url: str) -> None:
    paper = Paper(id="p", title="t", url=url, code_urls=[url, "https://github.com/a/b"])
    assert paper.url is None
    assert paper.code_urls == ["https://github.com/a/b"]
    assert Paper.from_dict({**paper.to_dict(), "url": url}).url is None  # stored ones too


def test_an_uploaded_javascript_link_reaches_no_page_api_or_feed(
    make_app: Callable[[Settings], Flask], sample_settings: Settings,
    hashing_embedder: TextEncoder, rebuild: Callable[..., object]
) -> None:
    uploader = make_app(sample_settings).test_client()
    bibtex = "".join(
        f"@article{{evil{i},\n title = {{Federated learning with noisy labels, part {i}}},\n"
        f" abstract = {{Federated learning clients with noisy labels.}},\n"
        f" url = {{{url}}}\n}}\n" for i, url in enumerate(HOSTILE))
    answer = uploader.post("/v1/users/mallory/library", data=bibtex,
                           content_type="application/x-bibtex")
    assert answer.status_code == 200, answer.json
    added = [item["paper_id"] for item in answer.json["added"]]
    assert len(added) == len(HOSTILE)
    # An operator approves them (a careless one): the links must still never leave.
    assert CorpusStore(sample_settings.corpus_path).approve(added) == len(HOSTILE)
    rebuild(sample_settings, embedder=hashing_embedder)
    reader: FlaskClient = make_app(sample_settings).test_client()
    for paper_id in added:
        shown = reader.get(f"/v1/papers/{paper_id}").json
        assert shown["url"] is None
    assert reader.put(f"/v1/users/ada/feedback/{added[0]}",
                      json={"signal": "like"}).status_code == 200
    urls = reader.post("/v1/users/ada/feed").json
    for feed in (urls["atom"], urls["json"]):
        body = reader.get(urlsplit(feed).path).text.lower()
        assert "federated learning with noisy labels" in body  # the uploads are in it
        assert "javascript:" not in body and "data:" not in body and "vbscript:" not in body


def test_a_csl_json_field_that_is_not_text_rejects_its_entry_only() -> None:
    from recommender.corpus.library import parse_library

    text = json.dumps([{"id": "a", "title": {"$gt": ""}}, {"id": "b", "title": ["x", "y"]},
                       {"id": "c", "title": "A real title", "URL": {"javascript": 1}},
                       {"id": "d", "title": "Graph nets"}])
    parsed = parse_library(text, "csl-json")
    assert [entry.paper.title for entry in parsed.entries] == ["Graph nets"]
    assert [(r.label, r.reason) for r in parsed.rejected] == [
        ("a", "title must be text, as CSL-JSON has it"),
        ("b", "title must be text, as CSL-JSON has it"),
        ("c", "URL must be text, as CSL-JSON has it")]

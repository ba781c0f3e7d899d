"""Threat: one reader fills everyone's list. A library import used to add every unknown entry
to the shared corpus with the uploader's title, abstract and links; after the next index
rebuild those papers were candidates for every reader (an attacker's 20,000 entries took 20
of 20 places of a new reader's list, and ranked first in search).

Defended: a paper only a reader's upload brought is pending, and that reader's alone (their
library, export, search and pages) until a trusted source brings the same paper (its record
then replaces the uploaded one) or an operator approves it (`paperrec review-imports`, the
admin API, /admin/imports). A reader adds at most PAPERREC_UPLOADS_PER_DAY papers a day. The
likes of an import are written in one Redis script: a failure leaves none, and a retry
finishes the import.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from recommender import wiring
from recommender.core.config import Settings
from recommender.core.errors import StoreUnavailable
from recommender.core.papers import Paper
from recommender.corpus.library import parse_library
from recommender.corpus.store import CorpusStore
from recommender.embedding.encoders import TextEncoder
from replay.web_steps import csrf_token, sign_in
from service.cli import main
from tests.servers import RedisProcess

BIBTEX = "application/x-bibtex"
Rebuild = Callable[..., Any]
PapersAbout = Callable[[Settings, str], list[str]]
Like = Callable[..., None]
ADMIN_KEY = "a" * 32
CLIENT_KEY = "c" * 32


def poison(count: int, start: int = 0) -> str:
    """Entries written to rank first for anyone who reads about federated learning, each with
    a script for a link."""
    return "\n".join(
        f"@article{{spam{i}, title = {{Federated learning federated clients federated "
        f"averaging {i}}}, author = {{Mallory, Eve}}, url = {{javascript:alert({i})}}, "
        f"abstract = {{Federated learning: federated averaging of federated client updates, "
        f"federated optimisation, federated privacy {i}.}}}}"
        for i in range(start, start + count))


def entry_for(paper: Paper) -> str:
    """A BibTeX entry of a stored paper, as paperrec exports it (keyed by its id)."""
    return f"\n@article{{{paper.id}, title = {{{paper.title}}}}}"


def upload(client: FlaskClient, user: str, text: str) -> dict[str, Any]:
    response = client.post(f"/v1/users/{user}/library", data=text, content_type=BIBTEX)
    assert response.status_code == 200, response.json
    return response.json


def listed(client: FlaskClient, user: str, k: int = 20) -> list[str]:
    answer = client.get(f"/v1/users/{user}/recommendations?k={k}")
    assert answer.status_code == 200, answer.json
    return [item["paper_id"] for item in answer.json["items"]]


def searched(client: FlaskClient, query: str, user: str | None = None) -> list[str]:
    viewer = f"&user_id={user}" if user else ""
    answer = client.get(f"/v1/search?q={query}&k=50{viewer}")
    assert answer.status_code == 200, answer.json
    return [item["paper_id"] for item in answer.json["items"]]


@pytest.fixture
def served(sample_settings: Settings, make_app: Callable[[Settings], Flask],
           rebuild: Rebuild, hashing_embedder: TextEncoder) -> Callable[[], FlaskClient]:
    """``served()``: rebuild the index (as the nightly job does), then a client of the app."""

    def serve() -> FlaskClient:
        rebuild(sample_settings, embedder=hashing_embedder)
        return make_app(sample_settings).test_client()

    return serve


def test_an_upload_reaches_no_other_readers_list_search_rules_or_papers(
    sample_settings: Settings, served: Callable[[], FlaskClient], like: Like,
    paper_ids_about: PapersAbout,
) -> None:
    client = served()
    report = upload(client, "mallory", poison(30))
    spam = {item["paper_id"] for item in report["added"]}
    assert len(spam) == 30
    federated = paper_ids_about(sample_settings, "federated")
    like(client, "bob", federated[0])
    assert client.put("/v1/users/bob/rules/follow/keyword",
                      json={"value": "federated averaging"}).status_code == 200
    assert client.put("/v1/users/bob/rules/follow/author",
                      json={"value": "Eve Mallory"}).status_code == 200
    client = served()  # the nightly rebuild has run since the upload

    for reader in ("bob", "newcomer"):
        assert not spam & set(listed(client, reader, k=38)), reader
    for viewer in (None, "bob"):
        assert not spam & set(searched(client, "federated averaging", viewer))
    assert spam <= set(searched(client, "federated averaging", "mallory"))  # her own
    paper = sorted(spam)[0]
    for asked in (f"/v1/papers/{paper}", f"/v1/papers/{paper}?user_id=bob",
                  f"/v1/papers/{paper}/similar", f"/v1/users/bob/recommendations/why-not/{paper}"):
        assert client.get(asked).status_code == 404, asked
    assert client.put(f"/v1/users/bob/feedback/{paper}",
                      json={"signal": "like"}).status_code == 404
    own = client.get(f"/v1/papers/{paper}?user_id=mallory")
    assert own.status_code == 200 and own.json["url"] is None  # the script link was dropped
    exported = client.get("/v1/users/mallory/library?format=csl-json").json
    assert len(exported) == 30
    assert CorpusStore(sample_settings.corpus_path).pending_count() == 30


def test_the_pages_show_another_readers_upload_to_nobody(
    sample_settings: Settings, make_app: Callable[[Settings], Flask], rebuild: Rebuild,
    hashing_embedder: TextEncoder, tmp_path: Path,
) -> None:
    app = make_app(sample_settings.replace(mail_dir=str(tmp_path / "mail")))
    mallory, bob = app.test_client(), app.test_client()
    sign_in(mallory, "mallory@example.org", tmp_path / "mail")
    sign_in(bob, "bob@example.org", tmp_path / "mail")
    response = mallory.post("/library/import", data={
        "csrf_token": csrf_token(mallory, "/library"),
        "file": (__import__("io").BytesIO(poison(3).encode()), "spam.bib")},
        content_type="multipart/form-data")
    assert response.status_code == 303
    assert "added for you alone" in mallory.get("/library").text
    rebuild(sample_settings, embedder=hashing_embedder)
    paper = CorpusStore(sample_settings.corpus_path).pending(1)[0].id
    assert mallory.get(f"/papers/{paper}").status_code == 200
    assert bob.get(f"/papers/{paper}").status_code == 404
    assert "Federated learning federated clients" in mallory.get(
        "/search?q=federated+averaging").text
    assert "Federated learning federated clients" not in bob.get(
        "/search?q=federated+averaging").text
    rated = bob.post(f"/papers/{paper}/rate", data={
        "csrf_token": csrf_token(bob, "/list"), "action": "like"})
    assert rated.status_code == 404


def test_a_trusted_source_replaces_the_uploaded_text_and_verifies_the_paper(
    sample_settings: Settings, served: Callable[[], FlaskClient],
) -> None:
    client = served()
    report = upload(client, "mallory", poison(1) + "\n" + (
        "@article{byid, title = {Buy cheap pills federated}, author = {Mallory, Eve}, "
        "eprint = {2409.99999}, archivePrefix = {arXiv}}\n"
        "@article{bydoi, title = {Buy cheap pills again}, author = {Mallory, Eve}, "
        "doi = {10.5555/trusted.1}}"))
    added = {item["entry"]: item["paper_id"] for item in report["added"]}
    # The same papers arrive from arXiv (same id) and from an operator's ingest (same DOI,
    # another id): the trusted records replace what the upload said.
    CorpusStore(sample_settings.corpus_path).upsert([
        Paper(id="2409.99999", title="Sparse attention for long documents",
              abstract="We make attention sparse.", authors=["Ada Lovelace"]),
        Paper(id="ingest-7", title="Robust federated optimisation",
              abstract="Federated optimisation with robust aggregation.",
              authors=["Grace Hopper"], doi="10.5555/TRUSTED.1")])
    client = served()
    arxiv = client.get("/v1/papers/2409.99999").json
    assert arxiv["title"] == "Sparse attention for long documents"
    doi = client.get(f"/v1/papers/{added['bydoi']}").json
    assert doi["title"] == "Robust federated optimisation" and doi["authors"] == ["Grace Hopper"]
    assert client.get(f"/v1/papers/{added['spam0']}").status_code == 404  # still pending
    assert client.get("/v1/papers/2409.99999/similar?k=3").status_code == 200  # indexed now
    liked = {f["paper_id"] for f in client.get("/v1/users/mallory/feedback").json["items"]}
    assert liked == set(added.values())


def test_an_operator_approves_and_rejects_from_the_command_line(
    sample_settings: Settings, served: Callable[[], FlaskClient],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    client = served()
    added = [item["paper_id"] for item in upload(client, "mallory", poison(3))["added"]]
    monkeypatch.setenv("PAPERREC_DATA_DIR", str(sample_settings.data_dir))
    monkeypatch.setenv("REDIS_URL", sample_settings.redis_url)
    monkeypatch.setenv("PAPERREC_REDIS_NAMESPACE", sample_settings.redis_namespace)
    assert main(["review-imports"]) == 0
    listing = capsys.readouterr().out
    assert listing.startswith("3 papers from readers' imports are pending review")
    assert all(paper in listing for paper in added) and "by mallory" in listing
    assert main(["review-imports", "--approve", added[0], "--reject", added[1],
                 "nonexistent"]) == 0
    assert "1 approved" in capsys.readouterr().out
    client = served()
    assert client.get(f"/v1/papers/{added[0]}").status_code == 200
    assert client.get(f"/v1/papers/{added[1]}?user_id=mallory").status_code == 404  # deleted
    assert client.get(f"/v1/papers/{added[2]}").status_code == 404  # still pending
    assert main(["review-imports"]) == 0
    assert capsys.readouterr().out.startswith("1 papers from readers' imports are pending")


def test_only_admins_review_through_the_api_and_the_page(
    sample_settings: Settings, make_app: Callable[[Settings], Flask], tmp_path: Path,
) -> None:
    settings = sample_settings.replace(api_keys=f"admin:{ADMIN_KEY},client:{CLIENT_KEY}",
                                       admin_emails="ops@example.org",
                                       mail_dir=str(tmp_path / "mail"))
    app = make_app(settings)
    api = app.test_client()
    as_client = {"Authorization": f"Bearer {CLIENT_KEY}"}
    as_admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    added = [item["paper_id"] for item in api.post(
        "/v1/users/mallory/library", data=poison(2), content_type=BIBTEX,
        headers=as_client).json["added"]]
    assert api.get("/v1/imports/pending", headers=as_client).status_code == 403
    assert api.post("/v1/imports/review", json={"approve": added},
                    headers=as_client).status_code == 403
    pending = api.get("/v1/imports/pending", headers=as_admin).json
    assert pending["total"] == 2 and [p["id"] for p in pending["items"]] == added
    assert pending["items"][0]["uploaders"] == ["mallory"]
    review = api.post("/v1/imports/review", json={"approve": [added[0]]}, headers=as_admin)
    assert review.json == {"approved": 1, "rejected": 0}

    reader, operator = app.test_client(), app.test_client()
    sign_in(reader, "mallory@example.org", tmp_path / "mail")
    sign_in(operator, "ops@example.org", tmp_path / "mail")
    assert reader.get("/admin/imports").status_code == 404
    page = operator.get("/admin/imports")
    assert page.status_code == 200 and added[1] in page.text and added[0] not in page.text
    refused = operator.post("/admin/imports", data={"paper": added[1], "action": "reject"})
    assert refused.status_code == 400  # no CSRF token
    done = operator.post("/admin/imports", data={
        "csrf_token": csrf_token(operator, "/admin/imports"), "paper": added[1],
        "action": "reject"})
    assert done.status_code == 303
    assert CorpusStore(settings.corpus_path).pending_count() == 0


def test_a_reader_adds_at_most_the_daily_quota(
    sample_settings: Settings, hashing_embedder: TextEncoder,
) -> None:
    app = wiring.build(sample_settings.replace(uploads_per_day=3), embedder=hashing_embedder)
    known = app.corpus.get_many([next(app.corpus.index_rows())[0]]).popitem()[1]
    now = time.time()
    first = app.import_library(parse_library(poison(5), "bibtex"), "mallory", now=now)
    assert len(first.added) == 3 and len(first.rejected) == 2
    assert "3 new papers a reader may add in a day" in (first.rejected[0].reason or "")
    again = app.import_library(parse_library(poison(5) + entry_for(known), "bibtex"),
                               "mallory", now=now)
    assert again.added == [] and len(again.rejected) == 2  # the day's quota is used up
    assert len(again.already_liked) == 3 and len(again.matched) == 1  # found: no quota
    tomorrow = app.import_library(parse_library(poison(5), "bibtex"), "mallory",
                                  now=now + 86_400)
    assert len(tomorrow.added) == 2 and len(tomorrow.already_liked) == 3
    assert app.corpus.pending_count() == 5


def test_a_redis_failure_during_an_import_leaves_no_like_and_a_retry_finishes_it(
    sample_settings: Settings, hashing_embedder: TextEncoder, private_redis: RedisProcess,
    monkeypatch: pytest.MonkeyPatch, paper_ids_about: PapersAbout,
) -> None:
    settings = sample_settings.replace(redis_url=private_redis.url)
    app = wiring.build(settings, embedder=hashing_embedder)
    known = app.corpus.get_many(paper_ids_about(settings, "federated")[:2])
    text = poison(3) + "".join(entry_for(paper) for paper in known.values())
    stored = CorpusStore.upload

    def upload_then_redis_dies(self: CorpusStore, *args: Any, **kwargs: Any) -> list[str]:
        found = stored(self, *args, **kwargs)
        private_redis.kill()  # after the papers, before the likes
        return found

    monkeypatch.setattr(CorpusStore, "upload", upload_then_redis_dies)
    with pytest.raises(StoreUnavailable):
        app.import_library(parse_library(text, "bibtex"), "mallory", now=time.time())
    monkeypatch.undo()
    private_redis.start()  # the same append-only file
    assert app.feedback.get("mallory") == []  # none of the import's likes, not half
    assert app.feedback.like_counts() == {}
    retry = app.import_library(parse_library(text, "bibtex"), "mallory", now=time.time())
    assert len(retry.matched) == 5 and retry.liked == 5  # the uploads, found: now liked
    assert app.feedback.like_counts() == {f.paper_id: 1 for f in app.feedback.get("mallory")}


def test_erasing_a_reader_deletes_the_papers_only_they_uploaded(
    sample_settings: Settings, served: Callable[[], FlaskClient],
) -> None:
    client = served()
    upload(client, "mallory", poison(3))
    shared = upload(client, "trent", poison(1))["matched"]  # trent uploaded spam0 too
    assert len(shared) == 1
    export = client.get("/v1/users/mallory/export").json
    assert len(export["uploads"]) == 3
    assert client.delete("/v1/users/mallory").status_code == 204
    corpus = CorpusStore(sample_settings.corpus_path)
    assert [p.id for p in corpus.pending()] == [shared[0]["paper_id"]]
    assert corpus.pending()[0].uploaders == ["trent"]
    assert json.loads(json.dumps(client.get(
        f"/v1/papers/{shared[0]['paper_id']}?user_id=trent").json))["title"]

"""A user's reading list in a feed reader: private Atom and JSON Feed URLs, parsed back with
feedparser and json, against the real app and a real Redis."""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import feedparser
from flask import Flask
from flask.testing import FlaskClient

from recommender.core.config import Settings

Like = Callable[..., None]
PapersAbout = Callable[[Settings, str], list[str]]
KEY = "client-key-for-the-feed-tests-0123"
ADMIN = "admin-key-for-the-feed-tests-0123"


def path(url: str) -> str:
    """The path of an absolute feed URL (the test client speaks paths)."""
    return urlsplit(url).path


def issue(client: FlaskClient, user: str, **headers: str) -> dict[str, Any]:
    response = client.post(f"/v1/users/{user}/feed", headers=headers)
    assert response.status_code == 200, response.json
    return response.json  # type: ignore[no-any-return]


def api_list(client: FlaskClient, user: str) -> list[dict[str, Any]]:
    response = client.get(f"/v1/users/{user}/recommendations")
    assert response.status_code == 200, response.json
    return response.json["items"]  # type: ignore[no-any-return]


# JSON Feed 1.1 (https://www.jsonfeed.org/version/1.1/): the fields it defines; anything else
# must be an extension (a key starting with an underscore). feedparser 6.0 reads no JSON Feed.
TOP_FIELDS = {"version", "title", "home_page_url", "feed_url", "description", "user_comment",
              "next_url", "icon", "favicon", "authors", "language", "expired", "hubs", "items"}
ITEM_FIELDS = {"id", "url", "external_url", "title", "content_html", "content_text", "summary",
               "image", "banner_image", "date_published", "date_modified", "authors", "tags",
               "language", "attachments"}


def assert_json_feed_1_1(document: dict[str, Any]) -> None:
    assert document["version"] == "https://jsonfeed.org/version/1.1"
    assert isinstance(document["title"], str) and isinstance(document["items"], list)
    assert all(key in TOP_FIELDS or key.startswith("_") for key in document)
    assert_authors(document.get("authors"))
    for item in document["items"]:
        assert all(key in ITEM_FIELDS or key.startswith("_") for key in item), item
        assert isinstance(item["id"], str) and item["id"]
        assert "content_text" in item or "content_html" in item
        for field in ("date_published", "date_modified"):
            if field in item:  # RFC 3339, with its offset
                assert dt.datetime.fromisoformat(item[field]).tzinfo is not None
        assert_authors(item.get("authors"))


def assert_authors(authors: list[dict[str, str]] | None) -> None:
    """Optional; when present, one or more objects with a name, url or avatar."""
    if authors is None:
        return
    assert authors, "an authors array needs at least one author"
    for author in authors:
        assert author and set(author) <= {"name", "url", "avatar"}


def test_both_feeds_hold_the_api_reading_list_in_order(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    liked = paper_ids_about(sample_settings, "federated")[0]
    like(client, "ada", liked)
    urls = issue(client, "ada")
    assert urls["atom"].startswith(f"{sample_settings.public_url}/feeds/")
    assert urls["atom"].endswith("/atom.xml") and urls["json"].endswith("/feed.json")
    assert client.get("/v1/users/ada/feed").json == urls

    atom = client.get(path(urls["atom"]))
    assert atom.status_code == 200
    assert atom.mimetype == "application/atom+xml"
    as_json = client.get(path(urls["json"]))
    assert as_json.status_code == 200 and as_json.mimetype == "application/feed+json"
    expected = api_list(client, "ada")  # after the feeds: the API records what it served
    assert len(expected) == 20

    parsed = feedparser.parse(atom.data)
    assert not parsed.bozo, parsed.bozo_exception
    assert parsed.version == "atom10"
    assert parsed.feed.title == "paperrec: reading list for ada"
    assert [e.id for e in parsed.entries] == [f"urn:paperrec:paper:{i['paper_id']}"
                                             for i in expected]
    assert [e.title for e in parsed.entries] == [i["title"] for i in expected]
    corpus = client.application.extensions["paperrec"].corpus
    for entry, item in zip(parsed.entries, expected, strict=True):
        paper = corpus.get(item["paper_id"])
        # An open link (it logs the click): it leads to the paper's own URL, else its page
        # on this site.
        own = paper.url or f"{sample_settings.public_url}/papers/{paper.id}"
        assert entry.link.startswith(f"{sample_settings.public_url}/v1/links/")
        followed = client.get(path(entry.link))
        assert followed.status_code == 302 and followed.headers["Location"] == own
        assert [a.name for a in entry.get("authors", [])] == paper.authors
        assert entry.summary == paper.abstract
        assert item["reason"] in entry.content[0].value
        assert item["standing"] and item["standing"][1:] in entry.content[0].value
        assert entry.updated  # every Atom entry is dated
    assert any("similar to" in e.content[0].value for e in parsed.entries)

    document = json.loads(as_json.data)
    assert document["version"] == "https://jsonfeed.org/version/1.1"
    assert document["feed_url"] == urls["json"]
    assert document["home_page_url"] == f"{sample_settings.public_url}/"
    assert [(i["id"], i["title"]) for i in document["items"]] == [
        (f"urn:paperrec:paper:{i['paper_id']}", i["title"]) for i in expected]
    for rank, (item, expect) in enumerate(zip(document["items"], expected, strict=True), 1):
        assert item["_paperrec"] == {
            "paper_id": expect["paper_id"], "rank": rank, "reason": expect["reason"],
            "standing": expect["standing"], "close_likes": expect["close_likes"],
            "probability": expect["probability"], "links": [
                {"label": "Code", "url": url}
                for url in corpus.get(expect["paper_id"]).code_urls]}
        assert expect["rank"] == rank
        assert expect["reason"] in item["content_text"]
        assert {"url", "date_modified"} <= set(item)
        paper = corpus.get(expect["paper_id"])
        assert item["external_url"] == (  # the entry's url is an open link, this the paper's
            paper.url or f"{sample_settings.public_url}/papers/{paper.id}")
    assert_json_feed_1_1(document)


def test_a_feed_fetch_records_nothing_as_served(client: FlaskClient) -> None:
    urls = issue(client, "ada")
    assert client.get(path(urls["atom"])).status_code == 200
    assert client.get(path(urls["json"])).status_code == 200
    assert client.get("/v1/users/ada/export").json["served"] == []


def test_issuing_a_new_url_revokes_the_old_one(client: FlaskClient) -> None:
    old = issue(client, "ada")
    assert client.get(path(old["atom"])).status_code == 200
    new = issue(client, "ada")
    assert new["atom"] != old["atom"] and new["json"] != old["json"]
    for url in (old["atom"], old["json"]):
        refused = client.get(path(url))
        assert refused.status_code == 410
        assert refused.json["error"]["code"] == "link_revoked"
        assert "replaced by a newer one" in refused.json["error"]["message"]
    assert client.get(path(new["atom"])).status_code == 200
    assert client.get(path(new["json"])).status_code == 200
    assert client.get("/v1/users/ada/feed").json == new


def test_a_tampered_token_is_refused(client: FlaskClient) -> None:
    url = path(issue(client, "ada")["atom"])
    token = url.split("/")[2]
    payload, signature = token.split(".")
    other = "bob" if "bob" not in payload else "eve"
    forged = base64.urlsafe_b64encode(
        base64.urlsafe_b64decode(payload + "==").replace(b"ada", other.encode())
    ).decode().rstrip("=")
    for bad in (f"{forged}.{signature}", f"{payload}.{signature[:-2]}AA", "not-a-token"):
        refused = client.get(f"/feeds/{bad}/atom.xml")
        assert refused.status_code == 403, bad
        assert refused.json["error"]["code"] == "invalid_link"
        assert "not valid" in refused.json["error"]["message"]
    # a digest email's link is signed with the same secret but is no feed URL
    link = client.application.extensions["paperrec"].links.sign("ada", "unsubscribe", None, 0)
    assert client.get(f"/feeds/{link}/feed.json").status_code == 403


def test_no_feed_yet_is_404_and_erasing_the_user_revokes_it(client: FlaskClient) -> None:
    missing = client.get("/v1/users/nobody/feed")
    assert missing.status_code == 404
    assert "issue one with POST" in missing.json["error"]["message"]
    urls = issue(client, "ada")
    assert client.get("/v1/users/ada/export").json["feed"] == urls
    assert client.delete("/v1/users/ada").status_code == 204
    assert client.get("/v1/users/ada/feed").status_code == 404
    assert client.get("/v1/users/ada/export").json["feed"] is None
    gone = client.get(path(urls["atom"]))
    assert gone.status_code == 410 and "no longer works" in gone.json["error"]["message"]


def test_an_erased_users_old_url_stays_dead_when_they_come_back(client: FlaskClient) -> None:
    """The token's nonce is random, not a counter that erasure would reset: a URL from before
    the erasure never opens the new feed."""
    old = issue(client, "ada")
    assert client.delete("/v1/users/ada").status_code == 204
    new = issue(client, "ada")
    assert client.get(path(old["atom"])).status_code == 410
    assert client.get(path(new["atom"])).status_code == 200


def test_a_reader_that_has_the_current_version_gets_304_without_a_ranking(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout,
    monkeypatch: Any,
) -> None:
    urls = issue(client, "ada")
    first = client.get(path(urls["atom"]))
    etag = first.headers["ETag"]
    assert etag and "max-age" in first.headers["Cache-Control"]
    assert first.headers["Cache-Control"].startswith("private")

    parts = client.application.extensions["paperrec"]

    def no_ranking(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a 304 must not rank")

    with monkeypatch.context() as patched:
        patched.setattr(parts.recommender, "recommend", no_ranking)
        again = client.get(path(urls["atom"]), headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.data == b""
    assert again.headers["ETag"] == etag
    # each format has its own version
    json_tag = client.get(path(urls["json"])).headers["ETag"]
    assert json_tag != etag
    assert client.get(path(urls["json"]), headers={"If-None-Match": json_tag}).status_code == 304
    assert client.get(path(urls["json"]), headers={"If-None-Match": etag}).status_code == 200
    # a like changes the list: the old version is stale
    like(client, "ada", paper_ids_about(sample_settings, "federated")[0])
    changed = client.get(path(urls["atom"]), headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag


def test_titles_with_markup_come_out_as_text(
    client: FlaskClient, sample_settings: Settings, tmp_path: Path, like: Like,
    ingest: Callable[..., Any], rebuild: Callable[..., Any], hashing_embedder: Any,
) -> None:
    title = "Zebra <script>alert(1)</script> & zebras &amp; \"zoo\" learning"
    papers = tmp_path / "odd.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in (
        {"id": "odd-1", "title": title, "abstract": "Zebra zoo stripes <b>bold</b> & more.",
         "authors": ["A. <Angle>", "B. & Co"], "date": "2026-11-02"},
        {"id": "zebra-2", "title": "Zebra stripes in a zoo", "abstract": "Zebra zoo stripes."},
    )))
    ingest(sample_settings, [papers])
    rebuild(sample_settings, embedder=hashing_embedder)
    like(client, "ada", "zebra-2")
    urls = issue(client, "ada")
    atom = client.get(path(urls["atom"]))
    assert b"<script>" not in atom.data and b"&lt;script&gt;" in atom.data
    entry = feedparser.parse(atom.data).entries[0]
    assert entry.id == "urn:paperrec:paper:odd-1"
    assert entry.title == title
    assert entry.summary == "Zebra zoo stripes <b>bold</b> & more."
    assert [a.name for a in entry.authors] == ["A. <Angle>", "B. & Co"]
    assert entry.published.startswith("2026-11-02")
    item = json.loads(client.get(path(urls["json"])).data)["items"][0]
    assert item["title"] == title
    assert item["date_published"].startswith("2026-11-02")
    assert item["authors"] == [{"name": "A. <Angle>"}, {"name": "B. & Co"}]


def test_feeds_need_no_api_key_but_their_urls_do(
    sample_settings: Settings, make_app: Callable[[Settings], Flask]
) -> None:
    app = make_app(sample_settings.replace(api_keys=f"client:{KEY},admin:{ADMIN}"))
    client = app.test_client()
    assert client.post("/v1/users/ada/feed").status_code == 401
    assert client.get("/v1/users/ada/feed").status_code == 401
    urls = issue(client, "ada", Authorization=f"Bearer {KEY}")
    for url in (urls["atom"], urls["json"]):
        response = client.get(path(url))  # no Authorization header, as a feed reader
        assert response.status_code == 200, response.json
    spec = client.get("/openapi.json").json
    assert "security" not in spec["paths"]["/feeds/{feed_token}/atom.xml"]["get"]
    assert spec["paths"]["/v1/users/{user_id}/feed"]["post"]["security"] == [{"bearer": []}]
    assert "304" in spec["paths"]["/feeds/{feed_token}/feed.json"]["get"]["responses"]

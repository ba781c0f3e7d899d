"""The library, digest and your-data pages through the Flask test client: import a BibTeX
file as likes and export them, subscribe and unsubscribe, download everything and erase the
account; and the pages with API keys configured (they need a session, not a key)."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import redis
from flask import Flask
from flask.testing import FlaskClient

from recommender.core.config import Settings
from replay.web_steps import csrf_token, post_form, sign_in

ADMIN_KEY = "admin-key-0123456789abcdef"
BIBTEX = """@article{federated2026,
  title = {Personalized federated learning with adaptive local aggregation},
  author = {Lovelace, Ada and Hopper, Grace},
  year = {2026},
  abstract = {Federated learning lets clients train one model without sharing their data.}
}
@misc{broken,
  note = {an entry with neither title nor id}
}
"""




def upload(browser: FlaskClient, name: str, text: str) -> str:
    """Import a file through the library page's form; the page it lands on."""
    response = browser.post("/library/import", data={
        "csrf_token": csrf_token(browser, "/library"),
        "file": (__import__("io").BytesIO(text.encode()), name)},
        content_type="multipart/form-data")
    assert response.status_code == 303, response.text
    return browser.get(response.headers["Location"]).text


def test_a_bibtex_file_becomes_likes_and_comes_back_as_one(ada: FlaskClient) -> None:
    page = upload(ada, "library.bib", BIBTEX)
    assert "Imported: 1 paper liked" in page and "1 not imported" in page
    assert "Not imported: " in page and "Liked (1)" in page
    assert "Personalized federated learning with adaptive local aggregation" in page
    again = upload(ada, "library.bib", BIBTEX)
    assert "0 papers liked" in again and "1 already liked" in again
    exported = ada.get("/library/export.bib")
    assert exported.status_code == 200
    assert exported.headers["Content-Disposition"].startswith("attachment;")
    assert "Personalized federated learning" in exported.text
    for fmt in ("ris", "json"):
        assert ada.get(f"/library/export.{fmt}").status_code == 200
    assert ada.get("/library/export.exe").status_code == 404


def test_a_file_that_cannot_be_read_is_a_page_saying_why(ada: FlaskClient) -> None:
    response = ada.post("/library/import", data={
        "csrf_token": csrf_token(ada, "/library"),
        "file": (__import__("io").BytesIO(b"MZ\x90\x00"), "library.exe")},
        content_type="multipart/form-data")
    assert response.status_code == 415 and "send BibTeX" in response.text
    assert "<h1>That file cannot be read</h1>" in response.text


def test_subscribe_weekly_change_and_unsubscribe(ada: FlaskClient) -> None:
    assert "Subscribe" in ada.get("/digest").text
    done = post_form(ada, "/digest", "/digest", frequency="weekly", max_items="5",
                     min_probability="0.2")
    assert done.status_code == 303
    page = ada.get("/digest").text
    assert "Subscribed: a weekly digest of up to 5 papers to ada@example.org." in page
    api = ada.get("/v1/users/ada@example.org/subscription").json
    assert (api["email"], api["frequency"], api["max_items"], api["min_probability"]) == (
        "ada@example.org", "weekly", 5, 0.2)
    post_form(ada, "/digest", "/digest", frequency="daily", max_items="10")
    assert ada.get("/v1/users/ada@example.org/subscription").json["frequency"] == "daily"
    bad = post_form(ada, "/digest", "/digest", frequency="hourly")
    assert bad.status_code == 400 and "daily or weekly" in bad.text
    assert post_form(ada, "/digest", "/digest/unsubscribe").status_code == 303
    assert "Unsubscribed" in ada.get("/digest").text
    assert ada.get("/v1/users/ada@example.org/subscription").status_code == 404


FEED_URL = re.compile(r'id="feed-atom" type="url" readonly value="([^"]+)"')


def test_the_digest_page_gives_a_feed_address_and_a_new_one_ends_the_old(
    ada: FlaskClient
) -> None:
    assert "Get a feed address" in ada.get("/digest").text
    assert FEED_URL.search(ada.get("/digest").text) is None
    assert post_form(ada, "/digest", "/digest/feed").status_code == 303
    page = ada.get("/digest").text
    first = html.unescape(FEED_URL.search(page)[1])  # type: ignore[index]
    assert "add it to your feed reader" in page
    feed = ada.get(urlsplit(first).path)  # a feed reader: no session, no key needed
    assert feed.status_code == 200 and feed.content_type.startswith("application/atom+xml")
    assert ada.get("/v1/users/ada@example.org/feed").json["atom"] == first
    post_form(ada, "/digest", "/digest/feed")
    second = html.unescape(FEED_URL.search(ada.get("/digest").text)[1])  # type: ignore[index]
    assert second != first
    assert ada.get(urlsplit(first).path).status_code == 410
    assert ada.get(urlsplit(second).path).status_code == 200


def test_download_everything_then_erase_the_account(
    ada: FlaskClient, sample_settings: Settings, web_app: Flask
) -> None:
    post_form(ada, "/digest", "/digest", frequency="weekly")
    upload(ada, "library.bib", BIBTEX)
    download = ada.get("/data/export.json")
    assert download.headers["Content-Disposition"].startswith("attachment;")
    data = json.loads(download.text)
    assert data["user_id"] == "ada@example.org" and len(data["feedback"]) == 1
    assert data["subscription"]["frequency"] == "weekly"
    other_device = web_app.test_client()
    sign_in(other_device, "ada@example.org", sample_settings.data_dir.parent / "mail")

    refused = post_form(ada, "/data", "/data/erase", confirm="someone@else.org")
    assert refused.status_code == 400 and "nothing was erased" in refused.text
    erased = post_form(ada, "/data", "/data/erase", confirm="Ada@Example.org")
    assert erased.status_code == 303
    assert "Your account is erased" in ada.get(erased.headers["Location"]).text
    assert ada.get("/list").status_code == 302
    assert other_device.get("/list").status_code == 302  # signed out everywhere
    client = redis.Redis.from_url(sample_settings.redis_url, decode_responses=True)
    ns = sample_settings.redis_namespace
    assert not list(client.scan_iter(f"{ns}:*:user:ada@example.org:*"))
    sessions = [client.get(key) for key in client.scan_iter(f"{ns}:web-session:*")]
    assert not [s for s in sessions if s and "ada@example.org" in s]  # visitors' only


def test_an_admin_erasing_a_user_through_the_api_signs_them_out(
    make_app: Callable[[Settings], Flask], sample_settings: Settings, tmp_path: Path
) -> None:
    app = make_app(sample_settings.replace(api_keys=f"admin:{ADMIN_KEY}",
                                           mail_dir=str(tmp_path / "mail")))
    browser = app.test_client()
    sign_in(browser, "ada@example.org", tmp_path / "mail")
    erased = app.test_client().delete("/v1/users/ada@example.org",
                                      headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    assert erased.status_code == 204
    assert browser.get("/list").status_code == 302


def test_search_finds_papers_and_rates_them_in_place(ada: FlaskClient) -> None:
    page = ada.get("/search?q=federated+learning")
    assert page.status_code == 200
    shown = page.text.count('class="paper"')
    assert shown >= 4 and f"{shown} papers matching \u201cfederated learning\u201d" in page.text
    assert "No paper matches" not in page.text
    assert ada.get("/search?q=" + "x" * 1001).status_code == 400


def test_the_pages_need_a_session_not_an_api_key(
    make_app: Callable[[Settings], Flask], sample_settings: Settings, tmp_path: Path
) -> None:
    app = make_app(sample_settings.replace(api_keys=f"admin:{ADMIN_KEY}",
                                           mail_dir=str(tmp_path / "mail")))
    browser = app.test_client()
    assert browser.get("/sign-in").status_code == 200
    assert browser.get("/static/web.css").status_code == 200
    sign_in(browser, "ada@example.org", tmp_path / "mail")
    assert browser.get("/list").status_code == 200
    assert browser.get("/v1/users/ada@example.org/feedback").status_code == 401  # API: a key

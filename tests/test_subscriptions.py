"""Digest subscriptions and the signed one-click links, over the REST API."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from recommender.core.config import Settings
from recommender.digest.subscriptions import DEFAULT_MIN_PROBABILITY
from service.app import create_app
from service.state import components


@pytest.fixture
def app(sample_settings: Settings) -> Iterator[Flask]:
    yield create_app(sample_settings)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def token(app: Flask, user: str, action: str, paper: str | None, now: float | None = None) -> str:
    with app.app_context():
        return components().links.sign(user, action, paper, now or time.time())  # type: ignore[arg-type]


def test_a_subscription_is_created_read_and_deleted(client: FlaskClient) -> None:
    body = {"email": "ada@example.org", "frequency": "daily", "max_items": 5}
    created = client.put("/v1/users/ada/subscription", json=body).json
    assert {k: created[k] for k in body} == body
    assert created["min_probability"] == DEFAULT_MIN_PROBABILITY  # not given: the default
    assert created["confirmed"] is False  # until the address follows its email's link
    assert client.get("/v1/users/ada/subscription").json == created
    body["min_probability"] = 0.25
    assert client.put("/v1/users/ada/subscription", json=body).json["min_probability"] == 0.25
    assert client.delete("/v1/users/ada/subscription").status_code == 204
    gone = client.get("/v1/users/ada/subscription")
    assert gone.status_code == 404 and "no digest subscription" in gone.json["error"]["message"]


@pytest.mark.parametrize(("body", "words"), [
    ({"email": "not an address", "frequency": "daily"}, "email must be an address"),
    ({"email": "ada@example.org\r\nBcc: eve@example.org"}, "email must be an address"),
    ({"email": "ada@localhost"}, "email must be an address"),
    ({"email": "ada@example.org", "frequency": "hourly"},
     "frequency: input should be 'daily' or 'weekly'"),
    ({"email": "ada@example.org", "max_items": 0}, "max_items must be between 1 and 50"),
    ({"email": "ada@example.org", "max_items": "10"}, "max_items: should be a whole number"),
    ({"email": "ada@example.org", "colour": "blue"}, "unknown field(s): colour"),
    ({"email": "ada@example.org", "min_probability": 2}, "min_probability must be between"),
    ({"email": "ada@example.org", "min_probability": "high"},
     "min_probability: should be a number"),
    ({"email": "ada@example.org", "min_probability": False},
     "min_probability: should be a number"),
])
def test_a_bad_subscription_is_a_400_that_says_why(
    client: FlaskClient, body: dict, words: str  # type: ignore[type-arg]
) -> None:
    response = client.put("/v1/users/ada/subscription", json=body)
    assert response.status_code == 400 and words in response.json["error"]["message"]
    assert client.get("/v1/users/ada/subscription").status_code == 404


def test_one_click_links_record_exactly_what_they_name(
    app: Flask, client: FlaskClient, sample_settings: Settings,
    paper_ids_about: Callable[[Settings, str], list[str]],
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    like_url = f"/v1/links/{token(app, 'ada', 'like', fed[0])}"
    shown = client.get(like_url)  # what a mail scanner or a reader's click does: nothing yet
    assert shown.status_code == 200 and "Record that you want more papers like" in shown.text
    assert client.get("/v1/users/ada/feedback").json["items"] == []
    page = client.post(like_url)  # the page's button
    assert page.status_code == 200 and "Recorded: more like" in page.text
    client.post(f"/v1/links/{token(app, 'ada', 'dislike', fed[1])}")
    stored = client.get("/v1/users/ada/feedback").json["items"]
    # (as a mapping: two writes within one millisecond are listed by paper id, not in order)
    assert {i["paper_id"]: i["signal"] for i in stored} == {fed[0]: "like", fed[1]: "dislike"}
    assert client.get("/v1/users/bob/feedback").json["items"] == []


def test_unsubscribe_links_work_by_click_and_by_rfc_8058_post(
    app: Flask, client: FlaskClient
) -> None:
    for user in ("ada", "bob"):
        client.put(f"/v1/users/{user}/subscription", json={"email": f"{user}@example.org"})
    ada = f"/v1/links/{token(app, 'ada', 'unsubscribe', None)}"
    shown = client.get(ada)
    assert shown.status_code == 200 and "Unsubscribe <strong>ada@example.org</strong>" in (
        shown.text)
    assert client.get("/v1/users/ada/subscription").status_code == 200
    page = client.post(ada)  # the page's button
    assert page.status_code == 200 and "unsubscribed" in page.text
    post = client.post(f"/v1/links/{token(app, 'bob', 'unsubscribe', None)}",
                       data={"List-Unsubscribe": "One-Click"})
    assert post.status_code == 200
    assert client.get("/v1/users/ada/subscription").status_code == 404
    assert client.get("/v1/users/bob/subscription").status_code == 404


def test_forged_altered_or_expired_links_record_nothing(
    app: Flask, client: FlaskClient, sample_settings: Settings,
    paper_ids_about: Callable[[Settings, str], list[str]],
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    good = token(app, "ada", "like", fed[0])
    body, signature = good.split(".")
    altered = token(app, "eve", "like", fed[0]).split(".")[0] + "." + signature
    for bad in (altered, body + ".AAAA", "garbage", body[:-2] + "." + signature):
        for method in (client.get, client.post):
            page = method(f"/v1/links/{bad}")
            assert page.status_code == 403 and "Nothing was recorded" in page.text
    expired = token(app, "ada", "like", fed[0], now=time.time() - 31 * 86400)
    for method in (client.get, client.post):
        page = method(f"/v1/links/{expired}")
        assert page.status_code == 410 and "expired" in page.text
    assert client.get("/v1/users/ada/feedback").json["items"] == []
    assert client.get("/v1/users/eve/feedback").json["items"] == []

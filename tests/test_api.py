"""The REST API in-process (Flask test client) on the sample corpus and a real Redis."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient

from recommender import wiring
from recommender.core.config import Settings
from recommender.embedding.encoders import TextEncoder
from service.app import create_app

Like = Callable[..., None]
PapersAbout = Callable[[Settings, str], list[str]]


def test_health_and_readiness(client: FlaskClient) -> None:
    assert client.get("/healthz").json == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json["papers"] == 38 and ready.json["index_version"] == "000001"
    assert ready.headers["X-Request-Id"]


def test_not_ready_without_an_index_says_what_to_do(
    settings: Settings, make_app: Callable[[Settings], Flask]
) -> None:
    response = make_app(settings).test_client().get("/readyz")
    assert response.status_code == 503
    assert "paperrec rebuild-index" in response.json["error"]["message"]


def test_not_ready_when_redis_is_unreachable(
    sample_settings: Settings, unreachable_redis_url: str,
    make_app: Callable[[Settings], Flask],
) -> None:
    dead = sample_settings.replace(redis_url=unreachable_redis_url)
    client = make_app(dead).test_client()
    response = client.get("/readyz")
    assert response.status_code == 503 and "Redis" in response.json["error"]["message"]
    # An unknown paper is found out in the corpus, before Redis is asked.
    write = client.put("/v1/users/ada/feedback/x", json={"signal": "like"})
    assert write.status_code == 404 and "no paper with id 'x'" in write.json["error"]["message"]
    paper_id = client.get("/v1/search?q=graphs&k=1").json["items"][0]["paper_id"]
    write = client.put(f"/v1/users/ada/feedback/{paper_id}", json={"signal": "like"})
    assert write.status_code == 503 and write.json["error"]["code"] == "store_unavailable"
    assert write.headers["Retry-After"]


def test_paper_and_similar(
    client: FlaskClient, sample_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    paper = client.get(f"/v1/papers/{fed[0]}").json
    assert paper["id"] == fed[0] and paper["title"] and "text" not in paper
    similar = client.get(f"/v1/papers/{fed[0]}/similar?k=3").json["items"]
    assert len(similar) == 3 and fed[0] not in [s["paper_id"] for s in similar]
    assert similar[0]["paper_id"] in fed
    assert similar[0]["score"] >= similar[1]["score"] >= similar[2]["score"]


@pytest.mark.model
def test_search_finds_the_topic(
    model_sample_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    client = create_app(model_sample_settings).test_client()  # the model embeds the query
    items = client.get("/v1/search?q=federated learning with label noise&k=5").json["items"]
    assert items[0]["paper_id"] in paper_ids_about(model_sample_settings, "federated")


def test_search_with_another_model_than_the_index_says_to_rebuild(
    sample_settings: Settings, hashing_embedder: TextEncoder
) -> None:
    """The index was built by the hashing embedder (512 dimensions); a service configured with
    a model of another width answers 503 naming the fix, not a 500."""
    other = type(hashing_embedder)(dimension=256)  # type: ignore[call-arg]
    client = create_app(sample_settings,
                        parts=wiring.build(sample_settings, embedder=other)).test_client()
    response = client.get("/v1/search?q=federated learning")
    assert response.status_code == 503
    assert "paperrec rebuild-index --full" in response.json["error"]["message"]


def test_feedback_round_trip(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    like(client, "ada", fed[1], "dislike")
    like(client, "ada", fed[1], "like")  # replaces the dislike
    items = client.get("/v1/users/ada/feedback").json["items"]
    assert [(i["paper_id"], i["signal"]) for i in items] == [(fed[0], "like"), (fed[1], "like")]
    assert client.delete(f"/v1/users/ada/feedback/{fed[0]}").status_code == 204
    assert client.delete(f"/v1/users/ada/feedback/{fed[0]}").status_code == 404
    assert [i["paper_id"] for i in client.get("/v1/users/ada/feedback").json["items"]] == [fed[1]]


def test_reading_list_follows_likes_and_dislikes(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    like(client, "ada", fed[1])
    body = client.get("/v1/users/ada/recommendations?k=10").json
    assert body["personalized"] is True
    ranked = [i["paper_id"] for i in body["items"]]
    assert ranked[0] in fed[2:]
    assert not set(fed[:2]) & set(ranked)
    top = body["items"][0]
    assert "that you liked" in top["reason"] and top["because"][0] in fed[:2]
    like(client, "ada", ranked[0], "dislike")
    after = [i["paper_id"] for i in client.get("/v1/users/ada/recommendations?k=37").json["items"]]
    assert ranked[0] not in after and len(after) == 35


def test_a_new_user_gets_a_useful_list_marked_not_personalized(client: FlaskClient) -> None:
    body = client.get("/v1/users/newcomer/recommendations?k=5").json
    assert body["personalized"] is False and len(body["items"]) == 5
    assert len({i["paper_id"] for i in body["items"]}) == 5
    assert all(i["reason"] for i in body["items"])


def test_popular_papers_lead_a_new_users_list(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    for user in ("u1", "u2", "u3"):
        like(client, user, fed[3])
    items = client.get("/v1/users/newcomer/recommendations?k=5").json["items"]
    assert items[0]["paper_id"] == fed[3] and "liked by 3 readers" in items[0]["reason"]


@pytest.mark.parametrize(("method", "path", "body", "status", "words"), [
    ("put", "/v1/users/ada/feedback/{p}", {"signal": "love"}, 400, "'like' or 'dislike'"),
    ("put", "/v1/users/ada/feedback/{p}", {"signal": "like", "x": 1}, 400, "unknown field(s): x"),
    ("put", "/v1/users/ada/feedback/{p}", None, 400, "JSON object"),
    ("put", "/v1/users/ada/feedback/nope", {"signal": "like"}, 404, "no paper with id 'nope'"),
    ("put", "/v1/users/" + "u" * 10_000 + "/feedback/{p}", {"signal": "like"}, 400,
     "user_id must be 1 to 128 characters"),
    ("get", "/v1/users/ada/recommendations?k=abc", None, 400, "k: input should be a valid integer"),
    ("get", "/v1/users/ada/recommendations?k=0", None, 400, "k must be between 1 and 200"),
    ("get", "/v1/users/ada/recommendations?k=100000", None, 400, "k must be between 1 and 200"),
    ("get", "/v1/papers/nope", None, 404, "no paper with id"),
    ("get", "/v1/papers/nope/similar", None, 404, "no paper with id"),
    ("get", "/v1/search?q=", None, 400, "q must be a search text with a visible character"),
    ("get", "/v1/nothing-here", None, 404, "not found"),
    ("post", "/v1/users/ada/feedback/{p}", {"signal": "like"}, 405, "method"),
])
def test_bad_requests_get_json_errors_that_say_what_was_wrong(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout,
    method: str, path: str, body: object, status: int, words: str,
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    response = getattr(client, method)(path.format(p=fed[1]), json=body)
    assert response.status_code == status
    assert words.lower() in response.json["error"]["message"].lower()
    assert response.json["error"]["code"]
    # Nothing stored was lost or changed by the bad request.
    stored = client.get("/v1/users/ada/feedback").json["items"]
    assert [(i["paper_id"], i["signal"]) for i in stored] == [(fed[0], "like")]

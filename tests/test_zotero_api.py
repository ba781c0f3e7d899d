"""The Zotero connection through the REST API: connect, state, sync now, collections,
disconnect, against the Zotero Web API replayed locally over HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from recommender.core.config import Settings
from replay.server import free_port
from replay.zotero import API_KEY, USER_ID, ZoteroReplay

CONNECT = {"library_type": "user", "library_id": USER_ID, "api_key": API_KEY}


@pytest.fixture
def zotero() -> Iterator[ZoteroReplay]:
    with ZoteroReplay() as replay:
        yield replay


@pytest.fixture
def client(sample_settings: Settings, make_app: Callable[[Settings], Flask],
           zotero: ZoteroReplay) -> FlaskClient:
    return make_app(sample_settings.replace(zotero_api_url=zotero.url)).test_client()


def sample_title(client: FlaskClient, word: str) -> tuple[str, str]:
    item = client.get(f"/v1/search?q={word}&k=1").json["items"][0]
    return item["paper_id"], item["title"]


def test_connect_sync_and_see_the_likes_in_their_collections(
        client: FlaskClient, zotero: ZoteroReplay) -> None:
    paper_id, title = sample_title(client, "federated")
    reading = zotero.add_collection("Reading")
    zotero.add_item(title, collections=[reading])
    zotero.add_item(item_type="note")
    assert client.get("/v1/users/ada/zotero").json["connected"] is False

    answer = client.put("/v1/users/ada/zotero", json=CONNECT)
    assert answer.status_code == 200, answer.json
    assert answer.json["connected"] is True and answer.json["library_version"] == 0
    assert API_KEY not in answer.text

    synced = client.post("/v1/users/ada/zotero/sync")
    assert synced.status_code == 200, synced.json
    assert synced.json["matched"] == 1 and synced.json["skipped"] == {"note": 1}
    assert synced.json["library_version"] == zotero.version()

    state = client.get("/v1/users/ada/zotero").json
    assert state["library_version"] == zotero.version()
    assert state["last_sync"]["matched"] == 1 and state["error"] is None
    assert API_KEY not in json.dumps(state)
    likes = client.get("/v1/users/ada/feedback").json["items"]
    assert [item["paper_id"] for item in likes] == [paper_id]
    names = [c["name"] for c in client.get("/v1/users/ada/collections").json["collections"]]
    assert names == ["Reading"]


def test_a_refused_key_is_a_403_naming_the_problem(client: FlaskClient,
                                                   zotero: ZoteroReplay) -> None:
    answer = client.put("/v1/users/ada/zotero", json={**CONNECT, "api_key": "Wrong" * 5})
    assert answer.status_code == 403
    assert answer.json["error"]["code"] == "zotero_refused"
    assert "refused this API key" in answer.json["error"]["message"]
    answer = client.put("/v1/users/ada/zotero", json={**CONNECT, "library_type": "group",
                                                      "library_id": "77"})
    assert answer.status_code == 403 and "no such library" in answer.json["error"]["message"]
    zotero.add_key("ReadsNoGroups12345678", USER_ID, groups={})
    answer = client.put("/v1/users/ada/zotero", json={
        "library_type": "group", "library_id": "77", "api_key": "ReadsNoGroups12345678"})
    assert answer.status_code == 403 and "group library 77" in answer.json["error"]["message"]
    assert client.get("/v1/users/ada/zotero").json["connected"] is False


@pytest.mark.parametrize("body", [
    {**CONNECT, "library_type": "team"},
    {**CONNECT, "library_id": "12; DROP"},
    {**CONNECT, "api_key": "short"},
    {**CONNECT, "api_key": "x" * 65},
    {**CONNECT, "extra": 1},
    {"library_type": "user", "library_id": USER_ID},
])
def test_a_bad_body_is_a_400(client: FlaskClient, body: dict[str, object]) -> None:
    assert client.put("/v1/users/ada/zotero", json=body).status_code == 400


def test_zotero_unreachable_is_a_502(sample_settings: Settings,
                                     make_app: Callable[[Settings], Flask]) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    client = make_app(sample_settings.replace(zotero_api_url=dead)).test_client()
    answer = client.put("/v1/users/ada/zotero", json=CONNECT)
    assert answer.status_code == 502 and answer.json["error"]["code"] == "zotero_failed"


def test_choosing_collections_and_disconnecting(client: FlaskClient,
                                                zotero: ZoteroReplay) -> None:
    first, title_a = sample_title(client, "federated")
    second, title_b = sample_title(client, "trajectory")
    top = zotero.add_collection("Top")
    sub = zotero.add_collection("Sub", parent=top)
    zotero.add_item(title_a, collections=[top])
    zotero.add_item(title_b, collections=[sub])
    assert client.post("/v1/users/ada/zotero/sync").status_code == 404
    assert client.get("/v1/users/ada/zotero/collections").status_code == 404
    client.put("/v1/users/ada/zotero", json=CONNECT)
    client.post("/v1/users/ada/zotero/sync")
    listed = client.get("/v1/users/ada/zotero/collections").json["collections"]
    assert listed == [{"key": top, "name": "Top", "included": True},
                      {"key": sub, "name": "Top / Sub", "included": True}]

    chosen = client.put("/v1/users/ada/zotero/collections", json={"included": [sub]})
    assert chosen.status_code == 200
    assert [c["included"] for c in chosen.json["collections"]] == [False, True]
    likes = {i["paper_id"] for i in client.get("/v1/users/ada/feedback").json["items"]}
    assert likes == {second}
    assert client.get("/v1/users/ada/zotero").json["included_collections"] == [sub]
    assert client.put("/v1/users/ada/zotero/collections",
                      json={"included": ["NOTTHERE"]}).status_code == 404
    client.put("/v1/users/ada/zotero/collections", json={"included": None})
    likes = {i["paper_id"] for i in client.get("/v1/users/ada/feedback").json["items"]}
    assert likes == {first, second}

    assert client.delete("/v1/users/ada/zotero").status_code == 204
    assert client.get("/v1/users/ada/zotero").json["connected"] is False
    likes = {i["paper_id"] for i in client.get("/v1/users/ada/feedback").json["items"]}
    assert likes == {first, second}  # the likes stay

"""Collections: a reader's named groups of liked papers, one list each (the API, the ranking,
erasure, import and export, feeds and the digest's sections), against a real Redis and a
real SMTP server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient

from recommender import wiring
from recommender.core.config import Settings
from recommender.feedback.collections import MAX_COLLECTIONS
from recommender.ranking.interests import interests, interleave
from service.app import create_app
from tests.servers import Inbox
from tests.test_digest import NOW, send, subscribe

PapersAbout = Callable[[Settings, str], list[str]]
Like = Callable[..., None]


def create(client: FlaskClient, user: str, name: str) -> str:
    response = client.post(f"/v1/users/{user}/collections", json={"name": name})
    assert response.status_code == 201, response.json
    assert set(response.json) == {"id", "name"}
    return str(response.json["id"])


def sizes(client: FlaskClient, user: str) -> dict[str, int]:
    found = client.get(f"/v1/users/{user}/collections").json["collections"]
    return {c["name"]: c["size"] for c in found}


def like_into(client: FlaskClient, user: str, paper: str, *collections: str) -> Any:
    response = client.put(f"/v1/users/{user}/feedback/{paper}",
                          json={"signal": "like", "collections": list(collections)})
    assert response.status_code == 200, response.json
    return response.json


def listed(client: FlaskClient, user: str, query: str = "") -> list[str]:
    response = client.get(f"/v1/users/{user}/recommendations?{query}")
    assert response.status_code == 200, response.json
    return [item["paper_id"] for item in response.json["items"]]


def test_create_list_rename_delete(client: FlaskClient) -> None:
    graphs = create(client, "ada", "  Graph   learning ")
    fed = create(client, "ada", "Federated")
    found = client.get("/v1/users/ada/collections").json["collections"]
    assert [(c["id"], c["name"], c["size"]) for c in found] == [
        (graphs, "Graph learning", 0), (fed, "Federated", 0)]

    renamed = client.patch(f"/v1/users/ada/collections/{fed}", json={"name": "FL"})
    assert renamed.status_code == 200 and renamed.json["name"] == "FL"
    assert client.delete(f"/v1/users/ada/collections/{graphs}").status_code == 204
    assert sizes(client, "ada") == {"FL": 0}
    gone = client.delete(f"/v1/users/ada/collections/{graphs}")
    assert gone.status_code == 404 and "no collection" in gone.json["error"]["message"]
    assert client.get("/v1/users/bob/collections").json["collections"] == []  # ada's only


def test_names_are_bounded_and_unique(client: FlaskClient) -> None:
    first = create(client, "ada", "Graph learning")
    taken = client.post("/v1/users/ada/collections", json={"name": "graph  LEARNING"})
    assert taken.status_code == 409
    assert taken.json["error"]["code"] == "conflict"
    assert "already has a collection named 'graph LEARNING'" in taken.json["error"]["message"]
    other = create(client, "ada", "Other")
    clash = client.patch(f"/v1/users/ada/collections/{other}", json={"name": "Graph Learning"})
    assert clash.status_code == 409
    assert client.patch(f"/v1/users/ada/collections/{first}",
                        json={"name": "graph learning"}).status_code == 200  # its own name

    for bad in ['""', '"   "', f'"{"x" * 101}"', '"!!!"', '"a\\u0000b"', '"a\\u001bb"',
                '"a\\ud800"']:  # JSON as sent: a lone surrogate escaped
        response = client.post("/v1/users/ada/collections", data=f'{{"name": {bad}}}',
                               content_type="application/json")
        assert response.status_code == 400, bad
    assert client.post("/v1/users/ada/collections", json={"name": "x", "colour": 1}
                       ).status_code == 400
    assert client.get("/v1/users/ada/collections/nothex!").status_code in (400, 404)

    for n in range(MAX_COLLECTIONS - 2):
        create(client, "ada", f"topic {n}")
    full = client.post("/v1/users/ada/collections", json={"name": "one too many"})
    assert full.status_code == 400 and f"{MAX_COLLECTIONS} collections" in \
        full.json["error"]["message"]


def test_feedback_puts_papers_in_collections(
    client: FlaskClient, sample_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    a, b = create(client, "ada", "A"), create(client, "ada", "B")
    answer = like_into(client, "ada", fed[0], a, b)
    assert sorted(answer["collections"]) == sorted([a, b])
    like_into(client, "ada", fed[1], a)
    assert sizes(client, "ada") == {"A": 2, "B": 1}

    # A collection the reader does not have: 404, and nothing is written.
    missing = client.put(f"/v1/users/ada/feedback/{fed[2]}",
                         json={"signal": "like", "collections": ["0badc0de"]})
    assert missing.status_code == 404
    assert fed[2] not in [f["paper_id"] for f in client.get("/v1/users/ada/feedback").json["items"]]
    # A like without `collections` keeps them; [] takes the paper out of all.
    client.put(f"/v1/users/ada/feedback/{fed[0]}", json={"signal": "like"})
    assert sizes(client, "ada") == {"A": 2, "B": 1}
    like_into(client, "ada", fed[0])
    assert sizes(client, "ada") == {"A": 1, "B": 0}
    # A dislike takes the paper out; it may not name collections.
    assert client.put(f"/v1/users/ada/feedback/{fed[1]}",
                      json={"signal": "dislike", "collections": [a]}).status_code == 400
    client.put(f"/v1/users/ada/feedback/{fed[1]}", json={"signal": "dislike"})
    assert sizes(client, "ada") == {"A": 0, "B": 0}

    # Put, move and take out through the collection's own routes.
    put = client.put(f"/v1/users/ada/collections/{a}/papers/{fed[3]}")
    assert put.status_code == 200 and put.json["paper_id"] == fed[3]
    moved = client.post(f"/v1/users/ada/collections/{a}/move", json={"paper_id": fed[3], "to": b})
    assert moved.status_code == 200
    assert {c["name"]: c["size"] for c in moved.json["collections"]} == {"A": 0, "B": 1}
    assert client.get(f"/v1/users/ada/collections/{b}").json["paper_ids"] == [fed[3]]
    assert client.post(f"/v1/users/ada/collections/{a}/move",
                       json={"paper_id": fed[3], "to": b}).status_code == 404  # not in A
    assert client.delete(f"/v1/users/ada/collections/{b}/papers/{fed[3]}").status_code == 204
    assert sizes(client, "ada") == {"A": 0, "B": 0}
    assert fed[3] in [f["paper_id"] for f in client.get("/v1/users/ada/feedback").json["items"]]

    # Deleting a collection keeps its papers liked.
    like_into(client, "ada", fed[3], a)
    assert client.delete(f"/v1/users/ada/collections/{a}").status_code == 204
    likes = {f["paper_id"]: f["signal"] for f in client.get("/v1/users/ada/feedback").json["items"]}
    assert likes[fed[3]] == "like"
    assert client.get("/v1/users/ada/collections").json["collections"][0]["size"] == 0


def test_a_collections_list_ranks_from_its_own_papers(
    client: FlaskClient, sample_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    others = [p for p in paper_ids_about(sample_settings, "language") if p not in fed][:3]
    assert len(fed) >= 3 and len(others) == 3
    f, o = create(client, "ada", "Federated"), create(client, "ada", "Language")
    for paper in fed[:3]:
        like_into(client, "ada", paper, f)
    for paper in others:
        like_into(client, "ada", paper, o)
    client.put(f"/v1/users/ada/feedback/{fed[3]}", json={"signal": "dislike"})
    # bob likes and dislikes just what ada's "Federated" collection holds and she disliked.
    for paper in fed[:3]:
        client.put(f"/v1/users/bob/feedback/{paper}", json={"signal": "like"})
    client.put(f"/v1/users/bob/feedback/{fed[3]}", json={"signal": "dislike"})

    mine = listed(client, "ada", f"collection={f}&k=5&diversity=0")
    his = [p for p in listed(client, "bob", "k=10&diversity=0") if p not in others][:5]
    assert mine == his  # ranked from the collection's likes and her dislikes, nothing else
    assert not set(mine) & set(fed[:4] + others)  # never a paper she rated
    assert listed(client, "ada", f"collection={o}&k=5")[:5] != mine
    assert client.get("/v1/users/ada/recommendations?collection=0badc0de").status_code == 404
    assert client.get("/v1/users/ada/recommendations?collection=nope").status_code == 400


def test_the_overall_list_keeps_every_collection_in_view(
    app: Flask, sample_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    client = app.test_client()
    recommender = app.extensions["paperrec"].recommender

    def first(k: int, collection: str | None = None) -> list[str]:  # recording nothing
        found = recommender.recommend("ada", k, now=NOW, diversity=0.0, record=False,
                                      collection=collection)
        return [item.paper_id for item in found.items]

    fed = paper_ids_about(sample_settings, "federated")
    other = [p for p in paper_ids_about(sample_settings, "language") if p not in fed][:1]
    f, o = create(client, "ada", "Federated"), create(client, "ada", "Language")
    for paper in fed[:4]:
        like_into(client, "ada", paper, f)
    like_into(client, "ada", other[0], o)
    [small_first], [big_first] = first(1, o), first(1, f)
    top = first(3)
    # The whole profile's best, then each collection's (the largest first).
    assert big_first in top and small_first in top


def test_interests_and_interleaving() -> None:
    rng = np.random.default_rng(0)
    centres = np.eye(8, dtype=np.float32)[:2]
    two = np.vstack([centres[i] + 0.05 * rng.standard_normal((5, 8)) for i in (0, 1)])
    labels = interests(two.astype(np.float32))
    assert len(set(labels[:5].tolist())) == 1 and len(set(labels[5:].tolist())) == 1
    assert labels[0] != labels[5]
    one = centres[0] + 0.05 * rng.standard_normal((10, 8))
    assert set(interests(one.astype(np.float32)).tolist()) == {0}
    assert set(interests(two[:4].astype(np.float32)).tolist()) == {0}  # too few likes to split
    assert interleave([np.array([1, 2, 3]), np.array([2, 4]), np.array([5])], 5).tolist() == [
        1, 2, 5, 3, 4]


def test_export_and_erasure_cover_collections(
    app: Flask, sample_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    client = app.test_client()
    fed = paper_ids_about(sample_settings, "federated")
    f = create(client, "ada", "Federated")
    like_into(client, "ada", fed[0], f)
    export = client.get("/v1/users/ada/export").json
    assert export["collections"] == [{"id": f, "name": "Federated",
                                      "created_at": export["collections"][0]["created_at"],
                                      "paper_ids": [fed[0]]}]
    parts = app.extensions["paperrec"]
    assert parts.redis.exists(parts.keys.collections("ada"), parts.keys.collected("ada")) == 2
    assert client.delete("/v1/users/ada").status_code == 204
    assert parts.redis.exists(parts.keys.collections("ada"), parts.keys.collected("ada")) == 0
    assert client.get("/v1/users/ada/collections").json["collections"] == []


def test_import_into_and_export_of_a_collection(
    client: FlaskClient, sample_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    f = create(client, "ada", "Federated")
    like_into(client, "ada", fed[2])  # liked before, in no collection
    for paper in fed[:3]:
        like_into(client, "bob", paper)
    body = client.get("/v1/users/bob/library?format=csl-json").data  # bob's likes as a file
    csl = "application/vnd.citationstyles.csl+json"
    missing = client.post("/v1/users/ada/library?collection=0badc0de", data=body,
                          content_type=csl)
    assert missing.status_code == 404
    assert len(client.get("/v1/users/ada/feedback").json["items"]) == 1  # nothing imported
    imported = client.post(f"/v1/users/ada/library?collection={f}", data=body,
                           content_type=csl)
    assert imported.status_code == 200, imported.json
    assert len(imported.json["matched"]) + len(imported.json["already_liked"]) == 3, imported.json
    assert sizes(client, "ada") == {"Federated": 3}
    like_into(client, "ada", fed[3])  # a like outside the collection
    exported = client.get(f"/v1/users/ada/library?format=csl-json&collection={f}")
    assert exported.status_code == 200
    assert sorted(item["id"] for item in exported.json) == sorted(fed[:3])
    assert len(client.get("/v1/users/ada/library?format=csl-json").json) == 4


def test_a_feed_per_collection(
    client: FlaskClient, sample_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    f = create(client, "ada", "Federated")
    for paper in fed[:2]:
        like_into(client, "ada", paper, f)
    urls = client.post("/v1/users/ada/feed").json
    path = urls["json"].split("://", 1)[1].split("/", 1)[1]
    whole = client.get(f"/{path}").json
    own = client.get(f"/{path}?collection={f}")
    assert own.status_code == 200
    assert own.json["title"] == "paperrec: Federated (ada)" != whole["title"]
    assert [i["_paperrec"]["paper_id"] for i in own.json["items"]] == listed(
        client, "ada", f"collection={f}")
    assert own.headers["ETag"] != client.get(f"/{path}").headers["ETag"]
    assert client.get(f"/{path}?collection=0badc0de").status_code == 404


def test_the_digest_has_a_section_per_collection(
    mail_settings: Settings, inbox: Inbox, paper_ids_about: PapersAbout
) -> None:
    client = create_app(mail_settings).test_client()
    fed = paper_ids_about(mail_settings, "federated")
    other = [p for p in paper_ids_about(mail_settings, "language") if p not in fed][:2]
    f, o = create(client, "ada", "Federated"), create(client, "ada", "Language <b>")
    create(client, "ada", "Empty")
    for paper in fed[:2]:
        like_into(client, "ada", paper, f)
    for paper in other:
        like_into(client, "ada", paper, o)
    subscribe(client, inbox, "ada", "ada@example.org", frequency="daily", max_items=3)

    summary = send(mail_settings, NOW)
    assert summary.sent == 1
    [message] = inbox.to("ada@example.org")
    html = message.get_body(("html",)).get_content()  # type: ignore[union-attr]
    text = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "From your collection &ldquo;Federated&rdquo;" in html
    assert "From your collection &ldquo;Language &lt;b&gt;&rdquo;" in html  # escaped
    assert "Empty" not in html  # a collection without papers has no section
    assert '== From your collection "Federated" ==' in text
    assert text.count("More like this:") > 3  # the overall list's three and the sections'
    # Everything mailed counts as served: the next list leaves it out.
    served = {pid for pid, _ in wiring.build(mail_settings).feedback.served_with_times("ada")}
    assert len(served) == text.count("More like this:")


@pytest.mark.parametrize("name", ["Graph learning"])
def test_the_pages_create_like_into_and_list(
    ada: FlaskClient, sample_settings: Settings, paper_ids_about: PapersAbout, name: str
) -> None:
    page = ada.get("/collections")
    assert page.status_code == 200 and "No collections yet" in page.text
    token = _csrf(page.text)
    made = ada.post("/collections", data={"name": name, "csrf_token": token})
    assert made.status_code == 303
    page = ada.get("/collections")
    assert name in page.text
    [cid] = [c["id"] for c in _collections(ada)]
    listing = ada.get("/list")
    assert "Like into a collection" in listing.text
    paper = paper_ids_about(sample_settings, "federated")[0]
    ada.post(f"/papers/{paper}/collect",
             data={"collection": cid, "csrf_token": token, "next": "/list"})
    own = ada.get(f"/collections/{cid}")
    assert own.status_code == 200 and "Its papers (1)" in own.text
    assert ada.post(f"/collections/{cid}/rename", data={"name": "Graphs", "csrf_token": token}
                    ).status_code == 303
    assert "Graphs" in ada.get("/collections").text
    assert ada.post(f"/collections/{cid}/delete", data={"csrf_token": token}).status_code == 303
    assert "No collections yet" in ada.get("/collections").text


def _csrf(html: str) -> str:
    marker = 'name="csrf_token" value="'
    start = html.index(marker) + len(marker)
    return html[start:html.index('"', start)]


def _collections(browser: FlaskClient) -> list[dict[str, Any]]:
    import re

    return [{"id": m} for m in re.findall(r'data-collection="([0-9a-f]{8})"',
                                          browser.get("/collections").text)]


def test_the_cli_exports_a_collection(
    client: FlaskClient, sample_settings: Settings, paper_ids_about: PapersAbout,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    from service.cli import main

    fed = paper_ids_about(sample_settings, "federated")
    f = create(client, "ada", "Federated")
    like_into(client, "ada", fed[0], f)
    like_into(client, "ada", fed[1])
    monkeypatch.setenv("PAPERREC_DATA_DIR", str(sample_settings.data_dir))
    monkeypatch.setenv("REDIS_URL", str(sample_settings.redis_url))
    monkeypatch.setenv("PAPERREC_REDIS_NAMESPACE", sample_settings.redis_namespace)
    assert main(["export-library", "--user", "ada", "--format", "csl-json",
                 "--collection", f]) == 0
    assert [item["id"] for item in json.loads(capsys.readouterr().out)] == [fed[0]]
    assert main(["export-library", "--user", "ada", "--format", "csl-json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 2

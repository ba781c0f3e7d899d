"""Reader rules over the REST API: follow or mute an author or a keyword, honoured by the
reading lists, in the export, gone with the erasure."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from recommender.core.config import Settings
from recommender.ranking.reader_rules import FOLLOW_WINDOW_DAYS

Like = Callable[..., None]
PapersAbout = Callable[[Settings, str], list[str]]
RULES = "/v1/users/ada/rules"


def add_papers(settings: Settings, tmp_path: Path, ingest: Callable[..., Any],
               rebuild: Callable[..., Any], embedder: Any, papers: list[dict[str, Any]]) -> None:
    """Ingest these JSONL records into the served corpus and publish a new index."""
    path = tmp_path / f"extra-{len(list(tmp_path.glob('extra-*')))}.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in papers))
    ingest(settings, [path])
    rebuild(settings, embedder=embedder)


def days_ago(n: int) -> str:
    return (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=n)).isoformat()


def ids(client: FlaskClient, user: str, query: str = "") -> list[str]:
    response = client.get(f"/v1/users/{user}/recommendations?{query}")
    assert response.status_code == 200, response.json
    return [item["paper_id"] for item in response.json["items"]]


@pytest.fixture
def corpus_with_authors(
    client: FlaskClient, sample_settings: Settings, tmp_path: Path, ingest: Callable[..., Any],
    rebuild: Callable[..., Any], hashing_embedder: Any, paper_ids_about: PapersAbout,
) -> dict[str, str]:
    """The sample plus: a copy of a federated paper by Jürgen Müller (it ranks first for a
    reader who likes federated papers), and two unrelated papers by Yoshua Bengio, one new
    and one old. Returns the named ids and the liked paper."""
    fed = paper_ids_about(sample_settings, "federated")[0]
    liked = client.get(f"/v1/papers/{fed}").json
    add_papers(sample_settings, tmp_path, ingest, rebuild, hashing_embedder, [
        {"id": "muller-fed", "title": liked["title"], "abstract": liked["abstract"],
         "authors": ["Jürgen Müller", "Ada Byron"], "date": days_ago(2),
         "categories": "cs.LG stat.ML"},
        {"id": "bengio-new", "title": "Protein folding kinetics in yeast",
         "abstract": "Calorimetry of chaperones.", "authors": ["Yoshua Bengio"],
         "date": days_ago(3), "categories": ["q-bio.BM"]},
        {"id": "bengio-old", "title": "Soil bacteria under drought",
         "abstract": "Field samples from vineyards.", "authors": ["Bengio, Yoshua"],
         "date": days_ago(FOLLOW_WINDOW_DAYS + 400)},
    ])
    return {"liked": fed}


def put_rule(client: FlaskClient, action: str, kind: str, value: str, user: str = "ada") -> Any:
    response = client.put(f"/v1/users/{user}/rules/{action}/{kind}", json={"value": value})
    assert response.status_code == 200, response.json
    return response.json


def test_rules_are_put_listed_replaced_and_deleted(client: FlaskClient) -> None:
    assert client.get(RULES).json == {"user_id": "ada", "rules": []}
    made = put_rule(client, "follow", "author", "  Yoshua   Bengio ")
    assert made["value"] == "Yoshua Bengio" and made["created"] and not made["replaced"]
    again = put_rule(client, "follow", "author", "bengio, yoshua")  # the same author
    assert not again["created"] and again["created_at"] == made["created_at"]
    put_rule(client, "follow", "keyword", "graph neural networks / GNN")
    listed = client.get(RULES).json["rules"]
    assert [(r["action"], r["kind"], r["value"]) for r in listed] == [
        ("follow", "author", "Yoshua Bengio"), ("follow", "keyword", "graph neural networks / GNN")]
    assert set(listed[0]) == {"action", "kind", "value", "created_at"}

    muted = put_rule(client, "mute", "author", "Yoshua Bengio")
    assert muted["replaced"] and not muted["created"]
    assert [r["action"] for r in client.get(RULES).json["rules"]] == ["follow", "mute"]
    gone = client.delete(f"{RULES}/follow/author?value=Yoshua+Bengio")
    assert gone.status_code == 404 and "no rule to follow the author" in gone.json["error"][
        "message"]
    assert client.delete(f"{RULES}/mute/author?value=yoshua%20bengio").status_code == 204
    assert client.delete(f"{RULES}/follow/keyword?value=graph+neural+networks+%2F+GNN"
                         ).status_code == 204
    assert client.get(RULES).json["rules"] == []


@pytest.mark.parametrize(("method", "path", "body", "words"), [
    ("PUT", "block/author", {"value": "X"}, "action: input should be 'follow' or 'mute'"),
    ("PUT", "mute/venue", {"value": "X"}, "kind: input should be 'author', 'keyword' or"),
    ("PUT", "mute/author", {"value": ""}, "value must be an author's name, a keyword"),
    ("PUT", "mute/keyword", {"value": " -- "}, "keyword of a rule must have a letter or digit"),
    ("PUT", "mute/keyword", {"value": "\U000c1038\U0005e2ed"}, "must have a letter or digit"),
    ("PUT", "mute/author", {"value": "× ÷"}, "author of a rule must have a word to match"),
    ("PUT", "mute/keyword", {"value": "x" * 201}, "value must be an author's name, a keyword"),
    ("PUT", "mute/keyword", {}, "value is required"),
    ("PUT", "mute/keyword", {"value": "x", "colour": "red"}, "unknown field(s): colour"),
    ("DELETE", "mute/keyword", None, "value is required"),
    ("DELETE", "mute/keyword?value=%20%20", None, "must have a letter or digit, got '  '"),
])
def test_bad_rules_are_400_and_say_why(
    client: FlaskClient, method: str, path: str, body: Any, words: str
) -> None:
    response = client.open(f"{RULES}/{path}", method=method, json=body)
    assert response.status_code == 400, response.json
    assert words in response.json["error"]["message"]
    assert response.json["error"]["code"] == "invalid_input"


def test_a_user_has_at_most_a_hundred_rules(client: FlaskClient) -> None:
    for n in range(100):
        put_rule(client, "mute", "keyword", f"topic{n}")
    response = client.put(f"{RULES}/follow/author", json={"value": "Ada Lovelace"})
    assert response.status_code == 400
    assert "already has 100 rules" in response.json["error"]["message"]


def test_a_muted_author_or_keyword_never_appears_even_when_it_would_rank_first(
    client: FlaskClient, sample_settings: Settings, like: Like,
    corpus_with_authors: dict[str, str], paper_ids_about: PapersAbout,
) -> None:
    like(client, "ada", corpus_with_authors["liked"])
    assert ids(client, "ada", "k=1") == ["muller-fed"]
    put_rule(client, "mute", "author", "jurgen muller")  # accents aside
    listed = ids(client, "ada", "k=200")
    assert "muller-fed" not in listed and len(listed) == 38 + 3 - 2  # all but liked and muted

    put_rule(client, "mute", "keyword", "Federated")
    listed = ids(client, "ada", "k=200")
    texts = {pid: client.get(f"/v1/papers/{pid}").json for pid in paper_ids_about(
        sample_settings, "federated")}
    federated = {pid for pid, p in texts.items()
                 if re.search(r"\bfederated\b", f"{p['title']} {p['abstract']}", re.I)}
    assert len(federated) >= 3
    assert listed and not federated & set(listed)
    assert put_rule(client, "follow", "author", "Jürgen Müller")["replaced"]  # unmuted
    assert "muller-fed" not in ids(client, "ada", "k=200")  # still muted by the keyword


def test_a_followed_authors_new_paper_comes_first_and_marked(
    client: FlaskClient, like: Like, corpus_with_authors: dict[str, str]
) -> None:
    like(client, "ada", corpus_with_authors["liked"])
    like(client, "bob", corpus_with_authors["liked"])
    before = ids(client, "bob", "k=3")  # bob: the same like, no rules
    assert "bengio-new" not in before

    put_rule(client, "follow", "author", "Bengio, Yoshua")
    body = client.get("/v1/users/ada/recommendations?k=3").json
    first, *rest = body["items"]
    assert first["paper_id"] == "bengio-new"
    assert first["reason"] == "new from an author you follow: Bengio, Yoshua"
    assert first["reasons"] == [{"kind": "followed_rule", "rule": "author: Bengio, Yoshua"}]
    assert first["because"] == [] and first["score"] >= rest[0]["score"]
    assert [i["paper_id"] for i in rest] == before[:2]  # the model fills the rest, k in all
    whole = ids(client, "ada", "k=200")
    assert whole.count("bengio-new") == 1 and whole[0] == "bengio-new"
    assert whole.index("bengio-old") > 0  # old: ranked by the model, not put first
    # Paging: the followed paper is the first item of the whole list, not of every page
    # (two fresh readers: a list served to one pushes its papers down for the next).
    for user in ("carol", "dave"):
        like(client, user, corpus_with_authors["liked"])
        put_rule(client, "follow", "author", "Yoshua Bengio", user=user)
    whole = ids(client, "carol", "k=200")
    assert whole[0] == "bengio-new" and ids(client, "dave", "k=2&offset=1") == whole[1:3]


def test_since_decides_what_is_new_for_a_followed_keyword(
    client: FlaskClient, like: Like, corpus_with_authors: dict[str, str]
) -> None:
    put_rule(client, "follow", "author", "Yoshua Bengio")
    assert ids(client, "ada", "k=1") == ["bengio-new"]
    # With `since` far enough back, the old paper is new too: both first, newest first.
    assert ids(client, "ada", f"k=2&since={days_ago(FOLLOW_WINDOW_DAYS + 500)}") == [
        "bengio-new", "bengio-old"]
    assert ids(client, "ada", f"k=5&since={days_ago(1)}") == []  # nothing else is dated
    put_rule(client, "follow", "keyword", "soil bacteria")
    put_rule(client, "mute", "author", "Yoshua Bengio")  # a mute wins
    assert ids(client, "ada", f"k=5&since={days_ago(FOLLOW_WINDOW_DAYS + 500)}") == [
        "muller-fed"]


def test_a_rated_or_already_served_followed_paper_is_not_put_first(
    client: FlaskClient, like: Like, corpus_with_authors: dict[str, str]
) -> None:
    put_rule(client, "follow", "keyword", "protein folding")
    item = client.get("/v1/users/ada/recommendations?k=1").json["items"][0]
    assert item["paper_id"] == "bengio-new"
    assert item["reason"] == "new on a keyword you follow: protein folding"
    assert ids(client, "ada", "k=1&exclude_served=true") == ["bengio-new"]  # served today
    parts = client.application.extensions["paperrec"]  # and a day on:
    parts.redis.zadd(parts.keys.served("ada"), {"bengio-new": time.time() - 86_400})
    assert "bengio-new" not in ids(client, "ada", "k=1&exclude_served=true")
    like(client, "bob", "bengio-new", "dislike")
    put_rule(client, "follow", "keyword", "protein folding", user="bob")
    assert "bengio-new" not in ids(client, "bob", "k=200")


def test_a_category_is_followed_or_muted_as_an_arxiv_category_case_aside(
    client: FlaskClient, like: Like, corpus_with_authors: dict[str, str]
) -> None:
    like(client, "ada", corpus_with_authors["liked"])
    assert ids(client, "ada", "k=1") == ["muller-fed"]
    assert put_rule(client, "mute", "category", " CS.lg ")["value"] == "CS.lg"
    assert "muller-fed" not in ids(client, "ada", "k=200")  # its categories: cs.LG stat.ML
    put_rule(client, "follow", "category", "q-bio.BM")
    item = client.get("/v1/users/ada/recommendations?k=1").json["items"][0]
    assert item["paper_id"] == "bengio-new"
    assert item["reason"] == "new in a category you follow: q-bio.BM"
    assert client.delete(f"{RULES}/mute/category?value=cs.lg").status_code == 204
    assert "muller-fed" in ids(client, "ada", "k=2")
    none = client.put(f"{RULES}/mute/category", json={"value": "q-bio"})  # no paper: still a rule
    assert none.status_code == 200 and none.json["created"]


def test_export_holds_the_rules_and_erase_removes_them(client: FlaskClient) -> None:
    put_rule(client, "mute", "keyword", "diffusion")
    put_rule(client, "follow", "author", "Ada Lovelace")
    export = client.get("/v1/users/ada/export").json
    assert [(r["action"], r["kind"], r["value"]) for r in export["rules"]] == [
        ("mute", "keyword", "diffusion"), ("follow", "author", "Ada Lovelace")]
    assert client.delete("/v1/users/ada").status_code == 204
    assert client.get("/v1/users/ada/export").json["rules"] == []
    assert client.get(RULES).json["rules"] == []

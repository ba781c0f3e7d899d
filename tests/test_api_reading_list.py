"""Reading-list controls and the live collaborative model, over the REST API."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from recommender.core.config import Settings

Like = Callable[..., None]
PapersAbout = Callable[[Settings, str], list[str]]


def reading_list(client: FlaskClient, user: str, query: str = "") -> dict:  # type: ignore[type-arg]
    response = client.get(f"/v1/users/{user}/recommendations?{query}")
    assert response.status_code == 200, response.json
    return response.json  # type: ignore[no-any-return]


def ids(body: dict) -> list[str]:  # type: ignore[type-arg]
    return [item["paper_id"] for item in body["items"]]


def test_exclude_served_leaves_out_what_was_served_before_today(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    first = ids(reading_list(client, "ada", "k=5"))
    assert ids(reading_list(client, "ada", "k=5&exclude_served=true")) == first  # same day
    parts = client.application.extensions["paperrec"]  # the same papers, served a day ago
    parts.redis.zadd(parts.keys.served("ada"),
                     {pid: time.time() - 86_400 for pid in first})
    second = ids(reading_list(client, "ada", "k=5&exclude_served=true"))
    assert len(second) == 5 and not set(first) & set(second)


def test_offset_pages_through_the_list(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    whole = ids(reading_list(client, "ada", "k=10"))
    # The call marked those ten as served, which counts from tomorrow: the same list today.
    page = ids(reading_list(client, "ada", "k=5&offset=5"))
    assert page == whole[5:10]


def test_since_keeps_only_papers_dated_on_or_after_it(
    client: FlaskClient, sample_settings: Settings, tmp_path: Path, ingest: Callable[..., Any],
    rebuild: Callable[..., Any], hashing_embedder: Any,
) -> None:
    assert ids(reading_list(client, "ada", "since=2020-01-01")) == []  # the sample is undated
    dated = tmp_path / "dated.jsonl"
    dated.write_text("".join(json.dumps(
        {"id": pid, "title": f"A paper from {day}", "abstract": "On graphs.", "date": day}) + "\n"
        for pid, day in (("older", "2019-06-01"), ("newer", "2021-03-01"))))
    ingest(sample_settings, [dated])
    rebuild(sample_settings, embedder=hashing_embedder)
    assert ids(reading_list(client, "ada", "since=2020-01-01")) == ["newer"]
    assert sorted(ids(reading_list(client, "ada", "since=2019-06-01"))) == ["newer", "older"]


@pytest.mark.parametrize(("query", "words"), [
    ("diversity=2", "diversity must be between 0 and 1"),
    ("diversity=lots", "diversity: input should be a valid number"),
    ("offset=-1", "offset must be between 0 and 1000"),
    ("since=yesterday", "since: should be a date like 2026-01-31"),
    ("exclude_served=maybe", "exclude_served: input should be a valid boolean"),
])
def test_bad_controls_are_400_and_say_why(client: FlaskClient, query: str, words: str) -> None:
    response = client.get(f"/v1/users/ada/recommendations?{query}")
    assert response.status_code == 400 and words in response.json["error"]["message"]


def test_every_item_says_why_in_words_and_as_data(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    item = reading_list(client, "ada", "k=1")["items"][0]
    liked_title = client.get(f"/v1/papers/{fed[0]}").json["title"]
    assert item["reason"].startswith(f"similar to '{liked_title[:40]}")
    [reason] = item["reasons"]
    assert set(reason) == {"kind", "paper_id", "similarity"}
    assert reason["kind"] == "similar_to_liked" and reason["paper_id"] == fed[0]
    assert 0 < reason["similarity"] <= 1
    assert item["because"] == [fed[0]]


def test_a_paper_far_from_every_like_is_not_called_similar(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    # A list of 36 of the 38 sample papers for one like reaches papers of other topics: the
    # nearest like is still named, and the words say whether it is close (above the
    # collection's noise floor) or only the nearest.
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    liked_title = client.get(f"/v1/papers/{fed[0]}").json["title"][:40]
    items = reading_list(client, "ada", "k=36")["items"]
    close = [i["reasons"][0]["similarity"] for i in items
             if i["reason"].startswith(f"similar to '{liked_title}")]
    far = [i["reasons"][0]["similarity"] for i in items
           if i["reason"].startswith(f"not close to your likes (the nearest: '{liked_title}")]
    assert len(close) + len(far) == len(items) == 36
    assert close and far and min(close) > max(far)
    assert items[0]["reasons"][0]["similarity"] in close


def test_items_say_where_they_stand_by_rank_and_close_likes(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout,
    tmp_path: Path, ingest: Callable[..., Any], rebuild: Callable[..., Any],
    hashing_embedder: Any,
) -> None:
    """Each item's rank, how many likes it is close to (the same bar as "similar to ... that
    you liked") and its standing in words; with its authors, year and category."""
    fed = paper_ids_about(sample_settings, "federated")
    first = client.get(f"/v1/papers/{fed[0]}").json
    twin = tmp_path / "twin.jsonl"
    twin.write_text(json.dumps({
        "id": "twin", "title": first["title"] + " (again)", "abstract": first["abstract"],
        "authors": ["Ada Lovelace"], "year": 2026, "categories": ["cs.LG"]}) + "\n")
    ingest(sample_settings, [twin])
    rebuild(sample_settings, embedder=hashing_embedder)
    for paper_id in fed[:3]:
        like(client, "ada", paper_id)
    items = reading_list(client, "ada", "k=12")["items"]
    assert [i["rank"] for i in items] == list(range(1, 13))
    assert items[0]["standing"].startswith("top match of your list")
    assert all(i["standing"].startswith("among your top 5") for i in items[1:5])
    assert all(i["standing"].startswith("among your top 10") for i in items[5:10])
    assert items[10]["standing"].startswith("number 11 on your list")
    for item in items:
        near = [r for r in item["reasons"] if r["kind"] == "similar_to_liked"]
        if item["close_likes"]:
            assert f"close to {item['close_likes'] if item['close_likes'] > 1 else 'one'} of " \
                   "your like" in item["standing"]
            assert item["reason"].startswith("similar to")  # its nearest like is close
        else:
            assert "close to" not in item["standing"]
            assert not near or item["reason"].startswith("not close to your likes")
        assert 0 < item["probability"] < 1  # kept beside the words
    twin_item = next(i for i in items if i["paper_id"] == "twin")
    assert twin_item["close_likes"] >= 1
    assert (twin_item["authors"], twin_item["year"], twin_item["venue"]) == (
        ["Ada Lovelace"], 2026, "Machine Learning (cs.LG)")
    later = reading_list(client, "bob", "k=5&offset=5")["items"]
    assert [i["rank"] for i in later] == [6, 7, 8, 9, 10]
    assert later[0]["standing"] == "among the top 10 broad picks"  # bob has no likes


def test_the_trained_model_is_served_live_and_new_likes_count_at_once(
    client: FlaskClient, sample_settings: Settings, train: Callable[..., Any], like: Like,
    paper_ids_about: PapersAbout,
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    like(client, "ada", fed[1])
    ranked = [(i["paper_id"], i["score"]) for i in reading_list(client, "ada", "k=36")["items"]
              if i["paper_id"] not in fed]
    # Content alone puts the decoy just above the bridge (the closest neighbours in the list).
    gap, pos = min((ranked[j][1] - ranked[j + 1][1], j) for j in range(3, len(ranked) - 1))
    decoy, bridge = ranked[pos][0], ranked[pos + 1][0]
    # Equally popular: twenty readers save the bridge with ada's two papers, twenty the decoy.
    for n in range(20):
        for paper in (fed[0], fed[1], bridge):
            like(client, f"fan{n}", paper)
        like(client, f"other{n}", decoy)
    untrained = ids(reading_list(client, "ada", "k=36"))
    assert untrained.index(decoy) < untrained.index(bridge)

    print(train(sample_settings))
    body = reading_list(client, "ada", "k=36")
    assert body["model_version"] == "000001"
    assert ids(body).index(bridge) < ids(body).index(decoy)
    item = next(i for i in body["items"] if i["paper_id"] == bridge)
    assert "readers with similar taste saved it" in item["reason"]
    assert any(r["kind"] == "similar_readers" for r in item["reasons"])
    # A like given after training changes the list at once, with no retraining.
    before = ids(reading_list(client, "ada", "k=5"))
    like(client, "ada", before[0])
    after = ids(reading_list(client, "ada", "k=5"))
    assert before[0] not in after and after != before

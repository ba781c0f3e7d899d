"""GET /v1/users/<id>/recommendations/why-not/<paper>: where a paper would rank on the reader's
list, its score part by part, and what keeps it out, checked against the list itself."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from recommender.core.config import Settings
from recommender.ranking.scoring import SERVED_PENALTY

Like = Callable[..., None]
PapersAbout = Callable[[Settings, str], list[str]]


def why_not(client: FlaskClient, user: str, paper: str, query: str = "") -> dict:  # type: ignore[type-arg]
    response = client.get(f"/v1/users/{user}/recommendations/why-not/{paper}?{query}")
    assert response.status_code == 200, response.json
    return response.json  # type: ignore[no-any-return]


def items(client: FlaskClient, user: str, query: str) -> list[dict]:  # type: ignore[type-arg]
    response = client.get(f"/v1/users/{user}/recommendations?{query}")
    assert response.status_code == 200, response.json
    return response.json["items"]  # type: ignore[no-any-return]


def kinds(answer: dict) -> list[str]:  # type: ignore[type-arg]
    return [blocker["kind"] for blocker in answer["blockers"]]


def test_rank_is_the_position_on_the_list_with_the_same_settings(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    like(client, "ada", fed[1])
    like(client, "ada", paper_ids_about(sample_settings, "graph")[0], "dislike")
    every = paper_ids_about(sample_settings, "")  # every paper: each text has ""
    # Asked before the list is served (serving it would push its papers down).
    answers = {paper: why_not(client, "ada", paper, "k=5") for paper in every}
    listed = items(client, "ada", "k=40&diversity=0")
    assert len(listed) == len(every) - 3  # all but the rated papers
    for position, item in enumerate(listed, start=1):
        answer = answers[item["paper_id"]]
        assert answer["rank"] == position, (item, answer)
        assert answer["score"] == item["score"] and answer["probability"] == item["probability"]
        assert answer["reasons"] == item["reasons"] and answer["because"] == item["because"]
        assert answer["in_list"] == (position <= 5)
        assert answer["rank_is_estimate"] is False
        assert (kinds(answer) == []) == (position <= 5)
    assert "liked" in kinds(answers[fed[0]]) and not answers[fed[0]]["in_list"]


def test_a_paper_on_the_list_says_where(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")[0]
    like(client, "ada", fed)
    like(client, "bob", fed)
    second = items(client, "bob", "k=3")[1]  # ada's list is bob's: same likes, nothing served
    answer = why_not(client, "ada", second["paper_id"], "k=3")
    assert answer["in_list"] is True and answer["rank"] == 2 and answer["blockers"] == []
    assert answer["summary"] == f"It is 2nd on your list of 3 (score {second['score']:.4f})."
    assert answer["title"] == second["title"] and answer["reason"] == second["reason"]
    assert answer["parts"]["content"] > 0 and answer["personalized"] is True


def test_a_reader_without_feedback_gets_an_answer(
    client: FlaskClient, sample_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    paper = paper_ids_about(sample_settings, "federated")[0]
    answer = why_not(client, "newcomer", paper, "k=40")
    assert answer["personalized"] is False and answer["in_list"] is True
    assert answer["parts"]["content"] == 0 and 1 <= answer["rank"] <= 38
    # min_probability does not cut a list without likes: all its items have the base rate.
    assert why_not(client, "newcomer", paper, "k=40&min_probability=0.99")["in_list"] is True
    assert paper in [i["paper_id"] for i in items(client, "newcomer", "k=40&min_probability=0.99")]


def test_an_outranked_paper_says_by_how_much(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    like(client, "ada", paper_ids_about(sample_settings, "federated")[0])
    like(client, "bob", paper_ids_about(sample_settings, "federated")[0])
    listed = items(client, "bob", "k=12&diversity=0")  # the same list as ada's
    answer = why_not(client, "ada", listed[11]["paper_id"], "k=5")
    assert answer["rank"] == 12 and answer["in_list"] is False
    [outranked] = answer["blockers"]
    assert outranked["kind"] == "outranked" and outranked["rank"] == 12 and outranked["k"] == 5
    assert outranked["kth_score"] == pytest.approx(listed[4]["score"], abs=1e-4)
    assert outranked["score"] == pytest.approx(listed[11]["score"], abs=1e-4)
    assert outranked["gap"] == pytest.approx(listed[4]["score"] - listed[11]["score"], abs=2e-4)
    assert outranked["gap"] > 0
    assert answer["summary"] == (f"It would rank 12th; your list shows 5: the 5th scores "
                                 f"{outranked['kth_score']:.4f}, this one "
                                 f"{outranked['score']:.4f}.")


def test_rated_papers_are_kept_out(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    like(client, "ada", fed[1], "dislike")
    liked = why_not(client, "ada", fed[0])
    assert liked["in_list"] is False and kinds(liked)[0] == "liked"
    assert liked["summary"].startswith("You liked it")
    disliked = why_not(client, "ada", fed[1])
    assert disliked["in_list"] is False and kinds(disliked)[0] == "disliked"


def test_since_and_min_probability_are_named(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    answer = why_not(client, "ada", fed[1], "k=40&since=2020-01-01")  # the sample is undated
    [before] = answer["blockers"]
    assert before == {"kind": "before_since", "date": None, "since": "2020-01-01",
                      "detail": "It has no date; the list keeps papers dated on or after "
                                "2020-01-01."}
    weak = why_not(client, "ada", fed[2], "k=40&min_probability=0.99")
    [below] = weak["blockers"]
    assert below["kind"] == "below_min_probability" and below["min_probability"] == 0.99
    assert below["probability"] == weak["probability"] < 0.99
    assert fed[2] not in [i["paper_id"] for i in items(client, "ada", "k=40&min_probability=0.99")]


def test_served_papers_count_from_the_next_day_named_when_excluded_penalised_otherwise(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    like(client, "ada", paper_ids_about(sample_settings, "federated")[0])
    first = items(client, "ada", "k=3")[0]
    today = why_not(client, "ada", first["paper_id"], "k=3&exclude_served=true")
    assert today["in_list"] and today["rank"] == 1 and today["parts"]["served_penalty"] == 0
    # Served yesterday: the same paper, a day on (its first-served time, as Redis keeps it).
    parts = client.application.extensions["paperrec"]
    parts.redis.zadd(parts.keys.served("ada"), {first["paper_id"]: time.time() - 86_400})
    excluded = why_not(client, "ada", first["paper_id"], "exclude_served=true")
    assert kinds(excluded) == ["served_excluded"] and excluded["parts"]["served_penalty"] == 0
    pushed = why_not(client, "ada", first["paper_id"])
    assert pushed["parts"]["served_penalty"] == pytest.approx(SERVED_PENALTY)
    assert pushed["score"] == pytest.approx(first["score"] - SERVED_PENALTY, abs=2e-4)


def add_copy(client: FlaskClient, settings: Settings, tmp_path: Path, ingest: Callable[..., Any],
             rebuild: Callable[..., Any], embedder: Any, of: str, **fields: Any) -> str:
    """Ingest and index a paper with the abstract of ``of`` (so close to it); its id."""
    paper = client.get(f"/v1/papers/{of}").json
    path = tmp_path / f"copy-of-{of}.jsonl"
    path.write_text(json.dumps({"id": f"copy-{of}", "title": paper["title"] + " (again)",
                                "abstract": paper["abstract"], **fields}) + "\n")
    ingest(settings, [path])
    rebuild(settings, embedder=embedder)
    return f"copy-{of}"


def test_a_paper_close_to_a_disliked_one_says_which(
    client: FlaskClient, sample_settings: Settings, tmp_path: Path, like: Like,
    ingest: Callable[..., Any], rebuild: Callable[..., Any], hashing_embedder: Any,
    paper_ids_about: PapersAbout,
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    copy = add_copy(client, sample_settings, tmp_path, ingest, rebuild, hashing_embedder, fed[1])
    like(client, "ada", paper_ids_about(sample_settings, "graph")[0])
    like(client, "ada", fed[1], "dislike")
    answer = why_not(client, "ada", copy, "k=1")
    close = next(b for b in answer["blockers"] if b["kind"] == "close_to_disliked")
    assert close["paper_id"] == fed[1] and close["similarity"] > 0.9
    assert close["penalty"] == answer["parts"]["dislike_penalty"] > 0
    disliked_title = client.get(f"/v1/papers/{fed[1]}").json["title"]
    assert close["detail"].startswith(f"It is close to '{disliked_title[:40]}")
    assert 1 <= close["rank_without_penalty"] < answer["rank"]
    assert "outranked" in kinds(answer)


def test_muted_and_followed_authors(
    client: FlaskClient, sample_settings: Settings, tmp_path: Path, like: Like,
    ingest: Callable[..., Any], rebuild: Callable[..., Any], hashing_embedder: Any,
    paper_ids_about: PapersAbout,
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    recent = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=2)).isoformat()
    copy = add_copy(client, sample_settings, tmp_path, ingest, rebuild, hashing_embedder, fed[1],
                    authors=["Jürgen Müller"], date=recent)
    like(client, "ada", fed[0])
    rules = "/v1/users/ada/rules"
    assert client.put(f"{rules}/follow/author", json={"value": "Jurgen Muller"}).status_code == 200
    followed = why_not(client, "ada", copy, "k=3")
    assert followed["rank"] == 1 and followed["in_list"] is True
    assert followed["reasons"] == [{"kind": "followed_rule", "rule": "author: Jurgen Muller"}]
    assert items(client, "ada", "k=3")[0]["paper_id"] == copy
    assert client.put(f"{rules}/mute/author", json={"value": "Jürgen Müller"}).status_code == 200
    muted = why_not(client, "ada", copy, "k=3")
    assert muted["in_list"] is False
    assert muted["blockers"][0] == {"kind": "muted", "rule": "author: Jürgen Müller",
                                    "detail": "You muted it: author: Jürgen Müller."}
    assert muted["summary"].startswith("You muted it: author: Jürgen Müller.")
    assert copy not in [i["paper_id"] for i in items(client, "ada", "k=40")]


def test_unknown_papers_unindexed_papers_and_bad_ids(
    client: FlaskClient, sample_settings: Settings, tmp_path: Path,
    ingest: Callable[..., Any], paper_ids_about: PapersAbout,
) -> None:
    missing = client.get("/v1/users/ada/recommendations/why-not/no-such-paper")
    assert missing.status_code == 404 and missing.json["error"]["code"] == "not_found"
    extra = tmp_path / "late.jsonl"
    extra.write_text(json.dumps({"id": "late", "title": "Late", "abstract": "Not indexed."}))
    ingest(sample_settings, [extra])
    late = client.get("/v1/users/ada/recommendations/why-not/late")
    assert late.status_code == 404 and "rebuild-index" in late.json["error"]["message"]
    paper = paper_ids_about(sample_settings, "federated")[0]
    assert client.get(f"/v1/users/a%20b/recommendations/why-not/{paper}").status_code == 400
    bad_k = client.get(f"/v1/users/ada/recommendations/why-not/{paper}?k=0")
    assert bad_k.status_code == 400 and "k must be between 1 and 200" in bad_k.json["error"][
        "message"]
    unknown = client.get(f"/v1/users/ada/recommendations/why-not/{paper}?page=3")
    assert unknown.status_code == 400 and "unknown query parameter(s): page" in unknown.json[
        "error"]["message"]


def test_over_an_approximate_index_the_rank_is_an_estimate_that_matches_the_list(
    sample_settings: Settings, make_app: Callable[[Settings], Any], like: Like,
    rebuild: Callable[..., Any], hashing_embedder: Any, paper_ids_about: PapersAbout,
) -> None:
    hnsw = sample_settings.replace(exact_index_max=10)
    rebuild(hnsw, full=True, embedder=hashing_embedder)
    client = make_app(hnsw).test_client()
    like(client, "ada", paper_ids_about(hnsw, "federated")[0])
    like(client, "bob", paper_ids_about(hnsw, "federated")[0])
    listed = items(client, "bob", "k=30&diversity=0")
    for position in (1, 7, 30):
        answer = why_not(client, "ada", listed[position - 1]["paper_id"], "k=5")
        assert answer["rank_is_estimate"] is True
        assert answer["rank"] == position and answer["in_list"] == (position <= 5)


def test_with_two_collections_the_rank_is_the_position_on_the_interleaved_list(
    client: FlaskClient, sample_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    """A reader with two collections gets every collection's list interleaved with the whole
    profile's: why-not describes that list, not the whole profile's alone."""
    for name, topic in (("Federated", "federated"), ("Graphs", "graph")):
        made = client.post("/v1/users/ada/collections", json={"name": name})
        assert made.status_code in (200, 201), made.json
        for paper in paper_ids_about(sample_settings, topic)[:2]:
            liked = client.put(f"/v1/users/ada/feedback/{paper}",
                               json={"signal": "like", "collections": [made.json["id"]]})
            assert liked.status_code == 200, liked.json
    every = paper_ids_about(sample_settings, "")
    answers = {paper: why_not(client, "ada", paper, "k=10&diversity=0") for paper in every}
    listed = items(client, "ada", "k=10&diversity=0")
    assert len(listed) == 10
    assert [answers[item["paper_id"]]["rank"] for item in listed] == list(range(1, 11))

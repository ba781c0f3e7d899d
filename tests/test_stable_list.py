"""A stable list: the same list all day (UTC) unless the reader acts, "more" continues it,
what it served moves down the next day, "Not now" sets a paper aside, and why-not describes
the very page the reader looks at. Over the REST API and the library's ``Recommender``,
with the real Redis server of the tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlsplit

import numpy as np
import pytest
from flask.testing import FlaskClient

from recommender.core.config import Settings
from recommender.ranking.rank import rank
from recommender.ranking.recommender import Recommender, day_start
from recommender.ranking.request import ListRequest
from tests.test_reading_list import rows, two_topics

Like = Callable[..., None]
PapersAbout = Callable[[Settings, str], list[str]]
DAY = 86_400.0


def listing(client: FlaskClient, user: str, query: str = "") -> list[tuple[str, float]]:
    response = client.get(f"/v1/users/{user}/recommendations?{query}")
    assert response.status_code == 200, response.json
    return [(item["paper_id"], item["score"]) for item in response.json["items"]]


def ids(items: list[tuple[str, float]]) -> list[str]:
    return [pid for pid, _ in items]


def why_not(client: FlaskClient, user: str, paper: str, query: str = "") -> dict:  # type: ignore[type-arg]
    response = client.get(f"/v1/users/{user}/recommendations/why-not/{paper}?{query}")
    assert response.status_code == 200, response.json
    return response.json  # type: ignore[no-any-return]


def ordinal(n: int) -> str:
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n, 'th') }"


def recommender(client: FlaskClient) -> Recommender:
    return client.application.extensions["paperrec"].recommender  # type: ignore[no-any-return]


@pytest.mark.parametrize("query", ["k=10", "k=10&diversity=0.5", "k=10&exclude_served=true"])
def test_two_calls_a_second_apart_give_the_same_list(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout,
    query: str,
) -> None:
    like(client, "ada", paper_ids_about(sample_settings, "federated")[0])
    first = listing(client, "ada", query)
    time.sleep(1.0)
    again = listing(client, "ada", query)
    assert again == first  # the same papers, in the same order, with the same scores
    assert len(first) == 10


def test_a_newcomers_diverse_list_is_the_same_too(client: FlaskClient) -> None:
    first = listing(client, "newcomer", "k=10")  # no likes: spread by diversity (MMR)
    assert listing(client, "newcomer", "k=10") == first


def test_after_a_like_or_a_dislike_the_list_changes(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout,
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    before = listing(client, "ada", "k=10")
    like(client, "ada", ids(before)[2])
    liked = listing(client, "ada", "k=10")
    assert ids(before)[2] not in ids(liked) and liked != before
    like(client, "ada", ids(liked)[0], "dislike")
    disliked = ids(listing(client, "ada", "k=10"))
    assert ids(liked)[0] not in disliked and disliked != ids(liked)


def test_the_feed_is_the_same_list_all_day(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout,
) -> None:
    like(client, "ada", paper_ids_about(sample_settings, "federated")[0])
    feed = urlsplit(client.post("/v1/users/ada/feed").json["json"]).path

    def entries() -> list[str]:
        answer = client.get(feed)
        assert answer.status_code == 200
        return [item["id"].removeprefix("urn:paperrec:paper:") for item in answer.json["items"]]

    first = entries()
    shown = ids(listing(client, "ada", "k=10"))  # the API serves (and records) its list
    assert entries() == first and first[:10] == shown


def test_the_next_day_served_papers_move_down(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout,
) -> None:
    like(client, "ada", paper_ids_about(sample_settings, "federated")[0])
    today = time.time()
    served = recommender(client).recommend("ada", 5, now=today)  # recorded as served
    shown = [item.paper_id for item in served.items]
    later = recommender(client).recommend("ada", 5, now=today + 60)
    assert [item.paper_id for item in later.items] == shown  # the same day: the same list
    tomorrow = day_start(today) + DAY + 60
    next_day = recommender(client).recommend("ada", 38, now=tomorrow, record=False)
    order = [item.paper_id for item in next_day.items]
    assert order[:5] != shown and set(order[:5]) - set(shown)  # new papers came up
    for position, pid in enumerate(shown):  # and each served paper went down
        assert order.index(pid) > position
    penalised = {item.paper_id: item.score for item in next_day.items}
    assert all(penalised[pid] < score
               for pid, score in ((i.paper_id, i.score) for i in served.items))


def test_serving_again_keeps_the_first_served_time(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout,
) -> None:
    like(client, "ada", paper_ids_about(sample_settings, "federated")[0])
    first = ids(listing(client, "ada", "k=3"))
    listing(client, "ada", "k=3")
    served = dict(client.application.extensions["paperrec"].feedback.served_with_times("ada"))
    assert set(served) == set(first)
    export = client.get("/v1/users/ada/export").json["served"]
    assert {s["paper_id"]: s["at"] for s in export} == served


@pytest.mark.parametrize("extra", ["", "&diversity=0.5", "&diversity=1"])
def test_more_papers_continue_the_list_without_repeats(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout,
    extra: str,
) -> None:
    like(client, "ada", paper_ids_about(sample_settings, "federated")[0])
    pages = [ids(listing(client, "ada", f"k=7&offset={7 * n}{extra}")) for n in range(4)]
    whole = [pid for page in pages for pid in page]
    assert len(whole) == len(set(whole)) == 28  # every page served, none repeated
    assert whole == ids(listing(client, "ada", f"k=28{extra}"))  # one list, in pages
    # A newcomer's list (diversity by default) continues the same way.
    news = [ids(listing(client, "new", f"k=5&offset={5 * n}")) for n in range(3)]
    assert [p for page in news for p in page] == ids(listing(client, "new", "k=15"))


def test_mmr_picks_of_a_short_list_are_the_start_of_a_longer_one() -> None:
    ctx = two_topics()
    for liked in (np.array([0, 1, 2, 20, 21]), np.array([], np.int64)):
        for diversity in (0.3, 0.7, 1.0):
            long = rows(rank(ctx, ListRequest(liked, 25, diversity=diversity)).rows)
            for k in (1, 5, 10, 12):
                short = rank(ctx, ListRequest(liked, k, diversity=diversity)).rows
                assert rows(short) == long[:k]
                page = rank(ctx, ListRequest(liked, 5, offset=k, diversity=diversity)).rows
                assert rows(page) == long[k : k + 5]


def test_not_now_sets_a_paper_aside_across_days_until_put_back(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout,
) -> None:
    like(client, "ada", paper_ids_about(sample_settings, "federated")[0])
    first = ids(listing(client, "ada", "k=10"))
    feedback = client.application.extensions["paperrec"].feedback
    feedback.set_aside("ada", first[0], time.time())
    after = ids(listing(client, "ada", "k=10"))
    assert first[0] not in after and after[:9] == first[1:]  # it alone left
    answer = why_not(client, "ada", first[0], "k=10")
    assert [b["kind"] for b in answer["blockers"]] == ["set_aside"] and not answer["in_list"]
    tomorrow = recommender(client).recommend("ada", 38, now=time.time() + DAY, record=False)
    assert first[0] not in [item.paper_id for item in tomorrow.items]
    export = client.get("/v1/users/ada/export").json
    assert [s["paper_id"] for s in export["set_aside"]] == [first[0]]
    assert feedback.put_back("ada", first[0])
    assert ids(listing(client, "ada", "k=10")) == first
    feedback.set_aside("ada", first[1], time.time())
    assert client.delete("/v1/users/ada").status_code == 204  # erasure covers it
    assert client.get("/v1/users/ada/export").json["set_aside"] == []


@pytest.mark.parametrize("extra", ["", "&diversity=0.6"])
def test_why_not_describes_the_page_the_reader_looks_at(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout,
    extra: str,
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    page_one = ids(listing(client, "ada", f"k=8{extra}"))
    page_two = ids(listing(client, "ada", f"k=8&offset=8{extra}"))
    for position, pid in enumerate(page_one):
        answer = why_not(client, "ada", pid, f"k=8{extra}")
        assert answer["in_list"] and answer["rank"] == position + 1, answer["summary"]
        earlier = why_not(client, "ada", pid, f"k=8&offset=8{extra}")
        assert [b["kind"] for b in earlier["blockers"]] == ["earlier_page"]
        assert earlier["rank"] == position + 1
    for position, pid in enumerate(page_two):
        answer = why_not(client, "ada", pid, f"k=8&offset=8{extra}")
        assert answer["in_list"] and answer["rank"] == 9 + position, answer["summary"]
        below = why_not(client, "ada", pid, f"k=8{extra}")  # asked about page one
        assert not below["in_list"] and below["rank"] == 9 + position, below["summary"]
    listed = set(page_one + page_two) | {fed[0]}
    everyone = ids(listing(client, "bob", "k=38"))
    for pid in [p for p in everyone if p not in listed][:5]:
        answer = why_not(client, "ada", pid, f"k=8&offset=8{extra}")
        assert not answer["in_list"] and answer["blockers"], answer


def test_why_not_names_diversity_when_it_took_the_place(
    client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout,
) -> None:
    like(client, "ada", paper_ids_about(sample_settings, "federated")[0])
    by_score = ids(listing(client, "ada", "k=5&diversity=0"))
    spread = ids(listing(client, "ada", "k=5&diversity=1"))
    left = [pid for pid in by_score if pid not in spread]
    assert left, "diversity 1 changes a list of five"
    answer = why_not(client, "ada", left[0], "k=5&diversity=1")
    assert not answer["in_list"]
    kinds = [b["kind"] for b in answer["blockers"]]
    whole = ids(listing(client, "ada", "k=38&diversity=1"))
    assert kinds == ["diversity"] and answer["rank"] == whole.index(left[0]) + 1 > 5
    place = by_score.index(left[0]) + 1
    assert answer["summary"].startswith(f"By score it would be {ordinal(place)}, but the "
                                        "list's diversity (1)")

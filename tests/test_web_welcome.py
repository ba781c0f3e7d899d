"""The welcome page through the Flask test client: a new reader lands on it after signing in,
answers papers that cover the collection's topics (never the same one twice), finds their own
papers by search, and after five likes has a personal list; what they send is checked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from recommender.core.config import Settings
from recommender.ranking.context import context_for
from recommender.ranking.topics import find_topics
from replay.web_steps import ask_for_link, mails, post_form, sign_in_link
from tests.test_web_pages import listed

ANSWER = re.compile(r'name="paper" value="([^"]+)"')


def asked(browser: FlaskClient, path: str = "/welcome") -> list[str]:
    """The paper ids the welcome page asks about (or lists as found), in order."""
    page = browser.get(path)
    assert page.status_code == 200, page.text
    return list(dict.fromkeys(ANSWER.findall(page.text)))


def answer(browser: FlaskClient, paper_id: str, given: str, next: str = "/welcome") -> None:
    response = post_form(browser, "/welcome", "/welcome/answer", paper=paper_id, answer=given,
                         next=next)
    assert response.status_code == 303 and response.headers["Location"] == next, response.text


def signed_in_at(browser: FlaskClient, address: str, mail_dir: Path) -> str:
    """Sign in through the pages; where the sign-in sends the reader."""
    assert ask_for_link(browser, address).status_code == 303
    link = sign_in_link(mails(mail_dir)[-1])
    path = "/" + link.split("://", 1)[1].split("/", 1)[1]
    done = post_form(browser, path, path.split("?")[0])
    assert done.status_code == 303
    return done.headers["Location"]


def test_a_new_reader_lands_on_the_welcome_page_and_a_known_one_on_the_list(
    web_app: Flask, mail_dir: Path
) -> None:
    newcomer = web_app.test_client()
    assert signed_in_at(newcomer, "new@example.org", mail_dir) == "/welcome"
    page = newcomer.get("/welcome").text
    assert "Welcome to paperrec" in page and "Import a library" in page
    assert 'href="/welcome" aria-current="page">Get started' in page  # in the menu
    first = asked(newcomer)[0]
    answer(newcomer, first, "like")
    again = web_app.test_client()
    assert signed_in_at(again, "new@example.org", mail_dir) == "/list"


def test_a_link_to_a_page_is_followed_even_for_a_new_reader(
    web_app: Flask, mail_dir: Path, sample_settings: Settings
) -> None:
    browser = web_app.test_client()
    assert post_form(browser, "/sign-in", "/sign-in", email="cy@example.org",
                     next="/digest").status_code == 303
    link = sign_in_link(mails(mail_dir)[-1])
    path = "/" + link.split("://", 1)[1].split("/", 1)[1]
    done = post_form(browser, path, path.split("?")[0], next="/digest")
    assert done.headers["Location"] == "/digest"


def test_the_questions_cover_distinct_topics(ada: FlaskClient, web_app: Flask) -> None:
    first = asked(ada)
    assert len(first) == 8 and len(set(first)) == 8
    index = web_app.extensions["paperrec"].index.get()
    ctx = context_for(index, None)
    topics = find_topics(ctx.vectors, ctx.popularity, ctx.popular_rows)
    places = topics.of(ctx.vectors[[index.row(pid) for pid in first]]).tolist()
    assert 5 <= len(topics) <= 7  # a topic for every 5 papers (k-means may leave one empty)
    assert len(set(places[:len(topics)])) == len(topics)  # one paper of each, then again
    assert "A topic of the collection you have not answered about yet." in ada.get(
        "/welcome").text


def test_answered_papers_are_not_asked_again(ada: FlaskClient) -> None:
    first = asked(ada)
    answer(ada, first[0], "like")
    answer(ada, first[1], "not-for-me")
    answer(ada, first[2], "not-for-me")
    after = asked(ada)
    assert not set(after) & set(first[:3]) and len(after) == 8
    page = ada.get("/welcome").text
    assert "You have answered 3 papers (1 liked)" in page and "Show my list" in page
    assert "the list is unsure about it" in page  # a like: the list asks about its neighbours
    stored = {i["paper_id"]: i["signal"]
              for i in ada.get("/v1/users/ada@example.org/feedback").json["items"]}
    assert stored == {first[0]: "like", first[1]: "dislike", first[2]: "dislike"}


def test_five_likes_on_the_welcome_page_make_a_personal_list(ada: FlaskClient) -> None:
    assert "not personal yet" in ada.get("/list").text
    assert "Show my list" not in ada.get("/welcome").text
    for _ in range(5):
        answer(ada, asked(ada)[0], "like")
    page = ada.get("/welcome").text
    assert "Show my list" in page and "(5 liked)" in page
    shown = listed(ada)
    assert len(shown) == 10
    assert "not personal yet" not in ada.get("/list").text and "that you liked" in ada.get(
        "/list").text


def test_finding_your_own_papers_by_search(ada: FlaskClient, sample_settings: Settings) -> None:
    found = asked(ada, "/welcome?q=federated+learning")
    assert found, "the search of the corpus answers"
    answer(ada, found[0], "like", next="/welcome?q=federated+learning")
    page = ada.get("/welcome?q=federated+learning").text
    assert "You liked this." in page and 'aria-label="This is mine:' in page


@pytest.mark.parametrize("fields, status", [
    ({"answer": "love"}, 400),
    ({"answer": "like", "paper": "no-such-paper"}, 404),
    ({"answer": "like", "paper": "x" * 5000}, 400),
])
def test_what_a_reader_sends_is_checked(ada: FlaskClient, fields: dict[str, str],
                                        status: int) -> None:
    data = {"paper": asked(ada)[0], **fields}
    response = post_form(ada, "/welcome", "/welcome/answer", **data)
    assert response.status_code == status, response.text
    assert ada.get("/v1/users/ada@example.org/feedback").json["items"] == []


def test_an_answer_needs_the_forms_token_and_a_signed_in_reader(
    ada: FlaskClient, web_app: Flask
) -> None:
    paper = asked(ada)[0]
    assert ada.post("/welcome/answer", data={"paper": paper, "answer": "like"}
                    ).status_code == 400  # no CSRF token
    stranger = web_app.test_client()
    assert stranger.get("/welcome").status_code == 302
    assert ada.get("/welcome?q=" + "a" * 201).status_code == 400
    assert ada.get("/v1/users/ada@example.org/feedback").json["items"] == []


def test_an_answer_sends_the_reader_only_back_to_this_site(ada: FlaskClient) -> None:
    response = post_form(ada, "/welcome", "/welcome/answer", paper=asked(ada)[0],
                         answer="like", next="https://evil.example/")
    assert response.status_code == 303 and response.headers["Location"] == "/welcome"

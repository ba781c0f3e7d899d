"""The web pages through the Flask test client: the list is the API's list, the buttons
like, dislike and set aside, what comes from outside is escaped, errors are pages."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from recommender.core.config import Settings
from recommender.core.papers import Paper
from recommender.corpus.store import CorpusStore
from replay.web_steps import csrf_token, post_form, sign_in

RATE = re.compile(r'action="/papers/([^"]+)/rate"')
PapersAbout = Callable[[Settings, str], list[str]]




def listed(browser: FlaskClient, path: str = "/list") -> list[str]:
    """The paper ids of the list page, in order (each has one rate form per button)."""
    page = browser.get(path)
    assert page.status_code == 200, page.text
    return list(dict.fromkeys(RATE.findall(page.text)))


def rate(browser: FlaskClient, paper_id: str, action: str) -> None:
    response = post_form(browser, "/list", f"/papers/{paper_id}/rate", action=action,
                         next="/list")
    assert response.status_code == 303 and response.headers["Location"] == "/list"


def test_the_list_page_is_the_apis_list(ada: FlaskClient) -> None:
    page_one, page_two = listed(ada), listed(ada, "/list?page=2")
    # The API records what it answers as served: a fresh user (the same list) for each page.
    api = "/v1/users/{}/recommendations?k=10&exclude_served=true"
    answer = ada.get(api.format("ben")).json
    assert page_one == [i["paper_id"] for i in answer["items"]]
    assert "marks" not in answer  # the pages' part of a ReadingList stays out of the API
    assert page_two == [i["paper_id"]
                        for i in ada.get(api.format("cy") + "&offset=10").json["items"]]


def test_likes_make_the_list_personal_and_a_dislike_leaves_it(
    ada: FlaskClient, sample_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    assert "not personal yet" in ada.get("/list").text
    federated = paper_ids_about(sample_settings, "federated")
    for paper_id in federated[:2]:
        rate(ada, paper_id, "like")
    page = ada.get("/list")
    assert "not personal yet" not in page.text and "that you liked" in page.text
    # Each item: where it stands in words (no percentage), the abstract's first sentences and
    # the rest behind "more", which needs no script.
    assert '<span class="standing">Top match of your list' in page.text
    assert "likely worth reading" not in page.text
    assert page.text.count("<details><summary>more</summary>") >= 5
    first = listed(ada)[0]
    assert first in federated[2:]
    rate(ada, first, "dislike")
    assert first not in listed(ada)
    stored = {i["paper_id"]: i["signal"]
              for i in ada.get("/v1/users/ada@example.org/feedback").json["items"]}
    assert stored == {federated[0]: "like", federated[1]: "like", first: "dislike"}
    library = ada.get("/library").text
    assert "Liked (2)" in library and "Disliked (1)" in library
    rate(ada, first, "undo")
    assert "Disliked (0)" in ada.get("/library").text


def test_likes_on_the_pages_are_counted_with_the_apis(ada: FlaskClient) -> None:
    def likes() -> float:
        found = re.search(r'^paperrec_feedback_writes_total\{action="like"\} (\S+)$',
                          ada.get("/metrics").text, re.M)
        return float(found[1]) if found else 0.0

    before = likes()
    rate(ada, listed(ada)[0], "like")
    assert likes() == before + 1


def test_not_now_sets_a_paper_aside_without_rating_it(ada: FlaskClient) -> None:
    first = listed(ada)[0]
    rate(ada, first, "not-now")
    assert first not in listed(ada)
    aside = listed(ada, "/list?set_aside=1")
    assert first in aside  # shown again when asked for, with its undo
    assert "You set this aside" in ada.get("/list?set_aside=1").text
    assert ada.get("/v1/users/ada@example.org/feedback").json["items"] == []
    assert re.search(r"Papers set aside</th><td>1<", ada.get("/data").text)
    rate(ada, first, "undo")  # put back
    assert first in listed(ada)
    assert re.search(r"Papers set aside</th><td>0<", ada.get("/data").text)


def test_the_list_is_the_same_all_day_and_records_what_it_shows(ada: FlaskClient) -> None:
    first = listed(ada)
    assert listed(ada) == first  # shown, recorded as served, and still the same list
    assert re.search(r"Papers shown</th><td>10<", ada.get("/data").text)
    more = listed(ada, "/list?page=2")
    assert len(more) == 10 and not set(more) & set(first)  # "More papers" continues it
    assert "More papers" in ada.get("/list").text


def test_the_controls_reach_the_ranking(ada: FlaskClient) -> None:
    assert listed(ada, "/list?since=2100-01-01") == []
    assert "Nothing to show since 2100-01-01" in ada.get("/list?since=2100-01-01").text
    assert len(listed(ada, "/list?diversity=1")) == 10
    for bad in ("diversity=2", "since=yesterday", "page=0", "diversity=nan"):
        page = ada.get(f"/list?{bad}")
        assert page.status_code == 400 and "<h1>That did not work</h1>" in page.text, bad


def test_a_title_from_outside_is_escaped(ada: FlaskClient, sample_settings: Settings) -> None:
    CorpusStore(sample_settings.corpus_path).upsert([Paper(
        "evil-1", "<script>alert('x')</script> Attention", abstract="<b>bold</b> & more",
        authors=["<img src=x onerror=alert(1)>"], url="javascript:alert(1)")])
    ada.put("/v1/users/ada@example.org/feedback/evil-1", json={"signal": "like"})
    for path in ("/papers/evil-1", "/library"):
        page = ada.get(path).text
        assert "<script>alert" not in page and "<img src=x" not in page
        assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; Attention" in page
    assert "javascript:" not in ada.get("/papers/evil-1").text


def test_pages_carry_a_content_security_policy_without_inline_script(
    ada: FlaskClient, web_app: Flask
) -> None:
    visitor = web_app.test_client()
    for path in ("/list", "/search?q=learning", "/library", "/digest", "/data", "/sign-in"):
        page = (visitor if path == "/sign-in" else ada).get(path)
        policy = page.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
        assert "<script>" not in page.text and " style=" not in page.text
        assert re.findall(r"<script[^>]*>", page.text) == [
            '<script src="/static/web.js" defer>']
    assert web_app.test_client().get("/static/web.css").status_code == 200


def test_errors_are_pages_and_the_api_keeps_json(ada: FlaskClient) -> None:
    missing = ada.get("/papers/no-such-paper")
    assert missing.status_code == 404 and "<h1>Not found</h1>" in missing.text
    assert "Traceback" not in missing.text
    nowhere = ada.get("/no-such-page", headers={"Accept": "text/html"})
    assert nowhere.status_code == 404 and "<h1>Not found</h1>" in nowhere.text
    api = ada.get("/v1/papers/no-such-paper", headers={"Accept": "text/html"})
    assert api.status_code == 404 and api.json["error"]["code"] == "not_found"
    wrong = post_form(ada, "/list", "/papers/no-such-paper/rate", action="like")
    assert wrong.status_code == 404


def test_a_page_while_redis_is_down_is_a_503_page(
    make_app: Callable[[Settings], Flask], sample_settings: Settings, unreachable_redis_url: str
) -> None:
    down = make_app(sample_settings.replace(redis_url=unreachable_redis_url)).test_client()
    down.set_cookie("paperrec_session", "x" * 43)
    page = down.get("/list")
    assert page.status_code == 503 and "Not available right now" in page.text
    assert page.headers["Retry-After"] == "5"


def test_an_unexpected_failure_is_a_page_without_a_traceback(
    ada: FlaskClient, web_app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret detail of the failure")

    monkeypatch.setattr(web_app.extensions["paperrec"].recommender, "recommend", broken)
    page = ada.get("/list")
    assert page.status_code == 500 and "<h1>Something went wrong</h1>" in page.text
    assert "secret detail" not in page.text and "Traceback" not in page.text
    wrong_method = ada.get("/sign-out", headers={"Accept": "text/html"})
    assert wrong_method.status_code == 405 and "<h1>Not found</h1>" in wrong_method.text


def test_the_pages_script_gets_the_new_state_and_its_buttons(ada: FlaskClient) -> None:
    """What static/web.js asks for: the paper's new state and the buttons for it, rendered
    by the server (the same partial as the page's), to put in place of the old ones."""
    paper_id = listed(ada)[0]

    def act(action: str) -> dict[str, str]:
        answer = ada.post(f"/papers/{paper_id}/rate", headers={"Accept": "application/json"},
                          data={"csrf_token": csrf_token(ada, "/list"), "action": action,
                                "next": f"/list?page=1#paper-{paper_id}"})
        assert answer.status_code == 200 and answer.is_json
        return dict(answer.json)

    liked = act("like")
    assert liked["state"] == "like" and "You liked this." in liked["html"]
    assert 'value="undo"' in liked["html"] and 'value="like"' not in liked["html"]
    assert f'value="/list?page=1#paper-{paper_id}"' in liked["html"]
    undone = act("undo")
    assert undone["state"] == "none" and 'value="like"' in undone["html"]
    aside = act("not-now")
    assert aside["state"] == "set-aside" and "You set this aside" in aside["html"]
    assert act("undo")["state"] == "none"
    assert paper_id in listed(ada)  # back on the list


@pytest.mark.parametrize("paper_id", [
    "arxiv:2401.01234v2", "10.1000/x y?a=b#c", "doi:10.1/ä%2F&<q>", "a/b/c", "~paper~x"])
def test_a_pages_paper_addresses_are_url_fors(web_app: Flask, paper_id: str) -> None:
    """``form_parts`` builds each paper's addresses from one built address per kind: the
    same as ``url_for``, whatever the id holds."""
    from flask import url_for

    from service.web.form_parts import form_parts

    with web_app.test_request_context("/list"):
        parts = form_parts()
        assert parts is form_parts()  # once per request
        assert parts.paper(paper_id) == url_for("web.paper", paper_id=paper_id)
        assert parts.rate(paper_id) == url_for("web.rate", paper_id=paper_id)
        assert parts.collect(paper_id) == url_for("web.collect", paper_id=paper_id)
        assert parts.add_rule == url_for("web.add_rule")


def test_each_reader_gets_their_own_forms_token(web_app: Flask, mail_dir: Path) -> None:
    """The token the page's forms share is worked out per request: never another
    session's, and each of the page's forms carries the one the session accepts."""
    tokens = []
    for reader in ("ada@example.org", "grace@example.org"):
        browser = web_app.test_client()
        sign_in(browser, reader, mail_dir)
        page = browser.get("/list").text
        found = set(re.findall(r'name="csrf_token" value="([^"]+)"', page))
        assert len(found) == 1 and page.count('name="csrf_token"') > 10
        tokens.append(found.pop())
        paper_id = RATE.findall(page)[0]
        liked = browser.post(f"/papers/{paper_id}/rate", data={
            "csrf_token": html.unescape(tokens[-1]), "action": "like", "next": "/list"})
        assert liked.status_code == 303
    assert tokens[0] != tokens[1]

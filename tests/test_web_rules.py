"""Rules and why-not on the web pages, through the Flask test client: follow and mute an author,
a word or a category from a paper page or the list, the /rules page with its remove buttons,
and "why is this paper not on my list?" in words, about the list page with the same options.
The browser's own run of them is in tests/test_web_browser.py."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from recommender.core.config import Settings
from replay.web_steps import post_form

USER = "ada@example.org"
PapersAbout = Callable[[Settings, str], list[str]]


def days_ago(n: int) -> str:
    return (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=n)).isoformat()


@pytest.fixture
def lovelace(sample_settings: Settings, tmp_path: Path, ingest: Callable[..., Any],
             rebuild: Callable[..., Any], hashing_embedder: Any) -> str:
    """A new paper by Ada Lovelace and Charles Babbage in cs.LG, indexed; its id."""
    path = tmp_path / "lovelace.jsonl"
    path.write_text(json.dumps({
        "id": "lovelace-1", "title": "Notes on the analytical engine",
        "abstract": "Bernoulli numbers computed by a machine.", "date": days_ago(1),
        "authors": ["Ada Lovelace", "Charles Babbage"], "categories": ["cs.LG"]}) + "\n")
    ingest(sample_settings, [path])
    rebuild(sample_settings, embedder=hashing_embedder)
    return "lovelace-1"


def rules(browser: FlaskClient) -> list[tuple[str, str, str]]:
    return [(r["action"], r["kind"], r["value"])
            for r in browser.get(f"/v1/users/{USER}/rules").json["rules"]]


def add_rule(browser: FlaskClient, page: str, **fields: str) -> Any:
    return post_form(browser, page, "/rules", next=page, **fields)


def listed(browser: FlaskClient, path: str = "/list") -> list[str]:
    page = browser.get(path)
    assert page.status_code == 200, page.text
    return list(dict.fromkeys(re.findall(r'action="/papers/([^"]+)/rate"', page.text)))


def text(page: Any) -> str:
    """The page's words, without tags, white space collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page.text)).split())


def test_a_paper_page_follows_and_mutes_its_authors_categories_and_words(
    ada: FlaskClient, lovelace: str
) -> None:
    page = ada.get(f"/papers/{lovelace}").text
    assert 'aria-label="More from this author: follow Ada Lovelace"' in page
    assert 'aria-label="Mute this category: cs.LG"' in page
    assert "Why is this paper not on my list?" in page
    done = add_rule(ada, f"/papers/{lovelace}", action="follow", kind="author",
                    value="Ada Lovelace")
    assert done.status_code == 303 and done.headers["Location"] == f"/papers/{lovelace}"
    assert rules(ada) == [("follow", "author", "Ada Lovelace")]
    first = ada.get("/list")
    assert listed(ada)[0] == lovelace
    assert "new from an author you follow: Ada Lovelace" in first.text
    assert "Following the author \u201cAda Lovelace\u201d" in text(first)  # the flash
    add_rule(ada, f"/papers/{lovelace}", action="mute", kind="category", value="cs.LG")
    add_rule(ada, f"/papers/{lovelace}", action="mute", kind="keyword", value="bernoulli")
    assert rules(ada) == [("follow", "author", "Ada Lovelace"), ("mute", "category", "cs.LG"),
                          ("mute", "keyword", "bernoulli")]
    assert lovelace not in listed(ada)  # a mute wins over a follow


def test_the_list_offers_more_from_the_author_and_mute_this_category_and_word(
    ada: FlaskClient, lovelace: str
) -> None:
    add_rule(ada, "/list", action="follow", kind="category", value="cs.LG")
    page = ada.get("/list").text
    assert listed(ada)[0] == lovelace  # followed: first, with its rule forms
    assert 'aria-label="More from this author: follow Ada Lovelace"' in page
    assert 'aria-label="Mute this category: cs.LG"' in page
    assert "Mute this word" in page
    back = add_rule(ada, "/list?page=1", action="mute", kind="keyword", value="analytical")
    assert back.headers["Location"] == "/list?page=1"
    assert lovelace not in listed(ada)


def test_the_rules_page_lists_the_rules_and_removes_them(ada: FlaskClient) -> None:
    assert "You follow nothing yet." in ada.get("/rules").text
    add_rule(ada, "/rules", action="follow", kind="author", value="Yoshua Bengio")
    add_rule(ada, "/rules", action="mute", kind="category", value="hep-th")
    page = text(ada.get("/rules"))
    assert "Following (1)" in page and "The author Yoshua Bengio" in page
    assert "Muted (1)" in page and "The category hep-th" in page
    gone = post_form(ada, "/rules", "/rules/remove", action="follow", kind="author",
                     value="Yoshua Bengio", next="/rules")
    assert gone.status_code == 303 and gone.headers["Location"] == "/rules"
    assert rules(ada) == [("mute", "category", "hep-th")]
    again = post_form(ada, "/rules", "/rules/remove", action="follow", kind="author",
                      value="Yoshua Bengio", next="/rules")
    assert "You had no rule" in text(ada.get(again.headers["Location"]))


@pytest.mark.parametrize(("fields", "words"), [
    ({"action": "block", "kind": "author", "value": "X"}, "action must be"),
    ({"action": "mute", "kind": "venue", "value": "X"}, "kind must be"),
    ({"action": "mute", "kind": "keyword", "value": " -- "}, "must have a letter or digit"),
    ({"action": "mute", "kind": "keyword", "value": "x" * 201}, "at most 200 characters"),
])
def test_bad_rules_are_a_400_page_saying_why(ada: FlaskClient, fields: dict[str, str],
                                             words: str) -> None:
    answer = add_rule(ada, "/rules", **fields)
    assert answer.status_code == 400 and words in text(answer)
    assert rules(ada) == []


def test_rule_forms_need_the_csrf_token_and_stay_on_the_site(ada: FlaskClient) -> None:
    forged = ada.post("/rules", data={"action": "mute", "kind": "keyword", "value": "x"})
    assert forged.status_code == 400 and rules(ada) == []
    away = add_rule(ada, "/rules", action="mute", kind="keyword", value="x")
    assert away.headers["Location"] == "/rules"
    elsewhere = post_form(ada, "/rules", "/rules", action="mute", kind="keyword", value="y",
                          next="https://evil.example/")
    assert elsewhere.headers["Location"] == "/rules"


def test_why_not_in_words_about_the_list_page_with_the_same_options(
    ada: FlaskClient, sample_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    first, *_ = listed(ada)
    on_it = text(ada.get(f"/papers/{first}/why-not"))
    assert "It is on your list" in on_it and "It is 1st on your list of 10" in on_it
    second_page = listed(ada, "/list?page=2&diversity=0.3")
    about = text(ada.get(f"/papers/{second_page[0]}/why-not?page=2&diversity=0.3"))
    assert "It is 11th on your list on the page from the 11th to the 20th" in about
    api = ada.get(f"/v1/users/{USER}/recommendations/why-not/{second_page[0]}"
                  "?k=10&offset=10&diversity=0.3").json
    assert api["in_list"] and api["summary"] in about
    earlier = text(ada.get(f"/papers/{first}/why-not?page=2"))
    assert "It is not on this page" in earlier and "before this page" in earlier
    fed = paper_ids_about(sample_settings, "federated")[0]
    post_form(ada, f"/papers/{fed}", f"/papers/{fed}/rate", action="like", next="/list")
    liked = text(ada.get(f"/papers/{fed}/why-not"))
    assert "You liked it: papers you rated are never listed again." in liked
    assert ada.get(f"/papers/{fed}/why-not?page=0").status_code == 400
    assert ada.get("/papers/no-such-paper/why-not").status_code == 404


def test_why_not_names_a_mute_and_a_paper_set_aside(ada: FlaskClient, lovelace: str) -> None:
    add_rule(ada, f"/papers/{lovelace}", action="mute", kind="author", value="Charles Babbage")
    muted = text(ada.get(f"/papers/{lovelace}/why-not"))
    assert "You muted it: author: Charles Babbage." in muted
    first = listed(ada)[0]
    post_form(ada, "/list", f"/papers/{first}/rate", action="not-now", next="/list")
    aside = text(ada.get(f"/papers/{first}/why-not"))
    assert "You set it aside" in aside
    assert "It is on your list" in text(ada.get(f"/papers/{first}/why-not?set_aside=1"))

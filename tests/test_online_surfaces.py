"""Every surface logs the lists it serves, and every outcome carries its list (issue 28): the
list page and a collection's page (surface "page"), the digest (once mailed), the feeds; the
like, dislike and "not now" buttons, a paper opened from a list, a digest's or feed's link
followed. Through the Flask test client and the application object, against a real Redis."""

from __future__ import annotations

import email
import email.policy
import re
import time
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flask import Flask
from flask.testing import FlaskClient

from recommender import wiring
from recommender.core.config import Settings
from recommender.online.events import OutcomeEvent, ServedList
from recommender.online.report import Report, build_report
from replay.web_steps import csrf_token
from service.app import create_app
from tests.servers import Inbox
from tests.test_digest import NOW, send, subscribe

ADA = "ada@example.org"
LIST_FIELD = re.compile(r'<input type="hidden" name="list" value="([^"]+)">')
RATE = re.compile(r'action="/papers/([^"]+)/rate"')
PapersAbout = Callable[[Settings, str], list[str]]


def report(app: Flask) -> Report:
    parts = app.extensions["paperrec"]
    return build_report(parts.events, parts.corpus.count(), time.time() + 60)


def outcomes(app: Flask, user: str = ADA) -> list[OutcomeEvent]:
    return [o for o in app.extensions["paperrec"].events.outcomes() if o.user == user]


def logged(app: Flask, list_id: str) -> ServedList:
    [found] = [s for s in app.extensions["paperrec"].events.lists() if s.list_id == list_id]
    return found


def page_list(browser: FlaskClient, path: str = "/list") -> tuple[str, list[str], str]:
    """The list id the page's forms carry, its papers in order, and the page. Each look at a
    list page serves (and logs) a list of its own."""
    page = browser.get(path)
    assert page.status_code == 200, page.text
    ids = set(LIST_FIELD.findall(page.text))
    assert len(ids) == 1, ids  # one list per page, in every form of its items
    return ids.pop(), list(dict.fromkeys(RATE.findall(page.text))), page.text


def press(browser: FlaskClient, to: str, **fields: str) -> None:
    """Send a form of a page already shown (the session's CSRF token, taken from a page
    that serves no list, so that the test's lists are the only ones)."""
    answer = browser.post(to, data={"csrf_token": csrf_token(browser, "/rules"), **fields})
    assert answer.status_code == 303, answer.text


def test_a_page_list_is_logged_and_its_buttons_count_at_their_place(
    ada: FlaskClient, web_app: Flask
) -> None:
    list_id, papers, _ = page_list(ada)
    served = logged(web_app, list_id)
    assert served.surface == "page" and served.user == ADA
    assert list(served.papers) == papers and set(served.variants) == {"hybrid"}
    # Like the third paper, set the fifth aside (the plain forms, no script).
    for paper, action in ((papers[2], "like"), (papers[4], "not-now")):
        press(ada, f"/papers/{paper}/rate", action=action, next="/list", list=list_id)
    figures = report(web_app)
    page = figures.variants["hybrid"]["page"]
    assert page["likes"] == 1 and page["not_now"] == 1 and page["lists"] >= 1
    assert figures.places["hybrid"][2] == 1.0  # the like is at place 3
    assert figures.places["hybrid"][0] == 0.0
    assert figures.unmatched_outcomes == 0
    # The page's script gets the new buttons: they carry the list on (undo, then like again).
    answer = ada.post(f"/papers/{papers[2]}/rate", headers={"Accept": "application/json"},
                      data={"csrf_token": csrf_token(ada, "/rules"), "action": "undo",
                            "next": "/list", "list": list_id})
    assert answer.status_code == 200 and f'name="list" value="{list_id}"' in answer.json["html"]
    assert [(o.kind, o.paper) for o in outcomes(web_app)] == [
        ("like", papers[2]), ("not-now", papers[4])]  # undo is no outcome


def test_opening_a_paper_from_the_list_logs_an_open_and_its_buttons_carry_the_list(
    ada: FlaskClient, web_app: Flask
) -> None:
    list_id, papers, page = page_list(ada)
    link = f'href="/papers/{papers[1]}?list={list_id}"'
    assert link in page  # the title's link
    opened = ada.get(f"/papers/{papers[1]}?list={list_id}")
    assert opened.status_code == 200
    assert [(o.kind, o.list_id, o.paper) for o in outcomes(web_app)] == [
        ("open", list_id, papers[1])]
    # The paper's own buttons carry the list on; its similar papers are no part of it.
    assert len(LIST_FIELD.findall(opened.text)) == 3  # like, dislike, not now
    press(ada, f"/papers/{papers[1]}/rate", action="like", next=f"/papers/{papers[1]}",
          list=list_id)
    page_figures = report(web_app).variants["hybrid"]["page"]
    assert page_figures["opens"] == 1 and page_figures["likes"] == 1
    # Opened without a list: nothing logged.
    assert ada.get(f"/papers/{papers[3]}").status_code == 200
    assert len(outcomes(web_app)) == 2


def test_a_forged_or_foreign_list_id_counts_for_nothing(
    ada: FlaskClient, web_app: Flask, client: FlaskClient, like: Any
) -> None:
    list_id, papers, _ = page_list(ada)
    bobs = client.get("/v1/users/bob/recommendations?k=10").json["list_id"]
    before = len(outcomes(web_app))
    # Not a list id at all: logged nowhere, and never echoed into the page.
    opened = ada.get(f"/papers/{papers[0]}?list=%22%3E%3Cscript%3Ex")
    assert opened.status_code == 200 and "<script>x" not in opened.text
    assert not LIST_FIELD.search(opened.text)
    press(ada, f"/papers/{papers[0]}/rate", action="like", next="/list", list="not a list")
    assert len(outcomes(web_app)) == before
    # An id of the right shape that was never served, bob's list, a paper not on the list:
    # logged (the log cannot tell), but the report credits no ranking with them.
    press(ada, f"/papers/{papers[1]}/rate", action="like", next="/list", list="A" * 16)
    press(ada, f"/papers/{papers[2]}/rate", action="like", next="/list", list=bobs)
    unlisted = next(pid for pid, _, _ in web_app.extensions["paperrec"].corpus.index_rows()
                    if pid not in papers)
    press(ada, f"/papers/{unlisted}/rate", action="dislike", next="/list", list=list_id)
    figures = report(web_app)
    assert figures.unmatched_outcomes == 3
    assert figures.variants["hybrid"]["page"]["likes"] == 0
    assert figures.variants["hybrid"]["page"]["dislikes"] == 0


def test_a_collections_page_logs_its_list_and_like_into_counts_for_it(
    ada: FlaskClient, web_app: Flask, sample_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    made = ada.application.extensions["paperrec"].collections.create(ADA, "Federated", NOW)
    fed = paper_ids_about(sample_settings, "federated")
    web_app.extensions["paperrec"].feedback.set(ADA, fed[0], "like", time.time(), [made.id])
    list_id, papers, _ = page_list(ada, f"/collections/{made.id}")
    assert logged(web_app, list_id).surface == "page" and papers
    press(ada, f"/papers/{papers[0]}/collect", collection=made.id,
          next=f"/collections/{made.id}", list=list_id)
    assert [(o.kind, o.list_id) for o in outcomes(web_app)] == [("like", list_id)]
    assert report(web_app).places["hybrid"][0] == 1.0


def mail_links(message: EmailMessage, label: str) -> list[str]:
    text = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    return [url.replace("http://paperrec.test", "")
            for url in re.findall(rf"{label}: (http\S+)", text)]


def test_a_digest_logs_each_list_it_mails_and_its_links_join_to_them(
    mail_settings: Settings, inbox: Inbox, like: Any, paper_ids_about: PapersAbout
) -> None:
    app = create_app(mail_settings)
    client = app.test_client()
    parts = app.extensions["paperrec"]
    fed = paper_ids_about(mail_settings, "federated")
    like(client, "ada", fed[0])
    made = parts.collections.create("ada", "Graphs", NOW)
    graphs = paper_ids_about(mail_settings, "graph")
    parts.feedback.set("ada", graphs[0], "like", NOW - 60, [made.id])
    subscribe(client, inbox, "ada", "ada@example.org", frequency="daily", max_items=5)
    before = {s.list_id for s in parts.events.lists()}
    assert send(mail_settings, NOW).sent == 1
    mailed = [s for s in parts.events.lists() if s.list_id not in before]
    assert {s.surface for s in mailed} == {"digest"} and len(mailed) == 2  # list, section
    overall, section = mailed
    [message] = inbox.to("ada@example.org")
    opens = mail_links(message, "Read it")
    assert len(opens) == len(overall.papers) == 5
    html_body = message.get_body(("html",)).get_content()  # type: ignore[union-attr]
    assert html_body.count('href="http://paperrec.test/v1/links/') >= 2 * 5 + 1
    signer = parts.links
    claims = [signer.verify(url.rsplit("/", 1)[1], NOW) for url in opens]
    assert [c.paper_id for c in claims] == list(overall.papers)
    assert {c.list_id for c in claims} == {overall.list_id}
    # The section is a list of its own: its papers from place 1, none of the list's above.
    section_links = [signer.verify(u.rsplit("/", 1)[1], NOW)
                     for u in mail_links(message, "More like this")[5:]]
    assert [c.paper_id for c in section_links] == list(section.papers)
    assert {c.list_id for c in section_links} == {section.list_id} and section.offset == 0
    assert not set(section.papers) & set(overall.papers)

    # The title's open link: a click logged, then the paper (its own URL, else its page).
    second = parts.corpus.get(overall.papers[1])
    followed = client.get(opens[1])
    assert followed.status_code == 302
    assert followed.headers["Location"] == (
        second.url or f"http://paperrec.test/papers/{second.id}")
    assert followed.headers["Referrer-Policy"] == "no-referrer"
    # "More like this" on the first paper, followed (its page's button).
    assert client.post(mail_links(message, "More like this")[0]).status_code == 200
    got = [(o.kind, o.list_id, o.paper) for o in outcomes(app, "ada")]
    assert got == [("click", overall.list_id, overall.papers[1]),
                   ("like", overall.list_id, overall.papers[0])]
    digest = report(app).variants["hybrid"]["digest"]
    assert digest["lists"] == 2 and digest["likes"] == 1 and digest["opens"] == 1
    assert digest["like_rate@1"] == 0.5  # place 1 of the two lists mailed
    assert report(app).unmatched_outcomes == 0


def test_an_open_link_cannot_be_bent_and_outlives_its_click(
    mail_settings: Settings, like: Any, paper_ids_about: PapersAbout
) -> None:
    app = create_app(mail_settings)
    client = app.test_client()
    parts = app.extensions["paperrec"]
    paper = paper_ids_about(mail_settings, "federated")[0]
    list_id = parts.recommender.recommend("ada", 5, now=time.time(), surface="api").list_id
    month_ago = time.time() - 40 * 86400
    expired = parts.links.sign("ada", "open", paper, month_ago, list_id)
    followed = client.get(f"/v1/links/{expired}")
    assert followed.status_code == 302  # an old feed entry still leads to its paper
    assert not outcomes(app, "ada")  # but counts no click
    altered = parts.links.sign("eve", "open", paper, time.time(), list_id)
    token = parts.links.sign("ada", "open", paper, time.time(), list_id)
    forged = altered.split(".")[0] + "." + token.split(".")[1]
    answer = client.get(f"/v1/links/{forged}")
    assert answer.status_code == 403 and "Location" not in answer.headers
    # The address comes from the signed paper, never from the request.
    bent = client.get(f"/v1/links/{token}?next=https://evil.example/",
                      headers={"Host": "evil.example"})
    assert bent.status_code == 302 and "evil" not in bent.headers["Location"]
    # An open link is no button: a POST of one records nothing.
    assert client.post(f"/v1/links/{token}").status_code == 403
    assert [o.kind for o in outcomes(app, "ada")] == ["click"]


def test_a_dry_run_logs_its_lists_too(
    mail_settings: Settings, inbox: Inbox, tmp_path: Path
) -> None:
    """A developer reads the .eml files of a dry run and follows their links: they join."""
    client = create_app(mail_settings).test_client()
    subscribe(client, inbox, "ada", "ada@example.org")
    parts = wiring.build(mail_settings)
    assert send(mail_settings, NOW, dry_run_dir=tmp_path / "outbox").sent == 1
    [eml] = (tmp_path / "outbox").glob("*.eml")
    message = email.message_from_bytes(eml.read_bytes(), policy=email.policy.default)
    [digest] = [s for s in parts.events.lists() if s.surface == "digest"]
    tokens = [u.rsplit("/", 1)[1] for u in mail_links(message, "Read it")]  # type: ignore[arg-type]
    assert [parts.links.verify(t, NOW).list_id for t in tokens] == [digest.list_id] * len(
        digest.papers)


def test_a_feed_logs_its_list_and_its_entries_are_open_links(
    client: FlaskClient, sample_settings: Settings, like: Any, paper_ids_about: PapersAbout
) -> None:
    like(client, "ada", paper_ids_about(sample_settings, "federated")[0])
    urls = client.post("/v1/users/ada/feed").json
    document = client.get(urlsplit(urls["json"]).path).json
    parts = client.application.extensions["paperrec"]
    [feed] = [s for s in parts.events.lists() if s.surface == "feed"]
    assert feed.user == "ada"
    assert list(feed.papers) == [i["_paperrec"]["paper_id"] for i in document["items"]]
    claims = [parts.links.verify(urlsplit(i["url"]).path.rsplit("/", 1)[1], time.time())
              for i in document["items"]]
    assert {(c.action, c.list_id) for c in claims} == {("open", feed.list_id)}
    # A feed reader following an entry: a click on that place of the feed's list.
    third = document["items"][2]
    followed = client.get(urlsplit(third["url"]).path)
    assert followed.status_code == 302 and followed.headers["Location"] == third["external_url"]
    found = report(client.application)
    assert found.variants["hybrid"]["feed"]["opens"] == 1 and found.unmatched_outcomes == 0
    # A reader that has this version gets a 304, which ranks and logs nothing.
    etag = client.get(urlsplit(urls["json"]).path).headers["ETag"]
    lists_before = sum(1 for _ in parts.events.lists())
    assert client.get(urlsplit(urls["json"]).path,
                      headers={"If-None-Match": etag}).status_code == 304
    assert sum(1 for _ in parts.events.lists()) == lists_before

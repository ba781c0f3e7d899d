"""The web pages in a real browser: Playwright driving Debian's chromium, against the app
served over HTTP on a free port, a real Redis, and a real SMTP server (aiosmtpd) that
receives the sign-in emails.

A reader signs in with the mailed link, likes two papers and sees a personal list, dislikes a
paper and sees it go, subscribes to a weekly digest, gets a feed address and follows it as
a feed reader would (the list's papers, in order), and signs out (the session gone from
Redis). Every page passes axe-core with no serious or critical violation, and fits a 375 px
phone and a desktop without sideways scrolling.

The browser is Debian's chromium at /usr/bin/chromium (``.ci/run`` sees to it); Playwright
drives that executable and fetches nothing. Where it is missing outside CI the tests are
skipped, saying so; under CI a missing browser fails.

``PAPERREC_SCREENSHOTS=docs`` writes the README's screenshots (docs/web-list.png,
docs/web-paper.png, docs/web-search.png, docs/link-page.png; test_web_welcome_browser.py and
test_collections_browser.py the others); otherwise they go to a temporary directory.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import feedparser
import pytest
import redis
from aiosmtpd.controller import Controller
from axe_playwright_python.sync_playwright import Axe
from flask import Flask
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright
from werkzeug.serving import make_server

from recommender.core.config import Settings
from recommender.storage.redis_keys import RedisKeys
from replay.server import free_port
from service.web.sessions import COOKIE, session_hash
from tests.servers import Inbox

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [pytest.mark.system, pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"),
    reason="Debian's chromium is missing at /usr/bin/chromium (.ci/run sees to it)")]
LINK = re.compile(r"https?://\S+/sign-in/link/\S+")
PAGES = ["/list", "/papers/{paper}", "/search?q=federated+learning", "/library", "/digest",
         "/data", "/rules", "/papers/{paper}/why-not"]
WIDTHS = (375, 1280)
REPO = Path(__file__).resolve().parent.parent
PapersAbout = Callable[[Settings, str], list[str]]


class Site:
    """The app over HTTP, and where its sign-in emails arrive."""

    def __init__(self, base: str, inbox: Inbox, settings: Settings, app: Flask) -> None:
        self.base, self.inbox, self.settings, self.app = base, inbox, settings, app

    def sign_in_link(self, address: str) -> str:
        for message in reversed(self.inbox.to(address)):
            body = message.get_body(("plain",))
            found = LINK.search(body.get_content() if body else "")
            if found:
                return found[0]
        raise AssertionError(f"no sign-in email to {address}")


@pytest.fixture
def site(make_app: Callable[[Settings], Flask], sample_settings: Settings) -> Iterator[Site]:
    inbox = Inbox()
    smtp = Controller(inbox, hostname="127.0.0.1", port=free_port())
    smtp.start()
    port = free_port()
    settings = sample_settings.replace(public_url=f"http://127.0.0.1:{port}",
                                       smtp_url=f"smtp://127.0.0.1:{smtp.port}")
    app = make_app(settings)
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Site(f"http://127.0.0.1:{port}", inbox, settings, app)
    server.shutdown()
    thread.join(10)
    smtp.stop()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield browser
        browser.close()


@pytest.fixture
def page(chromium: Browser) -> Iterator[Page]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    yield tab
    context.close()


def sign_in(page: Page, site: Site, address: str) -> None:
    """As a reader does it: the form, the email, the link, the button."""
    page.goto(site.base + "/")
    page.get_by_label("Email address").fill(address)
    page.get_by_role("button", name="Email me a sign-in link").click()
    expect(page.get_by_role("heading", name="Check your email")).to_be_visible()
    page.goto(site.sign_in_link(address))
    page.get_by_role("button", name="Sign in").click()
    # a new reader lands on the welcome page (test_web_welcome_browser.py); on to the list
    expect(page.get_by_role("heading", name="Welcome to paperrec")).to_be_visible()
    page.get_by_role("link", name="Your list").click()
    expect(page.get_by_role("heading", name="Your list")).to_be_visible()


def list_ids(page: Page) -> list[str]:
    """The paper ids of the list on the page, in order (each title links to the paper's page
    with the list's id: ``/papers/<id>?list=<list id>``)."""
    links = page.locator("ol.papers > li h2 a")
    hrefs = links.evaluate_all("found => found.map(a => a.getAttribute('href'))")
    return [href.removeprefix("/papers/").partition("?list=")[0] for href in hrefs]


def like_on_paper_page(page: Page, site: Site, paper_id: str) -> None:
    page.goto(f"{site.base}/papers/{paper_id}")
    page.locator("article").get_by_role("button", name="Like").first.click()
    expect(page.locator("article")).to_contain_text("You liked this.")


def test_sign_in_like_dislike_subscribe_sign_out(
    page: Page, site: Site, paper_ids_about: PapersAbout
) -> None:
    sign_in(page, site, "ada@example.org")
    expect(page.locator("main")).to_contain_text("not personal yet")
    federated = paper_ids_about(site.settings, "federated")
    for paper_id in federated[:2]:
        like_on_paper_page(page, site, paper_id)

    page.get_by_role("link", name="Your list").click()
    expect(page.locator("main")).not_to_contain_text("not personal yet")
    expect(page.locator("ol.papers > li").first).to_contain_text("that you liked")
    first = list_ids(page)[0]
    assert first in federated[2:]

    page.locator("ol.papers > li").first.get_by_role("button", name="Dislike").click()
    expect(item_on_page(page, first)).to_contain_text("You disliked this.")  # in place
    page.reload()
    assert first not in list_ids(page)  # and off the list

    page.get_by_role("link", name="Digest").click()
    page.get_by_label("Weekly").check()
    page.get_by_role("button", name="Subscribe").click()
    expect(page.locator(".flash")).to_contain_text("Subscribed: a weekly digest")
    client = redis.Redis.from_url(site.settings.redis_url, decode_responses=True)
    keys = RedisKeys(site.settings.redis_namespace)
    assert client.hget(keys.subscription("ada@example.org"), "frequency") == "weekly"

    # The feed: its private address on the Digest page, followed as a feed reader would
    # (another browser context: no cookie); the entries are the list's papers.
    page.get_by_role("button", name="Get a feed address").click()
    atom = page.get_by_label("Atom").input_value()
    reader = page.context.browser.new_context()  # type: ignore[union-attr]
    try:
        answer = reader.request.get(atom)
        assert answer.status == 200 and "atom+xml" in answer.headers["content-type"]
        entries = [e.id.removeprefix("urn:paperrec:paper:")
                   for e in feedparser.parse(answer.body()).entries]
    finally:
        reader.close()
    page.get_by_role("link", name="Your list").click()
    assert entries[:5] == list_ids(page)[:5]
    page.get_by_role("link", name="Digest").click()

    cookie = next(c for c in page.context.cookies() if c["name"] == COOKIE)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    key = keys.web_session(session_hash(cookie["value"]))
    assert client.exists(key)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_text("You are signed out.")).to_be_visible()
    assert not client.exists(key)
    page.goto(site.base + "/list")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def item_on_page(page: Page, paper_id: str) -> Locator:
    return page.locator(f'li.paper[id="paper-{paper_id}"]')


def button(scope: Locator, text: str) -> Locator:
    """The button reading ``text`` ("Like", not "Dislike", whose label also holds "Like")."""
    return scope.get_by_role("button").filter(has_text=re.compile(f"^{text}$"))


def test_the_buttons_work_without_javascript(
    chromium: Browser, site: Site, paper_ids_about: PapersAbout
) -> None:
    """A plain form POST, then a redirect back to the same page, at the paper's place."""
    context = chromium.new_context(java_script_enabled=False)
    page = context.new_page()
    client = redis.Redis.from_url(site.settings.redis_url, decode_responses=True)
    keys = RedisKeys(site.settings.redis_namespace)
    try:
        sign_in(page, site, "ben@example.org")
        first = list_ids(page)[0]
        page.locator("ol.papers > li").first.get_by_role("button", name="Dislike").click()
        expect(page.locator(".flash")).to_contain_text("Disliked")  # a new page, from the server
        assert page.url == f"{site.base}/list#paper-{first}"
        assert str(client.hget(keys.feedback("ben@example.org"), first)).startswith("dislike:")
        assert first not in list_ids(page)
        second = list_ids(page)[0]
        page.locator("ol.papers > li").first.get_by_role("button", name="Not now").click()
        expect(page.locator(".flash")).to_contain_text("aside")
        assert second not in list_ids(page)
        assert client.zscore(keys.set_aside("ben@example.org"), second) is not None
        # On the paper's own page: liked, shown so, and undone.
        page.goto(f"{site.base}/papers/{second}")
        expect(page.locator("article")).to_contain_text("You set this aside")
        button(page.locator("article"), "Undo").click()
        expect(button(page.locator("article"), "Like")).to_be_visible()
        assert client.zscore(keys.set_aside("ben@example.org"), second) is None
        button(page.locator("article"), "Like").click()
        expect(page.locator("article")).to_contain_text("You liked this.")
        assert page.url == f"{site.base}/papers/{second}#paper-{second}"
    finally:
        context.close()


def test_follow_an_author_from_a_paper_page_see_it_on_rules_remove_it_and_ask_why_not(
    chromium: Browser, site: Site, tmp_path: Path, ingest: Callable[..., Any],
    rebuild: Callable[..., Any], hashing_embedder: Any,
) -> None:
    """Without JavaScript: every rule form is a plain POST that comes back to its page."""
    path = tmp_path / "lovelace.jsonl"
    day = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)).isoformat()
    path.write_text(json.dumps({
        "id": "lovelace-1", "title": "Notes on the analytical engine", "date": day,
        "abstract": "Bernoulli numbers computed by a machine.",
        "authors": ["Ada Lovelace", "Charles Babbage"], "categories": ["cs.LG"]}) + "\n")
    ingest(site.settings, [path])
    rebuild(site.settings, embedder=hashing_embedder)
    context = chromium.new_context(java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        sign_in(page, site, "cy@example.org")
        assert "lovelace-1" not in list_ids(page)[:1]
        page.goto(f"{site.base}/papers/lovelace-1")
        page.get_by_role("button", name="More from this author: follow Ada Lovelace").click()
        expect(page.locator(".flash")).to_contain_text("Following the author \u201cAda Lovelace")
        assert page.url == f"{site.base}/papers/lovelace-1"

        page.get_by_role("link", name="Your list").click()
        assert list_ids(page)[0] == "lovelace-1"
        expect(page.locator("ol.papers > li").first).to_contain_text(
            "new from an author you follow: Ada Lovelace")
        expect(page.locator("ol.papers > li").first.locator("details.rules-menu")
               ).to_contain_text("More from Ada Lovelace")
        assert_accessible(chromium, context.cookies(), f"{site.base}/list",
                          f"{site.base}/papers/lovelace-1")

        page.goto(f"{site.base}/papers/lovelace-1")
        page.get_by_role("link", name="Your rules").click()
        expect(page.get_by_role("heading", name="Following (1)")).to_be_visible()
        expect(page.locator("main")).to_contain_text("The author Ada Lovelace")
        page.get_by_role("button", name="Remove: follow the author Ada Lovelace").click()
        expect(page.locator(".flash")).to_contain_text("Removed your rule to follow the author")
        expect(page.get_by_role("heading", name="Following (0)")).to_be_visible()
        client = redis.Redis.from_url(site.settings.redis_url, decode_responses=True)
        assert client.hlen(RedisKeys(site.settings.redis_namespace).rules("cy@example.org")) == 0

        page.goto(f"{site.base}/papers/lovelace-1")
        page.get_by_role("button", name="Mute this category: cs.LG").click()
        expect(page.locator(".flash")).to_contain_text("Muted the category \u201ccs.LG\u201d")
        page.get_by_role("link", name="Why is this paper not on my list?").click()
        expect(page.get_by_role("heading", name="Why is this paper not on my list?")
               ).to_be_visible()
        expect(page.locator(".why-not-summary")).to_contain_text(
            "You muted it: category: cs.LG.")
        page.get_by_role("link", name="your list", exact=True).click()
        assert "lovelace-1" not in list_ids(page)
    finally:
        context.close()


def assert_accessible(chromium: Browser, cookies: Any, *urls: str) -> None:
    """axe-core finds no serious or critical violation on these pages, and they fit a phone
    (with the rule forms of a paper with authors and a category: the sample's papers have
    neither)."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies(cookies)
    try:
        tab = context.new_page()
        for url in urls:
            tab.goto(url)
            tab.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
            results = Axe().run(tab)
            serious = [v for v in results.response["violations"]
                       if v["impact"] in ("serious", "critical")]
            assert not serious, f"{url}:\n{results.generate_report()}"
            tab.set_viewport_size({"width": WIDTHS[0], "height": 900})
            overflow = tab.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, f"{url} scrolls sideways by {overflow} px on a phone"
            tab.set_viewport_size({"width": WIDTHS[-1], "height": 900})
    finally:
        context.close()


def test_the_buttons_act_in_place_with_javascript(
    page: Page, site: Site, paper_ids_about: PapersAbout
) -> None:
    """Like, Undo, Dislike, Not now and Undo on the list: each changes the paper where it is,
    with no page load (a marker set on ``window`` survives, the URL and the scroll position
    stay), every request answered (no 404: the script posts to the form's URL), and each
    action recorded in Redis."""
    failed: list[str] = []
    posted: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
    page.on("request", lambda r: posted.append(r.url) if r.method == "POST" else None)
    page.set_viewport_size({"width": 1280, "height": 600})
    user = "cy@example.org"
    sign_in(page, site, user)
    for paper_id in paper_ids_about(site.settings, "federated")[:2]:
        like_on_paper_page(page, site, paper_id)  # in place too
    page.goto(site.base + "/list")
    ids = list_ids(page)
    assert len(ids) >= 6
    list_id = page.locator('ol.papers input[name="list"]').first.get_attribute("value")
    client = redis.Redis.from_url(site.settings.redis_url, decode_responses=True)
    keys = RedisKeys(site.settings.redis_namespace)
    page.evaluate("window.notReloaded = 'still here'")
    url = page.url

    def act(paper_id: str, text: str, shown: str) -> None:
        item = item_on_page(page, paper_id)
        item.scroll_into_view_if_needed()  # Playwright would scroll to it to click
        where = page.evaluate("window.scrollY")
        assert where > 0  # down the list: a page load would start at the top
        button(item, text).click()
        expect(item).to_contain_text(shown)
        assert page.evaluate("window.notReloaded") == "still here"
        assert page.url == url
        assert abs(page.evaluate("window.scrollY") - where) <= 2

    signal = keys.feedback(user)
    act(ids[4], "Like", "You liked this.")
    assert str(client.hget(signal, ids[4])).startswith("like:")
    act(ids[4], "Undo", "Not now")
    assert client.hget(signal, ids[4]) is None
    act(ids[5], "Dislike", "You disliked this.")
    assert str(client.hget(signal, ids[5])).startswith("dislike:")
    act(ids[3], "Not now", "You set this aside")
    assert client.zscore(keys.set_aside(user), ids[3]) is not None
    act(ids[3], "Undo", "Dislike")
    assert client.zscore(keys.set_aside(user), ids[3]) is None
    expect(page.locator(".flash")).to_have_count(0)  # no page came from the server
    assert not failed, failed
    rated = [u for u in posted if "/list" not in u and u.endswith("/rate")]
    assert rated[-5:] == [f"{site.base}/papers/{pid}/rate" for pid in
                          (ids[4], ids[4], ids[5], ids[3], ids[3])]
    # Each button sent the id of the list the page served, the buttons the script put in
    # place too (Like again after Undo): outcomes of that list (undo is none).
    act(ids[4], "Like", "You liked this.")
    logged = [(o.kind, o.paper) for o in site.app.extensions["paperrec"].events.outcomes()
              if o.user == user and o.list_id == list_id]
    assert logged == [("like", ids[4]), ("dislike", ids[5]), ("not-now", ids[3]),
                      ("like", ids[4])]


def test_every_page_is_accessible_and_fits_a_phone(
    page: Page, site: Site, paper_ids_about: PapersAbout, tmp_path: Path
) -> None:
    sign_in(page, site, "ada@example.org")
    federated = paper_ids_about(site.settings, "federated")
    for paper_id in federated[:2]:
        like_on_paper_page(page, site, paper_id)
    axe = Axe()
    # and the page a digest email's "More like this" link opens, in the same frame
    link = site.app.extensions["paperrec"].links.sign("ada@example.org", "like", federated[3],
                                                       time.time())
    paths = ["/sign-in/sent", *[p.format(paper=federated[2]) for p in PAGES], f"/v1/links/{link}"]
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for path in paths:
            page.goto(site.base + path)
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, f"{path} scrolls sideways by {overflow} px at {width} px"
            if width == WIDTHS[-1]:
                results = axe.run(page)
                serious = [v for v in results.response["violations"]
                           if v["impact"] in ("serious", "critical")]
                assert not serious, f"{path}:\n{results.generate_report()}"
    shots = REPO / "docs" if os.environ.get("PAPERREC_SCREENSHOTS") == "docs" else tmp_path
    page.set_viewport_size({"width": 1100, "height": 900})
    page.goto(site.base + "/list")
    page.screenshot(path=str(shots / "web-list.png"))
    page.goto(f"{site.base}/papers/{federated[2]}")
    page.screenshot(path=str(shots / "web-paper.png"))
    page.goto(f"{site.base}/search?q=federated+learning+with+noisy+labels")
    expect(page.locator("ol.papers mark").first).to_be_visible()  # its words marked
    page.screenshot(path=str(shots / "web-search.png"))
    page.set_viewport_size({"width": 700, "height": 420})
    page.goto(f"{site.base}/v1/links/{link}")
    page.screenshot(path=str(shots / "link-page.png"))

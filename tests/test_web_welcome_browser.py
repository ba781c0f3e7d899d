"""A newcomer in a real browser (Playwright driving Debian's chromium, as test_web_browser.py):
signs in with the mailed link, lands on the welcome page, answers a few papers, opens their
list and sees papers close to what they liked. The page passes axe-core and fits a phone.

``PAPERREC_SCREENSHOTS=docs`` writes docs/web-welcome.png; otherwise a temporary directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from tests.test_web_browser import (  # noqa: F401  (the fixtures, and the marks)
    REPO,
    Site,
    chromium,
    list_ids,
    page,
    pytestmark,
    site,
)


def test_a_newcomer_answers_a_few_papers_and_sees_a_list(page: Page, site: Site,  # noqa: F811
                                                        tmp_path: Path) -> None:
    page.goto(site.base + "/")
    page.get_by_label("Email address").fill("newcomer@example.org")
    page.get_by_role("button", name="Email me a sign-in link").click()
    expect(page.get_by_role("heading", name="Check your email")).to_be_visible()
    page.goto(site.sign_in_link("newcomer@example.org"))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Welcome to paperrec")).to_be_visible()
    expect(page.get_by_role("button", name="Show my list")).to_have_count(0)

    picks = page.locator("#pick ol.papers > li")
    expect(picks).to_have_count(8)
    answered, titles = [], []
    for _ in range(3):  # like the first paper asked, three times: each time a new one
        first = picks.first
        answered.append(first.locator("h3 a").get_attribute("href").removeprefix("/papers/"))
        titles.append(first.locator("h3 a").inner_text())
        first.get_by_role("button", name="Like").click()
        expect(page.locator(".flash")).to_contain_text("Liked")
    answered.append(picks.first.locator("h3 a").get_attribute("href").removeprefix("/papers/"))
    picks.first.get_by_role("button", name="Not for me").click()
    expect(page.locator(".flash")).to_contain_text("not for you")
    expect(page.locator("main")).to_contain_text("You have answered 4 papers (3 liked)")
    assert not set(titles) & set(picks.locator("h3 a").all_inner_texts())  # not asked again

    results = Axe().run(page)
    serious = [v for v in results.response["violations"]
               if v["impact"] in ("serious", "critical")]
    assert not serious, results.generate_report()
    page.set_viewport_size({"width": 375, "height": 900})
    assert page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    page.set_viewport_size({"width": 1100, "height": 900})
    shots = REPO / "docs" if os.environ.get("PAPERREC_SCREENSHOTS") == "docs" else tmp_path
    page.screenshot(path=str(shots / "web-welcome.png"))

    page.get_by_role("button", name="Show my list").click()
    expect(page.get_by_role("heading", name="Your list")).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("not personal yet")
    shown = list_ids(page)
    assert len(shown) == 10 and not set(shown) & set(answered)


def test_a_newcomer_from_sign_in_to_a_list_per_interest(page: Page, site: Site) -> None:  # noqa: F811
    """The issue's whole first visit in one browser: sign in, pick a few papers on the
    welcome page, see a list worth reading (each paper with its abstract's first lines and
    where it stands), like one in place (no page load), make two collections, like a paper
    into one and open that collection's own list."""
    from tests.test_collections_browser import create_collection, like_first_into
    from tests.test_web_browser import button, item_on_page

    reader = "first.visit@example.org"
    page.goto(site.base + "/")
    page.get_by_label("Email address").fill(reader)
    page.get_by_role("button", name="Email me a sign-in link").click()
    page.goto(site.sign_in_link(reader))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Welcome to paperrec")).to_be_visible()
    picks = page.locator("#pick ol.papers > li")
    for _ in range(3):
        picks.first.get_by_role("button", name="Like").click()
        expect(page.locator(".flash")).to_contain_text("Liked")
    page.get_by_role("button", name="Show my list").click()

    items = page.locator("ol.papers > li.paper")
    expect(items).to_have_count(10)
    expect(items.locator(".lead")).to_have_count(10)  # every paper: its abstract's first lines
    expect(items.first.locator(".standing")).to_contain_text("Top match of your list")
    ids = list_ids(page)
    page.evaluate("window.stillHere = true")
    button(item_on_page(page, ids[2]), "Like").click()
    expect(item_on_page(page, ids[2])).to_contain_text("You liked this.")
    assert page.evaluate("window.stillHere") is True  # in place: no page was loaded
    store = site.app.extensions["paperrec"]
    assert [f.paper_id for f in store.feedback.get(reader) if f.signal == "like"][-1] == ids[2]

    create_collection(page, site, "Graph learning")
    create_collection(page, site, "Federated")
    page.get_by_role("link", name="Your list").click()
    liked = like_first_into(page, "Federated")
    page.get_by_role("link", name="Collections").click()
    page.get_by_role("link", name="Federated").click()
    expect(page.get_by_role("heading", name="Its papers (1)")).to_be_visible()
    expect(page.locator(f'ul.papers a[href="/papers/{liked}"]')).to_have_count(1)
    assert len(list_ids(page)) >= 5  # the collection's own list, ranked from its paper

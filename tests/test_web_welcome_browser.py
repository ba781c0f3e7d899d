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

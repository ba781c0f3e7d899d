"""Collections in a real browser (Playwright driving Debian's chromium, as
tests/test_web_browser.py): create one, like a paper into it from the list, open its list;
and the same forms without JavaScript."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from recommender.core.config import Settings
from tests.test_web_browser import (  # noqa: F401  (fixtures)
    REPO,
    Site,
    chromium,
    list_ids,
    page,
    sign_in,
    site,
)

pytestmark = [pytest.mark.system, pytest.mark.skipif(
    not Path("/usr/bin/chromium").exists() and not os.environ.get("CI"),
    reason="Debian's chromium is missing at /usr/bin/chromium (.ci/run sees to it)")]
PapersAbout = Callable[[Settings, str], list[str]]


def create_collection(page: Page, site: Site, name: str) -> None:  # noqa: F811
    page.goto(site.base + "/collections")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_role("button", name="Create").click()
    expect(page.locator(".flash")).to_contain_text(f"Created the collection \u201c{name}\u201d")


def like_first_into(page: Page, name: str) -> str:  # noqa: F811
    """Like the list's first paper into the collection ``name``; its id."""
    first = page.locator("ol.papers > li").first
    paper = list_ids(page)[0]
    first.get_by_text("Like into a collection").click()
    first.get_by_role("checkbox", name=name).check()
    first.get_by_role("button", name="Like into ticked collections").click()
    expect(page.locator(".flash")).to_contain_text(f"into \u201c{name}\u201d")
    return paper


def test_create_a_collection_like_into_it_and_open_its_list(  # noqa: F811
    page: Page, site: Site, paper_ids_about: PapersAbout, tmp_path: Path  # noqa: F811
) -> None:
    sign_in(page, site, "ada@example.org")
    create_collection(page, site, "Federated")
    create_collection(page, site, "Language")
    page.get_by_role("link", name="Your list").click()
    liked = like_first_into(page, "Federated")
    page.reload()
    assert liked not in list_ids(page)  # a liked paper leaves the list

    page.get_by_role("link", name="Collections").click()
    expect(page.locator("li.collection").first).to_contain_text("1 paper")
    page.get_by_role("link", name="Federated").click()
    expect(page.get_by_role("heading", name="Federated", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="Its papers (1)")).to_be_visible()
    expect(page.locator(f'ul.papers a[href="/papers/{liked}"]')).to_have_count(1)
    own = list_ids(page)
    store = site.app.extensions["paperrec"]
    [cid] = [c.id for c in store.collections.all("ada@example.org") if c.name == "Federated"]
    expected = store.recommender.recommend("ada@example.org", 10, now=0.0, record=False,
                                           exclude_served=True, collection=cid)
    assert own == [item.paper_id for item in expected.items][:len(own)] and own

    results = Axe().run(page)
    serious = [v for v in results.response["violations"]
               if v["impact"] in ("serious", "critical")]
    assert not serious, results.generate_report()
    shots = REPO / "docs" if os.environ.get("PAPERREC_SCREENSHOTS") == "docs" else tmp_path
    page.screenshot(path=str(shots / "web-collection.png"))

    # Move it: untick one collection, tick the other (the same form).
    item = page.locator("ul.papers > li").first
    item.get_by_text("In 1 collection").click()
    item.get_by_role("checkbox", name="Federated").uncheck()
    item.get_by_role("checkbox", name="Language").check()
    item.get_by_role("button", name="Like into ticked collections").click()
    expect(page.get_by_role("heading", name="Its papers (0)")).to_be_visible()
    sizes = {c.name: c.size for c in store.collections.all("ada@example.org")}
    assert sizes == {"Federated": 0, "Language": 1}


def test_collections_work_without_javascript(chromium: Browser, site: Site) -> None:  # noqa: F811
    context = chromium.new_context(java_script_enabled=False)
    tab = context.new_page()
    try:
        sign_in(tab, site, "ben@example.org")
        create_collection(tab, site, "Graphs")
        tab.get_by_role("link", name="Your list").click()
        like_first_into(tab, "Graphs")
        tab.get_by_role("link", name="Collections").click()
        tab.get_by_label("New name").fill("Graph learning")
        tab.get_by_role("button", name="Rename").click()
        expect(tab.locator(".flash")).to_contain_text("Renamed the collection to")
        tab.get_by_role("button", name="Delete the collection \u201cGraph learning\u201d").click()
        expect(tab.locator(".flash")).to_contain_text("its papers stay liked")
        expect(tab.get_by_text("No collections yet.")).to_be_visible()
    finally:
        context.close()

"""A newcomer connects their Zotero library in a real browser (Playwright driving Debian's
chromium, as tests/test_web_browser.py), against the Zotero Web API replayed locally over HTTP
(replay/zotero.py, its demo library): their items become likes in their collections and the
list turns personal; a change in Zotero comes in with "Sync now"."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from recommender.core.config import Settings
from replay.zotero import API_KEY, USER_ID, ZoteroReplay, demo_library
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
READER = "newcomer@example.org"


@pytest.fixture
def zotero() -> Iterator[ZoteroReplay]:
    with ZoteroReplay() as replay:
        demo_library(replay)
        yield replay


@pytest.fixture
def sample_settings(sample_settings: Settings, zotero: ZoteroReplay) -> Settings:
    """The site's settings, with Zotero at the replay server."""
    return sample_settings.replace(zotero_api_url=zotero.url)


def liked_titles(page: Page) -> list[str]:  # noqa: F811
    expect(page.locator("h2", has_text="Liked (").first).to_have_text("Liked (26)")
    return page.locator("h2:text-is('Liked (26)') + ul.papers > li h3").all_inner_texts()


def test_a_newcomer_connects_zotero_and_a_change_in_zotero_follows(  # noqa: F811
        page: Page, site: Site, zotero: ZoteroReplay, tmp_path: Path) -> None:  # noqa: F811
    sign_in(page, site, READER)
    expect(page.locator("p.notice")).to_contain_text("This list is not personal yet")

    page.get_by_role("link", name="Library", exact=True).click()
    page.get_by_label("User or group ID").fill(USER_ID)
    page.get_by_label("API key").fill(API_KEY)
    page.get_by_role("button", name="Connect Zotero").click()
    flash = page.locator(".flash")
    expect(flash).to_contain_text("Zotero is connected")
    expect(flash).to_contain_text(f"Synced Zotero to library version {zotero.version()}")
    expect(flash).to_contain_text("skipped (1 attachment, 1 no title, 1 note)")
    store = site.app.extensions["paperrec"]
    liked = {f.paper_id for f in store.feedback.get(READER) if f.signal == "like"}
    regular = [d for d in zotero.libraries[f"user:{USER_ID}"].items.values()
               if d["itemType"] not in ("note", "attachment") and d.get("title")]
    assert len(liked) == len(regular) == 26
    shown = {" ".join(t.split()) for t in liked_titles(page)}
    assert shown == {d["title"] for d in regular}

    page.get_by_role("link", name="Collections").click()
    for name in ("Vision", "Training", "Training / Distributed"):
        expect(page.get_by_role("link", name=name, exact=True)).to_be_visible()

    page.get_by_role("link", name="Your list").click()
    expect(page.get_by_role("heading", name="Your list")).to_be_visible()
    expect(page.locator("p.notice")).to_have_count(0)  # personal now
    assert not set(list_ids(page)) & liked

    # In Zotero: one paper more in "Vision", one paper trashed.
    corpus_titles = store.corpus.titles([pid for pid, *_ in store.corpus.index_rows()])
    taken = {d["title"] for d in regular}
    new_title = next(t for t in sorted(corpus_titles.values()) if t not in taken)
    vision = next(k for k, c in zotero.libraries[f"user:{USER_ID}"].collections.items()
                  if c["name"] == "Vision")
    zotero.add_item(new_title, collections=[vision])
    gone = next(d for d in regular if d["itemType"] == "conferencePaper")
    zotero.trash_item(gone["key"])

    page.get_by_role("link", name="Library", exact=True).click()
    page.get_by_role("button", name="Sync now").click()
    expect(flash).to_contain_text("1 found in the collection and liked, "
                                  "1 no longer liked (removed in Zotero)")
    expect(page.locator("#zotero-last-sync")).to_contain_text(
        f"library version {zotero.version()}")
    after = {" ".join(t.split()) for t in liked_titles(page)}
    assert new_title in after and gone["title"] not in after and len(after) == len(shown)

    page.get_by_role("link", name="Collections").click()
    page.get_by_role("link", name="Vision", exact=True).click()
    expect(page.locator("h2:has-text('Its papers') + ul.papers")).to_contain_text(new_title)
    shots = REPO / "docs" if os.environ.get("PAPERREC_SCREENSHOTS") == "docs" else tmp_path
    page.get_by_role("link", name="Library", exact=True).click()
    page.get_by_text("Which Zotero collections come in").click()
    results = Axe().run(page)
    serious = [v for v in results.response["violations"]
               if v["impact"] in ("serious", "critical")]
    assert not serious, results.generate_report()
    page.screenshot(path=str(shots / "web-zotero.png"))

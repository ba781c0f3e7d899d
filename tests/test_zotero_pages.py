"""The Zotero section of the Library page (connect, sync now, choose collections, disconnect)
through the pages' forms, and a library that no longer syncs in the digest's footer; against
the Zotero Web API replayed locally over HTTP (replay/zotero.py), the real Redis and a real
SMTP server."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from recommender import wiring
from recommender.core.config import Settings
from replay.web_steps import post_form, sign_in
from replay.zotero import API_KEY, USER_ID, ZoteroReplay
from service.app import create_app
from tests.servers import Inbox
from tests.test_digest import NOW, send, subscribe

READER = "ada@example.org"


@pytest.fixture
def zotero() -> Iterator[ZoteroReplay]:
    with ZoteroReplay() as replay:
        yield replay


@pytest.fixture
def reader(make_app: Callable[[Settings], Flask], sample_settings: Settings, mail_dir: Path,
           zotero: ZoteroReplay) -> FlaskClient:
    """Ada, signed in through the pages, on a service whose Zotero is the replay."""
    app = make_app(sample_settings.replace(mail_dir=str(mail_dir), zotero_api_url=zotero.url))
    browser = app.test_client()
    sign_in(browser, READER, mail_dir)
    return browser


def parts(browser: FlaskClient) -> wiring.Paperrec:
    assert browser.application is not None
    found: wiring.Paperrec = browser.application.extensions["paperrec"]
    return found


def flash(page: Any) -> str:
    found = re.search(r'<div class="flash" role="status">(.*?)</div>', page.text, re.S)
    assert found, page.text[:2000]
    return " ".join(re.sub(r"<[^>]+>", " ", found[1]).split())


def connect(browser: FlaskClient, key: str = API_KEY, library_id: str = USER_ID) -> Any:
    return post_form(browser, "/library", "/library/zotero", library_type="user",
                     library_id=library_id, api_key=key)


def test_a_refused_key_is_said_on_the_library_page_and_nothing_is_kept(
        reader: FlaskClient, zotero: ZoteroReplay) -> None:
    page = reader.get(connect(reader, key="NotAKeyZoteroKnows000000").headers["Location"])
    assert page.status_code == 200
    said = flash(page)
    assert said.startswith("Zotero is not connected:") and "key" in said
    assert "Connect Zotero" in page.text and "NotAKeyZoteroKnows" not in page.text
    assert parts(reader).zotero.state(READER).connected is False


def test_connect_syncs_at_once_and_the_page_shows_the_library_and_its_collections(
        reader: FlaskClient, zotero: ZoteroReplay) -> None:
    titles = sorted(parts(reader).corpus.titles(
        [pid for pid, *_ in parts(reader).corpus.index_rows()]).values())
    reading = zotero.add_collection("Reading")
    deep = zotero.add_collection("Deep", parent=reading)
    zotero.add_item(titles[0], collections=[reading])
    zotero.add_item(titles[1], collections=[deep])
    zotero.add_item(item_type="note")
    answer = connect(reader)
    assert answer.status_code in (302, 303)
    page = reader.get("/library")
    said = flash(page)
    assert said.endswith(f"Synced Zotero to library version {zotero.version()}: 2 found in "
                         "the collection and liked, 1 skipped (1 note), 2 collections created.")
    text = " ".join(page.text.split())
    assert f"Connected to the Zotero personal library {USER_ID}." in text
    assert API_KEY not in page.text
    assert 'id="zotero-last-sync"' in page.text and "Sync now" in page.text
    assert f'value="{reading}" checked> Reading</label>' in text
    assert f'value="{deep}" checked> Reading / Deep</label>' in text
    store = parts(reader)
    assert {c.name for c in store.collections.all(READER)} == {"Reading", "Reading / Deep"}
    assert len([f for f in store.feedback.get(READER) if f.signal == "like"]) == 2

    # A change in Zotero comes in with "Sync now".
    zotero.add_item(titles[2], collections=[reading])
    post_form(reader, "/library", "/library/zotero/sync")
    said = flash(reader.get("/library"))
    assert said == (f"Synced Zotero to library version {zotero.version()}: 1 found in the "
                    "collection and liked.")
    assert len([f for f in store.feedback.get(READER) if f.signal == "like"]) == 3


def test_choosing_collections_and_disconnecting(reader: FlaskClient,
                                                zotero: ZoteroReplay) -> None:
    titles = sorted(parts(reader).corpus.titles(
        [pid for pid, *_ in parts(reader).corpus.index_rows()]).values())
    keep, drop = zotero.add_collection("Keep"), zotero.add_collection("Drop")
    zotero.add_item(titles[0], collections=[keep])
    zotero.add_item(titles[1], collections=[drop])
    connect(reader)
    post_form(reader, "/library", "/library/zotero/collections", key=keep)
    assert "Saved which Zotero collections" in flash(reader.get("/library"))
    assert parts(reader).zotero.state(READER).included_collections == [keep]
    post_form(reader, "/library", "/library/zotero/sync")
    assert {c.name for c in parts(reader).collections.all(READER)} == {"Keep"}

    post_form(reader, "/library", "/library/zotero/disconnect")
    page = reader.get("/library")
    assert "disconnected and its key forgotten" in flash(page)
    assert "Connect Zotero" in page.text
    assert parts(reader).zotero.state(READER).connected is False
    assert any(f.signal == "like" for f in parts(reader).feedback.get(READER))  # likes stay


def test_a_library_that_no_longer_syncs_is_in_the_page_and_the_digest_footer(
        mail_settings: Settings, inbox: Inbox, zotero: ZoteroReplay) -> None:
    settings = mail_settings.replace(zotero_api_url=zotero.url)
    client = create_app(settings).test_client()
    store = wiring.build(settings)
    store.zotero.connect("ada", "user", USER_ID, API_KEY, NOW)
    subscribe(client, inbox, "ada", "ada@example.org", frequency="daily", max_items=3)
    zotero.revoke_key(API_KEY)
    assert store.zotero.sync("ada", NOW).error
    assert send(settings, NOW).sent == 1
    [message] = inbox.to("ada@example.org")
    text = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    footer = " ".join(re.split(r"\r?\n-- \r?\n", text, maxsplit=1)[1].split())
    assert footer.startswith("Your Zotero library no longer syncs: Zotero refuses")
    assert "may read it. Connect it again on your Library page: http://paperrec.test/library" \
        in footer
    html = message.get_body(("html",)).get_content()  # type: ignore[union-attr]
    assert "Your Zotero library no longer syncs:" in html

    inbox.messages.clear()
    zotero.add_key(API_KEY, USER_ID)  # a new key with the same text: syncing works again
    assert store.zotero.sync("ada", NOW + 86_400).error is None
    assert send(settings, NOW + 86_400).sent == 1
    [message] = inbox.to("ada@example.org")
    assert "Zotero" not in message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    store.close()

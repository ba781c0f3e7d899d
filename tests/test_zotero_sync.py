"""A reader's Zotero library synced as likes and collections, against the Zotero Web API
replayed locally over HTTP (replay/zotero.py) and the real Redis."""

from __future__ import annotations

import email
import email.policy
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from recommender import wiring
from recommender.core.config import Settings
from recommender.core.errors import InvalidInput, NotFound
from recommender.corpus.zotero_api import ZoteroClient, ZoteroRefused
from recommender.embedding.encoders import TextEncoder
from replay.zotero import API_KEY, USER_ID, ZoteroReplay, demo_library
from service.cli import main
from tests.servers import Inbox
from tests.test_digest import subscribe

READER = "ada"


@pytest.fixture
def zotero() -> Iterator[ZoteroReplay]:
    with ZoteroReplay() as replay:
        yield replay


@pytest.fixture
def app(sample_settings: Settings, hashing_embedder: TextEncoder,
        zotero: ZoteroReplay) -> Iterator[wiring.Paperrec]:
    parts = wiring.build(sample_settings.replace(zotero_api_url=zotero.url, zotero_retries=2),
                         embedder=hashing_embedder)
    parts.zotero.backoff_seconds = 0.05  # short waits after a 5xx
    yield parts
    parts.close()


@pytest.fixture
def titles(app: wiring.Paperrec) -> list[tuple[str, str]]:
    """(id, title) of the sample corpus's papers."""
    ids = sorted(pid for pid, *_ in app.corpus.index_rows())
    return sorted(app.corpus.titles(ids).items())


def likes(app: wiring.Paperrec, user: str = READER) -> set[str]:
    return {f.paper_id for f in app.feedback.get(user) if f.signal == "like"}


def collections(app: wiring.Paperrec, user: str = READER) -> dict[str, set[str]]:
    """name -> paper ids of the reader's collections."""
    return {c.name: set(app.collections.papers(user, c.id).paper_ids)
            for c in app.collections.all(user)}


def connect(app: wiring.Paperrec, user: str = READER) -> None:
    app.zotero.connect(user, "user", USER_ID, API_KEY, time.time())


def small_library(zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> dict[str, str]:
    """Three sample papers (two in "Reading", one in its subcollection "Reading / Deep"), an
    arXiv preprint new to the corpus, a note, an attachment, an item without a title."""
    reading = zotero.add_collection("Reading")
    deep = zotero.add_collection("Deep", parent=reading)
    keys = {
        "a": zotero.add_item(titles[0][1], collections=[reading]),
        "b": zotero.add_item(titles[1][1], collections=[reading, deep]),
        "c": zotero.add_item(titles[2][1]),
        "new": zotero.add_item("A Preprint Nobody Has Seen", item_type="preprint",
                               extra="arXiv:2611.01234", abstractNote="Graphs and more.",
                               collections=[deep]),
        "reading": reading, "deep": deep,
    }
    zotero.add_item(item_type="note", parentItem=keys["a"])
    zotero.add_item("paper.pdf", item_type="attachment", parentItem=keys["a"])
    zotero.add_item("")
    return keys


def test_first_sync_likes_the_items_and_makes_the_collections(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> None:
    small_library(zotero, titles)
    connect(app)
    summary = app.zotero.sync(READER, time.time())
    assert (summary.added, summary.matched, summary.removed) == (1, 3, 0), summary
    assert summary.skipped == {"note": 1, "attachment": 1, "no title": 1}
    assert summary.collections_created == 2 and summary.finished and summary.error is None
    assert summary.library_version == zotero.version()
    assert "added 1" in str(summary) and "removed 0" in str(summary) \
        and "skipped 3" in str(summary)
    ids = [pid for pid, _ in titles[:3]]
    assert likes(app) == {*ids, "2611.01234"}
    assert collections(app) == {"Reading": {ids[0], ids[1]},
                                "Reading / Deep": {ids[1], "2611.01234"}}
    state = app.zotero.state(READER)
    assert state.connected and state.library_version == zotero.version()
    assert state.last_sync == summary and state.error is None
    assert [(c.name, c.included) for c in app.zotero.collections(READER)] == [
        ("Reading", True), ("Reading / Deep", True)]
    # the new paper is the reader's own pending paper, its vector cached for the next list
    assert app.corpus.pending_of(READER) == ["2611.01234"]


def test_an_unchanged_library_costs_one_conditional_request(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> None:
    small_library(zotero, titles)
    connect(app)
    app.zotero.sync(READER, time.time())
    before, asked = likes(app), len(zotero.requests)
    summary = app.zotero.sync(READER, time.time())
    assert len(zotero.requests) == asked + 1
    assert zotero.headers[-1]["if-modified-since-version"] == str(zotero.version())
    assert zotero.requests[-1]["since"] == str(zotero.version())
    assert summary.requests == 1 and summary.finished and summary.added == 0
    assert likes(app) == before


def test_an_incremental_sync_reads_only_the_changes(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> None:
    keys = small_library(zotero, titles)
    connect(app)
    app.zotero.sync(READER, time.time())
    synced = zotero.version()
    zotero.modify_item(keys["c"], title=titles[3][1])  # now another paper of the corpus
    zotero.add_item(titles[4][1], collections=[keys["reading"]])
    summary = app.zotero.sync(READER, time.time())
    items = [q for p, q in zip(zotero.paths, zotero.requests, strict=True)
             if p.endswith("/items")]
    assert items[-1]["since"] == str(synced) and items[-1]["includeTrashed"] == "1"
    assert int(items[-1]["limit"]) <= 100
    assert (summary.matched, summary.updated, summary.removed) == (2, 1, 1), summary
    assert titles[2][0] not in likes(app)
    assert {titles[3][0], titles[4][0]} <= likes(app)
    assert titles[4][0] in collections(app)["Reading"]


def test_deleted_and_trashed_items_stop_being_likes_but_the_readers_own_likes_stay(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> None:
    keys = small_library(zotero, titles)
    app.feedback.set(READER, titles[1][0], "like", time.time())  # liked in paperrec first
    connect(app)
    first = app.zotero.sync(READER, time.time())
    assert first.matched == 2  # b was liked already: not Zotero's
    app.feedback.set(READER, titles[2][0], "like", time.time() + 5)  # liked again here
    zotero.delete_item(keys["a"])
    zotero.delete_item(keys["b"])
    zotero.delete_item(keys["c"])
    zotero.trash_item(keys["new"])
    summary = app.zotero.sync(READER, time.time())
    assert summary.removed == 2, summary  # a and the trashed preprint
    assert likes(app) == {titles[1][0], titles[2][0]}
    assert any(p.endswith("/deleted") for p in zotero.paths)


def test_renames_moves_and_membership_follow_zotero(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> None:
    keys = small_library(zotero, titles)
    connect(app)
    app.zotero.sync(READER, time.time())
    ids_before = {c.name: c.id for c in app.collections.all(READER)}
    zotero.rename_collection(keys["reading"], "To read")
    zotero.rename_collection(keys["deep"], parent=False)  # moved to the top
    zotero.modify_item(keys["b"], collections=[keys["deep"]])  # out of "To read"
    summary = app.zotero.sync(READER, time.time())
    assert summary.collections_renamed == 2 and summary.collections_created == 0
    after = {c.name: c.id for c in app.collections.all(READER)}
    assert after == {"To read": ids_before["Reading"], "Deep": ids_before["Reading / Deep"]}
    assert collections(app)["To read"] == {titles[0][0]}
    assert collections(app)["Deep"] == {titles[1][0], "2611.01234"}
    zotero.delete_collection(keys["deep"])
    app.zotero.sync(READER, time.time())
    assert set(collections(app)) == {"To read"}
    assert titles[1][0] in likes(app)  # its papers stay liked


def test_the_collections_included_choose_the_likes_and_the_collections(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> None:
    keys = small_library(zotero, titles)
    connect(app)
    app.zotero.sync(READER, time.time())
    everything = likes(app)
    app.zotero.include_collections(READER, [keys["deep"]])
    assert likes(app) == {titles[1][0], "2611.01234"}
    assert set(collections(app)) == {"Reading / Deep"}
    assert [(c.name, c.included) for c in app.zotero.collections(READER)] == [
        ("Reading", False), ("Reading / Deep", True)]
    assert app.zotero.state(READER).included_collections == [keys["deep"]]
    app.zotero.include_collections(READER, None)
    assert likes(app) == everything
    assert set(collections(app)) == {"Reading", "Reading / Deep"}
    with pytest.raises(NotFound, match="no collection"):
        app.zotero.include_collections(READER, ["ZZZZZZZZ"])


def test_429_retry_after_and_backoff_are_waited_out(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> None:
    small_library(zotero, titles)
    connect(app)
    asked = len(zotero.requests)
    zotero.faults[asked + 1] = (429, {"Retry-After": "1"})
    zotero.backoff[asked + 2] = 1  # the collections page: "wait a second before the next"
    summary = app.zotero.sync(READER, time.time())
    assert summary.finished and summary.matched == 3
    times = zotero.times[asked:]
    assert times[1] - times[0] >= 0.95  # Retry-After
    assert times[2] - times[1] >= 0.95  # Backoff
    assert summary.requests == len(zotero.requests) - asked == 3


def big_library(zotero: ZoteroReplay, n: int) -> None:
    for number in range(n):
        zotero.add_item(f"Paper number {number} about graphs", DOI=f"10.1000/p{number}")


def test_a_5xx_mid_sync_leaves_the_likes_and_the_next_run_finishes(
        app: wiring.Paperrec, zotero: ZoteroReplay) -> None:
    big_library(zotero, 250)
    connect(app)
    asked = len(zotero.requests)
    zotero.fail_from = asked + 3  # the collections and the first items page answer
    failed = app.zotero.sync(READER, time.time())
    assert failed.error is not None and "500" in failed.error and not failed.finished
    assert likes(app) == set() and app.zotero.state(READER).library_version == 0
    assert app.zotero.state(READER).error == failed.error
    zotero.fail_from = None
    asked = len(zotero.requests)
    done = app.zotero.sync(READER, time.time())
    assert done.finished and done.added == 250 and len(likes(app)) == 250
    assert [q["start"] for q in zotero.requests[asked:]] == ["100", "200"]  # from the stage
    assert app.zotero.state(READER).error is None


def test_a_sync_killed_half_way_leaves_before_or_after(
        app: wiring.Paperrec, zotero: ZoteroReplay, monkeypatch: pytest.MonkeyPatch) -> None:
    big_library(zotero, 150)
    connect(app)
    app.zotero.sync(READER, time.time())
    before = likes(app)
    for key in list(zotero.libraries[f"user:{USER_ID}"].items)[:50]:  # a third goes
        zotero.delete_item(key)
    for number in range(120):  # and more comes
        zotero.add_item(f"Fresh paper {number} on trees")
    original, calls = ZoteroClient.page, []

    def killed(client: ZoteroClient, *args: Any, **kwargs: Any) -> Any:
        calls.append(args[1])
        if args[1] == "items" and calls.count("items") == 2:
            raise KeyboardInterrupt  # the process is killed half-way through the pages
        return original(client, *args, **kwargs)

    monkeypatch.setattr(ZoteroClient, "page", killed)
    with pytest.raises(KeyboardInterrupt):
        app.zotero.sync(READER, time.time())
    assert likes(app) == before  # nothing half
    monkeypatch.setattr(ZoteroClient, "page", original)
    summary = app.zotero.sync(READER, time.time())
    assert summary.finished and summary.removed == 50 and summary.added == 120
    assert len(likes(app)) == 150 - 50 + 120


def user_state(app: wiring.Paperrec, user: str = READER) -> dict[str, Any]:
    found = {}
    for key in app.keys.user_keys(user):
        kind = app.redis.type(key)
        if kind == "hash":
            found[key] = app.redis.hgetall(key)
    found[app.keys.zotero(user)].pop("last_sync")
    return found


def test_syncing_again_changes_nothing(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> None:
    small_library(zotero, titles)
    connect(app)
    app.zotero.sync(READER, time.time())
    once = user_state(app)
    app.zotero.sync(READER, time.time())  # 304
    app.zotero.include_collections(READER, None)  # planned again from the mirror
    app.redis.hset(app.keys.zotero(READER), "version", "0")  # forced to read it all again
    again = app.zotero.sync(READER, time.time())
    assert (again.added, again.matched, again.removed, again.collections_created) == (0,) * 4
    assert user_state(app) == once


def test_a_revoked_key_is_the_readers_error_and_the_job_goes_on(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> None:
    small_library(zotero, titles)
    zotero.add_key("BobsKey0123456789abcdef", "999")
    zotero.libraries["user:999"] = type(zotero.libraries[f"user:{USER_ID}"])(
        "user", "999", "bob")
    connect(app)
    app.zotero.connect("bob", "user", "999", "BobsKey0123456789abcdef", time.time())
    zotero.revoke_key(API_KEY)
    results = dict(app.zotero.sync_all(time.time(), 10))
    assert set(results) == {READER, "bob"}
    assert results["bob"].error is None and results["bob"].finished
    assert results[READER].error and "refuses" in results[READER].error
    assert "refuses" in (app.zotero.state(READER).error or "")


def test_hostile_answers_are_bounded_and_change_nothing(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> None:
    small_library(zotero, titles)
    connect(app)
    huge = b"[" + b'{"key": "AAAAAAAA"},' * 1_000_000 + b"{}]"  # 21 MB
    zotero.faults[len(zotero.requests) + 1] = (200, {"Last-Modified-Version": "9"}, huge)
    summary = app.zotero.sync(READER, time.time())
    assert summary.error and "larger than" in summary.error
    zotero.faults[len(zotero.requests) + 1] = (200, {"Last-Modified-Version": "9"},
                                               b"<html>not json</html>")
    summary = app.zotero.sync(READER, time.time())
    assert summary.error and "not JSON" in summary.error
    deep = b"[" * 100_000 + b"]" * 100_000
    zotero.faults[len(zotero.requests) + 1] = (200, {"Last-Modified-Version": "9"}, deep)
    assert "not JSON" in (app.zotero.sync(READER, time.time()).error or "")
    assert likes(app) == set()
    assert app.zotero.sync(READER, time.time()).matched == 3  # and then it syncs


def test_out_of_time_the_sync_stops_and_the_next_run_continues(
        app: wiring.Paperrec, zotero: ZoteroReplay) -> None:
    big_library(zotero, 150)
    connect(app)
    zotero.backoff[len(zotero.requests) + 2] = 2  # after the first items page
    stopped = app.zotero.sync(READER, time.time(), budget_seconds=1.0)
    assert not stopped.finished and stopped.error is None and likes(app) == set()
    assert "not finished" in str(stopped)
    time.sleep(1.0)
    done = app.zotero.sync(READER, time.time())
    assert done.finished and done.added == 150


def test_connecting_checks_the_key_at_once(app: wiring.Paperrec, zotero: ZoteroReplay) -> None:
    with pytest.raises(ZoteroRefused, match="refused this API key"):
        app.zotero.connect(READER, "user", USER_ID, "WrongKey0123456789abcdef", time.time())
    with pytest.raises(ZoteroRefused, match=f"library_id is {USER_ID}"):
        app.zotero.connect(READER, "user", "1", API_KEY, time.time())
    zotero.add_key("NoLibrary0123456789abcd", USER_ID, library=False, groups={})
    with pytest.raises(ZoteroRefused, match="may not read"):
        app.zotero.connect(READER, "user", USER_ID, "NoLibrary0123456789abcd", time.time())
    with pytest.raises(ZoteroRefused, match="may not read group library 42"):
        app.zotero.connect(READER, "group", "42", "NoLibrary0123456789abcd", time.time())
    with pytest.raises(InvalidInput):
        app.zotero.connect(READER, "user", "../../x", API_KEY, time.time())
    assert not app.zotero.state(READER).connected
    with pytest.raises(NotFound):
        app.zotero.sync(READER, time.time())


def test_a_group_library_syncs_too(app: wiring.Paperrec, zotero: ZoteroReplay,
                                   titles: list[tuple[str, str]]) -> None:
    zotero.add_group("4242", "Lab")
    zotero.add_item(titles[5][1], library="group:4242")
    app.zotero.connect(READER, "group", "4242", API_KEY, time.time())
    assert app.zotero.sync(READER, time.time()).matched == 1
    assert likes(app) == {titles[5][0]}
    assert any(p == "/groups/4242/items" for p in zotero.paths)


def test_the_key_is_encrypted_at_rest_never_exported_and_forgotten_with_the_account(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> None:
    small_library(zotero, titles)
    connect(app)
    app.zotero.sync(READER, time.time())
    stored = json.dumps(app.redis.hgetall(app.keys.zotero(READER)))
    assert API_KEY not in stored and "library_id" in stored
    exported = json.dumps(app.user_data.export(READER).sections, default=str)
    assert API_KEY not in exported and '"library_version"' in exported
    app.zotero.disconnect(READER)
    assert not app.zotero.state(READER).connected
    assert len(likes(app)) == 4  # the likes stay
    connect(app)
    app.user_data.erase(READER)
    assert not any(app.redis.exists(key) for key in app.keys.user_keys(READER))
    assert dict(app.zotero.sync_all(time.time(), 5)) == {}


def test_the_command_prints_a_line_per_library_and_fails_only_for_a_library_not_synced(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]],
        sample_settings: Settings, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    small_library(zotero, titles)
    connect(app)
    connect(app, "bob")
    app.zotero.sync(READER, time.time())  # embedded by the fast tests' embedder
    app.zotero.sync("bob", time.time())
    for name, value in {"PAPERREC_DATA_DIR": str(sample_settings.data_dir),
                        "REDIS_URL": sample_settings.redis_url,
                        "PAPERREC_REDIS_NAMESPACE": sample_settings.redis_namespace,
                        "PAPERREC_ZOTERO_API_URL": zotero.url}.items():
        monkeypatch.setenv(name, value)
    assert main(["sync-zotero"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sorted(line.split(":")[1].strip() for line in lines) == ["ada", "bob"]
    assert all("added 0" in line and "removed 0" in line and "skipped 0" in line
               for line in lines), lines
    zotero.revoke_key(API_KEY)
    assert main(["sync-zotero", "--user", "bob"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("sync-zotero: bob: added 0") and "refuses" in out


def test_the_scheduled_round_syncs_the_libraries(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> None:
    small_library(zotero, titles)
    connect(app)
    steps = {step.step: step for step in app.scheduled_round(time.time(), print)}
    assert steps["sync zotero"].status == "done"
    assert "1 libraries (0 failed" in steps["sync zotero"].detail
    assert "matched 3" in steps["sync zotero"].detail
    assert len(likes(app)) == 4


def test_a_failing_sync_is_said_in_the_digest_footer(
        mail_settings: Settings, inbox: Inbox, zotero: ZoteroReplay, tmp_path: Path,
        make_app: Callable[[Settings], Flask], hashing_embedder: TextEncoder) -> None:
    settings = mail_settings.replace(zotero_api_url=zotero.url)
    subscribe(make_app(settings).test_client(), inbox, READER, "ada@example.org")
    parts = wiring.build(settings, embedder=hashing_embedder)
    connect(parts)
    zotero.revoke_key(API_KEY)
    assert parts.zotero.sync(READER, time.time()).error
    assert parts.send_digests(time.time(), dry_run=tmp_path / "out", progress=False).sent == 1
    [eml] = (tmp_path / "out").glob("*.eml")
    message = email.message_from_bytes(eml.read_bytes(), policy=email.policy.default)
    for part in ("plain", "html"):
        body = message.get_body((part,)).get_content()  # type: ignore[union-attr]
        assert "Your Zotero library no longer syncs" in body
        assert "refuses to read this library" in " ".join(body.split())
    parts.close()


def test_the_demo_library_syncs_into_the_sample_corpus(
        app: wiring.Paperrec, zotero: ZoteroReplay) -> None:
    """What the README's walk shows (`python -m replay.zotero`)."""
    demo_library(zotero)
    connect(app)
    summary = app.zotero.sync(READER, time.time())
    assert (summary.matched, summary.added) == (20, 6), summary
    assert summary.skipped == {"note": 1, "attachment": 1, "no title": 1}
    assert set(collections(app)) == {"Vision", "Training", "Training / Distributed"}
    assert all(collections(app).values())
    assert "1706.03762" in likes(app)


class LyingReplay(ZoteroReplay):
    """A Zotero that claims a billion results on every list."""

    def respond_to(self, path: str, query: dict[str, str], headers: dict[str, str]
                   ) -> tuple[int, dict[str, str], bytes]:
        status, out, body = super().respond_to(path, query, headers)
        if "Total-Results" in out:
            out["Total-Results"] = "1000000000"
        return status, out, body


def test_a_server_lying_about_its_size_is_read_to_its_last_short_page(
        sample_settings: Settings, hashing_embedder: TextEncoder,
        titles: list[tuple[str, str]]) -> None:
    with LyingReplay() as zotero:
        for _, title in titles[:5]:
            zotero.add_item(title)
        parts = wiring.build(sample_settings.replace(zotero_api_url=zotero.url),
                             embedder=hashing_embedder)
        connect(parts)
        summary = parts.zotero.sync(READER, time.time())
        assert summary.finished and summary.matched == 5
        assert summary.requests == 2  # the collections, one page of items
        parts.close()


class SlowReplay(ZoteroReplay):
    """A Zotero whose user library answers slowly (its groups at once)."""

    def respond_to(self, path: str, query: dict[str, str], headers: dict[str, str]
                   ) -> tuple[int, dict[str, str], bytes]:
        if path.startswith("/users/"):
            time.sleep(0.4)
        return super().respond_to(path, query, headers)


def test_a_slow_library_stops_at_its_budget_and_the_others_are_synced(
        sample_settings: Settings, hashing_embedder: TextEncoder,
        titles: list[tuple[str, str]]) -> None:
    with SlowReplay() as zotero:
        big_library(zotero, 250)
        zotero.add_group("4242")
        zotero.add_item(titles[0][1], library="group:4242")
        parts = wiring.build(sample_settings.replace(zotero_api_url=zotero.url),
                             embedder=hashing_embedder)
        connect(parts, "slow")
        parts.zotero.connect("fast", "group", "4242", API_KEY, time.time())
        first = dict(parts.zotero.sync_all(time.time(), 1.0))
        assert not first["slow"].finished and first["slow"].error is None
        assert first["fast"].finished and likes(parts, "fast") == {titles[0][0]}
        assert likes(parts, "slow") == set()
        finished = {}
        for _ in range(5):  # each run continues from what the last one staged
            finished = dict(parts.zotero.sync_all(time.time(), 1.0))
            if finished["slow"].finished:
                break
        assert finished["slow"].finished and len(likes(parts, "slow")) == 250
        parts.close()


def test_items_past_the_daily_quota_are_added_at_a_later_sync(
        sample_settings: Settings, hashing_embedder: TextEncoder, zotero: ZoteroReplay) -> None:
    big_library(zotero, 5)
    parts = wiring.build(sample_settings.replace(zotero_api_url=zotero.url, uploads_per_day=3),
                         embedder=hashing_embedder)
    connect(parts)
    first = parts.zotero.sync(READER, time.time())
    assert (first.added, first.skipped) == (3, {"over quota": 2})
    zotero.add_item(item_type="note")  # the library changes: the next sync applies
    tomorrow = time.time() + 86_400
    later = parts.zotero.sync(READER, tomorrow)
    assert later.added == 2 and later.skipped == {"note": 1} and later.updated == 0, later
    assert len(likes(parts)) == 5
    parts.close()


def test_a_readers_collection_of_that_name_is_joined_and_kept_and_clashing_names_differ(
        app: wiring.Paperrec, zotero: ZoteroReplay, titles: list[tuple[str, str]]) -> None:
    mine = app.collections.create(READER, "Methods", time.time())
    app.collections.put(READER, mine.id, titles[9][0], time.time())
    methods = zotero.add_collection("Methods")
    other = zotero.add_collection("methods")
    zotero.add_item(titles[0][1], collections=[methods])
    zotero.add_item(titles[1][1], collections=[other])
    connect(app)
    summary = app.zotero.sync(READER, time.time())
    assert summary.collections_created == 1
    found = collections(app)
    assert found["Methods"] == {titles[9][0], titles[0][0]}  # the reader's, joined
    assert found["methods (2)"] == {titles[1][0]}
    assert app.collections.get(READER, mine.id).name == "Methods"
    zotero.delete_collection(methods)
    zotero.delete_collection(other)
    app.zotero.sync(READER, time.time())
    assert collections(app) == {"Methods": {titles[9][0]}}  # the reader's stays, Zotero's go

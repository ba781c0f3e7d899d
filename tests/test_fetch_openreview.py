"""`paperrec fetch openreview`: a venue's accepted papers from OpenReview's API v2, against a
local server that replays submission notes in the documented JSON (replay/openreview.py).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from recommender import jobs
from recommender.core.config import Settings
from recommender.core.errors import NotFound
from recommender.corpus.oai_pmh import OaiPmhClient
from recommender.corpus.openreview import (
    OpenReviewClient,
    VenueSummary,
    check_venue_id,
    paper_from_note,
)
from recommender.corpus.polite_http import HarvestFailed
from recommender.corpus.store import CorpusStore
from replay.oai_pmh import OaiReplay, Record
from replay.openreview import PUBLISHED, VENUE, Note, OpenReviewReplay
from service.cli import main


def notes() -> list[Note]:
    """Five accepted ICML 2026 papers, a rejected and a withdrawn submission of the venue."""
    return [
        Note("Bx01", "Sparse attention", "Attention, but sparse.", number=1,
             code="https://github.com/example/sparse"),
        Note("Bx02", "Dense retrieval", "Retrieval with dense vectors.", number=2,
             authors=["Ada Lovelace", "Emmy Noether"], venue="ICML 2026 Oral"),
        Note("Bx03", "Graph networks", "Message passing on graphs.", number=3),
        Note("Bx04", "Rejected idea", "Not good enough.", number=4,
             venueid=f"{VENUE}/Rejected_Submission", venue="Submitted to ICML 2026"),
        Note("Bx05", "Diffusion models", "Denoising, step by step.", number=5),
        Note("Bx06", "Withdrawn idea", "Never mind.", number=6,
             venueid=f"{VENUE}/Withdrawn_Submission", venue="ICML 2026 Withdrawn Submission"),
        Note("Bx07", "Calibration", "Probabilities that mean it.", number=7),
    ]


ACCEPTED = ["openreview:Bx01", "openreview:Bx02", "openreview:Bx03", "openreview:Bx05",
            "openreview:Bx07"]


def corpus_rows(path: Path) -> list[tuple[str, str, int]]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT id, record, withdrawn FROM papers ORDER BY id").fetchall()


def fetch(settings: Settings, replay: OpenReviewReplay, venue: str = VENUE, retries: int = 3,
          page_size: int = 2, rejections: list[str] | None = None) -> VenueSummary:
    """`paperrec fetch openreview` as the library runs it, two notes a page, no pauses."""
    corpus = CorpusStore(settings.corpus_path)
    client = OpenReviewClient(replay.url, delay=0, retries=retries, page_size=page_size,
                              backoff=0.01)
    try:
        return jobs.fetch_openreview(
            corpus, client, [venue], progress=False,
            on_rejection=lambda r: (rejections if rejections is not None else []).append(
                f"{r.source}: {r.reason}"))
    finally:
        client.close()
        corpus.close()


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    monkeypatch.setenv("PAPERREC_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("PAPERREC_OPENREVIEW_DELAY_SECONDS", "0")
    monkeypatch.setenv("PAPERREC_ARXIV_DELAY_SECONDS", "0")
    return monkeypatch


# --- the fetch --------------------------------------------------------------------------------

def test_pages_follow_the_cursor_a_429_is_waited_out_and_only_accepted_papers_are_stored(
        settings: Settings) -> None:
    with OpenReviewReplay(notes()) as replay:
        replay.faults[2] = (429, {"Retry-After": "1"})
        started = time.monotonic()
        summary = fetch(settings, replay)
        waited = time.monotonic() - started
    assert str(summary) == ("fetched 5, added 5, updated 0, unchanged 0, merged 0, "
                            "rejected 0")
    assert waited >= 1.0  # Retry-After: 1 was honoured
    asked = {"content.venueid": VENUE, "sort": "id", "limit": "2"}
    assert replay.requests == [
        asked | {"count": "true"},
        asked | {"after": "Bx02"},  # answered 429
        asked | {"after": "Bx02"},
        asked | {"after": "Bx05"},  # one note: the last page
    ]
    corpus = CorpusStore(settings.corpus_path)
    assert [pid for pid, _, _ in corpus_rows(settings.corpus_path)] == ACCEPTED
    paper = corpus.get("openreview:Bx02")
    assert paper is not None
    assert (paper.title, paper.abstract, paper.authors, paper.date, paper.year, paper.url,
            paper.categories) == (
        "Dense retrieval", "Retrieval with dense vectors.", ["Ada Lovelace", "Emmy Noether"],
        "2026-06-21", 2026, "https://openreview.net/forum?id=Bx02", ["ICML 2026 Oral"])
    first = corpus.get("openreview:Bx01")
    assert first is not None and first.code_urls == ["https://github.com/example/sparse"]
    assert corpus.get("openreview:Bx04") is None and corpus.get("openreview:Bx06") is None


def test_a_conference_paper_that_is_an_arxiv_preprint_is_stored_once_under_both_ids(
        settings: Settings) -> None:
    preprint = Record("2611.00009", "2026-11-02", "Graph Networks!", "Message passing, v1.",
                      authors=[("Lovelace", "Ada")])
    with OaiReplay([preprint]) as arxiv:
        client = OaiPmhClient(arxiv.url, delay=0, retries=0)
        corpus = CorpusStore(settings.corpus_path)
        jobs.fetch_arxiv(corpus, client, ["cs.LG"], on_rejection=print, progress=False)
        client.close()
        corpus.close()
    with OpenReviewReplay(notes()) as replay:
        summary = fetch(settings, replay)
    # "Graph networks" by Ada Lovelace: the same title (case and punctuation aside), first author
    assert (summary.fetched, summary.added, summary.merged) == (5, 4, 1)
    corpus = CorpusStore(settings.corpus_path)
    assert corpus.count() == 5
    assert corpus.resolve("openreview:Bx03") == "2611.00009"
    paper = corpus.get("openreview:Bx03")
    assert paper is not None and paper.id == "2611.00009"
    assert paper.abstract == "Message passing, v1."  # the stored text does not flip
    assert corpus.get("2611.00009") == paper


def test_a_rerun_changes_nothing_and_a_modified_note_updates_its_paper(
        settings: Settings) -> None:
    papers = notes()
    with OaiReplay([Record("2611.00009", "2026-11-02", "Graph networks", "v1.")]) as arxiv:
        client = OaiPmhClient(arxiv.url, delay=0, retries=0)
        corpus = CorpusStore(settings.corpus_path)
        jobs.fetch_arxiv(corpus, client, ["cs.LG"], on_rejection=print, progress=False)
        client.close()
        corpus.close()
    with OpenReviewReplay(papers) as replay:
        fetch(settings, replay)
        before = corpus_rows(settings.corpus_path)
        again = fetch(settings, replay)
        assert str(again) == ("fetched 5, added 0, updated 0, unchanged 5, merged 0, "
                              "rejected 0")
        assert corpus_rows(settings.corpus_path) == before
        papers[0].abstract, papers[0].mdate = "Attention, sparser.", PUBLISHED + 86_400_000
        changed = fetch(settings, replay)
    assert (changed.updated, changed.unchanged) == (1, 4)
    paper = CorpusStore(settings.corpus_path).get("openreview:Bx01")
    assert paper is not None and paper.abstract == "Attention, sparser."


def test_an_interrupted_fetch_run_again_continues_after_the_last_stored_note(
        tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "interrupted" / "corpus.sqlite"
    with OpenReviewReplay(notes()) as replay:
        replay.fail_from = 3  # two pages of two are served, then the server dies
        client = OpenReviewClient(replay.url, delay=0, retries=0, page_size=2)
        corpus = CorpusStore(path)
        with pytest.raises(HarvestFailed, match=r"after=Bx05 after 1 attempts"):
            jobs.fetch_openreview(corpus, client, [VENUE], on_rejection=print, progress=False)
        assert corpus.count() == 4
        assert corpus.harvest_position("openreview", VENUE).token == "Bx05"
        replay.fail_from = None
        replay.requests.clear()
        summary = jobs.fetch_openreview(corpus, client, [VENUE], on_rejection=print,
                                        progress=False)
        client.close()
        corpus.close()
        assert replay.requests == [
            {"content.venueid": VENUE, "sort": "id", "limit": "2", "after": "Bx05"}]
        assert (summary.fetched, summary.added) == (1, 1)
        fetch(settings, replay)  # the same, never interrupted, into another corpus
    assert corpus_rows(path) == corpus_rows(settings.corpus_path)
    assert CorpusStore(path).harvest_position("openreview", VENUE).token is None


def test_a_venue_with_nothing_accepted_stops_with_a_clear_message(settings: Settings) -> None:
    with OpenReviewReplay(notes()) as replay, pytest.raises(
            NotFound, match="no accepted papers under the venue id 'ICML.cc/2062/Conference'"):
        fetch(settings, replay, venue="ICML.cc/2062/Conference")
    assert CorpusStore(settings.corpus_path).count() == 0


def test_a_server_that_keeps_failing_stops_the_fetch_with_a_clear_error(
        settings: Settings) -> None:
    with OpenReviewReplay(notes()) as replay:
        replay.faults = {1: (502, {}), 2: (429, {})}  # a 429 without Retry-After: backoff
        assert fetch(settings, replay, retries=2).added == 5
        replay.requests.clear()
        replay.fail_from = 1
        with pytest.raises(HarvestFailed, match=r"after 3 attempts \(HTTP 500"):
            fetch(settings, replay, retries=2)
    assert len(replay.requests) == 3


def test_notes_in_the_unified_author_schema_and_without_pdate_are_read() -> None:
    note = Note("Cy01", authors=[{"fullname": "Ada Lovelace", "username": "~Ada_Lovelace1"},
                                 {"fullname": "Emmy Noether"}]).json()
    del note["pdate"]
    paper = paper_from_note(note, VENUE)
    assert not isinstance(paper, str) and hasattr(paper, "authors")
    assert (paper.authors, paper.date) == (["Ada Lovelace", "Emmy Noether"], "2026-01-22")
    note["content"]["title"] = {"value": "   "}
    assert str(paper_from_note(note, VENUE)) == "openreview:Cy01:0: note has no title"


# --- the command ------------------------------------------------------------------------------

def test_the_command_reports_a_malformed_note_stores_the_rest_and_a_rerun_changes_nothing(
        env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    papers = notes()
    papers[2].title = None
    with OpenReviewReplay(papers) as replay:
        env.setenv("PAPERREC_OPENREVIEW_URL", replay.url)
        assert main(["fetch", "openreview", "--venue", VENUE, "--quiet"]) == 0
        out, err = capsys.readouterr()
        assert err == "openreview:Bx03: note has no title\n"
        assert out == ("fetch openreview: fetched 5, added 4, updated 0, unchanged 0, "
                       "merged 0, rejected 1\n")
        before = corpus_rows(tmp_path / "var" / "corpus.sqlite")
        assert [pid for pid, _, _ in before] == [
            "openreview:Bx01", "openreview:Bx02", "openreview:Bx05", "openreview:Bx07"]
        assert main(["fetch", "openreview", "--venue", VENUE, "--quiet"]) == 0
        out, err = capsys.readouterr()
        assert out == ("fetch openreview: fetched 5, added 0, updated 0, unchanged 4, "
                       "merged 0, rejected 1\n")
    assert corpus_rows(tmp_path / "var" / "corpus.sqlite") == before


def test_the_command_says_when_a_venue_has_nothing_and_exits_1(
        env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    with OpenReviewReplay(notes()) as replay:
        env.setenv("PAPERREC_OPENREVIEW_URL", replay.url)
        assert main(["fetch", "openreview", "--venue", "ICML.cc/2062/Conference"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines()[-1] == (
        "paperrec fetch: OpenReview lists no accepted papers under the venue id "
        "'ICML.cc/2062/Conference': check it (as in "
        "https://openreview.net/group?id=ICML.cc/2062/Conference; case matters), or the "
        "venue has not made its decisions public yet")


def test_the_command_stops_early_with_status_1_and_says_what_it_kept(
        env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    with OpenReviewReplay(notes()) as replay:
        env.setenv("PAPERREC_OPENREVIEW_URL", replay.url)
        env.setenv("PAPERREC_OPENREVIEW_RETRIES", "0")
        replay.fail_from = 1
        assert main(["fetch", "openreview", "--venue", VENUE, "--quiet"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "fetch openreview: stopped early after fetched 0, added 0, updated 0, unchanged 0, "
        "merged 0, rejected 0",
        f"paperrec fetch: {replay.url}/notes did not answer content.venueid={VENUE}&sort=id&"
        f"limit=1000&count=true after 1 attempts (HTTP 500 Internal Server Error); "
        f"everything harvested before is stored, so run the same command again later to "
        f"continue from there"]


@pytest.mark.parametrize(("arguments", "says"), [
    ([], "the following arguments are required: --venue"),
    (["--venue", "ICML 2026"], "not an OpenReview venue id: 'ICML 2026'"),
    (["--venue", "ICML.cc/2026/Conference/-/Submission"],
     "is an invitation id; give the venue id before '/-/' (ICML.cc/2026/Conference)"),
])
def test_bad_arguments_stop_with_one_line_and_status_2(
        env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], arguments: list[str],
        says: str) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["fetch", "openreview", *arguments])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("usage: paperrec fetch openreview")
    assert err[-1].startswith("paperrec fetch openreview: error: ") and says in err[-1]


def test_venue_ids_are_those_of_conferences_and_journals() -> None:
    assert [check_venue_id(v) for v in (" ICML.cc/2026/Conference", "TMLR",
                                        "NeurIPS.cc/2025/Datasets_and_Benchmarks_Track")] == [
        "ICML.cc/2026/Conference", "TMLR", "NeurIPS.cc/2025/Datasets_and_Benchmarks_Track"]


def test_help_explains_the_fetch(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["fetch", "openreview", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("--venue VENUE_ID", "ICML.cc/2026/Conference", "Rejected_Submission",
                  "openreview:<forum id>", "stored once", "PAPERREC_OPENREVIEW_URL",
                  "PAPERREC_OPENREVIEW_DELAY_SECONDS", "Retry-After", "changes nothing",
                  "--quiet", "Exit status 1"):
        assert words in text, words

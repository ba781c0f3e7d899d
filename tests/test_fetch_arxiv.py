"""`paperrec fetch arxiv`: an incremental OAI-PMH harvest, against a local endpoint that
replays arXiv records in the documented format (replay/oai_pmh.py)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from recommender import jobs
from recommender.core.config import Settings
from recommender.core.errors import InvalidInput
from recommender.corpus.arxiv import HarvestSummary, paper_from_oai
from recommender.corpus.arxiv_categories import set_for_category
from recommender.corpus.oai_pmh import HarvestFailed, OaiPmhClient, parse_page
from recommender.corpus.store import CorpusStore, HarvestPosition, UpsertCounts
from recommender.embedding.encoders import TextEncoder
from recommender.index.store import IndexStore
from replay.oai_pmh import OaiReplay, Record
from service.cli import main

DATA = Path(__file__).parent / "data" / "arxiv"


def records() -> list[Record]:
    """Seven cs.LG papers over three days, one of them also in stat.ML."""
    return [
        Record("2611.00001", "2026-11-02", "Sparse attention", "Attention, but sparse."),
        Record("2611.00002", "2026-11-02", "Dense retrieval", "Retrieval with dense vectors.",
               categories="cs.LG stat.ML",
               authors=[("Lovelace", "Ada"), ("Noether", "Emmy")]),
        Record("2611.00003", "2026-11-03", "Graph networks", "Message passing on graphs."),
        Record("2611.00004", "2026-11-03", "Diffusion models", "Denoising, step by step."),
        Record("2611.00005", "2026-11-03", "Bandits", "Exploration and exploitation."),
        Record("2611.00006", "2026-11-04", "Calibration", "Probabilities that mean it."),
        Record("2611.00007", "2026-11-04", "Federated learning", "Learning on many devices."),
    ]


def corpus_rows(path: Path) -> list[tuple[str, str, int]]:
    """What a corpus holds: (id, record, withdrawn) of every paper."""
    with sqlite3.connect(path) as db:
        return db.execute("SELECT id, record, withdrawn FROM papers ORDER BY id").fetchall()


def harvest(settings: Settings, replay: OaiReplay, categories: tuple[str, ...] = ("cs.LG",),
            from_date: str | None = None, retries: int = 3,
            rejections: list[str] | None = None) -> HarvestSummary:
    """`paperrec fetch arxiv` as the library runs it, without waiting between requests."""
    corpus = CorpusStore(settings.corpus_path)
    client = OaiPmhClient(replay.url, delay=0, retries=retries, backoff=0.01)
    try:
        return jobs.fetch_arxiv(
            corpus, client, categories, from_date=from_date, progress=False,
            on_rejection=lambda r: (rejections if rejections is not None else []).append(
                f"{r.source}: {r.reason}"))
    finally:
        client.close()
        corpus.close()


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """The environment of `paperrec` for these tests: a data dir of its own, no pause."""
    monkeypatch.setenv("PAPERREC_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("PAPERREC_ARXIV_DELAY_SECONDS", "0")
    return monkeypatch


# --- the harvest ------------------------------------------------------------------------------

def test_pages_are_followed_by_resumption_token_and_a_503_is_waited_out(
        settings: Settings) -> None:
    with OaiReplay(records(), page_size=3) as replay:
        replay.faults[2] = (503, {"Retry-After": "1"})
        started = time.monotonic()
        summary = harvest(settings, replay)
        waited = time.monotonic() - started
    assert str(summary) == ("fetched 7, added 7, updated 0, unchanged 0, withdrawn 0, "
                            "rejected 0")
    assert waited >= 1.0  # Retry-After: 1 was honoured
    assert replay.requests == [
        {"verb": "ListRecords", "metadataPrefix": "arXiv", "set": "cs:cs:LG"},
        {"verb": "ListRecords", "resumptionToken": "cs:cs:LG||3"},  # answered 503
        {"verb": "ListRecords", "resumptionToken": "cs:cs:LG||3"},
        {"verb": "ListRecords", "resumptionToken": "cs:cs:LG||6"},
    ]
    corpus = CorpusStore(settings.corpus_path)
    paper = corpus.get("2611.00002")
    assert paper is not None and corpus.count() == 7
    assert (paper.title, paper.abstract, paper.authors, paper.date, paper.year, paper.url,
            paper.categories) == (
        "Dense retrieval", "Retrieval with dense vectors.", ["Ada Lovelace", "Emmy Noether"],
        "2026-11-02", 2026, "https://arxiv.org/abs/2611.00002", ["cs.LG", "stat.ML"])


def test_a_malformed_record_is_rejected_and_reported_and_the_rest_ingested(
        env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    papers = records()
    papers[3].title = None
    with OaiReplay(papers) as replay:
        env.setenv("PAPERREC_ARXIV_OAI_URL", replay.url)
        assert main(["fetch", "arxiv", "--category", "cs.LG", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert err == "oai:arXiv.org:2611.00004: record has no title\n"
    assert out == ("fetch arxiv: fetched 7, added 6, updated 0, unchanged 0, withdrawn 0, "
                   "rejected 1\n")
    assert [pid for pid, _, _ in corpus_rows(tmp_path / "var" / "corpus.sqlite")] == [
        "2611.00001", "2611.00002", "2611.00003", "2611.00005", "2611.00006", "2611.00007"]


def test_a_second_run_asks_from_the_stored_datestamp_and_adds_only_the_new_paper(
        settings: Settings) -> None:
    papers = records()
    with OaiReplay(papers) as replay:
        harvest(settings, replay)
        replay.requests.clear()
        papers.append(Record("2611.00008", "2026-11-05", "Tokenizers", "Bytes, not words."))
        summary = harvest(settings, replay)
    assert replay.requests == [
        {"verb": "ListRecords", "metadataPrefix": "arXiv", "set": "cs:cs:LG",
         "from": "2026-11-04"}]
    # the last day is asked again (its records come back unchanged): nothing is missed
    assert (summary.fetched, summary.added, summary.unchanged) == (3, 1, 2)
    with OaiReplay(papers) as replay:
        assert harvest(settings, replay).added == 0
        assert replay.requests[0]["from"] == "2026-11-05"


def test_a_new_version_updates_the_paper_it_replaces(settings: Settings) -> None:
    papers = records()
    with OaiReplay(papers) as replay:
        harvest(settings, replay)
        papers[0] = Record("2611.00001", "2026-11-06", "Sparse attention, revised",
                           "Attention, but sparser.")
        summary = harvest(settings, replay)
    assert (summary.added, summary.updated, summary.unchanged) == (0, 1, 2)
    corpus = CorpusStore(settings.corpus_path)
    paper = corpus.get("2611.00001")
    assert corpus.count() == 7 and paper is not None
    assert (paper.title, paper.date) == ("Sparse attention, revised", "2026-11-02")


def test_an_old_style_id_and_its_version_are_kept_apart() -> None:
    """hep-th/9901001v2 and 2611.00001v3 name the papers hep-th/9901001 and 2611.00001."""
    page = parse_page((DATA / "listrecords-page.xml").read_bytes())
    items = [paper_from_oai(record) for record in page.records]
    assert [getattr(item, "id", item) for item in items] == ["hep-th/9901001", "2611.00001"]
    assert page.token == "6360213|1001" and page.complete_size == 3
    assert getattr(items[0], "authors", None) == ["Edward Witten", "Juan M. Maldacena Jr."]


def test_a_withdrawn_paper_is_marked_and_left_out_of_the_next_index_build(
        settings: Settings, rebuild: Callable[..., jobs.RebuildSummary],
        hashing_embedder: TextEncoder) -> None:
    papers = records()
    with OaiReplay(papers) as replay:
        harvest(settings, replay)
        rebuild(settings, embedder=hashing_embedder)
        papers[1] = Record("2611.00002", "2026-11-07", deleted=True)
        papers[2] = Record("2611.00003", "2026-11-07", "Graph networks",
                           "This paper has been withdrawn by the author due to an error "
                           "in Lemma 2.", comments="This paper has been withdrawn")
        summary = harvest(settings, replay)
    assert (summary.withdrawn, summary.added, summary.updated) == (2, 0, 0)
    corpus = CorpusStore(settings.corpus_path)
    assert corpus.is_withdrawn("2611.00002") and corpus.is_withdrawn("2611.00003")
    assert corpus.count() == 7  # kept, only marked
    built = rebuild(settings, embedder=hashing_embedder)
    store = IndexStore(settings.index_dir)
    version = store.current_version()
    assert version == built.version and built.papers == 5
    assert set(store.load(version).ids) == {"2611.00001", "2611.00004", "2611.00005",
                                             "2611.00006", "2611.00007"}


def test_an_interrupted_harvest_run_again_ends_with_the_corpus_of_an_uninterrupted_one(
        env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        settings: Settings) -> None:
    papers = records()
    with OaiReplay(papers, page_size=2) as replay:  # four pages
        env.setenv("PAPERREC_ARXIV_OAI_URL", replay.url)
        env.setenv("PAPERREC_ARXIV_RETRIES", "0")
        replay.fail_from = 3  # pages 1 and 2 are served, then the server dies
        assert main(["fetch", "arxiv", "--category", "cs.LG", "--quiet"]) == 1
        out, err = capsys.readouterr()
        assert out == ""
        assert err.splitlines() == [
            "fetch arxiv: stopped early after fetched 4, added 4, updated 0, unchanged 0, "
            "withdrawn 0, rejected 0",
            f"paperrec fetch: {replay.url} did not answer verb=ListRecords&resumptionToken="
            f"cs:cs:LG||4 after 1 attempts (HTTP 500 Internal Server Error); everything "
            f"harvested before is stored, so run the same command again later to continue "
            f"from there"]
        corpus = CorpusStore(tmp_path / "var" / "corpus.sqlite")
        assert corpus.count() == 4
        assert corpus.harvest_position("arxiv", "cs:cs:LG").token == "cs:cs:LG||4"
        corpus.close()

        replay.fail_from = None
        replay.requests.clear()
        assert main(["fetch", "arxiv", "--category", "cs.LG", "--quiet"]) == 0
        assert capsys.readouterr().out == ("fetch arxiv: fetched 3, added 3, updated 0, "
                                           "unchanged 0, withdrawn 0, rejected 0\n")
        assert replay.requests == [
            {"verb": "ListRecords", "resumptionToken": "cs:cs:LG||4"},
            {"verb": "ListRecords", "resumptionToken": "cs:cs:LG||6"}]
        harvest(settings, replay)  # the same, never interrupted, into another corpus
    resumed = corpus_rows(tmp_path / "var" / "corpus.sqlite")
    assert len(resumed) == 7 and resumed == corpus_rows(settings.corpus_path)
    # and both continue from the same day
    assert CorpusStore(tmp_path / "var" / "corpus.sqlite").harvest_position(
        "arxiv", "cs:cs:LG").datestamp == "2026-11-04"


def test_an_expired_resumption_token_restarts_from_the_day_the_harvest_started(
        settings: Settings) -> None:
    with OaiReplay(records(), page_size=2) as replay:
        harvest(settings, replay, from_date="2026-11-04")  # two papers
        replay.requests.clear()
        corpus = CorpusStore(settings.corpus_path)  # a harvest from the start, interrupted
        corpus.store_harvested("arxiv", "cs:cs:LG", [], [], HarvestPosition(
            "2026-11-04", "expired-token", None, None), UpsertCounts())
        summary = harvest(settings, replay)
    assert replay.requests[:2] == [
        {"verb": "ListRecords", "resumptionToken": "expired-token"},  # badResumptionToken
        {"verb": "ListRecords", "metadataPrefix": "arXiv", "set": "cs:cs:LG"}]
    assert (summary.added, summary.unchanged) == (5, 2)


def test_network_errors_are_retried_with_backoff_then_stop_with_a_clear_error(
        settings: Settings) -> None:
    with OaiReplay(records()) as replay:
        replay.faults = {1: (502, {}), 2: (500, {})}
        assert harvest(settings, replay, retries=2).added == 7  # two failures, then served
        replay.requests.clear()
        replay.fail_from = 1
        with pytest.raises(HarvestFailed, match=r"after 3 attempts \(HTTP 500"):
            harvest(settings, replay, retries=2)
    assert len(replay.requests) == 3
    assert CorpusStore(settings.corpus_path).count() == 7  # nothing stored is lost


def test_several_categories_and_from_start_new_harvests(settings: Settings) -> None:
    with OaiReplay(records()) as replay:
        summary = harvest(settings, replay, ("cs.LG", "stat.ML"), from_date="2026-11-03")
    assert [(r.get("set"), r.get("from")) for r in replay.requests if "set" in r] == [
        ("cs:cs:LG", "2026-11-03"), ("stat:stat:ML", "2026-11-03")]
    assert (summary.added, summary.unchanged) == (5, 0)


def test_categories_name_arxiv_sets() -> None:
    assert [set_for_category(c) for c in ("cs.LG", "stat.ML", "cs", "hep-th", "astro-ph.CO",
                                          "physics.optics", "physics", "q-bio.NC")] == [
        "cs:cs:LG", "stat:stat:ML", "cs", "physics:hep-th", "physics:astro-ph:CO",
        "physics:physics:optics", "physics", "q-bio:q-bio:NC"]
    with pytest.raises(InvalidInput, match="unknown arXiv category 'machine-learning'"):
        set_for_category("machine-learning")


# --- the command ------------------------------------------------------------------------------

@pytest.mark.parametrize(("arguments", "says"), [
    (["--category", "cs_LG"], "unknown arXiv category 'cs_LG'"),
    (["--category", "cs.LG", "--from", "2026-13-01"], "not a date written YYYY-MM-DD"),
    (["--category", "cs.LG", "--from", "yesterday"], "not a date written YYYY-MM-DD"),
])
def test_bad_arguments_stop_with_one_line_and_status_2(
        env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], arguments: list[str],
        says: str) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["fetch", "arxiv", *arguments])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("usage: paperrec fetch arxiv")
    assert err[-1].startswith("paperrec fetch arxiv: error: ") and says in err[-1]
    assert [line for line in err if "error" in line] == [err[-1]]


def test_categories_come_from_the_setting_when_none_is_named(
        env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    env.delenv("PAPERREC_ARXIV_CATEGORIES", raising=False)
    assert main(["fetch", "arxiv"]) == 2
    assert capsys.readouterr().err.strip() == (
        "paperrec fetch arxiv: name a --category (e.g. --category cs.LG) or set "
        "PAPERREC_ARXIV_CATEGORIES")
    env.setenv("PAPERREC_ARXIV_CATEGORIES", "cs.LG, cs_LG")
    assert main(["fetch", "arxiv"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("paperrec fetch arxiv: PAPERREC_ARXIV_CATEGORIES: ") and "cs_LG" in err


def test_help_explains_the_harvest(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["fetch", "arxiv", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("cs.LG -> cs:cs:LG", "resumption token", "PAPERREC_ARXIV_OAI_URL",
                  "PAPERREC_ARXIV_DELAY_SECONDS", "Retry-After", "withdrawn",
                  "next rebuild-index", "--from YYYY-MM-DD", "--quiet"):
        assert words in text, words

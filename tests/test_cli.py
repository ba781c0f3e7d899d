"""The `paperrec` command as a new user meets it: summaries, bad input, nothing lost."""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from pathlib import Path

import pytest

from recommender import jobs
from recommender.corpus.store import CorpusStore
from service.cli import main


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PAPERREC_DATA_DIR", str(tmp_path / "var"))
    return tmp_path / "var"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write_jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


def test_ingesting_the_same_file_twice_changes_nothing(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = run(capsys, "ingest", "--sample")[1].splitlines()
    assert first[0] == "ingest: added 38, updated 0, unchanged 0, merged 0, rejected 0"
    # and where its time went, phase by phase (the lookup indexes built once: it was empty)
    assert re.fullmatch(r"ingest took [\d.]+ s \([\d,]+ records/s\): read [\d.]+ s, store "
                        r"[\d.]+ s, keyword index [\d.]+ s, lookup indexes [\d.]+ s", first[1])
    again = run(capsys, "ingest", "--sample")[1].splitlines()
    assert again[0] == "ingest: added 0, updated 0, unchanged 38, merged 0, rejected 0"
    assert "lookup indexes" not in again[1]


def test_a_changed_abstract_updates_the_paper(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "papers.jsonl"
    write_jsonl(path, [{"id": "a1", "title": "Graph nets", "abstract": "Old text about graphs."},
                       {"id": "a2", "title": "Sparse attention", "abstract": "Attention."}])
    run(capsys, "ingest", str(path))
    write_jsonl(path, [{"id": "a1", "title": "Graph nets", "abstract": "New text about graphs."},
                       {"id": "a2", "title": "Sparse attention", "abstract": "Attention."}])
    out = run(capsys, "ingest", str(path))[1]
    assert "added 0, updated 1, unchanged 1, merged 0, rejected 0" in out
    paper = CorpusStore(data_dir / "corpus.sqlite").get("a1")
    assert paper is not None and paper.abstract == "New text about graphs."


def test_bad_records_are_reported_by_line_and_the_rest_is_ingested(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "mixed.jsonl", [
        {"id": "ok1", "title": "A good paper", "abstract": "About sparse models."},
        '{"id": "broken", "title": ',
        {"id": "empty", "title": "", "abstract": ""},
        {"id": "ok2", "title": "Another good paper"},
    ])
    code, out, err = run(capsys, "ingest", str(path))
    assert code == 0
    assert f"{path}:2: not valid JSON" in err
    assert f"{path}:3: paper has no title or abstract" in err
    assert "added 2, updated 0, unchanged 0, merged 0, rejected 2" in out


@pytest.mark.parametrize(("content", "reason"), [
    (b"", "file is empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "file is not text"),
])
def test_unreadable_files_say_why_and_keep_what_is_stored(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    content: bytes, reason: str,
) -> None:
    run(capsys, "ingest", "--sample")
    path = tmp_path / "upload.jsonl"
    path.write_bytes(content)
    code, out, err = run(capsys, "ingest", str(path))
    assert f"{path}:0: {reason}" in err
    assert "added 0, updated 0, unchanged 0, merged 0, rejected 1" in out
    assert CorpusStore(data_dir / "corpus.sqlite").count() == 38


def test_a_missing_file_is_reported(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, err = run(capsys, "ingest", "/no/such/papers.csv")
    assert "/no/such/papers.csv:0: no such file" in err


def test_rebuild_on_an_empty_corpus_says_what_to_do(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "rebuild-index")
    assert code == 1 and "paperrec ingest --sample" in err


@pytest.mark.model
def test_a_second_rebuild_embeds_only_new_or_changed_papers(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "ingest", "--sample")
    code, out, _ = run(capsys, "rebuild-index", "--quiet")
    assert code == 0 and "version 000001: 38 papers, 38 newly embedded" in out
    assert "version 000002: 38 papers, 0 newly embedded" in run(capsys, "rebuild-index")[1]
    path = write_jsonl(tmp_path / "more.jsonl",
                       [{"id": "new1", "title": "A new paper", "abstract": "On graph learning."}])
    run(capsys, "ingest", str(path))
    assert "version 000003: 39 papers, 1 newly embedded" in run(capsys, "rebuild-index")[1]


def test_every_command_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ([], ["ingest"], ["rebuild-index"], ["serve"]):
        with pytest.raises(SystemExit) as exit_:
            main([*command, "--help"])
        assert exit_.value.code == 0
        assert "usage: paperrec" in capsys.readouterr().out


def test_the_sample_corpus_ships_inside_the_package() -> None:
    assert [p.name for p in jobs.sample_files()] == [
        "icml2026-papers-part1.txt", "icml2026-papers-part2.txt"]


def test_a_corpus_from_before_publication_days_is_migrated(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir.mkdir(parents=True)
    old = sqlite3.connect(data_dir / "corpus.sqlite")
    old.execute("CREATE TABLE papers (id TEXT PRIMARY KEY, content_hash TEXT NOT NULL,"
                " record TEXT NOT NULL, added_at REAL NOT NULL, updated_at REAL NOT NULL)")
    record = {"id": "x1", "title": "Old paper", "abstract": "Text.", "date": "2024-03-01"}
    old.execute("INSERT INTO papers VALUES ('x1', 'h', ?, 0, 0)", (json.dumps(record),))
    old.commit()
    old.close()
    rows = list(CorpusStore(data_dir / "corpus.sqlite").index_rows())
    assert rows == [("x1", "h", float((dt.date(2024, 3, 1) - dt.date(1970, 1, 1)).days))]

"""One paper, once: arXiv versions, the same DOI, a conference version of a preprint, and
papers that only look alike (the corpus's SQLite file, the API over the sample corpus)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from recommender.core.config import Settings
from recommender.core.papers import Paper
from recommender.corpus import identity
from recommender.corpus.store import CorpusStore


def paper(pid: str, title: str, authors: list[str] | None = None, **extra: Any) -> Paper:
    return Paper(id=pid, title=title, abstract=f"About {title.lower()}.",
                 authors=authors if authors is not None else ["Ada Lovelace"], **extra)


@pytest.mark.parametrize(("value", "expected"), [
    ("2401.01234v3", "2401.01234"), ("arXiv:2401.01234", "2401.01234"),
    ("https://arxiv.org/abs/2401.01234v2", "2401.01234"),
    ("http://arxiv.org/pdf/2401.01234v1.pdf", "2401.01234"),
    ("hep-th/9901001v2", "hep-th/9901001"), ("pl-2401", None), ("12345", None),
])
def test_arxiv_ids_are_read_from_ids_and_urls_without_their_version(
    value: str, expected: str | None
) -> None:
    assert identity.arxiv_id(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ("10.1145/3292500.3330919", "10.1145/3292500.3330919"),
    ("doi:10.48550/ARXIV.1706.03762", "10.48550/arxiv.1706.03762"),
    ("https://doi.org/10.1109/CVPR.2016.90", "10.1109/cvpr.2016.90"),
    ("http://dx.doi.org/10.1109/CVPR.2016.90", "10.1109/cvpr.2016.90"),
    ("https://example.org/paper", None), ("11.1234/x", None),
])
def test_dois_are_normalised(value: str, expected: str | None) -> None:
    assert identity.doi(value) == expected


def test_tricky_pairs_are_stored_once_or_twice_as_they_should(tmp_path: Path) -> None:
    corpus = CorpusStore(tmp_path / "corpus.sqlite")
    first = corpus.upsert([
        paper("2401.01234v1", "Attention is all you need", ["Ashish Vaswani", "Noam Shazeer"]),
        paper("doi-a", "Deep residual learning", ["Kaiming He"], doi="10.1109/CVPR.2016.90"),
        paper("intro-1", "Introduction", ["Grace Hopper"]),
        paper("untitled-1", "Notes", []),
    ])
    assert (first.added, first.merged) == (4, 0)
    second = corpus.upsert([
        # a new version of the preprint: the same paper, updated
        paper("2401.01234v2", "Attention Is All You Need", ["Ashish Vaswani", "Noam Shazeer"]),
        # the same DOI from another source, written as a URL
        paper("other-source", "Deep Residual Learning for Image Recognition", ["K. He"],
              url="https://doi.org/10.1109/cvpr.2016.90"),
        # the conference version: same title, other punctuation, same first author
        paper("neurips-17", "Attention is all you need.", ["Vaswani, Ashish"],
              doi="10.5555/3295222.3295349"),
        # a different paper with the same title (another first author): a paper of its own
        paper("intro-2", "Introduction", ["Alan Turing"]),
        # without authors a title alone never joins two records
        paper("untitled-2", "Notes", []),
    ])
    assert (second.added, second.updated, second.merged) == (2, 1, 2)
    assert corpus.count() == 6
    stored = corpus.get("2401.01234v1")
    assert stored is not None and stored.title == "Attention Is All You Need"  # v2's
    for alias in ("2401.01234v2", "neurips-17"):
        assert corpus.resolve(alias) == "2401.01234v1"
        assert corpus.get(alias) == stored  # any id finds it, under the stored id
    resnet = corpus.get("other-source")
    assert resnet is not None and resnet.id == "doi-a"
    assert resnet.title == "Deep residual learning"  # a DOI duplicate adds ids, not text
    assert corpus.resolve("intro-2") == "intro-2" and corpus.resolve("untitled-2") == "untitled-2"
    assert corpus.resolve("no-such-paper") is None

    again = corpus.upsert([paper("neurips-17", "Attention is all you need.", ["Vaswani, Ashish"],
                                 doi="10.5555/3295222.3295349")])
    assert (again.added, again.updated, again.merged) == (0, 0, 1) and corpus.count() == 6
    corpus.close()
    reopened = CorpusStore(tmp_path / "corpus.sqlite")  # the identities persist
    assert reopened.resolve("neurips-17") == "2401.01234v1"


def test_a_corpus_written_before_duplicates_were_detected_learns_its_keys(
    tmp_path: Path
) -> None:
    path = tmp_path / "corpus.sqlite"
    corpus = CorpusStore(path)
    corpus.upsert([paper("2401.01234", "Attention is all you need", ["Ashish Vaswani"])])
    corpus.close()
    import sqlite3

    with sqlite3.connect(path) as db:  # as an older paperrec left it
        db.execute("DELETE FROM identities")
    reopened = CorpusStore(path)
    counts = reopened.upsert([paper("2401.01234v5", "Attention is all you need", ["A. Vaswani"])])
    assert counts.added == 0 and reopened.count() == 1


def test_a_duplicate_is_never_recommended_twice_and_answers_to_both_ids(
    client: FlaskClient, sample_settings: Settings, like: Any, ingest: Any, rebuild: Any,
    hashing_embedder: Any, paper_ids_about: Any, tmp_path: Path,
) -> None:
    fed = paper_ids_about(sample_settings, "federated")
    sample = client.get(f"/v1/papers/{fed[0]}").json
    record = {"id": "2511.00001", "title": "FedScar: federated optimization, corrected",
              "abstract": sample["abstract"], "authors": ["Ada Lovelace", "Alan Turing"]}
    files = tmp_path / "preprint.jsonl", tmp_path / "proceedings.jsonl"
    files[0].write_text(json.dumps(record) + "\n")
    files[1].write_text(json.dumps({  # the camera-ready version: other case and punctuation
        **record, "id": "venue-copy", "title": "FEDSCAR - Federated Optimization, Corrected.",
        "doi": "10.5555/venue.2026.1"}) + "\n")
    assert ingest(sample_settings, [files[0]]).added == 1
    summary = ingest(sample_settings, [files[1]])
    assert (summary.added, summary.merged) == (0, 1)
    rebuild(sample_settings, embedder=hashing_embedder)

    assert client.get("/v1/papers/venue-copy").json["id"] == "2511.00001"
    liked = client.put("/v1/users/ada/feedback/venue-copy", json={"signal": "like"})
    assert liked.status_code == 200 and liked.json["paper_id"] == "2511.00001"
    like(client, "bob", fed[0])
    items = client.get("/v1/users/bob/recommendations?k=40").json["items"]
    ids = [item["paper_id"] for item in items]
    assert "2511.00001" in ids and "venue-copy" not in ids and len(ids) == len(set(ids))
    assert [i["paper_id"] for i in client.get("/v1/users/ada/feedback").json["items"]] == [
        "2511.00001"]
    assert client.delete("/v1/users/ada/feedback/venue-copy").status_code == 204

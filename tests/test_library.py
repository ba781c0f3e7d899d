"""A researcher's library: imported from BibTeX, RIS, CSL-JSON or a list of ids as likes (the
corpus papers matched, the others added), counted in the very next reading list, and exported
back as a file that imports to the same likes."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from recommender.core.config import Settings
from recommender.core.papers import Paper
from recommender.corpus.library import MAX_ENTRIES, parse_library
from recommender.corpus.store import CorpusStore
from service.api.library import MAX_LIBRARY_BYTES
from service.cli import main

Like = Callable[..., None]
PapersAbout = Callable[[Settings, str], list[str]]
BIBTEX = "application/x-bibtex"
RIS = "application/x-research-info-systems"
CSL = "application/vnd.citationstyles.csl+json"

KNOWN_DOI = Paper(id="known-doi", title="Robust Estimation of Heavy Tails",
                  abstract="We estimate heavy-tailed distributions robustly.",
                  authors=["Grace Hopper"], year=2021, doi="10.5555/Known.1")
KNOWN_ARXIV = Paper(id="2401.01234", title="Sparse Mixtures of Experts",
                    abstract="Routing tokens to experts.", authors=["Alan Turing"], year=2024)

LIBRARY_BIB = r"""@article{mueller2020,
  title = {{\"U}ber {BERT}: Caf\'e Models for {T}ransformers},
  author = {M{\"u}ller, Hans and Jane Doe},
  year = {2020},
  abstract = {We study caf\'e models.}
}

@misc{vaswani2017attention,
  title = {Attention Is All You Need},
  author = {Vaswani, Ashish and Shazeer, Noam},
  eprint = {1706.03762v7},
  archivePrefix = {arXiv},
  primaryClass = {cs.CL},
  year = {2017}
}

@inproceedings{hopper2021,
  title = {Robust estimation of heavy tails},
  author = {Hopper, Grace},
  doi = {10.5555/known.1},
  booktitle = {Proceedings},
  year = {2021}
}

@article{broken,
  title = {This entry never closes

@article{nothing, year = {2019}}

@article{preprint,
  title = {Sparse Mixtures of Experts},
  author = {Turing, Alan},
  journal = {arXiv preprint arXiv:2401.01234},
  year = {2024}
}
"""


@pytest.fixture
def corpus_settings(sample_settings: Settings) -> Settings:
    """The sample corpus with two papers more: one with a DOI, one with an arXiv id (in the
    corpus, not in the index)."""
    CorpusStore(sample_settings.corpus_path).upsert([KNOWN_DOI, KNOWN_ARXIV])
    return sample_settings


@pytest.fixture
def lib_client(make_app: Callable[[Settings], Flask], corpus_settings: Settings) -> FlaskClient:
    return make_app(corpus_settings).test_client()


def post(client: FlaskClient, user: str, body: str | bytes, content_type: str) -> dict:
    response = client.post(f"/v1/users/{user}/library", data=body, content_type=content_type)
    assert response.status_code == 200, response.json
    return response.json


def ids(items: list[dict]) -> list[str]:
    return [item["paper_id"] for item in items]


def test_bibtex_import_matches_adds_decodes_and_reports_the_malformed(
    lib_client: FlaskClient,
) -> None:
    answer = post(lib_client, "ada", LIBRARY_BIB, BIBTEX)
    assert ids(answer["matched"]) == ["known-doi", "2401.01234"]  # by DOI, by arXiv id
    assert [m["entry"] for m in answer["matched"]] == ["hopper2021", "preprint"]
    added = {item["entry"]: item["paper_id"] for item in answer["added"]}
    assert added["vaswani2017attention"] == "1706.03762"
    assert set(added) == {"mueller2020", "vaswani2017attention"}
    rejected = {item["entry"]: item for item in answer["rejected"]}
    assert set(rejected) == {"broken", "nothing"}
    assert rejected["broken"]["line"] == 25 and "malformed BibTeX" in rejected["broken"]["reason"]
    assert rejected["nothing"]["reason"] == "no title, arXiv id or DOI to find the paper by"
    assert answer["already_liked"] == [] and answer["liked"] == 4
    paper = lib_client.get(f"/v1/papers/{added['mueller2020']}?user_id=ada").json
    assert paper["title"] == "Über BERT: Café Models for Transformers"
    assert paper["authors"] == ["Hans Müller", "Jane Doe"] and paper["year"] == 2020
    assert paper["abstract"] == "We study café models."
    arxiv = lib_client.get("/v1/papers/1706.03762?user_id=ada").json
    assert arxiv["url"] == "https://arxiv.org/abs/1706.03762"
    liked = {f["paper_id"] for f in lib_client.get("/v1/users/ada/feedback").json["items"]}
    assert liked == {"known-doi", "2401.01234", "1706.03762", added["mueller2020"]}


def test_importing_the_same_file_again_changes_nothing(
    lib_client: FlaskClient, corpus_settings: Settings
) -> None:
    post(lib_client, "ada", LIBRARY_BIB, BIBTEX)
    papers = CorpusStore(corpus_settings.corpus_path).count()
    again = post(lib_client, "ada", LIBRARY_BIB, BIBTEX)
    assert again["matched"] == [] and again["added"] == []
    assert len(again["already_liked"]) == 4 and again["liked"] == 4
    assert CorpusStore(corpus_settings.corpus_path).count() == papers


def test_ris_file(lib_client: FlaskClient) -> None:
    ris = ("TY  - JOUR\nID  - hopper\nTI  - Robust Estimation of Heavy Tails\n"
           "AU  - Hopper, Grace\nPY  - 2021///\nDO  - https://doi.org/10.5555/KNOWN.1\nER  - \n"
           "\n"
           "TY  - JOUR\nTI  - Graph Neural Networks for Molecules\nAU  - Curie, Marie\n"
           "AU  - Pierre Curie\nDA  - 2022/05/17\nAB  - Message passing on molecular graphs.\n"
           "UR  - https://example.org/gnn\nER  - \n"
           "TY  - JOUR\nAB  - a record with no title and no id\nER  - \n")
    answer = post(lib_client, "ris-user", ris, RIS)
    assert ids(answer["matched"]) == ["known-doi"]
    assert [a["line"] for a in answer["added"]] == [9]
    assert [(r["index"], r["line"]) for r in answer["rejected"]] == [(3, 17)]
    paper = lib_client.get(f"/v1/papers/{answer['added'][0]['paper_id']}?user_id=ris-user").json
    assert paper["authors"] == ["Marie Curie", "Pierre Curie"]
    assert paper["date"] == "2022-05-17" and paper["url"] == "https://example.org/gnn"


def test_csl_json_file(lib_client: FlaskClient) -> None:
    items = [
        {"id": "http://zotero.org/users/1/items/AB", "type": "article",
         "title": "Sparse mixtures of experts", "author": [{"family": "Turing", "given": "Alan"}],
         "DOI": "10.48550/arXiv.2401.01234", "issued": {"date-parts": [[2024, 1, 3]]}},
        {"id": "x2", "type": "article-journal", "title": "Diffusion Models for Proteins",
         "author": [{"literal": "The Protein Consortium"}], "issued": {"date-parts": [[2023]]},
         "abstract": "Denoising diffusion over protein backbones."},
        {"id": "x3", "type": "article"},
        "not an item",
    ]
    answer = post(lib_client, "csl-user", json.dumps(items), CSL)
    assert ids(answer["matched"]) == ["2401.01234"]
    assert [a["entry"] for a in answer["added"]] == ["x2"]
    assert [r["index"] for r in answer["rejected"]] == [3, 4]
    paper = lib_client.get(f"/v1/papers/{answer['added'][0]['paper_id']}?user_id=csl-user").json
    assert paper["authors"] == ["The Protein Consortium"] and paper["year"] == 2023


def test_a_plain_list_of_arxiv_ids_and_dois(lib_client: FlaskClient) -> None:
    listing = ("# my reading list\n"
               "arXiv:2401.01234v2\n"
               "https://doi.org/10.5555/KNOWN.1\n"
               "\n"
               "2402.99999\n"
               "not an id\n")
    answer = post(lib_client, "ids-user", listing, "text/plain; charset=utf-8")
    assert ids(answer["matched"]) == ["2401.01234", "known-doi"]
    assert [m["line"] for m in answer["matched"]] == [2, 3]
    assert answer["added"] == []
    rejected = {r["entry"]: r for r in answer["rejected"]}
    assert rejected["2402.99999"]["line"] == 5
    assert "not in the corpus" in rejected["2402.99999"]["reason"]
    assert rejected["not an id"]["reason"] == "not an arXiv id or a DOI"
    assert answer["liked"] == 2


def test_multipart_upload_takes_the_format_from_the_extension(lib_client: FlaskClient) -> None:
    response = lib_client.post("/v1/users/ada/library", content_type="multipart/form-data",
                               data={"file": (io.BytesIO(LIBRARY_BIB.encode()), "My Library.bib")})
    assert response.status_code == 200, response.json
    assert response.json["format"] == "bibtex" and response.json["liked"] == 4
    missing = lib_client.post("/v1/users/ada/library", content_type="multipart/form-data",
                              data={"other": (io.BytesIO(b"x"), "a.bib")})
    assert missing.status_code == 400 and "field `file`" in missing.json["error"]["message"]


def test_too_large_unsupported_and_unreadable_files_are_refused(lib_client: FlaskClient) -> None:
    big = lib_client.post("/v1/users/ada/library", data=b"x" * (MAX_LIBRARY_BYTES + 1),
                          content_type="text/plain")
    assert big.status_code == 413 and big.json["error"]["code"] == "too_large"
    many = "".join(f"10.5555/n{i}\n" for i in range(MAX_ENTRIES + 1))
    too_many = lib_client.post("/v1/users/ada/library", data=many, content_type="text/plain")
    assert too_many.status_code == 413
    assert f"at most {MAX_ENTRIES}" in too_many.json["error"]["message"]
    pdf = lib_client.post("/v1/users/ada/library", data=b"%PDF-1.7", content_type="application/pdf")
    assert pdf.status_code == 415 and pdf.json["error"]["code"] == "unsupported_media_type"
    assert "application/x-bibtex" in pdf.json["error"]["message"]
    bad_json = lib_client.post("/v1/users/ada/library", data="{not json", content_type=CSL)
    assert bad_json.status_code == 400 and "not valid JSON" in bad_json.json["error"]["message"]
    empty = lib_client.post("/v1/users/ada/library", data="", content_type=BIBTEX)
    assert empty.status_code == 400 and "empty" in empty.json["error"]["message"]
    assert lib_client.get("/v1/users/ada/feedback").json["items"] == []


def test_the_next_reading_list_counts_imported_papers_not_yet_indexed(
    lib_client: FlaskClient, corpus_settings: Settings, paper_ids_about: PapersAbout
) -> None:
    federated = paper_ids_about(corpus_settings, "federated")
    bib = "\n".join(
        f"@article{{fed{i}, title = {{Federated learning with clients {i}}}, author = "
        f"{{Doe, Jane}}, abstract = {{Federated learning across clients: federated "
        f"averaging of client updates, federated optimisation, privacy of clients {i}.}}}}"
        for i in range(3))
    answer = post(lib_client, "newcomer", bib, BIBTEX)
    assert len(answer["added"]) == 3
    for item in answer["added"]:  # not in the index: no rebuild has run
        assert lib_client.get(f"/v1/papers/{item['paper_id']}/similar?user_id=newcomer"
                              ).status_code == 404
    reading = lib_client.get("/v1/users/newcomer/recommendations?k=4").json
    assert reading["personalized"] is True
    top = [item["paper_id"] for item in reading["items"]]
    assert set(top[:3]) <= set(federated), top
    imported = {item["paper_id"] for item in answer["added"]}
    first = reading["items"][0]
    assert first["because"] and set(first["because"]) <= imported  # the reason names them
    assert first["reason"].startswith("similar to 'Federated learning with clients")
    cold = lib_client.get("/v1/users/nobody/recommendations?k=4").json
    assert cold["personalized"] is False
    # why-not scores as the list does (asked by a twin with nothing served yet)
    post(lib_client, "twin", bib, BIBTEX)
    why = lib_client.get(f"/v1/users/twin/recommendations/why-not/{top[1]}?k=4").json
    assert why["rank"] == 2 and why["in_list"] is True and why["personalized"] is True


@pytest.mark.parametrize("fmt, media, extension", [
    ("bibtex", BIBTEX, "bib"), ("ris", RIS, "ris"), ("csl-json", CSL, "json")])
def test_export_then_import_gives_the_same_likes(
    lib_client: FlaskClient, corpus_settings: Settings, like: Like,
    paper_ids_about: PapersAbout, fmt: str, media: str, extension: str,
) -> None:
    post(lib_client, "ada", LIBRARY_BIB, BIBTEX)  # arXiv, DOI and LaTeX papers
    for paper in paper_ids_about(corpus_settings, "federated")[:2]:  # no author, no DOI
        like(lib_client, "ada", paper)
    before = {f["paper_id"] for f in lib_client.get("/v1/users/ada/feedback").json["items"]}
    exported = lib_client.get(f"/v1/users/ada/library?format={fmt}")
    assert exported.status_code == 200
    assert exported.mimetype == media
    assert exported.headers["Content-Disposition"] == (
        f'attachment; filename="paperrec-ada.{extension}"')
    text = exported.get_data(as_text=True)
    assert len(parse_library(text, fmt).entries) == len(before) == 6  # type: ignore[arg-type]
    assert "1706.03762" in text and "10.5555/Known.1" in text
    answer = post(lib_client, "bob", text, media)
    assert answer["added"] == [] and answer["rejected"] == []
    after = {f["paper_id"] for f in lib_client.get("/v1/users/bob/feedback").json["items"]}
    assert after == before


def test_the_bibtex_export_has_the_fields_a_reference_manager_reads(
    lib_client: FlaskClient,
) -> None:
    post(lib_client, "ada", LIBRARY_BIB, BIBTEX)
    text = lib_client.get("/v1/users/ada/library").get_data(as_text=True)
    vaswani = text[text.index("@misc{1706.03762"):]
    vaswani = vaswani[:vaswani.index("\n}")]
    for field in ("title = {{Attention Is All You Need}}", "author = {Ashish Vaswani and "
                  "Noam Shazeer}", "year = {2017}", "eprint = {1706.03762}",
                  "archivePrefix = {arXiv}", "url = {https://arxiv.org/abs/1706.03762}"):
        assert field in vaswani
    assert 'M{\\"u}ller' in text and "doi = {10.5555/Known.1}" in text
    assert lib_client.get("/v1/users/ada/library?format=pdf").status_code == 400


@pytest.mark.model  # the CLI embeds the imported papers with the configured model
def test_the_cli_imports_and_exports(
    corpus_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PAPERREC_DATA_DIR", str(corpus_settings.data_dir))
    monkeypatch.setenv("REDIS_URL", str(corpus_settings.redis_url))
    monkeypatch.setenv("PAPERREC_REDIS_NAMESPACE", corpus_settings.redis_namespace)
    listing = tmp_path / "reading.txt"
    listing.write_text("2401.01234\n10.5555/known.1\n2402.99999\n")
    assert main(["import-library", "--user", "cli-user", str(listing)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == ("import-library: matched 2, added 0, already liked 0, rejected 1; "
                           "cli-user likes 2 papers")
    assert f"{listing}:line 3: 2402.99999: not in the corpus" in err
    target = tmp_path / "out.ris"
    assert main(["export-library", "--user", "cli-user", "--format", "ris", "-o",
                 str(target)]) == 0
    records = parse_library(target.read_text(), "ris").entries
    assert sorted(entry.source_id or "" for entry in records) == ["2401.01234", "known-doi"]
    assert main(["import-library", "--user", "cli-user", "--format", "ris", str(target)]) == 0
    assert "already liked 2" in capsys.readouterr().out

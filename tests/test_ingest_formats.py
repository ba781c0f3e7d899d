"""Reading paper files as a user feeds them in: paper lists, JSONL, CSV and broken files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import recommender
from recommender.core.errors import InvalidInput
from recommender.core.ids import validate_paper_id
from recommender.core.papers import Paper, Rejection
from recommender.corpus.formats import read_papers
from recommender.corpus.paperlist import clean_display_text, derive_title

SAMPLE_DIR = Path(recommender.__file__).parent / "corpus" / "sample_data"


def split(results: list[Paper | Rejection]) -> tuple[list[Paper], list[Rejection]]:
    papers = [r for r in results if isinstance(r, Paper)]
    return papers, [r for r in results if isinstance(r, Rejection)]


@pytest.fixture
def sample_papers(tmp_path: Path) -> list[Paper]:
    papers: list[Paper] = []
    for sample in sorted(SAMPLE_DIR.glob("icml2026-papers-part*.txt")):
        copy = shutil.copy(sample, tmp_path / sample.name)
        found, rejected = split(list(read_papers(copy)))
        assert rejected == []
        papers += found
    return papers


def test_sample_paper_lists_read_into_38_papers_with_readable_titles(
    sample_papers: list[Paper],
) -> None:
    assert len(sample_papers) == 38
    for paper in sample_papers:
        assert paper.title and len(paper.title) <= 100, paper.title
        assert "**" not in paper.abstract and "\\%" not in paper.abstract
        assert "**" not in paper.title and "$" not in paper.title
    piaa = next(p for p in sample_papers if "**PIAA**" in p.text)
    assert piaa.title == "PIAA: Patch-level Inference followed by Adaptive Aggregation"
    assert "Patch-level Inference followed by Adaptive Aggregation" in piaa.abstract
    assert "6% mAP" in piaa.abstract


def test_code_urls_are_extracted_without_trailing_punctuation(sample_papers: list[Paper]) -> None:
    tgn = next(p for p in sample_papers if p.text.startswith("Temporal graphs are ubiquitous"))
    assert tgn.code_urls == ["https://github.com/yazhengliu/MemExplainer"]
    assert "https://github.com/yazhengliu/MemExplainer" in tgn.abstract
    nara = next(p for p in sample_papers if "(NaRA)" in p.text)
    assert nara.title == "NaRA: Noise-aware Low-Rank Adaptation"
    assert nara.code_urls == ["https://github.com/generaldi/NaRA"]  # markdown link, deduplicated
    cortex = next(p for p in sample_papers if "CortexMAE" in p.text)
    assert cortex.code_urls == ["https://github.com/MedARC-AI/CortexMAE",
                                "https://github.com/MedARC-AI/Brainmarks"]
    int_vs_fp = next(p for p in sample_papers if "INT_vs_FP" in p.text)
    assert int_vs_fp.code_urls == ["https://github.com/ChenMnZ/INT_vs_FP"]  # from \url{...}


def test_ids_are_content_derived_and_stable(tmp_path: Path) -> None:
    sample = shutil.copy(SAMPLE_DIR / "icml2026-papers-part1.txt", tmp_path / "a.txt")
    first, _ = split(list(read_papers(sample)))
    again, _ = split(list(read_papers(sample)))
    assert [p.id for p in first] == [p.id for p in again]
    assert len({p.id for p in first}) == len(first)
    assert all(p.id.startswith("pl-") and len(p.id) == 19 for p in first)


def test_paper_list_without_header_and_with_a_stray_line(tmp_path: Path) -> None:
    abstract = ("We study the robustness of tiny models. Our method, called **TinyRobust**, "
                "improves accuracy by 5\\% on $\\mathcal{O}(n)$ benchmarks.")
    path = tmp_path / "list.txt"
    path.write_text(f"{abstract}\n\n---\n\n\nSecond abstract about graphs and\nthings at length.\n",
                    encoding="utf-8")
    papers, rejected = split(list(read_papers(path)))
    second = "Second abstract about graphs and things at length."
    assert [p.text for p in papers] == [abstract, second]
    assert papers[0].abstract == ("We study the robustness of tiny models. Our method, called "
                                  "TinyRobust, improves accuracy by 5% on O(n) benchmarks.")
    too_short = "paragraph too short to be an abstract (1 characters)"
    assert rejected == [Rejection(str(path), 3, too_short)]


def test_display_text_and_titles_drop_markup() -> None:
    assert clean_display_text("***P**atch-level **I**nference*") == "Patch-level Inference"
    assert clean_display_text("\\textbf{bold} and \\emph{it}, 6\\% on~$\\mathcal{O}(n)$") == (
        "bold and it, 6% on O(n)")
    long_sentence = "Graph models " + "really " * 30 + "matter."
    title = derive_title(long_sentence)
    assert title.endswith("…") and len(title) <= 100 and title.startswith("Graph models really")


@pytest.mark.parametrize(("abstract", "title"), [
    # the contribution it states, cut at a clause, examples dropped
    ("Code models hallucinate. We propose a selective code generator that abstains from "
     "uncertain generations – based on the functional correctness evaluated by generated unit "
     "tests – to control the error rate.",
     "A selective code generator that abstains from uncertain generations"),
    ("Removal matters. Here we introduce a novel concept removal method for frontier "
     "diffusion and image autoregressive models, such as, SD3.5, Flux, and Infinity.",
     "A concept removal method for frontier diffusion and image autoregressive models"),
    ("We study the problem of training self-supervised foundation models for functional "
     "MRI. It is hard.", "Training self-supervised foundation models for functional MRI"),
    # never cut after a word that leads on ("... a comparison oracle that")
    ("We study gradient testing and gradient estimation of smooth functions using only a "
     "comparison oracle that, given two points, indicates which one has the larger value.",
     "Gradient testing and gradient estimation of smooth functions"),
    # a named method still comes first
    ("We propose FedScar, a federated optimization framework that corrects drift.",
     "FedScar: A federated optimization framework that corrects drift"),
    # "propose to ...": no noun phrase to stand as a title, so the first sentence
    ("Lists are long. We propose to cut them.", "Lists are long"),
])
def test_derived_titles_read_as_titles(abstract: str, title: str) -> None:
    assert derive_title(abstract) == title


ARXIV_RECORD = {
    "id": "2101.00001v2",
    "submitter": "Ann Smith",
    "authors": "A. Smith, B. Jones and C. Wu",
    "title": "A Study of\n  Things  in $\\mathbb{R}^n$",
    "abstract": "  We study\nthings.\n  A lot of them, at 50\\% cost.\n",
    "categories": "cs.LG stat.ML",
    "versions": [{"version": "v1"}],
    "update_date": "2021-01-05",
}


def test_jsonl_with_arxiv_snapshot_fields(tmp_path: Path) -> None:
    old_style = {"id": "hep-th/9901001", "title": "Strings", "authors": ["X. Y", "Z. W"],
                 "year": "1999", "categories": ["hep-th"]}
    path = tmp_path / "arxiv.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (ARXIV_RECORD, old_style)) + "\n\n",
                    encoding="utf-8")
    (paper, old), rejected = split(list(read_papers(path)))
    assert rejected == []
    assert paper.id == "2101.00001v2" and paper.url == "https://arxiv.org/abs/2101.00001v2"
    assert paper.title == "A Study of Things in ℝ^n"
    assert paper.abstract == "We study things. A lot of them, at 50% cost."
    assert paper.text == (
        "A Study of Things in $\\mathbb{R}^n$\nWe study things. A lot of them, at 50\\% cost.")
    assert paper.authors == ["A. Smith", "B. Jones", "C. Wu"]
    assert paper.categories == ["cs.LG", "stat.ML"]
    assert (paper.date, paper.year) == ("2021-01-05", 2021)
    assert (old.url, old.year, old.authors) == ("https://arxiv.org/abs/hep-th/9901001", 1999,
                                                ["X. Y", "Z. W"])


def test_jsonl_bad_records_are_rejected_with_line_numbers_and_the_rest_read(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": 7, "title": "Good paper one"}),
        '{"id": "8", "title": "broken',
        "",
        json.dumps(["not", "an", "object"]),
        json.dumps({"id": "9", "title": "  ", "abstract": ""}),
        json.dumps({"id": "bad id!", "title": "Has a bad id"}),
        json.dumps({"title": "No id, abstract only", "year": 2020}),
        json.dumps({"id": "10", "title": "Bad date", "date": "2020-13-45"}),
        json.dumps({"id": "11", "title": "Bad year", "year": "soon"}),
    ]
    path = tmp_path / "papers.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    papers, rejected = split(list(read_papers(path)))
    assert [p.id for p in papers][0] == "7"
    assert papers[1].id.startswith("pl-") and papers[1].year == 2020
    assert [(r.line, r.reason.split(":")[0]) for r in rejected] == [
        (2, "not valid JSON"),
        (4, "expected a JSON object, got an array"),
        (5, "paper has no title or abstract"),
        (6, "invalid paper id 'bad id!'"),
        (8, "field 'date' must be a date written YYYY-MM-DD, got '2020-13-45'"),
        (9, "field 'year' must be a four-digit year, got 'soon'"),
    ]
    assert all(r.source == str(path) for r in rejected)


def test_csv_with_quoted_commas_and_newlines(tmp_path: Path) -> None:
    path = tmp_path / "papers.csv"
    path.write_text(
        'id,title,abstract,authors,year\n'
        '1,"Commas, everywhere","First line,\nsecond line.","A. Smith, B. Jones",2020\n'
        '\n'
        '2,Plain,Plain abstract,,1999\n'
        '3,Bad year,Text,,nineteen\n',
        encoding="utf-8",
    )
    papers, rejected = split(list(read_papers(path)))
    assert [(p.id, p.title, p.abstract, p.authors, p.year) for p in papers] == [
        ("1", "Commas, everywhere", "First line, second line.", ["A. Smith", "B. Jones"], 2020),
        ("2", "Plain", "Plain abstract", [], 1999),
    ]
    assert [(r.line, r.reason) for r in rejected] == [
        (6, "field 'year' must be a four-digit year, got 'nineteen'")]


def test_format_is_sniffed_when_the_extension_says_nothing(tmp_path: Path) -> None:
    jsonl = tmp_path / "export.txt"
    jsonl.write_text(json.dumps(ARXIV_RECORD) + "\n", encoding="utf-8-sig")
    csv_file = tmp_path / "export"
    csv_file.write_text("title,abstract\nA title,An abstract\n", encoding="utf-8")
    assert [p.id for p in read_papers(jsonl) if isinstance(p, Paper)] == ["2101.00001v2"]
    assert [p.title for p in read_papers(csv_file) if isinstance(p, Paper)] == ["A title"]


@pytest.mark.parametrize(("name", "content", "reason"), [
    ("empty.txt", b"", "file is empty"),
    ("blank.jsonl", b"  \n\n\t\n", "file is empty"),
    ("image.txt", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "file is not text"),
    ("latin1.csv", "title\nCaf\xe9".encode("latin-1"), "file is not text"),
    ("missing.jsonl", None, "no such file"),
    ("array.json", b'[\n  {"title": "x"}\n]\n', "file is one JSON array; expected JSON Lines"),
])
def test_whole_file_problems_are_one_line_zero_rejection(
    tmp_path: Path, name: str, content: bytes | None, reason: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    [rejection] = list(read_papers(path))
    assert isinstance(rejection, Rejection) and rejection.line == 0
    assert rejection.reason.startswith(reason)
    assert str(rejection).startswith(f"{path}:0: ")


def test_a_directory_is_rejected(tmp_path: Path) -> None:
    [rejection] = list(read_papers(tmp_path))
    assert rejection == Rejection(str(tmp_path), 0, "is a directory, not a file")


def test_paper_id_rule_message_says_what_is_allowed() -> None:
    assert validate_paper_id("hep-th/9901001") == "hep-th/9901001"
    for bad in ("", "-leading", "has space", "x" * 129):
        with pytest.raises(InvalidInput, match="128") as info:
            validate_paper_id(bad)
        assert "letters, digits" in info.value.message


def test_jsonl_reads_integer_ids_of_any_length_and_refuses_nan_years(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text('{"id": 123456789012345678901234567890, "title": "Big ids", "abstract": "A"}\n'
                    '{"id": "x1", "title": "Bad", "abstract": "y", "year": NaN}\n')
    first, second = read_papers(path)
    assert isinstance(first, Paper) and first.id == "123456789012345678901234567890"
    assert second == Rejection(str(path), 2, "field 'year' must be a four-digit year, got nan")

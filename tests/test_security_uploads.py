"""Threat: one reader's upload that fills the corpus with what no paper holds, or costs a
worker seconds to read.

Each field of an uploaded entry has a limit; an entry past one is rejected with the reason
(reported, not stored) and the file's other entries are imported. In BibTeX the check comes
before the LaTeX is decoded: a 210,000-character title of accents used to be decoded in full.
"""

from __future__ import annotations

import json
import time

from recommender.corpus.library import (
    MAX_ABSTRACT,
    MAX_AUTHORS,
    MAX_TITLE,
    parse_library,
)

GOOD = "@article{good,\n title = {Graph nets},\n author = {Doe, Jane}\n}\n"


def test_a_huge_latex_title_is_refused_before_it_is_decoded() -> None:
    accents = r"\'{e}\"{o}" * 21_000  # 210,000 characters of LaTeX accents
    started = time.perf_counter()
    parsed = parse_library(f"@article{{huge,\n title = {{{accents}}}\n}}\n" + GOOD, "bibtex")
    assert time.perf_counter() - started < 3  # decoding it took seconds
    assert [e.paper.title for e in parsed.entries] == ["Graph nets"]
    assert [(r.label, r.reason) for r in parsed.rejected] == [
        ("huge", f"the title is longer than {MAX_TITLE:,} characters")]


def test_each_field_has_its_limit_in_every_format() -> None:
    items = [{"id": "a", "title": "Fine", "abstract": "x" * (MAX_ABSTRACT + 1)},
             {"id": "b", "title": "Crowded", "author": [{"family": f"A{i}"}
                                                       for i in range(MAX_AUTHORS + 1)]},
             {"id": "c", "title": "Kept"}]
    parsed = parse_library(json.dumps(items), "csl-json")
    assert [e.paper.title for e in parsed.entries] == ["Kept"]
    assert [r.reason for r in parsed.rejected] == [
        f"the abstract is longer than {MAX_ABSTRACT:,} characters",
        f"more than {MAX_AUTHORS} authors"]
    ris = f"TY  - JOUR\nTI  - {'t' * (MAX_TITLE + 1)}\nER  - \nTY  - JOUR\nTI  - Ok\nER  - \n"
    parsed = parse_library(ris, "ris")
    assert [e.paper.title for e in parsed.entries] == ["Ok"]
    assert parsed.rejected[0].reason == f"the title is longer than {MAX_TITLE:,} characters"

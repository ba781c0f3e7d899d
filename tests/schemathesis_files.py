"""What a library file of each kind the API reads looks like, for schemathesis (loaded by the
CLI through SCHEMATHESIS_HOOKS in tests/test_openapi.py).

The document names the media types a library import takes (service/api/library.py); a
BibTeX, RIS, CSL-JSON file or a list of ids has a grammar no JSON Schema states, so these
strategies make files of each kind for the fuzzer, as schemathesis provides for file formats.
"""

from __future__ import annotations

import json

import schemathesis
from hypothesis import strategies as st

from recommender.corpus.library import CONTENT_TYPES

TITLES = st.text(alphabet=st.characters(categories=["Lu", "Ll", "Nd"]) | st.just(" "),
                 min_size=1, max_size=60).filter(str.strip)


@st.composite
def bibtex(draw: st.DrawFn) -> bytes:
    titles = draw(st.lists(TITLES, min_size=1, max_size=3))
    return "".join(f"@article{{entry{n},\n  title = {{{title}}},\n}}\n"
                   for n, title in enumerate(titles)).encode()


@st.composite
def ris(draw: st.DrawFn) -> bytes:
    titles = draw(st.lists(TITLES, min_size=1, max_size=3))
    return "".join(f"TY  - JOUR\nTI  - {title}\nER  - \n" for title in titles).encode()


@st.composite
def csl_json(draw: st.DrawFn) -> bytes:
    titles = draw(st.lists(TITLES, max_size=3))
    return json.dumps([{"type": "article-journal", "title": title} for title in titles]).encode()


@st.composite
def ids(draw: st.DrawFn) -> bytes:
    numbers = draw(st.lists(st.integers(1, 99999), min_size=1, max_size=3))
    return "".join(f"arXiv:2401.{number:05d}\n" for number in numbers).encode()


schemathesis.openapi.media_type(CONTENT_TYPES["bibtex"], bibtex())
schemathesis.openapi.media_type(CONTENT_TYPES["ris"], ris())
schemathesis.openapi.media_type(CONTENT_TYPES["csl-json"], csl_json())
schemathesis.openapi.media_type(CONTENT_TYPES["ids"], ids())

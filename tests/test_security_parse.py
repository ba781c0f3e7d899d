"""Threat: one reader's upload exhausts the CPU or memory of the service.

A library file within the limits (10 MB, 20,000 entries, each field's length) could still
cost minutes of a worker: pylatexenc decoded 1 MB of LaTeX accents in 10 s, holding the
worker's GIL (other readers' lists went from 0.09 s to 2.7 s), and @string macros multiplied
what a file holds (a 150,000-character macro named in 20,000 entries: 3 GB). Now:

- the parse counts entries before it reads them, decodes only the pieces that need
  pylatexenc, and has a budget of LaTeX to decode and of text to read per file; past it,
  the rest of the file is rejected with the reason (``recommender.corpus.latex_text``);
- an upload is read in a child process at nice 19, under a memory cap and a deadline, at
  most two per worker at once (``recommender.corpus.bounded_parse``); past the deadline or
  the cap the child is killed and the upload refused (413, saying to split the file).

The limits of the tests' parsers are small so that each test takes seconds; every assert is
on what a reader is told or what is left running, never on how long something took.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from flask import Flask
from flask.testing import FlaskClient
from pylatexenc.latex2text import LatexNodes2Text

from recommender.core.config import Settings
from recommender.core.errors import Busy, InvalidInput, TooCostly, TooLarge
from recommender.corpus.bounded_parse import BoundedParser, ParseLimits
from recommender.corpus.latex_text import MAX_READ, Budget, BudgetSpent, plain_text
from recommender.corpus.library import MAX_ABSTRACT, MAX_ENTRIES, parse_library

CSL = "application/vnd.citationstyles.csl+json"
BIBTEX = "application/x-bibtex"
MB = 2**20


def costliest_bibtex(size: int = 10 * MB) -> str:
    """The costliest BibTeX of LaTeX accents within the limits that we found: entries whose
    titles nest an accent in braces 400 deep, as many as 10 MB holds (12,600). It took
    9.4 s to read in the worker before (and 19 s on 2 busy cores now): bibtexparser and the
    reading step both go through every brace."""
    entry = "@article{k%d,\n title = {" + "{" * 400 + r"\'e" + "}" * 400 + "}\n}\n"
    entries, total = [], 0
    while total < size - 1000:
        entries.append(entry % len(entries))
        total += len(entries[-1])
    return "".join(entries)


def children_reading() -> list[psutil.Process]:
    """This process's children reading a file (``python -m ...bounded_parse``)."""
    return [child for child in psutil.Process().children(recursive=True)
            if "recommender.corpus.bounded_parse" in " ".join(_cmdline(child))]


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:  # it has just exited
        return []


@pytest.fixture
def watched() -> Iterator[Callable[[BoundedParser], dict[int, tuple[int, int, str]]]]:
    """``watch(parser)``: records, by pid, the niceness, the address-space limit and the
    scheduling group (``autogroup``, where Linux has them) of each child of ``parser`` once
    it has set them (the nice last), until the test ends."""
    stop = threading.Event()
    threads = []

    def watch(parser: BoundedParser) -> dict[int, tuple[int, int, str]]:
        seen: dict[int, tuple[int, int, str]] = {}

        def loop() -> None:
            while not stop.is_set():
                for pid in parser.children:
                    try:
                        child = psutil.Process(pid)
                        nice, limit = child.nice(), child.rlimit(psutil.RLIMIT_AS)[0]
                    except psutil.Error:
                        continue
                    if nice:
                        seen[pid] = (nice, limit, autogroup(pid))
                stop.wait(0.01)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        threads.append(thread)
        return seen

    yield watch
    stop.set()
    for thread in threads:
        thread.join()


def test_the_costliest_bibtex_is_refused_at_the_deadline_and_its_child_killed() -> None:
    parser = BoundedParser(ParseLimits(seconds=1))
    with pytest.raises(TooCostly) as refused:
        parser.parse(costliest_bibtex(), "bibtex")
    assert refused.value.status == 413 and refused.value.code == "too_costly"
    assert refused.value.message.startswith("reading the file took more than 1 s, the most "
                                            "one import may take")
    assert refused.value.message.endswith("split it into smaller files and import each")
    assert parser.children == [] and children_reading() == []


def autogroup(pid: int | str) -> str:
    """The scheduling group of a process and its nice ("/autogroup-12 nice 19"), or ""."""
    try:
        return Path(f"/proc/{pid}/autogroup").read_text().strip()
    except OSError:
        return ""


def test_the_child_reads_at_nice_19_under_its_memory_cap(
    watched: Callable[[BoundedParser], dict[int, tuple[int, int, str]]],
) -> None:
    limits = ParseLimits(seconds=4, memory=512 * MB)
    parser = BoundedParser(limits)
    seen = watched(parser)
    with contextlib.suppress(TooCostly):  # as the test above: what matters is how it ran
        parser.parse(costliest_bibtex(), "bibtex")
    [(nice, memory, group)] = seen.values()
    assert (nice, memory) == (19, limits.memory)
    if autogroup("self"):  # nice orders only the processes of one group: its own, at 19
        assert group.endswith(" nice 19") and group.split()[0] != autogroup("self").split()[0]
    assert children_reading() == []


def test_the_memory_cap_refuses_a_memory_bomb_and_reads_a_real_file() -> None:
    parser = BoundedParser(ParseLimits(memory=128 * MB))
    bomb = "[" + "{}," * (10 * MB // 3 - 1) + "{}]"  # 3.5 million objects: 290 MB to parse
    with pytest.raises(TooCostly) as refused:
        parser.parse(bomb, "csl-json")
    assert refused.value.message == ("reading the file needed more than 128 MB, the most one "
                                     "import may use: split it into smaller files and import "
                                     "each")
    parsed = parser.parse("@article{a,\n title = {Caf{\\'e} nets},\n author = {M{\\\"u}ller, "
                          "Hans}\n}\n", "bibtex")
    assert [(e.paper.title, e.paper.authors) for e in parsed.entries] == [
        ("Café nets", ["Hans Müller"])]
    assert children_reading() == []


def test_a_worker_reads_at_most_its_share_of_files_at_once_then_says_busy() -> None:
    parser = BoundedParser(ParseLimits(seconds=4, parallel=1, wait=0.2))
    costly = costliest_bibtex()

    def read_the_costly_file() -> None:
        with contextlib.suppress(TooCostly):  # what matters is that it holds the one child
            parser.parse(costly, "bibtex")

    first = threading.Thread(target=read_the_costly_file)
    first.start()
    while not parser.children and first.is_alive():
        time.sleep(0.01)
    try:
        with pytest.raises(Busy) as busy:
            parser.parse("10.5555/one\n", "ids")
    finally:
        first.join()
    assert busy.value.status == 503 and busy.value.retry_after
    assert busy.value.message == ("1 library files are being read here now, the most at once; "
                                  "send yours again in a little while")
    assert [e.paper.doi for e in parser.parse("10.5555/one\n", "ids").entries] == [
        "10.5555/one"]


def test_refusals_of_the_parse_come_back_from_the_child_as_they_are() -> None:
    parser = BoundedParser()
    with pytest.raises(InvalidInput, match="nested too deep to be CSL-JSON"):
        parser.parse("[" * 100_000 + "]" * 100_000, "csl-json")  # a RecursionError: a 500
    blocks = "".join(f"@misc{{k{i}, title = {{t}}}}\n" for i in range(2 * MAX_ENTRIES + 1))
    with pytest.raises(TooLarge, match=f"the file has {2 * MAX_ENTRIES + 1} BibTeX blocks"):
        parser.parse(blocks, "bibtex")


def test_a_csl_upload_nested_deep_is_a_400_not_a_500(
    make_app: Callable[[Settings], Flask], settings: Settings,
) -> None:
    client: FlaskClient = make_app(settings).test_client()
    deep = client.post("/v1/users/ada/library", data="[" * 50_000 + "]" * 50_000,
                       content_type=CSL)
    assert deep.status_code == 400, deep.json  # was a 500: RecursionError in the worker
    assert deep.json["error"]["message"] == ("the file's JSON is nested too deep to be "
                                             "CSL-JSON (a JSON array of items)")


def test_string_macros_cannot_make_a_file_hold_more_than_it_reads() -> None:
    macro = "a" * (MAX_ABSTRACT - 100)
    entries = "".join(f"@misc{{k{i}, title = {{Paper {i}}}, abstract = m}}\n"
                      for i in range(MAX_ENTRIES))  # 40 bytes each, 19,900 characters read
    parsed = parse_library(f"@string{{m = {{{macro}}}}}\n" + entries, "bibtex")
    assert len(parsed.entries) == MAX_READ // (len(macro) + 14)  # not 20,000 of them
    assert sum(len(e.paper.abstract) for e in parsed.entries) <= MAX_READ
    first_refused = parsed.rejected[0]
    assert first_refused.index == len(parsed.entries) + 1
    assert first_refused.reason == (
        f"not read: the file's entries hold more than {MAX_READ:,} characters of text "
        "(titles, abstracts, names, with their @string macros expanded), more than one "
        "import reads; import the entries from here on as another file")
    assert {r.reason for r in parsed.rejected} == {first_refused.reason}
    assert len(parsed.entries) + len(parsed.rejected) == MAX_ENTRIES


def test_the_latex_budget_stops_decoding_and_says_why() -> None:
    budget = Budget(decoded=100)
    assert plain_text(r"M{\"u}ller and {\o}berg, 12\% of $x$", budget) == \
        "Müller and øberg, 12% of x"
    assert budget.decoded == 97  # only "$x$" went to pylatexenc
    with pytest.raises(BudgetSpent) as spent:
        plain_text("$y$ " * 40, budget)
    assert spent.value.reason == (
        "not read: the file holds more than 100 characters of LaTeX markup to decode, more "
        "than one import reads; import the entries from here on as another file")
    with pytest.raises(BudgetSpent):  # spent stays spent, for the file's next entries
        budget.check()


# Realistic markup, as exports write it: titles, names, abstracts.
TOKENS = ["graph", "networks", "{B}ERT", "{G}aussian", r"\'{e}", r'\"o', r"\'e", "$x^2$",
          r"$O(n \log n)$", r"$\mathbb{R}^d$", "~", "--", "---", r"\emph{robust}",
          r"\textbf{a}", r"{\em y}", r"\&", r"\%", r"12\%", "``quoted''", r"M{\"u}ller",
          r"Garc{\'i}a", r"Nguy{\~{\^e}}n", r"Dvo{\v{r}}{\'a}k", r"{\o}", r"\o{}", r"\ss{}",
          r"{\aa}", r"\c{c}", r"\v{s}", r"\H{o}", r"{\'\i}", r'\"{\i}',
          r"\url{http://x.org/a_b}", "(1)", "a-b", "[1]", "[p. 3]", r"\LaTeX{}", r"\alpha",
          r"$\alpha$-stable", "Fig.~2", r"\_", r"\#", r"\$5", r"\{", r"\}", "e.g.,", "--20",
          "{van der Berg}"]


def test_what_is_decoded_piece_by_piece_reads_as_pylatexenc_reads_it_whole() -> None:
    whole = LatexNodes2Text()
    rng = random.Random(7)
    for _ in range(1500):
        value = "".join(rng.choice(TOKENS) + rng.choice([" ", " ", " ", "", "\n"])
                        for _ in range(rng.randint(1, 14)))
        # As the values were read before: pylatexenc on the whole value, when it has markup.
        before = whole.latex_to_text(value) if set(value) & set("\\{}$%~") else value
        assert plain_text(value, Budget()) == " ".join(before.split()), value

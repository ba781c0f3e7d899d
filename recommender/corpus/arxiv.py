"""Harvesting arXiv through its OAI-PMH interface into the corpus, incrementally.

arXiv (https://info.arxiv.org/help/oa/index.html) serves metadata format ``arXiv`` (authors as
keyname and forenames, ``created`` the first version's date) and sets that are a group
(``cs``, ``math``, ``physics``, ``stat``, ...), an archive in it (``physics:hep-th``) or a
category (``cs:cs:LG``, ``stat:stat:ML``, ``physics:astro-ph:CO``);
``arxiv_categories.set_for_category`` turns the names people write (``cs.LG``) into those.

``harvest`` harvests one set: from where the last harvest of that set ended (the newest
datestamp it stored, asked again as ``from``: records of that day come back unchanged), or
from the resumption token of a harvest that was interrupted. After each page the papers,
the withdrawals and the new position are stored in one transaction (``CorpusStore
.store_harvested``), so an interrupted harvest run again ends with the same corpus as one that
was never interrupted. Ids are the arXiv id without its version (``2401.01234``,
``hep-th/9901001``), as in arXiv's metadata snapshot: a new version updates the same paper.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from xml.etree.ElementTree import Element

from tqdm import tqdm

from recommender.core.errors import InvalidInput
from recommender.core.papers import Paper, Rejection
from recommender.corpus.formats import paper_from_record
from recommender.corpus.oai_pmh import ExpiredToken, OaiPmhClient, OaiRecord
from recommender.corpus.store import CorpusStore, HarvestPosition, UpsertCounts

SOURCE = "arxiv"
METADATA_PREFIX = "arXiv"
ARXIV = "{http://arxiv.org/OAI/arXiv/}"
_IDENTIFIER = re.compile(r"oai:arXiv\.org:(.+)")
_VERSION = re.compile(r"v\d+$")
_WITHDRAWN = re.compile(r"\b(?:has been|is|was|been)\s+withdrawn\b|\bwithdrawn by\b|^withdrawn\b",
                        re.IGNORECASE)


@dataclass
class HarvestSummary:
    fetched: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    withdrawn: int = 0
    rejected: int = 0
    requests: int = 0

    def __str__(self) -> str:
        return (f"fetched {self.fetched}, added {self.added}, updated {self.updated}, "
                f"unchanged {self.unchanged}, withdrawn {self.withdrawn}, "
                f"rejected {self.rejected}")


def harvest(corpus: CorpusStore, client: OaiPmhClient, set_spec: str,
            on_rejection: Callable[[Rejection], None], from_date: str | None = None,
            summary: HarvestSummary | None = None, progress: bool = True) -> HarvestSummary:
    """Harvest ``set_spec`` into the corpus; ``from_date`` (YYYY-MM-DD) starts a new harvest
    from that day instead of continuing from the stored position."""
    summary = summary or HarvestSummary()
    counts = UpsertCounts()
    position = corpus.harvest_position(SOURCE, set_spec)
    if from_date is not None or position.token is None:
        start = from_date if from_date is not None else position.datestamp
        position = HarvestPosition(position.datestamp, None, start, None)
    bar = tqdm(desc=f"arXiv {set_spec}", unit="record", disable=not progress)
    try:
        while True:
            try:
                page = client.list_records(METADATA_PREFIX, set_spec, position.started_from,
                                           position.token)
            except ExpiredToken:
                if position.token is None:
                    raise
                # The stored token expired: ask again from the day that harvest started.
                position.token, position.newest = None, None
                continue
            papers: list[Paper] = []
            withdrawn: list[str] = []
            for record in page.records:
                item = paper_from_oai(record)
                if isinstance(item, Rejection):
                    summary.rejected += 1
                    on_rejection(item)
                elif isinstance(item, str):
                    withdrawn.append(item)
                else:
                    papers.append(item)
                if record.datestamp and (position.newest or "") < record.datestamp:
                    position.newest = record.datestamp
            summary.fetched += len(page.records)
            summary.withdrawn += len(withdrawn)
            position.token = page.token
            if page.token is None:  # the last page: the harvest is complete
                position = HarvestPosition(
                    max(position.datestamp or "", position.newest or "") or None)
            corpus.store_harvested(SOURCE, set_spec, papers, withdrawn, position, counts)
            if page.complete_size and bar.total != page.complete_size:
                bar.total = page.complete_size
            bar.update(len(page.records))
            if page.token is None:
                break
    finally:
        bar.close()
        summary.added += counts.added
        summary.updated += counts.updated
        summary.unchanged += counts.unchanged
        summary.requests = client.requests
    return summary


def paper_from_oai(record: OaiRecord) -> Paper | str | Rejection:
    """The paper of an arXiv record; its id if it says the paper was withdrawn (a deleted
    record, or "This paper has been withdrawn" in its comments or abstract); or why not (a
    ``Rejection`` whose source is the OAI identifier, line 0)."""
    found = _IDENTIFIER.fullmatch(record.identifier)
    raw_id = found[1] if found else ""
    where = record.identifier or "a record without an identifier"
    if record.deleted:
        return _VERSION.sub("", raw_id) if raw_id else Rejection(
            where, 0, "deleted record without an arXiv identifier")
    meta = record.metadata
    if meta is None or meta.tag != f"{ARXIV}arXiv":
        return Rejection(where, 0, "no arXiv metadata (metadataPrefix=arXiv)")
    paper_id = _VERSION.sub("", _text(meta, "id") or raw_id)
    title, abstract = _text(meta, "title"), _text(meta, "abstract")
    if not paper_id:
        return Rejection(where, 0, "record has no arXiv id")
    if not title:
        return Rejection(where, 0, "record has no title")
    if _WITHDRAWN.search(_text(meta, "comments")) or _WITHDRAWN.search(abstract):
        return paper_id
    if not abstract:
        return Rejection(where, 0, "record has no abstract")
    try:
        return paper_from_record({
            "id": paper_id, "title": title, "abstract": abstract,
            "authors": [_author(author) for author in meta.iter(f"{ARXIV}author")],
            "categories": _text(meta, "categories"),
            "date": _text(meta, "created") or record.datestamp or None,
            "url": f"https://arxiv.org/abs/{paper_id}",
            "doi": _text(meta, "doi"),  # the journal version's: one paper, once
        })
    except InvalidInput as exc:
        return Rejection(where, 0, exc.message)


def _text(element: Element, name: str) -> str:
    return " ".join((element.findtext(f"{ARXIV}{name}") or "").split())


def _author(author: Element) -> str:
    parts = [_text(author, "forenames"), _text(author, "keyname"), _text(author, "suffix")]
    return " ".join(part for part in parts if part)

"""Importing a researcher's library as likes, and the liked papers back as a library.

``import_library`` takes the entries ``corpus.library`` read from a file. An entry the corpus
holds (by the entry's own key when it is a stored id of a paper with that title, else by
arXiv id, DOI, or title and first author: ``CorpusStore.find``, else by its title alone when
one paper the reader may see has exactly that title) becomes a like; one it does
not hold is added to the corpus as the reader's own, pending paper (``CorpusStore.upload``,
under its deterministic id: nobody else sees it until it is verified) and liked, up to the
reader's daily quota (``UploadQuota``). An entry with only an id that the corpus does not
hold is rejected: there is no title or abstract to add it with (fetch or ingest it first).

The likes are written in one Redis script, after the papers: a failure leaves no like of the
import, at most pending papers only the reader sees, and importing again finishes it.
Importing the same file again changes nothing: its papers are ``already_liked``.

The papers liked are embedded at once into the embedding cache (only those not cached yet),
so the next reading list counts them before the index is rebuilt (``Recommender`` reads
their vectors from the cache) and the next rebuild reuses the vectors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from pydantic import Field

from recommender.core.ids import PaperId
from recommender.core.matching import words
from recommender.core.papers import Paper
from recommender.corpus.library import LibraryEntry, LibraryRejection, ParsedLibrary
from recommender.corpus.store import CorpusStore
from recommender.embedding.cache import EmbeddingCache, cached_vectors
from recommender.embedding.encoders import TextEncoder
from recommender.feedback.store import FeedbackStore
from recommender.feedback.upload_quota import UploadQuota


@dataclass(frozen=True)
class ImportedEntry:
    """One entry of the file and what became of it (``paper_id``: the paper liked)."""

    entry: Annotated[str, Field(description="The entry's key, else its title (or the id on "
                                            "its line).")]
    index: Annotated[int, Field(description="Its position among the file's entries, from 1.")]
    line: Annotated[int | None, Field(description="The line it starts on (BibTeX, RIS, id "
                                                  "lists).")]
    paper_id: Annotated[PaperId | None, Field(description="The paper liked (null when "
                                                          "rejected).")] = None
    reason: Annotated[str | None, Field(description="Why it was rejected.")] = None


@dataclass
class ImportReport:
    matched: list[ImportedEntry] = field(default_factory=list)  # in the corpus, now liked
    added: list[ImportedEntry] = field(default_factory=list)  # added to the corpus and liked
    already_liked: list[ImportedEntry] = field(default_factory=list)
    rejected: list[ImportedEntry] = field(default_factory=list)
    liked: int = 0  # the user's likes after the import


@dataclass
class ResolvedEntries:
    """What ``resolve_entries`` made of some entries: each found or added paper's id, and the
    entries it could not take (no title to add one with; past the reader's daily quota)."""

    found: list[tuple[LibraryEntry, str]] = field(default_factory=list)  # (entry, paper id)
    added: set[str] = field(default_factory=set)  # the ids uploaded now
    no_title: list[LibraryEntry] = field(default_factory=list)
    over_quota: list[LibraryEntry] = field(default_factory=list)


def resolve_entries(entries: list[LibraryEntry], user_id: str, *, corpus: CorpusStore,
                    quota: UploadQuota, now: float) -> ResolvedEntries:
    """The paper each entry is: the corpus's (by its own key, arXiv id, DOI or title and first
    author), else a new pending paper of this reader's (``CorpusStore.upload``) up to their
    daily quota. Shared by a library file's import and the Zotero sync, so both match alike."""
    resolved = ResolvedEntries()
    new: list[LibraryEntry] = []
    for entry in entries:
        stored = _stored(corpus, entry, user_id)
        if stored is not None:
            resolved.found.append((entry, stored))
        elif not entry.paper.title:
            resolved.no_title.append(entry)
        else:
            new.append(entry)
    granted = quota.take(user_id, len(new), now)
    resolved.over_quota = new[granted:]
    new = new[:granted]
    # Found papers another reader uploaded (pending) become this reader's too: they can see
    # what they liked. New papers are stored as pending and this reader's.
    corpus.claim([paper_id for _, paper_id in resolved.found], user_id, now)
    added = corpus.upload([entry.paper for entry in new], user_id, now)
    resolved.found += zip(new, added, strict=True)
    resolved.added = set(added)
    return resolved


def import_library(parsed: ParsedLibrary, user_id: str, *, corpus: CorpusStore,
                   feedback: FeedbackStore, quota: UploadQuota, embedder: TextEncoder,
                   embedding_cache: EmbeddingCache, now: float,
                   collection: str | None = None) -> ImportReport:
    """``collection``: one of the reader's collections the file's papers go into (those
    liked already too)."""
    report = ImportReport(rejected=[_rejected(r) for r in parsed.rejected])
    likes = {f.paper_id for f in feedback.get(user_id) if f.signal == "like"}
    resolved = resolve_entries(parsed.entries, user_id, corpus=corpus, quota=quota, now=now)
    report.rejected += [_rejected(LibraryRejection(
        entry.label, entry.index, entry.line,
        "not in the corpus, and the entry has no title to add it with: fetch or "
        "ingest it first (`paperrec fetch arxiv`, `paperrec ingest`), or import an "
        "entry with its title and abstract")) for entry in resolved.no_title]
    report.rejected += [_rejected(LibraryRejection(
        entry.label, entry.index, entry.line,
        f"not in the corpus, and your uploads have added the {quota.per_day:,} new papers a "
        "reader may add in a day: import the file again tomorrow"))
        for entry in resolved.over_quota]
    liked_now: list[str] = []
    for entry, paper_id in sorted(resolved.found, key=lambda pair: pair[0].index):
        item = ImportedEntry(entry.label, entry.index, entry.line, paper_id)
        if paper_id in likes:
            report.already_liked.append(item)
            continue
        likes.add(paper_id)
        liked_now.append(paper_id)
        (report.added if paper_id in resolved.added else report.matched).append(item)
    if collection is None:
        feedback.set_many(user_id, liked_now, "like", now)
    else:
        into = liked_now + [item.paper_id for item in report.already_liked if item.paper_id]
        feedback.set_many(user_id, into, "like", now, [collection], "add")
    embed_papers(corpus, liked_now, embedder, embedding_cache)
    report.liked = len(likes)
    return report


def liked_papers(user_id: str, *, corpus: CorpusStore, feedback: FeedbackStore,
                 only: set[str] | None = None) -> list[Paper]:
    """The papers the user likes, oldest like first (those no longer in the corpus left out);
    ``only``: of these (a collection's papers)."""
    ids = [f.paper_id for f in feedback.get(user_id) if f.signal == "like"
           and (only is None or f.paper_id in only)]
    papers = corpus.get_many(ids)
    return [papers[pid] for pid in ids if pid in papers]


def _stored(corpus: CorpusStore, entry: LibraryEntry, viewer: str) -> str | None:
    """The stored paper the entry is: its own key when that is a stored id whose paper has
    the entry's title (an export of paperrec), else by its identifiers, else the one paper
    the reader may see with exactly its title (of three words or more: a paper whose
    record has no authors has no title identity)."""
    if entry.source_id:
        paper = corpus.get(entry.source_id)
        if paper is not None and (not entry.paper.title or
                                  words(paper.title) == words(entry.paper.title)):
            return paper.id
    found = corpus.find(entry.paper)
    if found is None and len(title := tuple(words(entry.paper.title))) >= 3:
        same = corpus.search_title(title, viewer)
        found = same[0] if len(same) == 1 else None
    return found


def embed_papers(corpus: CorpusStore, paper_ids: list[str], embedder: TextEncoder,
           embedding_cache: EmbeddingCache) -> None:
    """Cache the vectors of these papers (embedding only those not cached yet)."""
    papers = corpus.get_many(paper_ids)
    by_hash = {paper.content_hash: paper.text for paper in papers.values()}
    if by_hash:
        cached_vectors(embedder, embedding_cache, list(by_hash),
                       lambda missing: {h: by_hash[h] for h in missing}, progress=False)


def _rejected(rejection: LibraryRejection) -> ImportedEntry:
    return ImportedEntry(rejection.label, rejection.index, rejection.line,
                         reason=rejection.reason)

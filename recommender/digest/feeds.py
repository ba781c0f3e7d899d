"""A user's reading list as a feed: Atom (written by feedgen) and JSON Feed 1.1.

The entries are the list ``GET /v1/users/{id}/recommendations`` gives with its defaults
(``Recommender.recommend`` with ``k=FEED_ITEMS``), in the same order, except that a feed
reader's polling records nothing as served: a reader that polls every few minutes would
otherwise push each paper down the list after it had been shown once, unread.

Ranking costs far more than telling whether it could have changed, so ``version`` fingerprints
what the list is made from (the index and model versions, the user's likes, dislikes, rules
and served papers, and the hour) with a few Redis reads; the service sends it as the ETag and
answers a reader that already has it with 304, without ranking. Other readers' likes move
popularity a little: such changes reach the feed within the hour.

Each entry's id is the paper's (``urn:paperrec:paper:<id>``), so a paper that leaves the list
and comes back is the same entry to the reader, not a new one.

Each feed built is a list in the impression log (``recommender.online.events``, surface
"feed"; a 304 builds nothing and logs nothing), and each entry's link is a signed open link
(``/v1/links/<token>``, with the list's id): followed, it logs a click on the paper of that
list and redirects to the paper. The paper's own address is also the JSON Feed item's
``external_url``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from feedgen.feed import FeedGenerator

from recommender.core.papers import Paper
from recommender.corpus.store import CorpusStore
from recommender.digest.feed_tokens import FeedUrls
from recommender.digest.links import LinkSigner
from recommender.feedback.collections import Collection, CollectionStore
from recommender.feedback.rules import RuleStore
from recommender.feedback.store import FeedbackStore
from recommender.index.store import LiveIndex
from recommender.ranking.collaborative import CollaborativeModel
from recommender.ranking.item_view import ItemView, item_view
from recommender.ranking.recommender import Recommender
from recommender.storage.versions import LiveVersion

FEED_ITEMS = 20  # the API's default list length
VERSION_PERIOD = 3600  # seconds: the feed's version changes at least this often
JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"
GENERATOR = "paperrec"


@dataclass(frozen=True)
class FeedEntry:
    paper: ItemView  # as every surface shows it (ranking/item_view.py)
    url: str  # the entry's link: an open link (logs a click, then the paper), else paper_url
    authors: list[str]  # all of them (the view's are shortened)
    rank: int
    close_likes: int
    probability: float | None
    published: dt.datetime | None  # the paper's date (or 1 January of its year)
    updated: dt.datetime  # the same, or for an undated paper when the feed URL was issued
    paper_url: str = ""  # the paper's page (its URL, else its DOI, else its page here)

    @property
    def paper_id(self) -> str:
        return self.paper.id

    @property
    def id(self) -> str:
        return f"urn:paperrec:paper:{self.paper_id}"

    @property
    def why(self) -> str:
        """Where it stands on the list and why, in words."""
        standing = self.paper.standing
        return (f"{standing[:1].upper()}{standing[1:]}: " if standing else "") + \
            f"on your list because {self.paper.reason}."

    @property
    def content_text(self) -> str:
        """Authors, year and category; why; the abstract; the links."""
        lines = [" · ".join(part for part in (self.paper.authors, self.paper.when) if part),
                 self.why, self.paper.abstract,
                 "\n".join(f"{label}: {url}" for label, url in self.paper.links)]
        return "\n\n".join(line for line in lines if line)


@dataclass(frozen=True)
class Feed:
    user_id: str
    urls: FeedUrls
    home_url: str
    updated: dt.datetime  # when this list was ranked
    entries: list[FeedEntry]
    collection: Collection | None = None  # the feed of one collection's list

    @property
    def id(self) -> str:
        own = f":collection:{self.collection.id}" if self.collection else ""
        return f"urn:paperrec:feed:{self.user_id}{own}"

    @property
    def title(self) -> str:
        if self.collection is not None:
            return f"paperrec: {self.collection.name} ({self.user_id})"
        return f"paperrec: reading list for {self.user_id}"

    @property
    def atom_url(self) -> str:
        own = f"?collection={self.collection.id}" if self.collection else ""
        return self.urls.atom + own


class FeedBuilder:
    def __init__(self, recommender: Recommender, corpus: CorpusStore, feedback: FeedbackStore,
                 rules: RuleStore, index: LiveIndex,
                 collaborative: LiveVersion[CollaborativeModel], public_url: str,
                 collections: CollectionStore, links: LinkSigner | None = None) -> None:
        """``links``: signs each entry's open link (None: entries link to the paper)."""
        self._recommender = recommender
        self._links = links
        self._collections = collections
        self._corpus = corpus
        self._feedback = feedback
        self._rules = rules
        self._index = index
        self._collaborative = collaborative
        self._public_url = public_url.rstrip("/")

    def version(self, urls: FeedUrls, now: float, collection: str | None = None) -> str:
        """A fingerprint of what the user's list is made from at ``now``: equal fingerprints,
        equal feeds (within the hour, other readers' likes aside). A few Redis reads."""
        self._collaborative.get()  # picks up a newly published model, as ranking would
        state = {
            "urls": [urls.atom, urls.json],
            "index": self._index.get().version,
            "model": self._collaborative.version,
            "feedback": [(f.paper_id, f.signal, f.at) for f in self._feedback.get(urls.user_id)],
            "served": self._feedback.served_with_times(urls.user_id),
            "rules": [(r.action, r.kind, r.value) for r in self._rules.get(urls.user_id)],
            "period": int(now // VERSION_PERIOD),
            "items": FEED_ITEMS,
            "collection": collection,
            "collections": [(c.id, c.name, c.size) for c in self._collections.all(urls.user_id)],
        }
        encoded = json.dumps(state, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(encoded.encode()).hexdigest()[:32]

    def build(self, urls: FeedUrls, now: float, collection: str | None = None) -> Feed:
        """The user's reading list now (``collection``: that collection's list), as feed
        entries (records nothing as served; logs the list, surface "feed")."""
        named = None if collection is None else self._collections.get(urls.user_id, collection)
        reading_list = self._recommender.recommend(urls.user_id, FEED_ITEMS, now=now,
                                                   record=False, collection=collection,
                                                   surface="feed")
        papers = self._corpus.get_many([item.paper_id for item in reading_list.items])
        issued = dt.datetime.fromtimestamp(int(urls.issued_at), dt.UTC)
        entries = []
        for item in reading_list.items:
            paper = papers.get(item.paper_id) or Paper(item.paper_id, item.title)
            published = _published(paper)
            own = self._url(paper)
            entries.append(FeedEntry(
                item_view(paper, title=item.title, reason=item.reason, standing=item.standing),
                url=self._open_url(urls.user_id, paper.id, reading_list.list_id, now) or own,
                authors=list(paper.authors), rank=item.rank,
                close_likes=item.close_likes, probability=item.probability,
                published=published, updated=published or issued, paper_url=own))
        return Feed(urls.user_id, urls, self._public_url + "/",
                    dt.datetime.fromtimestamp(int(now), dt.UTC), entries, named)

    def _open_url(self, user_id: str, paper_id: str, list_id: str, now: float) -> str | None:
        if self._links is None or not list_id:
            return None
        token = self._links.sign(user_id, "open", paper_id, now, list_id)
        return f"{self._public_url}/v1/links/{token}"

    def _url(self, paper: Paper) -> str:
        if paper.url:
            return paper.url
        if paper.doi:
            return f"https://doi.org/{paper.doi}"
        return f"{self._public_url}/papers/{quote(paper.id, safe='')}"  # its web page


def _published(paper: Paper) -> dt.datetime | None:
    try:
        if paper.date:
            day = dt.date.fromisoformat(paper.date[:10])
        elif paper.year:
            day = dt.date(paper.year, 1, 1)
        else:
            return None
    except ValueError:
        return None
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)


def atom_xml(feed: Feed) -> bytes:
    """The feed as an Atom 1.0 document (UTF-8); feedgen escapes every text."""
    gen = FeedGenerator()
    gen.id(feed.id)
    gen.title(feed.title)
    gen.subtitle("Papers ranked for you by paperrec, with the reason each is on your list.")
    gen.link(href=feed.atom_url, rel="self", type="application/atom+xml")
    gen.link(href=feed.home_url, rel="alternate")
    gen.author(name="paperrec")
    gen.generator(GENERATOR)
    gen.language("en")
    gen.updated(feed.updated)
    # feedgen writes entries in the reverse order they were added unless told otherwise.
    for entry in feed.entries:
        atom = gen.add_entry(order="append")
        atom.id(entry.id)
        atom.title(entry.paper.title)
        # The open link only: feedgen writes no entry link's rel, so a second link (the
        # paper's own, as "related") would read as a second "alternate".
        atom.link(href=entry.url, rel="alternate")
        for name in entry.authors:
            atom.author(name=name)
        if entry.paper.abstract:
            atom.summary(entry.paper.abstract)
        atom.content(entry.content_text, type="text")
        if entry.published is not None:
            atom.published(entry.published)
        atom.updated(entry.updated)
    return bytes(gen.atom_str(pretty=True))


def as_json_feed(feed: Feed) -> dict[str, Any]:
    """The feed as a JSON Feed 1.1 document (https://www.jsonfeed.org/version/1.1/); the
    rank, standing, reason and probability are also given as data in the ``_paperrec``
    extension."""
    items = []
    for entry in feed.entries:
        item: dict[str, Any] = {
            "id": entry.id,
            "url": entry.url,
            "title": entry.paper.title,
            "content_text": entry.content_text,
            "summary": entry.paper.lead or entry.why,
            "date_modified": entry.updated.isoformat(),
            **({"external_url": entry.paper_url}
               if entry.paper_url and entry.paper_url != entry.url else {}),
            "_paperrec": {"paper_id": entry.paper_id, "rank": entry.rank,
                          "standing": entry.paper.standing,
                          "close_likes": entry.close_likes, "reason": entry.paper.reason,
                          "probability": entry.probability,
                          "links": [{"label": label, "url": url}
                                    for label, url in entry.paper.links]},
        }
        if entry.published is not None:
            item["date_published"] = entry.published.isoformat()
        if entry.authors:  # JSON Feed: an authors array holds at least one
            item["authors"] = [{"name": name} for name in entry.authors]
        items.append(item)
    return {
        "version": JSON_FEED_VERSION,
        "title": feed.title,
        "home_page_url": feed.home_url,
        "feed_url": feed.urls.json + (f"?collection={feed.collection.id}"
                                      if feed.collection else ""),
        "description": "Papers ranked for you by paperrec, with the reason each is on your "
                       "list.",
        "authors": [{"name": "paperrec"}],
        "language": "en",
        "items": items,
    }

"""Fetching a conference's accepted papers from OpenReview (API v2) into the corpus.

What was confirmed, and where (openreview-py at commit e25fd7d, July 2026, and
docs.openreview.net):

- The API v2 is at https://api2.openreview.net (``OpenReviewClient(baseurl=...)`` in the docs'
  how-to guides); notes are read with ``GET /notes``, every ``content`` filter sent as
  ``content.<field>=<value>`` (``openreview/api/client.py``, ``get_notes``), so
  ``get_all_notes(content={'venueid': venue_id})`` asks ``/notes?content.venueid=<venue id>``.
- Paging: ``limit`` ranges from 0 to 1000 ("if a bigger number is provided, only 1000 Notes
  will be returned", ``get_notes``' docstring; the docs: "get_notes will return up to the
  first 1000"); ``offset`` skips, and ``after=<note id>`` with ``sort=id`` is the cursor
  openreview-py's own pager (``tools.efficient_iterget``) follows, asking ``count=true`` on
  the first page only. The answer is JSON ``{"notes": [...], "count": N}``; since late 2025
  ``count`` comes only when asked (openreview/openreview-py issue #2745).
- Venue ids of papers that were not accepted: ``<venue>/Rejected_Submission``,
  ``<venue>/Withdrawn_Submission``, ``<venue>/Desk_Rejected_Submission``, and
  ``<venue>/Submission`` while under review (``openreview/venue/venue.py``); an accepted
  paper's ``content.venueid`` is the venue id itself and ``content.venue`` reads like
  "ICML 2026 Poster" (openreview-py's tests).
- A note has ``id``, ``forum``, ``number``, ``cdate``, ``pdate``, ``mdate`` (milliseconds since
  the epoch) and ``content`` whose fields are each ``{"value": ...}`` (``Note`` in
  ``api/client.py``). ``authors`` is a list of names, or, in the newer unified schema, a list
  of ``{"fullname": ..., "username": ...}`` (``Note.authors``): both are read.
- Rate limiting: openreview-py retries 429, 500, 502, 503 and 504 with backoff and "respects
  Retry-After" (``LogRetry`` in ``api/client.py``); a 429's body is JSON naming
  ``RateLimitError`` with ``details.resetTime`` (mireklzicar/openreview_downloader issue #4).

Not confirmed: whether api2 actually sends ``Retry-After`` on its 429s (openreview-py only
honours it if present), so a 429 is retried either way, with backoff when the header is
missing; and the exact sort order ``sort=id`` gives (we only need it to be the order
``after`` continues in, which is how openreview-py uses it).

Why plain ``requests`` and not openreview-py: openreview-py pulls in pycryptodome, pyjwt,
pylatexenc, tld, editdistance, Deprecated and future for what is here one GET per page, and
its ``get_all_notes`` hides paging (one streamed request, or an iterator) and retries (eight
urllib3 retries) inside itself, where the harvest must store its position after each page, in
the same transaction as the papers, and report a failure in our words. ``PoliteClient`` is
the arXiv harvest's retry policy (delay between requests, Retry-After, bounded backoff).

``harvest`` stores the accepted papers of one venue as ``openreview:<forum id>``, merged with
a paper already stored under its arXiv id, DOI or title and first author
(``CorpusStore.upsert``, ``identity.keys``): one paper, once, findable by both ids. The
position is kept under (``openreview``, venue id): the note id an interrupted harvest reached
(the next run continues after it) and the newest ``mdate`` of the last complete harvest (a
note not modified since, and already stored, counts as unchanged without being written).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from recommender.core.errors import InvalidInput, NotFound
from recommender.core.papers import Paper, Rejection, web_url
from recommender.corpus.formats import paper_from_record
from recommender.corpus.polite_http import HarvestFailed, PoliteClient
from recommender.corpus.store import CorpusStore, HarvestPosition, UpsertCounts

SOURCE = "openreview"
PAGE_SIZE = 1000  # the most one request returns
FORUM_URL = "https://openreview.net/forum?id="
_VENUE_ID = re.compile(r"[A-Za-z0-9][\w.\-]*(?:/[\w.\-]+)*")  # journals: just "TMLR"


def check_venue_id(text: str) -> str:
    """The venue id (ICML.cc/2026/Conference) as written; InvalidInput if it is not one."""
    text = text.strip()
    if "/-/" in text:
        raise InvalidInput(f"{text!r} is an invitation id; give the venue id before '/-/' "
                           f"({text.split('/-/')[0]})")
    if not _VENUE_ID.fullmatch(text):
        raise InvalidInput(f"not an OpenReview venue id: {text!r} (write it as in the venue's "
                           f"address, e.g. ICML.cc/2026/Conference)")
    return text


@dataclass
class NotesPage:
    notes: list[dict[str, Any]] = field(default_factory=list)
    count: int | None = None  # how many notes match, when the API says


class OpenReviewClient(PoliteClient):
    """``accepted_notes`` GETs one page of a venue's accepted papers."""

    user_agent = "paperrec-harvester/0.1 (OpenReview API v2; python-requests)"
    retry_after_statuses = (429, 503)
    always_retried = (429,)  # rate limited: wait and ask again, Retry-After or not

    def __init__(self, base_url: str, delay: float, retries: int,
                 page_size: int = PAGE_SIZE, **options: Any) -> None:
        super().__init__(base_url, delay, retries, **options)
        self.page_size = min(page_size, PAGE_SIZE)

    def accepted_notes(self, venue_id: str, after: str | None = None) -> NotesPage:
        """The notes whose ``content.venueid`` is ``venue_id``, in id order, from the one after
        the note ``after`` (from the first when None, then with their count)."""
        params = {"content.venueid": venue_id, "sort": "id", "limit": str(self.page_size)}
        if after:
            params["after"] = after
        else:
            params["count"] = "true"
        body = self.get(f"{self.base_url}/notes", params)
        try:
            answer = json.loads(body)
        except (UnicodeDecodeError, ValueError):
            answer = None
        if not isinstance(answer, dict) or not isinstance(answer.get("notes"), list):
            raise HarvestFailed(f"{self.base_url}/notes answered something that is not "
                                f'OpenReview\'s JSON {{"notes": [...]}}')
        count = answer.get("count")
        return NotesPage([n for n in answer["notes"] if isinstance(n, dict)],
                         count if isinstance(count, int) else None)


@dataclass
class VenueSummary:
    fetched: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    merged: int = 0  # papers the corpus held already under another id (arXiv, DOI, title)
    rejected: int = 0
    requests: int = 0

    def __str__(self) -> str:
        return (f"fetched {self.fetched}, added {self.added}, updated {self.updated}, "
                f"unchanged {self.unchanged}, merged {self.merged}, rejected {self.rejected}")


def harvest(corpus: CorpusStore, client: OpenReviewClient, venue_id: str,
            on_rejection: Callable[[Rejection], None], summary: VenueSummary | None = None,
            progress: bool = True) -> VenueSummary:
    """Store the accepted papers of ``venue_id``, continuing an interrupted harvest; NotFound
    when the venue has none (a mistyped id, or decisions not public yet)."""
    summary = summary if summary is not None else VenueSummary()
    counts = UpsertCounts()
    position = corpus.harvest_position(SOURCE, venue_id)
    known = _int(position.datestamp)  # newest mdate of the last complete harvest
    after, newest = position.token, _int(position.newest)
    bar = tqdm(desc=f"OpenReview {venue_id}", unit="paper", disable=not progress)
    try:
        while True:
            page = client.accepted_notes(venue_id, after)
            if not page.notes and after is None and known is None:
                raise NotFound(
                    f"OpenReview lists no accepted papers under the venue id {venue_id!r}: "
                    f"check it (as in https://openreview.net/group?id={venue_id}; case "
                    f"matters), or the venue has not made its decisions public yet")
            papers: list[Paper] = []
            for note in page.notes:
                item = paper_from_note(note, venue_id)
                modified = _int(note.get("mdate"))
                if isinstance(item, Rejection):
                    summary.rejected += 1
                    on_rejection(item)
                elif (known is not None and modified is not None and modified <= known
                      and corpus.resolve(item.id) is not None):
                    summary.unchanged += 1  # stored, and not modified since
                else:
                    papers.append(item)
                if modified is not None and (newest is None or modified > newest):
                    newest = modified
            summary.fetched += len(page.notes)
            done = len(page.notes) < client.page_size
            if not done:
                after = _string(page.notes[-1].get("id"))
                if not after:
                    raise HarvestFailed(f"{client.base_url}/notes answered a page whose last "
                                        f"note has no id: there is no next page to ask for")
            if done:
                stored = max(known or 0, newest or 0)
                position = HarvestPosition(str(stored) if stored else None)
            else:
                position = HarvestPosition(position.datestamp, after, None,
                                           None if newest is None else str(newest))
            corpus.store_harvested(SOURCE, venue_id, papers, [], position, counts)
            if page.count is not None:
                bar.total = page.count
            bar.update(len(page.notes))
            if done:
                break
    finally:
        bar.close()
        summary.added += counts.added
        summary.updated += counts.updated
        summary.unchanged += counts.unchanged
        summary.merged += counts.merged
        summary.requests = client.requests
    return summary


def paper_from_note(note: Mapping[str, Any], venue_id: str) -> Paper | Rejection:
    """The paper of an accepted submission's note, or why not (a ``Rejection`` whose source is
    ``openreview:<forum id>``, line 0)."""
    forum = _string(note.get("forum")) or _string(note.get("id"))
    where = f"openreview:{forum}" if forum else "a note without an id"
    content = note.get("content")
    content = content if isinstance(content, dict) else {}
    if not forum:
        return Rejection(where, 0, "note has no id")
    venueid = _string(_value(content, "venueid"))
    if venueid != venue_id:
        return Rejection(where, 0, f"not accepted at {venue_id} (venueid {venueid!r})")
    title, abstract = _string(_value(content, "title")), _string(_value(content, "abstract"))
    if not title.strip():
        return Rejection(where, 0, "note has no title")
    if not abstract.strip():
        return Rejection(where, 0, "note has no abstract")
    venue = " ".join(_string(_value(content, "venue")).split())
    try:
        paper = paper_from_record({
            "id": f"openreview:{forum}", "title": title, "abstract": abstract,
            "authors": _authors(_value(content, "authors")),
            "date": _day(note.get("pdate")) or _day(note.get("cdate")),
            "url": f"{FORUM_URL}{forum}",
            "categories": [venue] if venue else [],  # no venue field: shown as its category
        })
    except InvalidInput as exc:
        return Rejection(where, 0, exc.message)
    code = web_url(_string(_value(content, "code")))
    if code and code not in paper.code_urls:
        paper.code_urls.append(code)
    return paper


def _value(content: Mapping[str, Any], name: str) -> Any:
    """A content field: API v2 wraps each as {"value": ...}."""
    wrapped = content.get(name)
    return wrapped.get("value") if isinstance(wrapped, dict) else None


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _authors(value: Any) -> list[str]:
    """Names from a list of names or of {"fullname": ...} (the unified author schema)."""
    if not isinstance(value, list):
        return []
    names = [item.get("fullname") if isinstance(item, dict) else item for item in value]
    return [name for name in names if isinstance(name, str) and name.strip()]


def _day(value: Any) -> str | None:
    """The UTC date of milliseconds since the epoch."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    try:
        return dt.datetime.fromtimestamp(value / 1000, dt.UTC).date().isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def _int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else None

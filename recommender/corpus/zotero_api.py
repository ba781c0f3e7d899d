"""ZoteroClient: the Zotero Web API v3, read politely (one reader's library at a time).

Plain requests through our ``PoliteClient``, not pyzotero. What a sync needs is four GETs
(``/keys/current``, ``.../collections``, ``.../items``, ``.../deleted``) with
``If-Modified-Since-Version`` and the version headers read back, and what matters is how it
behaves when the server pushes back or misbehaves: pyzotero (1.6) sleeps on ``Backoff``
inside the call with no bound and no deadline, retries 429 on its own schedule, follows
``Link`` URLs the server chose (a hostile server could point them anywhere), reads whole
answers into memory with no size limit, and raises its own exceptions for 304. Our client
already waits out ``Retry-After`` (429 and 503) and ``Backoff``, retries 5xx with backoff,
caps every answer's size and time, and stops at a deadline (a reader's time budget), so one
slow library never holds up the job; the same rules as the arXiv and OpenReview harvests.

Every page is asked for by ``start``/``limit`` (at most 100) on the configured base URL
(http or https only): the ``Link`` header is not followed. The API key travels in the
``Zotero-API-Key`` header, never in a URL (so never in a log line or an error message).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from recommender.core.errors import Forbidden, InvalidInput
from recommender.corpus.library import (
    ARXIV_IN_TEXT,
    MAX_ABSTRACT,
    MAX_AUTHOR,
    MAX_AUTHORS,
    LibraryEntry,
    paper_from,
)
from recommender.corpus.polite_http import Answer, HarvestFailed, PoliteClient

PAGE_SIZE = 100  # the API's largest page
MAX_PAGE_BYTES = 16 * 2**20  # 100 items with long abstracts and notes: well under 2 MB
MAX_KEY_BYTES = 64 * 1024  # an answer of /keys/current
MAX_FIELD = 30_000  # characters of one field read from an item (a title past 1,000 is refused)
LIBRARY_ID = re.compile(r"^[0-9]{1,12}$")
API_KEY = re.compile(r"^[A-Za-z0-9]{8,64}$")
LibraryType = Literal["user", "group"]


class ZoteroRefused(Forbidden):
    """Zotero refused the key, or it cannot read that library (the reader must act): a 403,
    told apart from paperrec's own refusals by its code."""

    code = "zotero_refused"


class ZoteroFailed(HarvestFailed):
    """Zotero could not be read (down, or answered something that is not the API's)."""

    code = "zotero_failed"


@dataclass(frozen=True)
class KeyAccess:
    user_id: str
    username: str
    access: dict[str, Any]

    def may_read(self, library_type: LibraryType, library_id: str) -> bool:
        if library_type == "user":
            user = self.access.get("user")
            return self.user_id == library_id and isinstance(user, dict) and \
                user.get("library") is True
        groups = self.access.get("groups")
        if not isinstance(groups, dict):
            return False
        grant = groups.get(library_id) or groups.get("all")
        return isinstance(grant, dict) and grant.get("library") is True


@dataclass(frozen=True)
class Page:
    """One page of a list (or 304: ``modified`` False, nothing else)."""

    modified: bool
    version: int  # Last-Modified-Version: the library's version
    total: int  # Total-Results
    objects: list[Any]


def check_library(library_type: str, library_id: str, api_key: str) -> None:
    if library_type not in ("user", "group"):
        raise InvalidInput(f'library_type is "user" or "group", got {library_type!r}')
    if not isinstance(library_id, str) or not LIBRARY_ID.fullmatch(library_id):
        raise InvalidInput("library_id is the library's number (Settings > Feeds/API on "
                           "zotero.org for yours, the number in a group's URL for a group)")
    if not isinstance(api_key, str) or not API_KEY.fullmatch(api_key):
        raise InvalidInput("api_key is the key made at zotero.org/settings/keys: letters and "
                           "digits")


class ZoteroClient(PoliteClient):
    user_agent = "paperrec-zotero/0.1 (python-requests)"
    retry_after_statuses = (429, 503)
    always_retried = (429,)  # a 429 without Retry-After: our backoff
    failed_hint = ""  # a sync failed half-way keeps nothing of it: the next sync starts over

    def __init__(self, base_url: str, retries: int, backoff: float = 5.0,
                 max_bytes: int = MAX_PAGE_BYTES) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidInput(f"the Zotero API URL must be http(s), got {base_url!r}")
        super().__init__(base_url.rstrip("/"), 0.0, retries, backoff=backoff,
                         max_bytes=max_bytes, request_seconds=120)

    def time_left(self) -> float:
        return self._left()

    def key_access(self, api_key: str) -> KeyAccess:
        """What the key may read (``/keys/current``); ZoteroRefused when Zotero refuses it."""
        answer = self._get("/keys/current", {}, api_key, accept=(200, 403, 404))
        if answer.status != 200:
            raise ZoteroRefused("Zotero refused this API key (it is wrong, or was deleted): "
                                "make one at zotero.org/settings/keys with read access to "
                                "the library")
        found = _json(answer.body[:MAX_KEY_BYTES])
        if not isinstance(found, dict) or not isinstance(found.get("access"), dict):
            raise ZoteroFailed("the Zotero API's answer about the key is not what Zotero "
                               "answers (no access)")
        return KeyAccess(str(found.get("userID", "")), str(found.get("username", ""))[:200],
                         found["access"])

    def page(self, library: str, what: str, api_key: str, since: int, start: int,
             conditional: bool) -> Page:
        """One page of ``collections`` or ``items`` (the trash too) changed after ``since``;
        with ``conditional``, 304 (``modified`` False) when nothing changed after it."""
        params = {"since": str(since), "start": str(start), "limit": str(PAGE_SIZE),
                  "format": "json"}
        if what == "items":
            params["includeTrashed"] = "1"
        answer = self._get(f"{library}/{what}", params, api_key, conditional=since
                           if conditional else None)
        version = _version(answer)
        if answer.status == 304:
            return Page(False, version, 0, [])
        objects = _json(answer.body)
        if not isinstance(objects, list):
            raise ZoteroFailed(f"the Zotero API answered {what} with something that is not a "
                               "list")
        total = answer.headers.get("Total-Results", "")
        return Page(True, version, int(total) if total.isdigit() else len(objects),
                    objects[:PAGE_SIZE])

    def deleted(self, library: str, api_key: str, since: int) -> dict[str, list[str]]:
        answer = self._get(f"{library}/deleted", {"since": str(since)}, api_key)
        found = _json(answer.body)
        if not isinstance(found, dict):
            raise ZoteroFailed("the Zotero API answered /deleted with something that is not "
                               "an object")
        return {name: [k for k in found.get(name) or [] if isinstance(k, str)]
                for name in ("items", "collections") if isinstance(found.get(name) or [], list)}

    def _get(self, path: str, params: dict[str, str], api_key: str,
             conditional: int | None = None, accept: tuple[int, ...] = (200, 304, 403, 404)
             ) -> Answer:
        headers = {"Zotero-API-Key": api_key, "Zotero-API-Version": "3"}
        if conditional is not None:
            headers["If-Modified-Since-Version"] = str(conditional)
        try:
            answer = self.fetch(self.base_url + path, params, headers, accept)
        except HarvestFailed as exc:
            raise ZoteroFailed(exc.message) from None
        if answer.status in (403, 404) and not path.startswith("/keys"):
            raise ZoteroRefused(
                "Zotero refuses to read this library with the key (the key was deleted or "
                "lost its access, or the library is gone): connect it again with a key "
                "that may read it" if answer.status == 403 else
                "Zotero has no such library (it was deleted, or the id is wrong): connect "
                "it again")
        return answer


def _version(answer: Answer) -> int:
    value = answer.headers.get("Last-Modified-Version", "")
    if not value.isdigit() or len(value) > 15:
        raise ZoteroFailed("the Zotero API's answer has no Last-Modified-Version header")
    return int(value)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise ZoteroFailed("the Zotero API answered something that is not JSON") from None


def library_path(library_type: str, library_id: str) -> str:
    return f"/{library_type}s/{library_id}"


def item_entry(data: Any, index: int) -> LibraryEntry | str:
    """A Zotero item's data as a library entry (matched and added as a library file's
    are), or why it is skipped: "note", "attachment", "no title", "unreadable"."""
    if not isinstance(data, dict):
        return "unreadable"
    kind = data.get("itemType")
    if kind in ("note", "attachment", "annotation"):
        return "attachment" if kind == "annotation" else str(kind)
    text = {name: value[:MAX_FIELD] if isinstance(value, str) else ""
            for name in ("title", "abstractNote", "DOI", "url", "date", "extra", "archiveID",
                         "key")
            for value in [data.get(name)]}
    if not text["title"].strip():
        return "no title"
    creators = data.get("creators")
    authors = [str(c.get("name") or " ".join(
        str(c[part]) for part in ("firstName", "lastName") if isinstance(c.get(part), str)))
        [:MAX_AUTHOR] for c in (creators if isinstance(creators, list) else [])[:MAX_AUTHORS]
        if isinstance(c, dict)]
    in_text = ARXIV_IN_TEXT.search(f"{text['archiveID']} {text['extra']}")
    entry = paper_from(text["key"] or text["title"][:80], index, None, title=text["title"],
                       abstract=text["abstractNote"][:MAX_ABSTRACT], authors=authors,
                       date=text["date"], doi=text["DOI"], url=text["url"] or None,
                       arxiv=in_text.group(1) if in_text else "")
    return entry if isinstance(entry, LibraryEntry) else "unreadable"

"""A local Zotero Web API v3 over a library held in memory, in the API's documented shapes.

``ZoteroReplay`` answers what paperrec's sync reads (https://www.zotero.org/support/dev/
web_api/v3/basics and .../syncing):

- ``GET /keys/<key>`` and ``/keys/current``: the key's ``userID``, ``username`` and ``access``
  (``{"user": {"library": true, ...}, "groups": {"all" | "<id>": {"library": true}}}``);
  403 for a key it does not know (or no key, for ``/keys/current``);
- ``GET /users/<id>/items`` and ``/groups/<id>/items``: item envelopes ``{key, version,
  library, links, meta, data}`` oldest version first, ``since=<version>`` (those changed
  after it), ``start``, ``limit`` (25 by default, at most 100), ``includeTrashed=1`` (the
  trash is left out otherwise, as on api.zotero.org), ``format=json`` or ``versions``; headers
  ``Last-Modified-Version``, ``Total-Results`` and ``Link`` (``rel="next"``, ``"last"``,
  ``"alternate"``);
- ``GET .../collections``: collection envelopes (``data``: ``key, version, name,
  parentCollection`` false or a key), with the same paging and ``since``;
- ``GET .../deleted?since=<version>``: ``{"collections": [...], "items": [...], "searches",
  "tags", "settings"}``, the keys deleted after that version;
- every library request: 304 when ``If-Modified-Since-Version`` is the library's version or
  later; the key from ``Zotero-API-Key`` or ``Authorization: Bearer``, 403 when it is
  unknown or has no read access to that library, 404 for a library that does not exist.

The library changes as Zotero's does, each change bumping the library's version: a test or
the browser test calls ``add_item``, ``modify_item``, ``trash_item``, ``delete_item``,
``add_collection``, ``rename_collection``, ``delete_collection``, ``add_group``,
``add_key`` and ``revoke_key`` (thread-safe: the server answers on other threads).
``backoff[n] = seconds`` adds a ``Backoff`` header to the n-th answer; ``faults`` (a 429
with ``Retry-After``, a 5xx, a hostile body) and ``fail_from`` as every ``ReplayServer``.

``python -m replay.zotero`` serves a demo library (items matching the sample corpus by title,
arXiv preprints, a note, an attachment, two collections and a subcollection) and prints its
URL and API key, for the README's walk.
"""

from __future__ import annotations

import argparse
import json
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from replay.server import ReplayServer

MAX_LIMIT = 100
DEFAULT_LIMIT = 25
API_KEY = "P9NiFoyLeZu2bZNvvuQPDWsd"  # the demo's key: 24 letters and digits, as Zotero's
USER_ID = "475425"
KEY_CHARS = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"  # Zotero's object keys: 8 of these


@dataclass
class Library:
    type: str  # "user" or "group"
    id: str
    name: str
    version: int = 0
    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> data
    collections: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: dict[str, dict[str, int]] = field(
        default_factory=lambda: {"items": {}, "collections": {}})  # key -> version deleted

    @property
    def prefix(self) -> str:
        return f"/{self.type}s/{self.id}"


class ZoteroReplay(ReplayServer):
    """A Zotero Web API serving user ``user_id``'s library to ``api_key`` (full access)."""

    def __init__(self, user_id: str = USER_ID, username: str = "ada", api_key: str = API_KEY,
                 port: int = 0) -> None:
        super().__init__(port=port)
        self.backoff: dict[int, int] = {}
        self.lock = threading.RLock()
        self.user_id = user_id
        self.libraries: dict[str, Library] = {f"user:{user_id}": Library("user", user_id,
                                                                         username)}
        self.keys: dict[str, dict[str, Any]] = {}
        self._counter = 0
        self.add_key(api_key, user_id, username)

    # --- the state, changed as Zotero changes it -------------------------------------------

    def add_key(self, api_key: str, user_id: str | None = None, username: str = "ada", *,
                library: bool = True, groups: dict[str, dict[str, bool]] | None = None) -> None:
        """A key of user ``user_id``; ``library=False``: without read access to their library;
        ``groups``: its group access (default ``{"all": {"library": True, "write": False}}``)."""
        with self.lock:
            self.keys[api_key] = {
                "key": api_key, "userID": int(user_id or self.user_id), "username": username,
                "displayName": username.title(),
                "access": {"user": {"library": library, "files": library, "notes": library,
                                    "write": False},
                           "groups": groups if groups is not None
                           else {"all": {"library": True, "write": False}}}}

    def revoke_key(self, api_key: str) -> None:
        """The reader deleted the key on zotero.org: every request with it is refused (403)."""
        with self.lock:
            self.keys.pop(api_key, None)

    def add_group(self, group_id: str, name: str = "A group") -> None:
        with self.lock:
            self.libraries[f"group:{group_id}"] = Library("group", group_id, name)

    def remove_library(self, library: str) -> None:
        """The library is gone (a group deleted): its requests answer 404."""
        with self.lock:
            self.libraries.pop(library, None)

    def version(self, library: str | None = None) -> int:
        return self._library(library).version

    def add_item(self, title: str = "", *, item_type: str = "journalArticle",
                 collections: list[str] | None = None, library: str | None = None,
                 key: str | None = None, **fields: Any) -> str:
        """A new item (its key); ``fields`` are further data fields (``DOI``, ``url``,
        ``extra``, ``abstractNote``, ``date``, ``creators``, ``parentItem``, ``note``)."""
        with self.lock:
            lib = self._library(library)
            key = key or self._new_key()
            data: dict[str, Any] = {"key": key, "version": 0, "itemType": item_type}
            if item_type not in ("note", "attachment"):
                data.update({"title": title, "creators": [], "abstractNote": "", "DOI": "",
                             "url": "", "date": "", "extra": ""})
            elif item_type == "attachment":
                data.update({"title": title or "Full Text PDF", "linkMode": "imported_url",
                             "contentType": "application/pdf", "filename": "paper.pdf"})
            else:
                data["note"] = fields.pop("note", "<p>A note</p>")
            data.update({"collections": list(collections or []), "tags": [],
                         "relations": {}, "dateAdded": "2026-11-30T09:00:00Z",
                         "dateModified": "2026-11-30T09:00:00Z"})
            data.update(fields)
            lib.items[key] = data
            self._bump(lib, data)
            return key

    def modify_item(self, key: str, *, library: str | None = None, **fields: Any) -> None:
        """Change an item's fields (``collections=[...]`` moves it between collections)."""
        with self.lock:
            lib = self._library(library)
            lib.items[key].update(fields)
            self._bump(lib, lib.items[key])

    def trash_item(self, key: str, *, library: str | None = None) -> None:
        """Move an item to the trash (``data.deleted``: 1; still served with includeTrashed)."""
        self.modify_item(key, library=library, deleted=1)

    def restore_item(self, key: str, *, library: str | None = None) -> None:
        with self.lock:
            lib = self._library(library)
            lib.items[key].pop("deleted", None)
            self._bump(lib, lib.items[key])

    def delete_item(self, key: str, *, library: str | None = None) -> None:
        """Delete an item for good: it is listed by ``/deleted?since=``."""
        with self.lock:
            lib = self._library(library)
            del lib.items[key]
            lib.version += 1
            lib.deleted["items"][key] = lib.version

    def add_collection(self, name: str, *, parent: str | None = None,
                       library: str | None = None, key: str | None = None) -> str:
        with self.lock:
            lib = self._library(library)
            key = key or self._new_key()
            data = {"key": key, "version": 0, "name": name,
                    "parentCollection": parent or False, "relations": {}}
            lib.collections[key] = data
            self._bump(lib, data)
            return key

    def rename_collection(self, key: str, name: str | None = None, *,
                          parent: str | None | bool = None, library: str | None = None) -> None:
        """Rename a collection, or move it (``parent``: a key, or False for the top)."""
        with self.lock:
            lib = self._library(library)
            data = lib.collections[key]
            if name is not None:
                data["name"] = name
            if parent is not None:
                data["parentCollection"] = parent or False
            self._bump(lib, data)

    def delete_collection(self, key: str, *, library: str | None = None) -> None:
        """Delete a collection (its items stay, out of it), as Zotero does."""
        with self.lock:
            lib = self._library(library)
            del lib.collections[key]
            lib.version += 1
            lib.deleted["collections"][key] = lib.version
            for data in lib.items.values():
                if key in data.get("collections", []):
                    data["collections"] = [c for c in data["collections"] if c != key]
                    data["version"] = lib.version

    def _library(self, library: str | None) -> Library:
        return self.libraries[library or f"user:{self.user_id}"]

    def _bump(self, lib: Library, data: dict[str, Any]) -> None:
        lib.version += 1
        data["version"] = lib.version

    def _new_key(self) -> str:
        self._counter += 1
        number, key = self._counter, ""
        for _ in range(8):
            number, digit = divmod(number, len(KEY_CHARS))
            key = KEY_CHARS[digit] + key
        return key

    # --- the API ---------------------------------------------------------------------------

    def content_type(self, status: int) -> str:
        return "application/json" if status == 200 else "text/plain"

    def respond_to(self, path: str, query: dict[str, str], headers: dict[str, str]
                   ) -> tuple[int, dict[str, str], bytes]:
        number = len(self.requests)
        with self.lock:
            status, out, body = self._route(path, query, headers)
        out["Zotero-API-Version"] = "3"
        if number in self.backoff:
            out["Backoff"] = str(self.backoff[number])
        return status, out, body

    def _route(self, path: str, query: dict[str, str], headers: dict[str, str]
               ) -> tuple[int, dict[str, str], bytes]:
        given = headers.get("zotero-api-key") or ""
        auth = headers.get("authorization", "")
        if not given and auth.lower().startswith("bearer "):
            given = auth[7:].strip()
        parts = [p for p in path.split("/") if p]
        if parts[:1] == ["keys"] and len(parts) == 2:
            key = given if parts[1] == "current" else parts[1]
            record = self.keys.get(key)
            if record is None:
                return 403, {}, b"Forbidden"
            return 200, {}, json.dumps(record).encode()
        if len(parts) != 3 or parts[0] not in ("users", "groups"):
            return 404, {}, b"Not found"
        kind, library_id, what = parts[0][:-1], parts[1], parts[2]
        key_record = self.keys.get(given)
        if key_record is None or not self._may_read(key_record, kind, library_id):
            return 403, {}, b"Forbidden"
        lib = self.libraries.get(f"{kind}:{library_id}")
        if lib is None:
            return 404, {}, b"Not found"
        version_headers = {"Last-Modified-Version": str(lib.version)}
        known = headers.get("if-modified-since-version")
        if known is not None and known.isdigit() and int(known) >= lib.version:
            return 304, version_headers, b""
        since = int(query["since"]) if query.get("since", "").isdigit() else 0
        if what == "deleted":
            if "since" not in query:
                return 400, {}, b"'since' must be provided"
            body = {"collections": sorted(k for k, v in lib.deleted["collections"].items()
                                          if v > since),
                    "items": sorted(k for k, v in lib.deleted["items"].items() if v > since),
                    "searches": [], "tags": [], "settings": []}
            return 200, version_headers, json.dumps(body).encode()
        found: list[dict[str, Any]]
        if what == "items":
            found = [d for d in lib.items.values() if d["version"] > since
                     and (query.get("includeTrashed") == "1" or not d.get("deleted"))]
        elif what == "collections":
            found = [d for d in lib.collections.values() if d["version"] > since]
        else:
            return 404, {}, b"Not found"
        found.sort(key=lambda d: (d["version"], d["key"]))
        limit = min(int(query["limit"]) if query.get("limit", "").isdigit()
                    else DEFAULT_LIMIT, MAX_LIMIT) or DEFAULT_LIMIT
        start = int(query["start"]) if query.get("start", "").isdigit() else 0
        page = found[start:start + limit]
        out = {**version_headers, "Total-Results": str(len(found)),
               "Link": self._links(lib, what, query, start, limit, len(found))}
        if query.get("format") == "versions":
            return 200, out, json.dumps({d["key"]: d["version"] for d in page}).encode()
        return 200, out, json.dumps([self._envelope(lib, what, d) for d in page]).encode()

    def _may_read(self, record: dict[str, Any], kind: str, library_id: str) -> bool:
        access = record["access"]
        if kind == "user":
            return str(record["userID"]) == library_id and bool(
                access.get("user", {}).get("library"))
        groups = access.get("groups", {})
        return bool((groups.get(library_id) or groups.get("all") or {}).get("library"))

    def _links(self, lib: Library, what: str, query: dict[str, str], start: int, limit: int,
               total: int) -> str:
        base = f"{self.url}{lib.prefix}/{what}"
        links = []
        if start + limit < total:
            links.append(f'<{base}?{urlencode({**query, "start": start + limit})}>; rel="next"')
            last = ((total - 1) // limit) * limit
            links.append(f'<{base}?{urlencode({**query, "start": last})}>; rel="last"')
        links.append(f'<https://www.zotero.org/{lib.prefix.strip("/")}/{what}>; '
                     f'rel="alternate"')
        return ", ".join(links)

    def _envelope(self, lib: Library, what: str, data: dict[str, Any]) -> dict[str, Any]:
        href = f"{self.url}{lib.prefix}/{what}/{data['key']}"
        envelope = {
            "key": data["key"], "version": data["version"],
            "library": {"type": lib.type, "id": int(lib.id), "name": lib.name, "links": {
                "alternate": {"href": f"https://www.zotero.org/{lib.name}",
                              "type": "text/html"}}},
            "links": {"self": {"href": href, "type": "application/json"},
                      "alternate": {"href": href.replace(self.url, "https://www.zotero.org"),
                                    "type": "text/html"}},
            "meta": ({"numCollections": sum(1 for c in lib.collections.values()
                                            if c["parentCollection"] == data["key"]),
                      "numItems": sum(1 for i in lib.items.values()
                                      if data["key"] in i.get("collections", []))}
                     if what == "collections" else {"numChildren": 0}),
            "data": data,
        }
        return envelope


def demo_library(replay: ZoteroReplay) -> None:
    """A few dozen items: papers of the sample corpus (by title), arXiv preprints, a note,
    an attachment, an item without a title; collections "Vision" and "Training" with the
    subcollection "Training / Distributed"."""
    from pathlib import Path

    from recommender.core.papers import Paper
    from recommender.corpus.paperlist import parse_paper_list

    sample = Path(__file__).parent.parent / "recommender" / "corpus" / "sample_data"
    papers = [p for f in sorted(sample.glob("*.txt"))
              for p in parse_paper_list(f.read_text(), f.name) if isinstance(p, Paper)]
    vision = replay.add_collection("Vision")
    training = replay.add_collection("Training")
    distributed = replay.add_collection("Distributed", parent=training)
    for number, paper in enumerate(papers[:20]):
        words = paper.text.lower()
        into = ([vision] if "image" in words or "vision" in words else
                [distributed] if "distributed" in words else
                [training] if "training" in words else [])
        replay.add_item(paper.title, item_type="conferencePaper", collections=into,
                        abstractNote=paper.abstract[:2000], date="2026",
                        creators=[{"creatorType": "author", "firstName": "Ada",
                                   "lastName": f"Author{number}"}])
    preprints = [("2106.09685", "LoRA: Low-Rank Adaptation of Large Language Models"),
                 ("1706.03762", "Attention Is All You Need"),
                 ("2005.14165", "Language Models are Few-Shot Learners"),
                 ("1810.04805", "BERT: Pre-training of Deep Bidirectional Transformers for "
                                "Language Understanding"),
                 ("2010.11929", "An Image is Worth 16x16 Words: Transformers for Image "
                                "Recognition at Scale")]
    for arxiv, title in preprints:
        replay.add_item(title, item_type="preprint", url=f"https://arxiv.org/abs/{arxiv}",
                        extra=f"arXiv:{arxiv}", archiveID=f"arXiv:{arxiv}", repository="arXiv",
                        collections=[vision] if "Image" in title else [training],
                        abstractNote=f"The abstract of {title}.",
                        creators=[{"creatorType": "author", "name": "A. Researcher"}])
    parent = replay.add_item("A Survey of Paper Recommendation", DOI="10.1000/survey.2026",
                             abstractNote="Recommending research papers to researchers.")
    replay.add_item(item_type="note", parentItem=parent, note="<p>Read section 3 again</p>")
    replay.add_item("Full Text PDF", item_type="attachment", parentItem=parent)
    replay.add_item("", item_type="journalArticle")  # an item without a title


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8086)
    args = parser.parse_args(argv)
    replay = ZoteroReplay(port=args.port)
    demo_library(replay)
    with replay:
        print(f"Zotero Web API (replay) at {replay.url}: user id {replay.user_id}, "
              f"API key {API_KEY}, library version {replay.version()}", flush=True)
        print(f"  export PAPERREC_ZOTERO_API_URL={replay.url}", flush=True)
        replay.wait()


if __name__ == "__main__":
    main()

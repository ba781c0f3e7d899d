"""A local OpenReview API v2 that replays submission notes in the documented JSON.

``OpenReviewReplay`` answers ``GET /notes`` as api2.openreview.net does for the filters the
fetch uses: ``content.venueid`` selects the notes whose venueid is exactly that value (so
rejected and withdrawn submissions of the venue, which carry ``<venue>/Rejected_Submission``
and ``<venue>/Withdrawn_Submission``, are never among a venue's accepted papers), ``sort=id``
orders them by id, ``after=<note id>`` continues after that note, ``offset`` skips, ``limit``
(at most 1000) cuts a page, and ``count=true`` adds the number of matching notes. Every content
field is wrapped as ``{"value": ...}``. Like tests/oai_replay.py it remembers each request's
query (``requests``) and fails on purpose: ``faults[n]`` answers request number n (1-based)
with that status and headers (a 429 with OpenReview's RateLimitError body), ``fail_from = n``
answers every request from the n-th on with a 500.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.servers import free_port

VENUE = "ICML.cc/2026/Conference"
PUBLISHED = 1_782_000_000_000  # 2026-06-21, milliseconds since the epoch as the API gives dates
MAX_LIMIT = 1000


@dataclass
class Note:
    """One submission note; ``title=None`` leaves the title out (a malformed note)."""

    forum: str
    title: str | None = "A title"
    abstract: str = "An abstract."
    authors: list[Any] = field(default_factory=lambda: ["Ada Lovelace"])
    venueid: str = VENUE
    venue: str = "ICML 2026 Poster"
    number: int = 1
    mdate: int = PUBLISHED
    code: str | None = None

    def json(self) -> dict[str, Any]:
        content: dict[str, Any] = {
            "abstract": self.abstract, "authors": self.authors,
            "authorids": [f"~Author{i}1" for i, _ in enumerate(self.authors)],
            "keywords": ["machine learning"], "venue": self.venue, "venueid": self.venueid,
            "pdf": f"/pdf/{self.forum.lower()}0123456789abcdef.pdf",
            "_bibtex": f"@inproceedings{{x{self.number},\ntitle={{{self.title}}}\n}}",
        }
        if self.title is not None:
            content["title"] = self.title
        if self.code is not None:
            content["code"] = self.code
        return {
            "id": self.forum, "forum": self.forum, "number": self.number,
            "invitations": [f"{VENUE}/-/Submission", f"{VENUE}/-/Post_Submission"],
            "domain": VENUE, "readers": ["everyone"], "writers": [VENUE],
            "signatures": [f"{VENUE}/Submission{self.number}/Authors"],
            "cdate": PUBLISHED - 150 * 86_400_000, "tcdate": PUBLISHED - 150 * 86_400_000,
            "pdate": PUBLISHED, "odate": PUBLISHED, "mdate": self.mdate, "tmdate": self.mdate,
            "license": "CC BY 4.0",
            "content": {name: {"value": value} for name, value in content.items()},
        }


class OpenReviewReplay:
    def __init__(self, notes: list[Note]) -> None:
        self.notes = notes
        self.requests: list[dict[str, str]] = []
        self.faults: dict[int, tuple[int, dict[str, str]]] = {}
        self.fail_from: int | None = None
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> OpenReviewReplay:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        self.requests.append(query)
        number = len(self.requests)
        if number in self.faults:
            status, headers = self.faults[number]
            if status == 429:
                return status, headers, {
                    "name": "RateLimitError", "status": 429,
                    "message": "Too many requests: You have made 61 requests, surpassing the "
                               "limit of 60 requests. Please try again in 1 seconds",
                    "details": {"limit": 60, "remaining": 0, "used": 61}}
            return status, headers, {"name": "Error", "status": status, "message": "unavailable"}
        if self.fail_from is not None and number >= self.fail_from:
            return 500, {}, {"name": "Error", "status": 500, "message": "the server died"}
        if path != "/notes":
            return 404, {}, {"name": "NotFoundError", "status": 404, "message": "no such path"}
        chosen = [n for n in self.notes if n.venueid == query.get("content.venueid", n.venueid)]
        if query.get("sort", "id").startswith("id"):
            chosen.sort(key=lambda n: n.forum)
        if "after" in query:  # a cursor: the notes after that id, in id order
            chosen = [n for n in chosen if n.forum > query["after"]]
        start = int(query.get("offset", "0"))
        limit = min(int(query.get("limit", str(MAX_LIMIT))), MAX_LIMIT)
        body: dict[str, Any] = {"notes": [n.json() for n in chosen[start:start + limit]]}
        if query.get("count") == "true":
            body["count"] = len(chosen)
        return 200, {}, body

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
                parts = urlsplit(self.path)
                query = {key: values[-1] for key, values in
                         parse_qs(parts.query, keep_blank_values=True).items()}
                status, headers, body = replay.answer(parts.path, query)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: object) -> None:
                pass

        return Handler

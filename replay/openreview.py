"""A local OpenReview API v2 that replays submission notes in the documented JSON.

``OpenReviewReplay`` answers ``GET /notes`` as api2.openreview.net does for the filters the
fetch uses: ``content.venueid`` selects the notes whose venueid is exactly that value (so
rejected and withdrawn submissions of the venue, which carry ``<venue>/Rejected_Submission``
and ``<venue>/Withdrawn_Submission``, are never among a venue's accepted papers), ``sort=id``
orders them by id, ``after=<note id>`` continues after that note, ``offset`` skips, ``limit``
(at most 1000) cuts a page, and ``count=true`` adds the number of matching notes. Every content
field is wrapped as ``{"value": ...}``. Like every ``ReplayServer`` it remembers each
request's query (``requests``) and fails on purpose: ``faults[n]`` answers request number n
(1-based) with that status and headers (a 429 with OpenReview's RateLimitError body),
``fail_from = n`` answers every request from the n-th on with a 500.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from replay.server import ReplayServer

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


class OpenReviewReplay(ReplayServer):
    def __init__(self, notes: list[Note]) -> None:
        super().__init__()
        self.notes = notes

    def content_type(self, status: int) -> str:
        return "application/json; charset=utf-8"

    def fault_body(self, status: int, message: str) -> bytes:
        if status == 429:
            return json.dumps({
                "name": "RateLimitError", "status": 429,
                "message": "Too many requests: You have made 61 requests, surpassing the "
                           "limit of 60 requests. Please try again in 1 seconds",
                "details": {"limit": 60, "remaining": 0, "used": 61}}).encode()
        return json.dumps({"name": "Error", "status": status, "message": message}).encode()

    def respond(self, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path != "/notes":
            return 404, {}, json.dumps({"name": "NotFoundError", "status": 404,
                                        "message": "no such path"}).encode()
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
        return 200, {}, json.dumps(body).encode()

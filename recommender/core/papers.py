"""The paper record shared by ingest, the corpus, the index and the API."""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

EPOCH = dt.date(1970, 1, 1).toordinal()
# An address a reader's browser, mail or feed reader may follow: http(s), a host, and no
# white space, quotes or angle brackets (which would end it early in HTML or text).
_WEB_URL = re.compile(r"https?://[^\s\"'<>/?#]+[^\s\"'<>]*", re.IGNORECASE)


def web_url(value: object) -> str | None:
    """``value`` when it is an http(s) address, else None: the one check every link that
    leaves paperrec passes (a ``javascript:`` or ``data:`` URL in an uploaded file must not
    become a link on a page, in an email or in another reader's feed)."""
    if isinstance(value, str) and _WEB_URL.fullmatch(value.strip()):
        return value.strip()
    return None


@dataclass
class Paper:
    """One paper. ``text`` is what gets embedded; the other fields are for display."""

    id: str
    title: str
    abstract: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    date: str | None = None  # ISO date (YYYY-MM-DD) when known
    url: str | None = None
    doi: str | None = None
    code_urls: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    text: str = ""  # raw title + abstract, as embedded (markup kept)

    def __post_init__(self) -> None:
        if not self.text:
            self.text = f"{self.title}\n{self.abstract}".strip()
        # Links are kept only when they are web addresses (``web_url``): every paper read,
        # from a file, a harvest, an upload or the corpus, carries only links safe to show.
        self.url = web_url(self.url)
        self.code_urls = [url for url in map(web_url, self.code_urls) if url]

    @property
    def content_hash(self) -> str:
        """Hash of the embedded text: a changed abstract means a new embedding."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def day(self) -> float:
        """Publication day (days since 1970-01-01): the date, else 1 January of the year,
        else NaN."""
        try:
            if self.date:
                return float(dt.date.fromisoformat(self.date[:10]).toordinal() - EPOCH)
            if self.year:
                return float(dt.date(self.year, 1, 1).toordinal() - EPOCH)
        except ValueError:
            pass
        return math.nan

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Paper:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass(frozen=True)
class Rejection:
    """A record that could not be ingested, reported as ``file:line: reason``."""

    source: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.reason}"

"""The paper record shared by ingest, the corpus, the index and the API."""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from dataclasses import asdict, dataclass, field
from typing import Any

EPOCH = dt.date(1970, 1, 1).toordinal()


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

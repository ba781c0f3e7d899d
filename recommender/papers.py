"""The paper record shared by ingest, the corpus, the index and the API."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any


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

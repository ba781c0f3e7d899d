"""The impression log: every list served and what its reader did with it, kept to measure the
lists online (``report``), compare rankings (``experiments``) and refit the probability shown
(``jobs.calibrate_from_log``).

Two kinds of event, each one JSON object:

- a **list** served (``ServedList``): its id, the reader, the surface (``api``, ``page``,
  ``digest``, ``feed``), its first position, its papers in order, the ranking variant that put
  each there, each paper's score in the reader's own units and the probability shown, the
  reader's number of likes, which papers were new, and the experiment running;
- an **outcome**: a like, dislike, "not now", an opened paper page or a followed email or
  feed link, naming the list it came from (the list id travels in the links) and the paper.
  Its position and variant are found by joining it to its list (``report``), so an outcome
  can only be credited to a paper that list really showed that reader.

Events go first to a Redis stream (``RedisKeys.events``): one ``XADD`` per list served, from
every worker, ordered, and kept across restarts as Redis keeps its data (the embedded Redis
and production's AOF). The stream is capped (``PAPERREC_EVENTS_STREAM_MAX``, trimmed
approximately) so Redis memory stays bounded even when nothing reads it. ``export`` (a step of
``paperrec jobs``) appends what is new to daily JSON-lines files in ``<data dir>/events/``
(``lists-YYYY-MM-DD.jsonl``, ``outcomes-YYYY-MM-DD.jsonl``) and trims what it wrote from the
stream; the files are the log of record, easy to hand to pandas or DuckDB. Outcomes are kept
apart so a report reads them (few) before streaming the lists (many) once.

Why a stream and files rather than a table: appending from many gunicorn workers must cost
well under a millisecond per list and never block a list on disk; Redis is already every
worker's shared store, and a stream is its append-only log (as Metarank and gorse log
feedback). Analysis wants plain files by day, which also keep Redis small.

Erasure (``forget``) deletes a reader's events from the stream and rewrites the daily files
that name them.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import orjson
import redis

from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_options import redis_errors
from recommender.storage.versions import write_atomically

Surface = Literal["api", "page", "digest", "feed"]
SURFACES: tuple[Surface, ...] = ("api", "page", "digest", "feed")
Outcome = Literal["like", "dislike", "not-now", "open", "click"]
OUTCOMES: tuple[Outcome, ...] = ("like", "dislike", "not-now", "open", "click")
LIST_ID = re.compile(r"^[A-Za-z0-9_-]{16}$")
READ_BATCH = 10_000  # stream entries per XRANGE
FIELD = "e"  # the one field of a stream entry: the event's JSON
# A list's scores in its JSON, and the comma after them ("q" follows): a key, never inside a
# string, where a quote is escaped.
SCORES = re.compile(r'"z":\[[^\]]*\],')
_T = TypeVar("_T")


def new_list_id() -> str:
    """A list's id: 16 URL-safe characters (96 random bits)."""
    return secrets.token_urlsafe(12)


def check_list_id(value: object) -> str | None:
    """``value`` when it is a list id of ours, else None: a list id comes back from readers
    (links, forms, the API), and one that is not ours is ignored, never an error."""
    return value if isinstance(value, str) and LIST_ID.match(value) else None


@dataclass(frozen=True)
class ServedList:
    """One list served, as logged."""

    list_id: str
    user: str
    surface: str
    at: float
    papers: tuple[str, ...]
    variants: tuple[str, ...]  # per paper: the ranking variant that put it there
    z: tuple[float, ...] = ()  # per paper: its score in the reader's units (nan: followed)
    probability: tuple[float, ...] = ()  # per paper: the probability shown
    likes: int = 0  # the reader's likes when it was served
    new: tuple[bool, ...] = ()  # per paper: published in the week before it was served
    offset: int = 0  # the position of its first paper, less one
    experiment: str = ""  # the experiment running ("": none)

    def to_json(self) -> dict[str, Any]:
        uniform = len(set(self.variants)) <= 1
        return {"k": "list", "t": round(self.at, 3), "l": self.list_id, "u": self.user,
                "s": self.surface, "o": self.offset, "p": list(self.papers),
                "v": (self.variants[0] if self.variants else "") if uniform
                else list(self.variants),
                "z": [None if math.isnan(z) else round(z, 3) for z in self.z],
                "q": [round(p, 4) for p in self.probability], "n": self.likes,
                "new": "".join("1" if n else "0" for n in self.new), "x": self.experiment}

    def only(self, papers: list[str]) -> ServedList:
        """This list as far as it showed ``papers`` (of its own, in their order, from place
        1): a digest's section shows its list less the papers the digest shows above it."""
        at = {paper: i for i, paper in enumerate(self.papers)}
        rows = [at[paper] for paper in papers]

        def pick(values: tuple[_T, ...]) -> tuple[_T, ...]:
            return tuple(values[i] for i in rows) if len(values) == len(self.papers) else values

        return replace(self, papers=tuple(papers), variants=pick(self.variants),
                       z=pick(self.z), probability=pick(self.probability), new=pick(self.new),
                       offset=0)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServedList:
        papers = tuple(data["p"])
        variants = data["v"]
        return cls(data["l"], data["u"], data["s"], float(data["t"]), papers,
                   tuple(variants) if isinstance(variants, list) else (variants,) * len(papers),
                   tuple(math.nan if z is None else float(z) for z in data.get("z", ())),
                   tuple(float(p) for p in data.get("q", ())), int(data.get("n", 0)),
                   tuple(c == "1" for c in data.get("new", "")), int(data.get("o", 0)),
                   str(data.get("x", "")))


@dataclass(frozen=True)
class OutcomeEvent:
    kind: str  # one of OUTCOMES
    user: str
    list_id: str
    paper: str
    at: float

    def to_json(self) -> dict[str, Any]:
        return {"k": self.kind, "t": round(self.at, 3), "l": self.list_id, "u": self.user,
                "p": self.paper}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OutcomeEvent:
        return cls(data["k"], data["u"], data["l"], data["p"], float(data["t"]))


@dataclass
class ExportSummary:
    lists: int = 0
    outcomes: int = 0
    files: list[str] = field(default_factory=list)
    lost: bool = False  # the stream's cap dropped events before they were exported

    def __str__(self) -> str:
        text = (f"exported {self.lists} lists and {self.outcomes} outcomes "
                f"into {len(self.files)} daily files")
        if self.lost:
            text += ("; some events were dropped by the stream's cap before this export: run "
                     "it more often or raise PAPERREC_EVENTS_STREAM_MAX")
        return text


class EventLog:
    """``per_reader_day``: events one reader may add in a UTC day. Anyone can sign in and
    reload a page in a loop: without a budget one reader could push every other reader's
    events out of the capped stream before they are exported. Each event also counts in the
    reader's counter (``RedisKeys.events_today``), in the same round trip; a reader found over
    the budget is remembered by this process and logs nothing more that day (so each process
    adds at most one event past it)."""

    def __init__(self, client: redis.Redis, keys: RedisKeys, folder: Path,
                 stream_max: int, per_reader_day: int = 2_000) -> None:
        self._redis = client
        self._keys = keys
        self._key = keys.events
        self.folder = folder
        self._max = stream_max
        self._budget = per_reader_day
        self._spent: tuple[str, set[str]] = ("", set())  # (UTC day, readers over budget)

    # --- writing ----------------------------------------------------------------------

    def served(self, served: ServedList) -> None:
        """Log a list served (one round trip), unless its reader is over their budget."""
        self._add(served.user, served.at, served.to_json())

    def outcome(self, kind: Outcome, user: str, list_id: object, paper: str,
                at: float) -> bool:
        """Log what a reader did with a paper of a list; a ``list_id`` that is not one of
        ours (``check_list_id``) logs nothing. Whether it was logged."""
        checked = check_list_id(list_id)
        if checked is None:
            return False
        return self._add(user, at, OutcomeEvent(kind, user, checked, paper, at).to_json())

    def _add(self, user: str, at: float, event: dict[str, Any]) -> bool:
        day = _day(at)
        if self._spent[0] != day:
            self._spent = (day, set())
        if user in self._spent[1]:
            return False
        encoded = orjson.dumps(event)
        counter = self._keys.events_today(user)
        with redis_errors():
            pipe = self._redis.pipeline(transaction=False)
            pipe.hincrby(counter, day, 1)
            pipe.hdel(counter, _day(at - 2 * 86400))  # the hash holds a day or two
            pipe.expire(counter, 2 * 86400)
            pipe.xadd(self._key, {FIELD: encoded}, maxlen=self._max, approximate=True)
            count = int(pipe.execute()[0])
        if count >= self._budget:
            self._spent[1].add(user)
        return True

    # --- reading ----------------------------------------------------------------------

    def outcomes(self, since: float | None = None) -> Iterator[OutcomeEvent]:
        """The outcomes, oldest first."""
        for event in self.outcome_records(since):
            yield OutcomeEvent.from_json(event)

    def outcome_records(self, since: float | None = None) -> Iterator[dict[str, Any]]:
        """The outcomes as logged (``OutcomeEvent.to_json``), oldest first (``list_records``
        says why)."""
        for path in self._files("outcomes", since):
            yield from _read_lines(path)
        for _, event in self._stream(self._exported()):
            if event["k"] != "list":
                yield event

    def lists(self, since: float | None = None) -> Iterator[ServedList]:
        """The lists served, oldest first."""
        for event in self.list_records(since):
            yield ServedList.from_json(event)

    def list_records(self, since: float | None = None,
                     scores: bool = True) -> Iterator[dict[str, Any]]:
        """The lists served as logged (``ServedList.to_json``), oldest first: what the report
        reads, millions of them, without making a ``ServedList`` of each. ``scores`` False:
        the daily files' lists without their papers' scores (``z``), which the report does
        not read."""
        for path in self._files("lists", since):
            yield from _read_lines(path, scores)
        for _, event in self._stream(self._exported()):
            if event["k"] == "list":
                yield event

    def stream_length(self) -> int:
        with redis_errors():
            return int(self._redis.xlen(self._key))

    def _stream(self, after: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """(id, event) of the stream's entries after ``after``, in batches."""
        start = f"({after}" if after != "0-0" else "-"
        while True:
            with redis_errors():
                batch = cast(list[tuple[str, dict[str, str]]],
                             self._redis.xrange(self._key, min=start, count=READ_BATCH))
            for entry_id, fields in batch:
                event = orjson.loads(fields[FIELD])
                event["id"] = entry_id
                yield entry_id, event
            if len(batch) < READ_BATCH:
                return
            start = f"({batch[-1][0]}"

    def _files(self, kind: str, since: float | None) -> list[Path]:
        """The daily files of ``kind`` (lists, outcomes, * for both) from the day of
        ``since``, oldest first (lists before outcomes on one day)."""
        if not self.folder.is_dir():
            return []
        first = "" if since is None else _day(since)
        found = [path for path in self.folder.glob(f"{kind}-*.jsonl")
                 if path.stem.split("-", 1)[1] >= first]
        return sorted(found, key=lambda path: (path.stem.split("-", 1)[1], path.name))

    # --- export and erasure -----------------------------------------------------------

    def export(self) -> ExportSummary:
        """Append the stream's events not exported yet to the daily files (by the UTC day
        of the event), then trim them from the stream. Files first, trim after: a crash in
        between exports nothing twice, as the files' newest id says where to go on."""
        summary = ExportSummary()
        self.folder.mkdir(parents=True, exist_ok=True)
        after = self._exported()
        summary.lost = self._lost_after(after)
        handles: dict[Path, Any] = {}
        try:
            for entry_id, event in self._stream(after):
                kind = "lists" if event["k"] == "list" else "outcomes"
                path = self.folder / f"{kind}-{_day(float(event['t']))}.jsonl"
                if path not in handles:
                    handles[path] = path.open("a", encoding="utf-8")
                handles[path].write(orjson.dumps(event).decode() + "\n")
                if kind == "lists":
                    summary.lists += 1
                else:
                    summary.outcomes += 1
                after = entry_id
        finally:
            for handle in handles.values():
                handle.flush()
                os.fsync(handle.fileno())
                handle.close()
        summary.files = sorted(path.name for path in handles)
        if summary.lists or summary.outcomes:
            (self.folder / "exported").write_text(after)
            with redis_errors():
                self._redis.xtrim(self._key, minid=_next_id(after))
        return summary

    def _lost_after(self, after: str) -> bool:
        """Whether the stream dropped entries newer than ``after`` (its cap, or an erasure)
        before they were exported: Redis 7 keeps the largest id it ever deleted."""
        with redis_errors():
            if not self._redis.exists(self._key):
                return False
            deleted = self._redis.xinfo_stream(self._key).get("max-deleted-entry-id")
        return bool(deleted) and _parts(str(deleted)) > _parts(after)

    def _exported(self) -> str:
        """The id of the newest event in the files ("0-0": none)."""
        path = self.folder / "exported"
        try:
            return path.read_text().strip() or "0-0"
        except FileNotFoundError:
            return "0-0"

    def forget(self, user: str) -> int:
        """Delete every event of ``user`` from the stream and the files; how many."""
        gone = 0
        doomed = [entry_id for entry_id, event in self._stream("0-0") if event["u"] == user]
        for start in range(0, len(doomed), READ_BATCH):
            with redis_errors():
                gone += int(self._redis.xdel(self._key, *doomed[start:start + READ_BATCH]))
        needle = f'"u":{orjson.dumps(user).decode()}'  # user ids are ASCII: as json wrote it
        for path in self._files("*", None):
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            if not any(needle in line for line in lines):
                continue
            kept = [line for line in lines if orjson.loads(line)["u"] != user]
            gone += len(lines) - len(kept)
            data = "".join(kept).encode("utf-8")
            write_atomically(path, lambda handle, data=data: handle.write(data))  # type: ignore[misc]
        return gone


def _read_lines(path: Path, scores: bool = True) -> Iterator[dict[str, Any]]:
    """The events of a daily file, parsed ``READ_BATCH`` lines at a time as one JSON array
    (a third faster than line by line); ``scores`` False: lists without their papers' scores
    (``z``), cut from the text before parsing."""
    with path.open(encoding="utf-8") as handle:
        while chunk := list(islice(handle, READ_BATCH)):
            text = ",".join(line for line in chunk if line.strip())
            if not scores:
                text = SCORES.sub("", text)
            if text:
                yield from orjson.loads(f"[{text}]")


def _day(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).date().isoformat()


def _parts(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def _next_id(entry_id: str) -> str:
    ms, seq = _parts(entry_id)
    return f"{ms}-{seq + 1}"

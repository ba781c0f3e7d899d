"""A reader's Zotero library, connected and kept in sync: its items are likes, its
collections paperrec collections.

``ZoteroConnections`` (``Paperrec.zotero``) connects a library (a personal or a group one)
with an API key, checked at once against ``/keys/current`` and kept encrypted at rest (Fernet,
keyed by HKDF from the deployment's secret; never logged, never answered, never exported),
and syncs it:

- **Incremental.** Only what changed since the library version synced last: ``since=`` and
  ``If-Modified-Since-Version`` (a library that did not change costs one request, answered
  304), pages of 100, the trash included (an item moved there stops being a like), deletions
  from ``/deleted?since=``.
- **Matched as a library file is.** A regular item with a title is matched to the corpus by
  arXiv id, DOI, or title and first author, and added as the reader's pending paper when new
  (``library.resolve_entries``, the import's own code, within the reader's daily quota; those
  past it are tried again next sync). Notes, attachments, items without a title are skipped
  and counted by reason.
- **Collections.** Each Zotero collection (those the reader includes: all by default) becomes
  a paperrec collection named by its path ("Training / Distributed"); renames and moves
  follow, membership follows; a collection deleted in Zotero (or no longer included) is
  deleted here when the sync made it (its papers stay liked). Choosing collections chooses
  the likes too: only items in an included collection are likes.
- **Provenance.** A like Zotero wrote is remembered with its exact value; it goes when its
  items go from Zotero, unless the reader has since given their own signal. A paper the
  reader liked themselves is never taken back.
- **Nothing half.** Everything one sync reads is fetched first, page by page into a stage in
  Redis (``zotero-stage``), and applied in one script (``zotero_apply``): a sync killed, out
  of time or failing half-way leaves the likes as before; the next one continues from the
  stage. Running it again changes nothing.
- **Bounded.** Each library has a time budget (``PAPERREC_ZOTERO_BUDGET_SECONDS``): a slow
  one is left for the next run, with what was fetched staged; the job goes on with the
  other readers. A refused key or a library gone is kept as the connection's ``error``.
"""

from __future__ import annotations

import base64
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, cast

import redis
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from recommender.core.errors import InvalidInput, NotFound, PaperrecError
from recommender.corpus.store import CorpusStore
from recommender.corpus.zotero_api import (
    PAGE_SIZE,
    ZoteroClient,
    ZoteroFailed,
    ZoteroRefused,
    check_library,
    library_path,
)
from recommender.feedback.upload_quota import UploadQuota
from recommender.feedback.zotero_apply import PlanApplier
from recommender.feedback.zotero_plan import (
    Fetched,
    collection_paths,
    make_plan,
    stage_records,
)
from recommender.storage.redis_keys import BUCKETS, RedisKeys, bucket_of
from recommender.storage.redis_options import redis_errors
from recommender.storage.redis_writes import UserWrites

BUDGET_SECONDS = 60.0  # one library's sync, retries and waits included
CONNECT_SECONDS = 20.0  # checking a key while the reader waits
MAX_INCLUDED = 200  # collection keys a reader may name
MAX_ITEMS_READ = 100_000  # items one sync reads (1,000 pages): past it the library is refused
MAX_COLLECTIONS_READ = 10_000  # collections one sync reads


@dataclass(frozen=True)
class ZoteroSummary:
    """What one sync did."""

    added: int  # papers new to the corpus, now liked
    matched: int  # papers of the corpus, now liked
    updated: int  # items changed in Zotero and synced again
    removed: int  # likes taken back (their items deleted or trashed in Zotero)
    skipped: dict[str, int]  # reason -> items
    collections_created: int
    collections_renamed: int
    library_version: int
    requests: int
    seconds: float
    finished: bool  # False: the time budget ran out; the rest next run
    error: str | None
    at: float  # unix time

    def __str__(self) -> str:
        skipped = sum(self.skipped.values())
        reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(self.skipped.items()))
        line = (f"added {self.added}, matched {self.matched}, updated {self.updated}, "
                f"removed {self.removed}, skipped {skipped}" + (f" ({reasons})" if reasons
                                                                 else "") +
                f", collections created {self.collections_created}, renamed "
                f"{self.collections_renamed}, library version {self.library_version}, "
                f"{self.requests} requests in {self.seconds:.1f} s")
        if not self.finished and self.error is None:
            line += "; not finished: the time budget ran out, the rest next run"
        if self.error is not None:
            line += f"; error: {self.error}"
        return line

    @classmethod
    def from_json(cls, text: str) -> ZoteroSummary:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class ZoteroState:
    connected: bool
    library_type: str | None = None
    library_id: str | None = None
    library_version: int | None = None
    last_sync: ZoteroSummary | None = None
    included_collections: list[str] | None = None  # Zotero collection keys; None: all
    error: str | None = None  # revoked key, library gone


@dataclass(frozen=True)
class ZoteroCollection:
    key: str
    name: str  # its path: "Training / Distributed"
    included: bool


@dataclass
class ZoteroJobSummary:
    """What one run over every connected library did (``paperrec jobs``' step)."""

    libraries: int = 0
    failed: int = 0  # could not be synced at all (the reader's error)
    unfinished: int = 0  # out of time: the rest next run
    added: int = 0
    matched: int = 0
    removed: int = 0
    requests: int = 0
    seconds: float = 0.0

    def count(self, summary: ZoteroSummary) -> None:
        self.libraries += 1
        self.failed += summary.error is not None
        self.unfinished += not summary.finished and summary.error is None
        self.added += summary.added
        self.matched += summary.matched
        self.removed += summary.removed
        self.requests += summary.requests
        self.seconds += summary.seconds

    def __str__(self) -> str:
        return (f"{self.libraries} libraries ({self.failed} failed, {self.unfinished} to "
                f"finish next run): added {self.added}, matched {self.matched}, removed "
                f"{self.removed}; {self.requests} requests in {self.seconds:.1f} s")


@dataclass
class _Run:
    """One sync under way: its client (the job's, shared by its readers, or its own) and its
    counts so far."""

    started: float
    client: ZoteroClient | None  # None: nothing is asked of Zotero (only re-applied)
    requests_before: int
    skipped: Counter[str] = field(default_factory=Counter)


class ZoteroConnections:
    def __init__(self, client: redis.Redis, keys: RedisKeys, writes: UserWrites,
                 secret: bytes, api_url: str, retries: int, *, corpus: CorpusStore,
                 quota: UploadQuota, embed: Callable[[list[str]], object],
                 budget_seconds: float = BUDGET_SECONDS, backoff_seconds: float = 5.0) -> None:
        self._redis, self._keys, self._writes = client, keys, writes
        derived = HKDF(SHA256(), 32, salt=None,
                       info=b"paperrec zotero api keys").derive(secret)
        self._box = Fernet(base64.urlsafe_b64encode(derived))
        self.api_url, self.retries = api_url, retries
        self.budget_seconds, self.backoff_seconds = budget_seconds, backoff_seconds
        self._corpus, self._quota = corpus, quota
        self._embed = embed  # caches the vectors of papers just liked (the next list counts them)
        self._applier = PlanApplier(writes, keys)

    def new_client(self) -> ZoteroClient:
        """A client of the configured API: one per sync, or one per job run (a ``Backoff``
        one library's answer carries then holds back the next library's requests too)."""
        return ZoteroClient(self.api_url, self.retries, backoff=self.backoff_seconds)

    # --- the connection --------------------------------------------------------------------

    def connect(self, user_id: str, library_type: Literal["user", "group"], library_id: str,
                api_key: str, now: float) -> ZoteroState:
        """Check the key with Zotero at once and keep it (encrypted); ZoteroRefused (403)
        when Zotero refuses it, it may not read that library or there is no such library;
        ZoteroFailed (502) when Zotero cannot be reached."""
        check_library(library_type, library_id, api_key)
        checker = ZoteroClient(self.api_url, 1, backoff=0.5)
        try:
            checker.begin(CONNECT_SECONDS)
            access = checker.key_access(api_key)
            if not access.may_read(library_type, library_id):
                where = (f"your library ({access.user_id})" if library_type == "user"
                         and access.user_id == library_id else f"{library_type} library "
                         f"{library_id}")
                raise ZoteroRefused(
                    f"this API key may not read {where}: on zotero.org/settings/keys give "
                    f"it read access to that library" + (
                        f" (the key is user {access.user_id}'s: for your own library, "
                        f"library_id is {access.user_id})" if library_type == "user" else ""))
            # the library is there (a group's id may be wrong): one read of its collections
            checker.page(library_path(library_type, library_id), "collections", api_key,
                         0, 0, conditional=False)
        finally:
            checker.close()
        key = self._keys.zotero(user_id)
        with redis_errors():
            old = cast(dict[str, str], self._redis.hgetall(key))
            same = (old.get("library_type"), old.get("library_id")) == (library_type,
                                                                        library_id)
            pipe = self._redis.pipeline(transaction=True)
            if not same:  # another library: start afresh (its likes stay, as the reader's)
                pipe.delete(self._keys.zotero_items(user_id),
                            self._keys.zotero_collections(user_id),
                            self._keys.zotero_likes(user_id), self._keys.zotero_stage(user_id),
                            key)
            pipe.hset(key, mapping={
                "library_type": library_type, "library_id": library_id,
                "key": self._box.encrypt(api_key.encode()).decode(),
                "version": old.get("version", "0") if same else "0", "error": "",
                "connected_at": f"{now:.3f}"})
            pipe.sadd(self._keys.zotero_readers(bucket_of(user_id)), user_id)
            pipe.execute()
        return self.state(user_id)

    def state(self, user_id: str) -> ZoteroState:
        with redis_errors():
            found = cast(dict[str, str], self._redis.hgetall(self._keys.zotero(user_id)))
        if not found.get("library_id"):
            return ZoteroState(False)
        included = found.get("included")
        return ZoteroState(
            True, found["library_type"], found["library_id"], int(found.get("version") or 0),
            ZoteroSummary.from_json(found["last_sync"]) if found.get("last_sync") else None,
            json.loads(included) if included else None, found.get("error") or None)

    def disconnect(self, user_id: str) -> None:
        """Forget the key and the library's mirror; the likes and collections stay."""
        k = self._keys
        with redis_errors():
            pipe = self._redis.pipeline(transaction=True)
            pipe.delete(k.zotero(user_id), k.zotero_items(user_id),
                        k.zotero_collections(user_id), k.zotero_likes(user_id),
                        k.zotero_stage(user_id))
            pipe.srem(k.zotero_readers(bucket_of(user_id)), user_id)
            pipe.execute()

    def collections(self, user_id: str) -> list[ZoteroCollection]:
        """The library's collections as last synced, by path."""
        state = self._connected(user_id)
        included = set(state.included_collections or [])
        colls = self._collections(user_id)
        found = [ZoteroCollection(zkey, path, state.included_collections is None
                                  or zkey in included)
                 for zkey, path in collection_paths(colls).items()]
        return sorted(found, key=lambda c: (c.name.lower(), c.key))

    def include_collections(self, user_id: str, keys: list[str] | None) -> None:
        """Only the items of these collections are likes, and only these collections are
        paperrec's (None: all); applied at once, from the library as last synced."""
        self._connected(user_id)
        if keys is not None:
            known = self._collections(user_id)
            unknown = [k for k in keys if k not in known]
            if len(keys) > MAX_INCLUDED:
                raise InvalidInput(f"name at most {MAX_INCLUDED} collections")
            if unknown:
                raise NotFound(f"no collection {unknown[0]!r} in the Zotero library as last "
                               f"synced: GET /v1/users/{user_id}/zotero/collections lists "
                               "them")
        with redis_errors():
            if keys is None:
                self._redis.hdel(self._keys.zotero(user_id), "included")
            else:
                self._redis.hset(self._keys.zotero(user_id), "included",
                                 json.dumps(sorted(set(keys))))
        self._apply(user_id, Fetched.nothing(), time.time(), _Run(time.monotonic(), None, 0))

    def export_user(self, user_id: str) -> dict[str, Any]:
        """The reader's part of an export: the connection without its key."""
        state = self.state(user_id)
        return {"zotero": asdict(state) if state.connected else None}

    # --- syncing ---------------------------------------------------------------------------

    def sync(self, user_id: str, now: float, budget_seconds: float | None = None, *,
             client: ZoteroClient | None = None) -> ZoteroSummary:
        """Sync the reader's library within the budget (NotFound when none is connected).
        Never raises for Zotero's failures: the summary's ``error`` says what went wrong
        (also kept as the connection's error). ``client``: the job's (else one of its own,
        so two syncs at once never share one)."""
        own = client is None
        client = client or self.new_client()
        try:
            return self._sync(user_id, now, budget_seconds, client)
        finally:
            if own:
                client.close()

    def _sync(self, user_id: str, now: float, budget_seconds: float | None,
              client: ZoteroClient) -> ZoteroSummary:
        found = self._record(user_id)
        run = _Run(time.monotonic(), client, client.requests)
        client.begin(budget_seconds or self.budget_seconds)
        try:
            api_key = self._box.decrypt(found["key"].encode()).decode()
        except InvalidToken:
            return self._failed(user_id, found, run, now, "the deployment's secret changed "
                                "since this library was connected: connect it again")
        try:
            fetched = self._fetch(user_id, found, api_key, run, now)
        except ZoteroRefused as exc:
            return self._failed(user_id, found, run, now, exc.message)
        except ZoteroFailed as exc:
            if self._out_of_time(run):
                return self._summary(run, int(found.get("version") or 0), now, finished=False)
            return self._failed(user_id, found, run, now, exc.message)
        if fetched is None:  # out of time: what was fetched is staged
            return self._summary(run, int(found.get("version") or 0), now, finished=False)
        if fetched.unchanged:  # 304: nothing to apply
            summary = self._summary(run, int(found.get("version") or 0), now, finished=True)
            self._keep(user_id, summary)
            return summary
        return self._apply(user_id, fetched, now, run)

    def connected(self) -> int:
        """How many readers have a library connected."""
        with redis_errors():
            pipe = self._redis.pipeline(transaction=False)
            for bucket in range(BUCKETS):
                pipe.scard(self._keys.zotero_readers(bucket))
            return sum(cast(list[int], pipe.execute()))

    def sync_all(self, now: float, budget_seconds: float | None = None,
                 deadline_seconds: float | None = None) -> Iterator[tuple[str, ZoteroSummary]]:
        """Every connected reader's library, one after the other, each within its budget; a
        reader's failure is their summary's error and the others go on. ``deadline_seconds``:
        start no library after that long (the buckets are taken in a random order then, so
        the readers left for the next run are not always the same)."""
        started = time.monotonic()
        order = list(range(BUCKETS))
        if deadline_seconds is not None:
            random.shuffle(order)
        client = self.new_client()
        try:
            yield from self._sync_buckets(order, now, budget_seconds, deadline_seconds,
                                          started, client)
        finally:
            client.close()

    def _sync_buckets(self, order: list[int], now: float, budget_seconds: float | None,
                      deadline_seconds: float | None, started: float,
                      client: ZoteroClient) -> Iterator[tuple[str, ZoteroSummary]]:
        for bucket in order:
            with redis_errors():
                readers = sorted(cast(set[str], self._redis.smembers(
                    self._keys.zotero_readers(bucket))))
            for user_id in readers:
                if deadline_seconds is not None and \
                        time.monotonic() - started > deadline_seconds:
                    return
                try:
                    yield user_id, self.sync(user_id, now, budget_seconds, client=client)
                except NotFound:  # disconnected meanwhile
                    continue
                except Exception as exc:  # noqa: BLE001 (one reader's failure, reported)
                    message = exc.message if isinstance(exc, PaperrecError) else repr(exc)
                    yield user_id, ZoteroSummary(0, 0, 0, 0, {}, 0, 0, 0, 0, 0.0, False,
                                                 message[:500], now)

    def _fetch(self, user_id: str, found: dict[str, str], api_key: str, run: _Run,
               now: float) -> Fetched | None:
        """Everything changed since the synced version (continuing a staged sync), or None
        when the budget ran out first (what was fetched is staged)."""
        client = run.client
        assert client is not None  # a run that fetches has a client
        library = library_path(found["library_type"], found["library_id"])
        since = int(found.get("version") or 0)
        stage_key = self._keys.zotero_stage(user_id)
        for _ in range(2):  # a library that changes under the sync: once more, from the start
            with redis_errors():
                stage = cast(dict[str, str], self._redis.hgetall(stage_key))
            meta = json.loads(stage["meta"]) if "meta" in stage else None
            if meta is None or meta["since"] != since:
                first = client.page(library, "collections", api_key, since, 0,
                                         conditional=since > 0)
                if not first.modified:
                    return Fetched.nothing(version=since, unchanged=True)
                page_full = len(first.objects) == PAGE_SIZE
                collections = list(first.objects)
                start = PAGE_SIZE
                while start < min(first.total, MAX_COLLECTIONS_READ) and page_full:
                    if self._out_of_time(run):
                        return None
                    page = client.page(library, "collections", api_key, since, start,
                                            conditional=False)
                    collections += page.objects
                    page_full = len(page.objects) == PAGE_SIZE
                    start += PAGE_SIZE
                meta = {"since": since, "target": first.version, "start": 0}
                with redis_errors():
                    pipe = self._redis.pipeline(transaction=True)
                    pipe.delete(stage_key)
                    pipe.hset(stage_key, mapping={"meta": json.dumps(meta),
                                                  "collections": json.dumps(collections)})
                    pipe.execute()
            changed = False
            while True:
                if self._out_of_time(run):
                    return None
                page = client.page(library, "items", api_key, since, meta["start"],
                                        conditional=False)
                if page.version != meta["target"]:
                    changed = True
                    break
                records = stage_records(page.objects, user_id, corpus=self._corpus,
                                        quota=self._quota, now=now, first_index=meta["start"])
                meta["start"] += PAGE_SIZE
                with redis_errors():
                    pipe = self._redis.pipeline(transaction=True)
                    pipe.hset(stage_key, mapping={f"items:{meta['start']:09d}":
                                                  json.dumps(records),
                                                  "meta": json.dumps(meta)})
                    pipe.execute()
                if meta["start"] >= page.total or len(page.objects) < PAGE_SIZE:
                    break  # the last page (a short one ends it, whatever Total-Results says)
                if meta["start"] >= MAX_ITEMS_READ:
                    with redis_errors():
                        self._redis.delete(stage_key)
                    raise ZoteroFailed(f"the library has more than {MAX_ITEMS_READ:,} items "
                                       f"changed at once, more than one sync reads")
            if changed:
                with redis_errors():
                    self._redis.delete(stage_key)
                continue
            deleted: dict[str, list[str]] = {"items": [], "collections": []}
            if since > 0:
                if self._out_of_time(run):
                    return None
                deleted = client.deleted(library, api_key, since)
            with redis_errors():
                stage = cast(dict[str, str], self._redis.hgetall(stage_key))
            return Fetched.from_stage(stage, deleted, meta["target"])
        raise ZoteroFailed("the Zotero library kept changing while it was read; the next "
                           "sync tries again")

    def _apply(self, user_id: str, fetched: Fetched, now: float, run: _Run) -> ZoteroSummary:
        skipped_before = Counter(run.skipped)
        for _ in range(3):
            with redis_errors():
                pipe = self._redis.pipeline(transaction=False)
                for key in (self._keys.zotero(user_id), self._keys.zotero_items(user_id),
                            self._keys.zotero_collections(user_id),
                            self._keys.zotero_likes(user_id), self._keys.feedback(user_id),
                            self._keys.collections(user_id)):
                    pipe.hgetall(key)
                record, items, colls, owned, feedback, mine = pipe.execute()
            if not record.get("library_id"):
                raise NotFound(self._none(user_id))
            plan, counts = make_plan(fetched, record, items, colls, owned, feedback, mine,
                                     now=now, user_id=user_id, corpus=self._corpus,
                                     quota=self._quota)
            run.skipped = skipped_before + counts.skipped
            summary = self._summary(run, plan.version, now, finished=True, counts=counts)
            plan.last_sync = json.dumps(asdict(summary))
            outcome = self._applier.apply(user_id, plan)
            if outcome == "done":
                self._embed(plan.like)
                return summary
            if outcome == "gone":
                raise NotFound(self._none(user_id))
            if outcome == "stale":  # another sync applied first: that one counts
                return self._summary(run, int(self.state(user_id).library_version or 0), now,
                                     finished=True)
        raise ZoteroFailed("the reader's collections kept changing during the sync; the next "
                           "sync tries again")

    def _failed(self, user_id: str, found: dict[str, str], run: _Run, now: float,
                message: str) -> ZoteroSummary:
        summary = self._summary(run, int(found.get("version") or 0), now, finished=False,
                                error=message)
        self._keep(user_id, summary, message)
        return summary

    def _keep(self, user_id: str, summary: ZoteroSummary, error: str = "") -> None:
        """The sync's summary and error (none: it worked), on a connection still there."""
        with redis_errors():
            if self._redis.exists(self._keys.zotero(user_id)):
                self._redis.hset(self._keys.zotero(user_id), mapping={
                    "error": error, "last_sync": json.dumps(asdict(summary))})

    def _summary(self, run: _Run, version: int, now: float, *, finished: bool,
                 error: str | None = None, counts: Any = None) -> ZoteroSummary:
        return ZoteroSummary(
            added=counts.added if counts else 0, matched=counts.matched if counts else 0,
            updated=counts.updated if counts else 0, removed=counts.removed if counts else 0,
            skipped=dict(run.skipped), collections_created=counts.created if counts else 0,
            collections_renamed=counts.renamed if counts else 0, library_version=version,
            requests=run.client.requests - run.requests_before if run.client else 0,
            seconds=round(time.monotonic() - run.started, 3), finished=finished, error=error,
            at=now)

    @staticmethod
    def _out_of_time(run: _Run) -> bool:
        """The budget is spent, or the server asked for a pause past its end."""
        client = run.client
        return client is not None and client.time_left() <= client.ready_in()

    def _record(self, user_id: str) -> dict[str, str]:
        with redis_errors():
            found = cast(dict[str, str], self._redis.hgetall(self._keys.zotero(user_id)))
        if not found.get("library_id"):
            raise NotFound(self._none(user_id))
        return found

    def _connected(self, user_id: str) -> ZoteroState:
        state = self.state(user_id)
        if not state.connected:
            raise NotFound(self._none(user_id))
        return state

    def _collections(self, user_id: str) -> dict[str, dict[str, Any]]:
        with redis_errors():
            raw = cast(dict[str, str],
                       self._redis.hgetall(self._keys.zotero_collections(user_id)))
        return {zkey: json.loads(value) for zkey, value in raw.items()}

    @staticmethod
    def _none(user_id: str) -> str:
        return (f"user {user_id!r} has no Zotero library connected: PUT "
                f"/v1/users/{user_id}/zotero connects one")



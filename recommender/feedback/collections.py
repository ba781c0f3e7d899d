"""CollectionStore: a reader's named collections ("Graph learning", "Federated"), one list each.

A collection holds some of the reader's liked papers; a paper may be in several. Putting a
paper in a collection likes it; disliking it or taking the like back takes it out of every
collection (``FeedbackStore``'s script does both in one step). Deleting a collection keeps
its papers liked.

Two hashes per user, in the user's Cluster slot (``RedisKeys.collections``,
``RedisKeys.collected``): collection id -> JSON {name, key, created_at}, and liked paper id ->
the ids of its collections. Every write is one Lua script (the caps, the name check and the
write in one step). Both keys are in ``RedisKeys.user_keys``: erasing a user deletes them, and
``export_user`` hands them over.

Bounds: at most ``MAX_COLLECTIONS`` per reader; a name is 1 to ``MAX_NAME_LENGTH`` characters
with a letter or digit, its ends stripped and its spaces collapsed; two collections of one
reader may not share a name (case and accents aside): ``Conflict``.
"""

from __future__ import annotations

import json
import secrets
import unicodedata
from dataclasses import dataclass
from typing import Annotated, Any, cast

import redis
from pydantic import Field

from recommender.core.errors import Conflict, InvalidInput, NotFound
from recommender.core.ids import PaperId, validate_paper_id
from recommender.feedback.rules import VALUE_PATTERN
from recommender.feedback.store import FeedbackStore
from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_options import redis_errors
from recommender.storage.redis_writes import UserWrites

MAX_COLLECTIONS = 50  # per reader
MAX_NAME_LENGTH = 100  # characters of a name, as given
ID_PATTERN = "^[0-9a-f]{8}$"  # a collection's id: 8 lowercase hex digits

# KEYS: collections hash.  ARGV: id, name key, record, MAX_COLLECTIONS.
_CREATE = """
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then return 'full' end
for _, record in ipairs(redis.call('HVALS', KEYS[1])) do
  if cjson.decode(record)['key'] == ARGV[2] then return 'taken' end
end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[3]) == 0 then return 'again' end
return 'created'
"""
# KEYS: collections hash.  ARGV: id, name key, name.  The stored record, or 'missing'/'taken'.
_RENAME = """
local old = redis.call('HGET', KEYS[1], ARGV[1])
if not old then return 'missing' end
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if all[i] ~= ARGV[1] and cjson.decode(all[i + 1])['key'] == ARGV[2] then return 'taken' end
end
local record = cjson.decode(old)
record['name'] = ARGV[3]
record['key'] = ARGV[2]
local new = cjson.encode(record)
redis.call('HSET', KEYS[1], ARGV[1], new)
return new
"""
# KEYS: collections hash, collected hash.  ARGV: id.  1 when it was deleted; its papers stay
# liked and are taken out of it.
_DELETE = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all, 2 do
  local out = {}
  for id in string.gmatch(all[i + 1], '%S+') do
    if id ~= ARGV[1] then out[#out + 1] = id end
  end
  local new = table.concat(out, ' ')
  if #out == 0 then redis.call('HDEL', KEYS[2], all[i])
  elseif new ~= all[i + 1] then redis.call('HSET', KEYS[2], all[i], new) end
end
return 1
"""
# KEYS: collections hash, collected hash.  ARGV: from id, to id ("" = out of every other
# collection), paper.  -1/-2: no collection from/to; 0: the paper is not in from; 1: done.
_MOVE = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return -1 end
if ARGV[2] ~= '' and redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then return -2 end
local now = redis.call('HGET', KEYS[2], ARGV[3])
if not now then return 0 end
local out, seen, found = {}, {}, false
for id in string.gmatch(now, '%S+') do
  if id == ARGV[1] then found = true
  elseif not seen[id] then seen[id] = true; out[#out + 1] = id end
end
if not found then return 0 end
if ARGV[2] ~= '' and not seen[ARGV[2]] then out[#out + 1] = ARGV[2] end
if #out == 0 then redis.call('HDEL', KEYS[2], ARGV[3])
else redis.call('HSET', KEYS[2], ARGV[3], table.concat(out, ' ')) end
return 1
"""


@dataclass(frozen=True)
class Collection:
    id: Annotated[str, Field(pattern=ID_PATTERN, json_schema_extra={"example": "3f9a0c1e"})]
    name: str
    size: Annotated[int, Field(description="How many liked papers it holds.")]
    created_at: float  # unix time


@dataclass(frozen=True)
class CollectionPapers:
    """A collection's papers (an export of it), most recently liked first."""

    collection: Collection
    paper_ids: list[PaperId]


@dataclass(frozen=True)
class CollectionExport:
    """A collection in a reader's export: its papers by id, sorted."""

    id: str
    name: str
    created_at: float
    paper_ids: list[PaperId]


def collection_name(name: str) -> tuple[str, str]:
    """(display form, comparison key) of a name, or ``InvalidInput`` saying what is wrong."""
    if not isinstance(name, str) or not VALUE_PATTERN.search(name):
        raise InvalidInput(f"a collection's name must have a letter or digit, got {name!r}")
    shown = " ".join(name.split())
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in shown):
        raise InvalidInput("a collection's name may not hold control characters or lone "
                           "surrogates")
    if len(shown) > MAX_NAME_LENGTH:
        raise InvalidInput(f"a collection's name must be at most {MAX_NAME_LENGTH} "
                           f"characters, got {len(shown)}")
    key = unicodedata.normalize("NFKD", shown.casefold())
    return shown, "".join(c for c in key if not unicodedata.combining(c))


def validate_collection_id(collection_id: str) -> str:
    if (not isinstance(collection_id, str) or len(collection_id) != 8
            or any(c not in "0123456789abcdef" for c in collection_id)):
        raise InvalidInput(f"a collection id is 8 hex digits, got {collection_id!r}")
    return collection_id


class CollectionStore:
    def __init__(self, client: redis.Redis, keys: RedisKeys, feedback: FeedbackStore,
                 writes: UserWrites | None = None) -> None:
        self._redis = client
        self._keys = keys
        self._feedback = feedback
        self._writes = writes or UserWrites(client)
        self._create = self._writes.register(_CREATE)
        self._rename = self._writes.register(_RENAME)
        self._delete = self._writes.register(_DELETE)
        self._move = self._writes.register(_MOVE)

    def create(self, user_id: str, name: str, now: float) -> Collection:
        """A new, empty collection. InvalidInput beyond MAX_COLLECTIONS, Conflict when the
        reader has one of that name."""
        shown, key = collection_name(name)
        for _ in range(3):  # a new random id; again in the unlikely case it is taken
            collection_id = secrets.token_hex(4)
            record = json.dumps({"name": shown, "key": key, "created_at": round(now, 3)})
            outcome = self._writes.run(self._create, [self._keys.collections(user_id)],
                                       [collection_id, key, record, MAX_COLLECTIONS])
            if outcome == "full":
                raise InvalidInput(f"user {user_id!r} already has {MAX_COLLECTIONS} "
                                   "collections, the most allowed: delete one first")
            if outcome == "taken":
                raise Conflict(f"user {user_id!r} already has a collection named {shown!r}: "
                               "choose another name, or rename that one")
            if outcome == "created":
                return Collection(collection_id, shown, 0, round(now, 3))
        raise Conflict("could not find a free collection id; try again")

    def rename(self, user_id: str, collection_id: str, name: str) -> Collection:
        shown, key = collection_name(name)
        outcome = cast(str, self._writes.run(
            self._rename, [self._keys.collections(user_id)],
            [validate_collection_id(collection_id), key, shown]))
        if outcome == "missing":
            raise self._missing(user_id, collection_id)
        if outcome == "taken":
            raise Conflict(f"user {user_id!r} already has another collection named {shown!r}: "
                           "choose another name")
        return self.get(user_id, collection_id)

    def delete(self, user_id: str, collection_id: str) -> None:
        """Delete the collection; its papers stay liked. NotFound when there is none."""
        done = self._writes.run(self._delete, self._pair(user_id),
                                [validate_collection_id(collection_id)])
        if not done:
            raise self._missing(user_id, collection_id)

    def put(self, user_id: str, collection_id: str, paper_id: str, now: float) -> bool:
        """Like the paper into the collection (beside the collections it is in already);
        True when it replaced an earlier signal."""
        return self._feedback.set(user_id, paper_id, "like", now,
                                  [validate_collection_id(collection_id)], "add")

    def remove(self, user_id: str, collection_id: str, paper_id: str) -> None:
        """Take the paper out of the collection (it stays liked). NotFound when the
        collection or the paper in it is not there."""
        self.move(user_id, collection_id, "", paper_id)

    def move(self, user_id: str, from_id: str, to_id: str, paper_id: str) -> None:
        """Move a paper from one collection to another (``to_id`` "": out of ``from_id``
        only). NotFound for a missing collection or a paper not in ``from_id``."""
        validate_collection_id(from_id)
        if to_id:
            validate_collection_id(to_id)
        outcome = int(self._writes.run(self._move, self._pair(user_id),
                                       [from_id, to_id, validate_paper_id(paper_id)]))
        if outcome == -1:
            raise self._missing(user_id, from_id)
        if outcome == -2:
            raise self._missing(user_id, to_id)
        if outcome == 0:
            raise NotFound(f"paper {paper_id!r} is not in collection {from_id!r}")

    def all(self, user_id: str) -> list[Collection]:
        """The reader's collections, oldest first, with their sizes (one round trip)."""
        return self._all(*self._read(user_id))

    def with_memberships(self, user_id: str, paper_ids: list[str]
                         ) -> tuple[list[Collection], dict[str, list[str]]]:
        """``all`` and ``memberships`` of these papers, from the one read ``all`` makes (a
        list page's "like into a collection" forms need both)."""
        records, collected = self._read(user_id)
        return self._all(records, collected), {pid: collected[pid].split() for pid in paper_ids
                                               if collected.get(pid)}

    @staticmethod
    def _all(records: dict[str, str], collected: dict[str, str]) -> list[Collection]:
        sizes: dict[str, int] = {}
        for ids in collected.values():
            for collection_id in ids.split():
                sizes[collection_id] = sizes.get(collection_id, 0) + 1
        found = [_collection(cid, record, sizes.get(cid, 0)) for cid, record in records.items()]
        return sorted(found, key=lambda c: (c.created_at, c.name, c.id))

    def get(self, user_id: str, collection_id: str) -> Collection:
        found = [c for c in self.all(user_id) if c.id == collection_id]
        if not found:
            raise self._missing(user_id, collection_id)
        return found[0]

    def check(self, user_id: str, collection_ids: list[str]) -> None:
        """NotFound for the first of these the user has no collection of."""
        have = {c.id for c in self.all(user_id)}
        for collection_id in collection_ids:
            if collection_id not in have:
                raise self._missing(user_id, collection_id)

    def papers(self, user_id: str, collection_id: str) -> CollectionPapers:
        """The collection and its papers, most recently liked first."""
        collection = self.get(user_id, collection_id)
        _, collected = self._read(user_id)
        liked_at = {f.paper_id: f.at for f in self._feedback.get(user_id)}
        ids = [pid for pid, cids in collected.items() if collection_id in cids.split()]
        ids.sort(key=lambda pid: (-liked_at.get(pid, 0.0), pid))
        return CollectionPapers(collection, ids)

    def memberships(self, user_id: str, paper_ids: list[str]) -> dict[str, list[str]]:
        """The collections each of these papers is in (those in none left out): one HMGET."""
        if not paper_ids:
            return {}
        with redis_errors():
            values = cast(list[str | None],
                          self._redis.hmget(self._keys.collected(user_id), paper_ids))
        return {pid: value.split() for pid, value in zip(paper_ids, values, strict=True)
                if value}

    def export_user(self, user_id: str) -> dict[str, Any]:
        """The reader's collections, each with its papers (their part of an export)."""
        _, collected = self._read(user_id)
        return {"collections": [
            CollectionExport(c.id, c.name, c.created_at,
                             sorted(pid for pid, ids in collected.items() if c.id in ids.split()))
            for c in self.all(user_id)]}

    def _read(self, user_id: str) -> tuple[dict[str, str], dict[str, str]]:
        with redis_errors():
            pipe = self._redis.pipeline(transaction=False)
            pipe.hgetall(self._keys.collections(user_id))
            pipe.hgetall(self._keys.collected(user_id))
            records, collected = pipe.execute()
        return records, collected

    def _pair(self, user_id: str) -> list[str]:
        return [self._keys.collections(user_id), self._keys.collected(user_id)]

    @staticmethod
    def _missing(user_id: str, collection_id: str) -> NotFound:
        return NotFound(f"user {user_id!r} has no collection {collection_id!r}; "
                        f"GET /v1/users/{user_id}/collections lists theirs")


def _collection(collection_id: str, record: str, size: int) -> Collection:
    data = json.loads(record)
    return Collection(collection_id, data["name"], size, float(data["created_at"]))

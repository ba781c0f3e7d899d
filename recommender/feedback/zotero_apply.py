"""The one step that applies a Zotero sync: likes, collections and the library version at once.

``SyncPlan`` is what a sync decided from the Zotero library (its items and collections as
synced, the collections the reader includes) and the reader's state as it was read: the
papers to like, the likes of Zotero's to take back, the paperrec collections to create,
rename and delete, every Zotero paper's collections, the new mirror of the library and its
version. ``apply_plan`` runs it as one Lua script over the reader's keys (one Cluster slot):
all of it or none, so a sync killed before it leaves the reader's likes as they were, and
after it as they are now.

The script checks again what the plan assumed, so a reader acting meanwhile is never
overridden: a paper with any signal is not liked by Zotero (a dislike stays a dislike); a
like is taken back only while it still holds the value Zotero wrote (``zotero_likes``: a like
the reader gave, or gave again, stays); a collection is created only while its id and name are
free. It answers "stale" when another sync applied first (the stored version moved), "gone"
when the reader disconnected meanwhile, "conflict" when a collection's name or id was taken
meanwhile (the sync plans again). The like counts follow as ``FeedbackStore``'s own script
keeps them (``ZINCRBY`` on the bucket's counts, the user in the bucket's users).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

from recommender.storage.redis_keys import RedisKeys, bucket_of
from recommender.storage.redis_writes import UserWrites

# KEYS: feedback, like counts, users (the bucket's), collected, collections, zotero,
# zotero-items, zotero-collections, zotero-likes, zotero-stage.  ARGV: user, plan (JSON).
_APPLY = """
local plan = cjson.decode(ARGV[2])
if redis.call('EXISTS', KEYS[6]) == 0 then return {'gone'} end
if (redis.call('HGET', KEYS[6], 'version') or '0') ~= plan['since'] then return {'stale'} end
local records = redis.call('HGETALL', KEYS[5])
local taken = {}
for i = 1, #records, 2 do taken[cjson.decode(records[i + 1])['key']] = records[i] end
local count = #records / 2 - #plan['delete']
for _, c in ipairs(plan['create']) do
  if redis.call('HEXISTS', KEYS[5], c[1]) == 1 or taken[c[3]] then return {'conflict'} end
  count = count + 1
end
if #plan['create'] > 0 and count > tonumber(plan['max']) then return {'conflict'} end
for _, r in ipairs(plan['rename']) do
  if redis.call('HEXISTS', KEYS[5], r[1]) == 0 then return {'conflict'} end
  if taken[r[2]] and taken[r[2]] ~= r[1] then return {'conflict'} end
end
-- collections: deleted ones out of every paper, new ones made, renamed ones renamed
local gone = {}
for _, id in ipairs(plan['delete']) do gone[id] = true; redis.call('HDEL', KEYS[5], id) end
if #plan['delete'] > 0 then
  local all = redis.call('HGETALL', KEYS[4])
  for i = 1, #all, 2 do
    local out = {}
    for id in string.gmatch(all[i + 1], '%S+') do
      if not gone[id] then out[#out + 1] = id end
    end
    if #out == 0 then redis.call('HDEL', KEYS[4], all[i])
    else redis.call('HSET', KEYS[4], all[i], table.concat(out, ' ')) end
  end
end
for _, c in ipairs(plan['create']) do redis.call('HSET', KEYS[5], c[1], c[2]) end
for _, r in ipairs(plan['rename']) do
  local record = cjson.decode(redis.call('HGET', KEYS[5], r[1]))
  record['key'] = r[2]
  record['name'] = r[3]
  redis.call('HSET', KEYS[5], r[1], cjson.encode(record))
end
-- likes
local liked, removed = 0, 0
for _, pid in ipairs(plan['like']) do
  if not redis.call('HGET', KEYS[1], pid) then
    redis.call('HSET', KEYS[1], pid, plan['value'])
    redis.call('ZINCRBY', KEYS[2], 1, pid)
    redis.call('HSET', KEYS[9], pid, plan['value'])
    liked = liked + 1
  end
end
if liked > 0 then redis.call('SADD', KEYS[3], ARGV[1]) end
for _, pid in ipairs(plan['unlike']) do
  local own = redis.call('HGET', KEYS[9], pid)
  if own and redis.call('HGET', KEYS[1], pid) == own then
    redis.call('HDEL', KEYS[1], pid)
    if tonumber(redis.call('ZINCRBY', KEYS[2], -1, pid)) <= 0 then
      redis.call('ZREM', KEYS[2], pid)
    end
    redis.call('HDEL', KEYS[4], pid)
    removed = removed + 1
  end
  redis.call('HDEL', KEYS[9], pid)
end
-- the Zotero papers' collections: those of Zotero's follow Zotero, the reader's stay
local mapped = {}
for _, id in ipairs(plan['mapped']) do mapped[id] = true end
for pid, ids in pairs(plan['members']) do
  local value = redis.call('HGET', KEYS[1], pid)
  local out, seen = {}, {}
  for id in string.gmatch(redis.call('HGET', KEYS[4], pid) or '', '%S+') do
    if not mapped[id] and not seen[id] then seen[id] = true; out[#out + 1] = id end
  end
  if value and string.sub(value, 1, 5) == 'like:' then
    for _, id in ipairs(ids) do
      if not seen[id] then seen[id] = true; out[#out + 1] = id end
    end
  end
  if #out == 0 then redis.call('HDEL', KEYS[4], pid)
  else redis.call('HSET', KEYS[4], pid, table.concat(out, ' ')) end
end
-- the mirror of the library, its version, the summary; the stage is done with
for key, rec in pairs(plan['items_set']) do redis.call('HSET', KEYS[7], key, rec) end
for _, key in ipairs(plan['items_del']) do redis.call('HDEL', KEYS[7], key) end
redis.call('DEL', KEYS[8])
for key, rec in pairs(plan['colls']) do redis.call('HSET', KEYS[8], key, rec) end
redis.call('HSET', KEYS[6], 'version', plan['version'], 'error', '', 'last_sync',
           plan['last_sync'])
redis.call('DEL', KEYS[10])
return {'done', liked, removed}
"""


@dataclass
class SyncPlan:
    since: int  # the version the plan was made from (the stored one)
    version: int  # the version it brings the reader to
    value: str  # the feedback value of a Zotero like ("like:<time>")
    like: list[str] = field(default_factory=list)
    unlike: list[str] = field(default_factory=list)
    create: list[tuple[str, str, str]] = field(default_factory=list)  # (id, record, name key)
    rename: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name key, name)
    delete: list[str] = field(default_factory=list)
    max_collections: int = 50
    mapped: list[str] = field(default_factory=list)  # every collection of Zotero's, after
    members: dict[str, list[str]] = field(default_factory=dict)  # Zotero paper -> its ids
    items_set: dict[str, str] = field(default_factory=dict)
    items_del: list[str] = field(default_factory=list)
    colls: dict[str, str] = field(default_factory=dict)
    last_sync: str = "{}"

    def payload(self) -> str:
        return json.dumps({
            "since": str(self.since), "version": str(self.version), "value": self.value,
            "like": self.like, "unlike": self.unlike,
            "create": [list(c) for c in self.create], "rename": [list(r) for r in self.rename],
            "delete": self.delete, "max": self.max_collections, "mapped": self.mapped,
            "members": self.members or {}, "items_set": self.items_set or {},
            "items_del": self.items_del, "colls": self.colls or {},
            "last_sync": self.last_sync})


class PlanApplier:
    def __init__(self, writes: UserWrites, keys: RedisKeys) -> None:
        self._writes = writes
        self._keys = keys
        self._script = writes.register(_APPLY)

    def apply(self, user_id: str, plan: SyncPlan) -> str:
        """"done", or "stale" | "gone" | "conflict" (nothing written)."""
        k, bucket = self._keys, bucket_of(user_id)
        reply = cast(list[Any], self._writes.run(self._script, [
            k.feedback(user_id), k.like_counts(bucket), k.users(bucket), k.collected(user_id),
            k.collections(user_id), k.zotero(user_id), k.zotero_items(user_id),
            k.zotero_collections(user_id), k.zotero_likes(user_id), k.zotero_stage(user_id)],
            [user_id, plan.payload()]))
        return reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])

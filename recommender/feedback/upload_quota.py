"""UploadQuota: how many papers one reader's uploads may add to the corpus a day.

Every paper an upload adds is kept apart until it is verified (``CorpusStore.upload``), but
it still costs the corpus a row and the service an embedding, so a reader may add at most
``per_day`` (PAPERREC_UPLOADS_PER_DAY) a UTC day; entries past it are rejected with the
reason, and can be imported the next day. Entries that match a paper the corpus holds cost
nothing here: they only become likes.
"""

from __future__ import annotations

import datetime as dt

import redis

from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_writes import UserWrites

# KEYS: the user's upload counts.  ARGV: day, papers wanted, the day's limit, seconds to keep.
# Grants what is left of the day's limit, up to what is wanted. Unlike the user's other
# scripts it adds to a value: a retry after an unacknowledged attempt may count twice, which
# only errs on the reader's side of a limit.
_TAKE = """
local used = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local granted = math.max(0, math.min(tonumber(ARGV[2]), tonumber(ARGV[3]) - used))
if granted > 0 then
  redis.call('HINCRBY', KEYS[1], ARGV[1], granted)
  redis.call('EXPIRE', KEYS[1], ARGV[4])
end
return granted
"""
KEEP_SECONDS = 2 * 86_400  # a day's count outlives the day wherever the clock's day ends


class UploadQuota:
    def __init__(self, client: redis.Redis, keys: RedisKeys, per_day: int,
                 writes: UserWrites | None = None) -> None:
        self.per_day = per_day
        self._keys = keys
        self._writes = writes or UserWrites(client)
        self._take = self._writes.register(_TAKE)

    def take(self, user_id: str, wanted: int, now: float) -> int:
        """How many of ``wanted`` new papers the reader may add now (0 when the day's limit
        is used up); those granted are counted at once."""
        if wanted <= 0:
            return 0
        day = dt.datetime.fromtimestamp(now, dt.UTC).date().isoformat()
        return int(self._writes.run(self._take, [self._keys.uploads(user_id)],
                                    [day, wanted, self.per_day, KEEP_SECONDS]))
